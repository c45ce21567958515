"""Quitting while a stage runs: asks first."""

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keybar import KeyBar


class ConfirmQuitScreen(ModalScreen[bool]):
    """Asked before quitting while the pipeline runs: stopping is cooperative, not a kill."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y",
            "answer(True)",
            "Stop and quit",
            tooltip="Stop the pipeline at its next safe point and quit",
            id="quit.confirm",
        ),
        Binding(
            "n,escape",
            "answer(False)",
            "Keep running",
            tooltip="Keep the pipeline running",
            id="quit.cancel",
        ),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-dialog"):
            yield Static("Stop the pipeline and quit?", id="quit-title")
            yield Static(
                "The pipeline stops at its next safe point. Everything so far is in the "
                "journal; run labtui again to resume.",
                id="quit-message",
            )
        yield KeyBar()

    def action_answer(self, stop: bool) -> None:
        self.dismiss(stop)
