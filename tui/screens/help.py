"""The help modal: every key, grouped by where it works."""

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keybar import KeyBar

KeyGroups = Sequence[tuple[str, Sequence[Binding]]]


class HelpScreen(ModalScreen[None]):
    """Every key of every screen and pane, grouped by where it works."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "Close", id="help.close"),
    ]

    def __init__(self, groups: KeyGroups) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog") as dialog:
            dialog.border_title = "Keys"
            yield Static(self._table(), id="help-keys")
        yield KeyBar()

    def _table(self) -> Content:
        lines: list[Content] = []
        for title, bindings in self.groups:
            if not bindings:
                continue
            if lines:
                lines.append(Content(""))
            lines.append(Content.styled(title, "bold $text-accent"))
            for binding in bindings:
                keys = ", ".join(
                    self.app.get_key_display(Binding(key, "")) for key in binding.key.split(",")
                )
                # A binding's tooltip, when it has one, says more than its footer label.
                lines.append(
                    Content.assemble(
                        (f"  {keys:<14}", "bold"), binding.tooltip or binding.description or ""
                    )
                )
        return Content("\n").join(lines)

    def action_close(self) -> None:
        self.dismiss()
