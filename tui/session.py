"""The ``Session`` protocol: the engine as the app (tui/app.py) and the commands that start it
see it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from labtui.core.checkpoints import CheckpointPort
from labtui.core.events import Bus, Event

if TYPE_CHECKING:
    from labtui.core.local_model.manage import LocalOffer
    from labtui.core.workspace.history import CommitLog


class Session(Protocol):
    """The engine as the TUI sees it (``labtui.core.pipeline.session.Session`` implements it;
    ``tui.remote_session.RemoteSession`` follows one in another process). Its facts are
    properties: the TUI only reads them."""

    bus: Bus

    @property
    def project_name(self) -> str: ...

    @property
    def project_root(self) -> Path: ...

    @property
    def budget_usd(self) -> float: ...

    @property
    def commit_log(self) -> CommitLog: ...  # the diff pane browses the project's history

    def history(self) -> list[Event]: ...

    def stage_models(self) -> dict[str, str]: ...

    def model_problems(self) -> list[str]: ...

    def local_model_offer(self) -> LocalOffer | None: ...  # labtui's own model, to set up

    def run(self, port: CheckpointPort) -> str: ...

    def leave_note(self, text: str) -> None: ...

    def request_stop(self) -> None: ...

    def interrupt(self) -> bool: ...

    def request_rewind(self, stage: str) -> None: ...
