"""The idea picker: at the ideas checkpoint, pick ideas to run (in the order picked) or reject
them with single keys, instead of editing ideas.json by hand. What it returns is a set of marks;
the checkpoint answers ``edit`` with them as its picks, and the engine writes them into
ideas.json, commits them as the researcher's edit and asks again about the re-ranked round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from ..keybar import KeyBar

if TYPE_CHECKING:  # the ideas' module (pydantic answers, ~70 ms) loads when a picker opens
    from labtui.core.workspace.ideas import Idea

TITLE_CHARS = 40  # the table fits a 100-column terminal with the scores in view
MARK_SIGNS = {"chosen": ("✔ pick", "bold green"), "rejected": ("✘ reject", "red")}


class IdeaPickerScreen(ModalScreen[dict[str, str]]):
    """The round's ideas in rank order; returns {name: "chosen" | "rejected" | "proposed"} for
    the ideas whose mark changed ({} when cancelled or unchanged)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "mark('chosen')", "Pick", tooltip="Pick the idea: it runs first", id="picker.pick"),
        Binding("x", "mark('rejected')", "Reject", tooltip="Reject the idea: it never runs", id="picker.reject"),
        Binding("enter", "apply", "Apply", tooltip="Apply the marks (committed as your edit)", id="picker.apply", priority=True),
        Binding("escape", "cancel", "Cancel", tooltip="Close without changing anything", id="picker.cancel"),
    ]  # fmt: skip

    def __init__(self, ideas: list[Idea]) -> None:
        super().__init__()
        self.ideas = ideas
        self.marks = {idea.name: idea.status for idea in ideas}
        self._original = dict(self.marks)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog") as dialog:
            dialog.border_title = "Pick ideas"
            yield Static(
                "c picks (picked ideas run first, in rank order) · x rejects · "
                "again takes the mark back · enter applies",
                id="picker-help",
            )
            yield DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self._mark_column = table.add_column("mark", width=len("✘ reject"))
        table.add_columns("idea", "title", "I", "F", "N")
        for idea in self.ideas:
            table.add_row(*self._cells(idea), key=idea.name)
        table.focus()

    def _cells(self, idea: Idea) -> tuple[Text | str, ...]:
        sign, style = MARK_SIGNS.get(self.marks[idea.name], ("", ""))
        scores = (str(idea.interestingness), str(idea.feasibility), str(idea.novelty))
        title = (
            idea.title if len(idea.title) <= TITLE_CHARS else idea.title[: TITLE_CHARS - 1] + "…"
        )
        return (Text(sign, style=style), idea.name, title, *scores)

    def action_mark(self, mark: str) -> None:
        table = self.query_one(DataTable)
        if not self.ideas:
            return
        idea = self.ideas[table.cursor_row]
        # Pressing the same mark again takes it back.
        self.marks[idea.name] = "proposed" if self.marks[idea.name] == mark else mark
        table.update_cell(idea.name, self._mark_column, self._cells(idea)[0])

    def action_apply(self) -> None:
        self.dismiss({n: m for n, m in self.marks.items() if m != self._original[n]})

    def action_cancel(self) -> None:
        self.dismiss({})
