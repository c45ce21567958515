"""Screens: the four-pane main screen, the checkpoint modal, and the no-model and error screens.

Screens never talk to the engine. The main screen renders what the app hands it; modals return
their answer through ``dismiss`` and the app (or the checkpoint port) does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Input, Markdown, Static

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import Event, LogLine

from .model_help import MODEL_HELP
from .panes import DialoguePane, DiffPane, LatexPane, LogsPane, Pane, route

EXIT_NO_MODEL = 2


class MainScreen(Screen[None]):
    """Header, the 2×2 grid of live panes, and the footer with the keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Screen already binds tab/shift+tab, hidden; rebinding them here shows them in the
        # footer and gives them ids so a keymap can move them.
        Binding("tab", "app.focus_next", "Next pane", id="pane.next"),
        Binding("shift+tab", "app.focus_previous", "Prev pane", id="pane.previous"),
        Binding("m", "toggle_maximize", "Maximise", id="pane.maximize"),
    ]
    # Title and cost stay visible while one pane fills the screen.
    ALLOW_IN_MAXIMIZED_VIEW = "Header, Footer"

    class Ready(Message):
        """The panes are mounted and can render: the app may paint history and start."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Grid(id="panes"):
            yield DialoguePane(id="dialogue")
            yield DiffPane(id="diff")
            yield LogsPane(id="logs")
            yield LatexPane(id="latex")
        yield Footer()

    def on_mount(self) -> None:
        # Routing runs for every event: look the panes up once, not per event.
        self.panes: list[Pane] = list(self.query(Pane))
        # A screen's Mount runs after all its descendants are mounted; the App's own Mount can
        # run before the panes' inner widgets exist, so the app waits for this message instead.
        self.post_message(self.Ready())

    @property
    def dialogue(self) -> DialoguePane:
        return self.query_one(DialoguePane)

    def apply(self, event: Event) -> None:
        route(self.panes, event)

    def write_log_lines(self, lines: Sequence[LogLine]) -> None:
        self.query_one(LogsPane).write_log_lines(lines)

    def action_toggle_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.focused_pane
        if pane is not None:
            # Maximise the pane itself (not its inner scroller, which Textual's containers
            # refuse to maximise anyway): the maximised view keeps the title and status lines.
            self.maximize(pane, container=False)

    @property
    def focused_pane(self) -> Pane | None:
        focused = self.focused
        if focused is None:
            return None
        return next((node for node in focused.ancestors_with_self if isinstance(node, Pane)), None)


class CheckpointScreen(ModalScreen[Decision]):
    """The pipeline waits here for the researcher: approve, revise with a note, skip or abort."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide('approve')", "Approve", id="checkpoint.approve"),
        Binding("r", "revise", "Revise…", id="checkpoint.revise"),
        Binding("s", "decide('skip')", "Skip", id="checkpoint.skip"),
        Binding("q", "decide('abort')", "Abort", id="checkpoint.abort"),
        Binding("escape", "cancel_revise", "Back", id="checkpoint.back"),
    ]

    revising: reactive[bool] = reactive(False, bindings=True)

    def __init__(self, request: CheckpointRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="checkpoint-dialog"):
            yield Static(Content(self.request.title), id="checkpoint-title")
            yield Static(
                Content(f"checkpoint {self.request.checkpoint_id} · stage {self.request.stage}"),
                id="checkpoint-meta",
            )
            with VerticalScroll(id="checkpoint-body"):
                yield Markdown(self.request.body)
            with Vertical(id="checkpoint-revise"):
                yield Input(placeholder="What should change?", id="checkpoint-note")
                # Input owns enter, so the footer cannot show it: say it here.
                yield Static("enter sends the note · escape goes back", id="checkpoint-revise-hint")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Only the options the engine offers are live, and while a note is being written the
        # single-letter keys belong to the Input (escape is the way back).
        if action == "decide":
            return not self.revising and parameters[0] in self.request.options
        if action == "revise":
            return not self.revising and "revise" in self.request.options
        if action == "cancel_revise":
            return self.revising
        return True

    def action_decide(self, action: str) -> None:
        self.dismiss(Decision(action))

    def action_revise(self) -> None:
        self.revising = True

    def action_cancel_revise(self) -> None:
        self.revising = False

    def watch_revising(self, revising: bool) -> None:
        note = self.query_one("#checkpoint-note", Input)
        self.query_one("#checkpoint-revise").display = revising
        if revising:
            note.focus()
        else:
            note.value = ""
            note.remove_class("-invalid")
            self.query_one("#checkpoint-body").focus()

    @on(Input.Submitted, "#checkpoint-note")
    def submit_note(self, event: Input.Submitted) -> None:
        note = event.value.strip()
        if not note:
            # A revision without a note gives the agents nothing to act on.
            event.input.add_class("-invalid")
            return
        self.dismiss(Decision("revise", note))


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
        yield Footer()

    def action_quit_no_model(self) -> None:
        self.app.exit(return_code=EXIT_NO_MODEL)


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
        yield Footer()

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


class ConfirmQuitScreen(ModalScreen[bool]):
    """Asked before quitting while the pipeline runs: stopping is cooperative, not a kill."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Stop and quit", id="quit.confirm"),
        Binding("n,escape", "answer(False)", "Keep running", id="quit.cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-dialog"):
            yield Static("Stop the pipeline and quit?", id="quit-title")
            yield Static(
                "The pipeline stops at its next safe point. Everything so far is in the "
                "journal; run labtui again to resume.",
                id="quit-message",
            )
        yield Footer()

    def action_answer(self, stop: bool) -> None:
        self.dismiss(stop)
