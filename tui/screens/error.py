"""The error modal: what went wrong and what to do, without a traceback."""

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keybar import KeyBar


class ErrorScreen(ModalScreen[None]):
    """An error the researcher must read: what happened and the fix. Any key closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Any key closes (on_key); these only put the obvious keys in the footer.
        Binding("escape,enter", "close", "Close", id="error.close"),
    ]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        self.error_title = title
        self.message = message
        self.hint = hint
        self._closed = False

    def compose(self) -> ComposeResult:
        with Vertical(id="error-dialog"):
            yield Static(Content(self.error_title), id="error-title")
            yield Static(Content(self.message), id="error-message")
            if self.hint:
                yield Static(Content(f"fix: {self.hint}"), id="error-hint")
            yield Static(Text("press any key to close", style="dim"), id="error-close")
        yield KeyBar()

    def action_close(self) -> None:
        # A key can reach both on_key and a binding; close once.
        if not self._closed:
            self._closed = True
            self.dismiss()

    def on_key(self, event: events.Key) -> None:
        event.stop()
        self.action_close()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.action_close()
