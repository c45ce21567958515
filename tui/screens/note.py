"""The note modal: a note for the agents, read by the next LLM call."""

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ..keybar import KeyBar


class NoteScreen(ModalScreen[str]):
    """A note for the agents, at any time: the next LLM call of the pipeline reads it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", tooltip="Close without leaving the note", id="note.cancel"
        ),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="note-dialog") as dialog:
            dialog.border_title = "Note to the agents"
            yield Static(
                "The next LLM call sees this note (it is kept in the journal).", id="note-help"
            )
            yield Input(placeholder="e.g. keep the learning rate fixed; vary only width", id="note")
            yield Static("enter sends · escape cancels", id="note-hint")
        yield KeyBar()

    @on(Input.Submitted, "#note")
    def send(self, event: Input.Submitted) -> None:
        note = event.value.strip()
        if not note:
            event.input.add_class("-invalid")
            return
        self.dismiss(note)

    def action_cancel(self) -> None:
        self.dismiss("")


# (section title, bindings) pairs: what the help screen lists.
