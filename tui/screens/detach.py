"""Leaving a run that its background engine carries: detach (it goes on) or stop it."""

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keybar import KeyBar

DETACH, STOP = "detach", "stop"


class DetachScreen(ModalScreen[str | None]):
    """Asked on quit while an engine runs the pipeline: detach (the default) or stop it."""

    DEFAULT_CSS = "DetachScreen { align: center middle; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "d,q",
            f"answer('{DETACH}')",
            "Detach",
            tooltip="Leave; the run goes on in the background (labtui attach to come back)",
            id="detach.detach",
        ),
        Binding(
            "s",
            f"answer('{STOP}')",
            "Stop the run",
            tooltip="Stop the pipeline at its next safe point and quit (resumable)",
            id="detach.stop",
        ),
        Binding("n,escape", "answer(None)", "Stay", tooltip="Keep watching", id="detach.cancel"),
    ]

    def __init__(self, engine_pid: int) -> None:
        super().__init__()
        self.engine_pid = engine_pid

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-dialog"):
            yield Static("Detach, or stop the run?", id="quit-title")
            yield Static(
                f"The pipeline runs in a background engine (pid {self.engine_pid}). Detach and "
                "it goes on without this terminal: labtui attach (or labtui) follows it again, "
                "labtui status says where it stands. Stop ends it at the next safe point; the "
                "project stays resumable.",
                id="quit-message",
            )
        yield KeyBar()

    def action_answer(self, choice: str | None) -> None:
        self.dismiss(choice)
