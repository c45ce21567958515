"""The screen shown when no model is configured: how to configure one."""

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Header, Static

from ..keybar import KeyBar
from ..model_help import MODEL_HELP

EXIT_NO_MODEL = 2


class NoModelScreen(Screen[None]):
    """Shown instead of starting the pipeline when no usable model is configured."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_no_model", "Quit", id="no_model.quit"),
    ]

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__()
        self.problems = list(problems)

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="no-model"):
            yield Static("No model configured", id="no-model-title")
            yield Static(
                Content("\n".join(f"✘ {problem}" for problem in self.problems)),
                id="no-model-problems",
            )
            yield Static(
                "Nothing is lost: the project is saved and the baseline run (run_0) is done.",
                id="no-model-saved",
            )
            # The same text the headless CLI prints, so the two never disagree.
            yield Static(Content(MODEL_HELP), id="no-model-help")
        yield KeyBar()

    def action_quit_no_model(self) -> None:
        self.app.exit(return_code=EXIT_NO_MODEL)
