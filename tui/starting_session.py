"""``labtui`` on a project whose engine is not running: the app paints at once, and the engine is
started from the app's pipeline worker, once the model is known to work.

Before, the engine was started (and the model checked first, which imports litellm: about two
seconds) before anything was on the screen. ``StartingSession`` is the ``Session`` the app sees
meanwhile: the project's own facts and journal (an in-process ``core.pipeline.session.Session``
that never runs, opened when the app first asks for a fact: after its first frame, since loading
``labtui.toml`` imports pydantic, ~200 ms), the model checked off the UI thread as the app always
does, then, in ``run``, the background engine started and followed (a ``RemoteSession``): its
events after the journal the app already painted go onto this session's bus, and steering goes
to it. Leaving before the engine serves still leaves it running, as leaving after does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.core.checkpoints import CheckpointPort
from labtui.core.engine import files as engine_files
from labtui.core.events import Bus, Event, Notice
from labtui.core.workspace.history import CommitLog

from .remote_session import DETACHED, RemoteSession

if TYPE_CHECKING:
    from labtui.core.local_model.manage import LocalOffer
    from labtui.core.pipeline.session import Session as ProjectSession

StartEngine = Callable[[Path], object]  # starts the project's engine and waits until it serves


class StartingSession:
    """The ``Session`` protocol of tui/session.py: the project itself until the run starts,
    then the background engine that ``run`` starts."""

    detachable = True  # the app's quit offers detach (the run goes on) beside stop
    opens_after_paint = True  # the app reads the facts below once its first frame is out

    def __init__(
        self,
        root: Path,
        open_local: Callable[[Path], ProjectSession],
        start: StartEngine,
        attach: Callable[[Path], RemoteSession] = RemoteSession.attach,
    ) -> None:
        self._root = root
        self._open_local = open_local
        self._opened: ProjectSession | None = None
        self._opening = threading.Lock()
        self._start = start
        self._attach = attach
        self.bus = Bus()  # not the local session's: its journal must not record the engine's
        self._remote: RemoteSession | None = None
        self._shown = 0  # events of the journal the app painted (history)
        self._notes: list[str] = []  # left before the engine served
        self._lock = threading.Lock()
        self._stop_requested = False
        self._detached = False

    @property
    def _local(self) -> ProjectSession:
        """The project's own session, opened by the first fact asked for (a ConfigError then
        names the field and the fix)."""
        with self._opening:
            if self._opened is None:
                self._opened = self._open_local(self._root)
            return self._opened

    # -- what front ends read ---------------------------------------------------------------

    @property
    def project_name(self) -> str:
        return self._local.project_name

    @property
    def project_root(self) -> Path:
        return self._root

    @property
    def budget_usd(self) -> float:
        return self._local.budget_usd

    @property
    def cluster(self) -> str:
        return self._local.cluster

    @property
    def commit_log(self) -> CommitLog:
        return CommitLog(self._root)  # the git history needs no labtui.toml

    @property
    def engine_pid(self) -> int:
        return self._remote.engine_pid if self._remote is not None else 0

    def history(self) -> list[Event]:
        events = self._local.history()
        self._shown = len(events)
        return events

    def stage_models(self) -> dict[str, str]:
        return self._local.stage_models()

    def model_problems(self) -> list[str]:
        return self._local.model_problems()

    def local_model_offer(self) -> LocalOffer | None:
        return self._local.local_model_offer()

    # -- the run ----------------------------------------------------------------------------

    def run(self, port: CheckpointPort) -> str:
        """Start the engine (unless one serves the project by now), follow it from where the
        painted journal ends, and return as ``RemoteSession.run`` does."""
        self._local.journal.close()  # the engine appends to the journal from now on
        root = self.project_root
        with self._lock:
            if self._stop_requested:
                return "stopped"
        started = engine_files.find_engine(root) is None  # another labtui may have by now
        if started:
            self._start(root)
        remote = self._attach(root)
        for event in remote.history()[self._shown :]:  # what the engine did before we attached
            self.bus.emit(event)
        remote.bus.subscribe(self.bus.emit)
        with self._lock:
            self._remote = remote
            stop, detached, notes = self._stop_requested, self._detached, self._notes
        if started:
            self.bus.emit(Notice(text=f"started the engine (pid {remote.engine_pid}); q detaches"))
        if detached:
            remote.detach()
            return DETACHED
        for note in notes:
            remote.leave_note(note)
        if stop:
            remote.request_stop()
        return remote.run(port)

    # -- steering ---------------------------------------------------------------------------

    def _steer(self, action: Callable[[RemoteSession], object]) -> bool:
        """``action`` on the engine once it serves; False (and nothing done) before."""
        with self._lock:
            remote = self._remote
        if remote is None:
            return False
        action(remote)
        return True

    def leave_note(self, text: str) -> None:
        if not self._steer(lambda remote: remote.leave_note(text)):
            with self._lock:
                self._notes.append(text)

    def request_stop(self) -> None:
        with self._lock:
            self._stop_requested = True
        self._steer(RemoteSession.request_stop)

    def interrupt(self) -> bool:
        return self._steer(RemoteSession.interrupt)

    def request_rewind(self, stage: str) -> None:
        if not self._steer(lambda remote: remote.request_rewind(stage)):
            self._local.request_rewind(stage)  # says that no pipeline runs yet

    def detach(self) -> None:
        """Leave; the engine (started now or about to be) goes on."""
        with self._lock:
            self._detached = True
        self._steer(RemoteSession.detach)
