"""Screens: the four-pane main screen, the checkpoint modal, the note and help modals, and the
no-model, error and quit screens.

Screens never talk to the engine. The main screen renders what the app hands it; modals return
their answer through ``dismiss`` and the app (or the checkpoint port) does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Header, Input, Static

from labtui.core.checkpoints import WAIVE, CheckpointRequest, Decision
from labtui.core.events import Event, LogLine

from .keybar import KeyBar
from .model_help import MODEL_HELP
from .panes import DialoguePane, DiffPane, LatexPane, LogsPane, Pane, route
from .status import Clock, Progress, StatusHeader

EXIT_NO_MODEL = 2


class MainScreen(Screen[None]):
    """The status header, the 2×2 grid of live panes, and the footer with the keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Screen already binds tab/shift+tab, hidden; rebinding them here shows them in the
        # footer and gives them ids so a keymap can move them.
        Binding(
            "tab", "app.focus_next", "Next pane", tooltip="Focus the next pane", id="pane.next"
        ),
        Binding(
            "shift+tab",
            "app.focus_previous",
            "Prev pane",
            tooltip="Focus the previous pane",
            show=False,
            id="pane.previous",
        ),
        Binding(
            "m",
            "toggle_maximize",
            "Maximise",
            tooltip="Maximise the focused pane, or restore all four",
            id="pane.maximize",
        ),
        Binding(
            "n",
            "app.leave_note",
            "Note",
            tooltip="Leave a note for the agents; the next LLM call reads it",
            id="app.note",
        ),
    ]
    # Title and cost stay visible while one pane fills the screen.
    ALLOW_IN_MAXIMIZED_VIEW = "StatusHeader, KeyBar"

    class Ready(Message):
        """The panes are mounted and can render: the app may paint history and start."""

    def __init__(
        self,
        project: str,
        progress: Progress,
        clock: Clock,
        commit_log: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.project = project
        self.progress = progress
        self.clock = clock
        self.commit_log = commit_log

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.project, self.progress, self.clock, id="status")
        with Grid(id="panes"):
            yield DialoguePane(id="dialogue")
            yield DiffPane(commit_log=self.commit_log, id="diff")
            yield LogsPane(id="logs")
            yield LatexPane(id="latex")
        yield KeyBar()

    @property
    def status(self) -> StatusHeader:
        return self.query_one(StatusHeader)

    def show_pane(self, pane_type: type[Pane]) -> None:
        """Focus a pane and let it fill the screen (the command palette's "Show …")."""
        pane = self.query_one(pane_type)
        self.minimize()
        focusable = pane.query("*").filter(lambda widget: widget.focusable).first()
        focusable.focus()
        self.maximize(pane, container=False)

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


# What the researcher is asked to judge, by checkpoint kind.
KIND_TITLES: dict[str, str] = {
    "literature": "Literature review",
    "ideas": "Ideas",
    "novelty": "Novelty check",
    "plan": "Experiment plan",
    "run": "Run results",
    "plots": "Plots",
    "section": "Draft",
    "paper": "Compiled paper",
    "review": "Review",
    "stage": "Checkpoint",
}

# Opens a project file in the researcher's editor; returns an error message or "".
EditFile = Callable[[str], str]


class CheckpointScreen(ModalScreen[Decision]):
    """The pipeline waits here: approve, revise with a note, edit the product, skip or abort (and,
    at the review, improve: one more round of revising the paper by its review)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "decide('approve')",
            "Approve",
            tooltip="Approve and continue",
            id="checkpoint.approve",
        ),
        Binding(
            "r",
            "revise",
            "Revise…",
            tooltip="Revise: write a note; the stage runs again with it",
            id="checkpoint.revise",
        ),
        Binding(
            "e",
            "edit",
            "Edit",
            tooltip="Edit the product in $EDITOR; the edit is committed and used",
            id="checkpoint.edit",
        ),
        Binding(
            "s",
            "decide('skip')",
            "Skip",
            tooltip="Skip: keep what the stage made and move on",
            id="checkpoint.skip",
        ),
        Binding(
            "i",
            "decide('improve')",
            "Improve",
            tooltip="Improvement round: revise the paper by the review, recompile and review again",
            id="checkpoint.improve",
        ),
        Binding(
            "q",
            "decide('abort')",
            "Abort",
            tooltip="Abort safely; the project stays resumable",
            id="checkpoint.abort",
        ),
        Binding(
            "w",
            "waive",
            "Waive…",
            tooltip="Waive what blocks approval (numbers that match no run), with your reason",
            id="checkpoint.waive",
        ),
        Binding(
            "p",
            "pick",
            "Pick…",
            tooltip="Pick or reject ideas with single keys (at the ideas checkpoint)",
            id="checkpoint.pick",
        ),
        Binding(
            "n",
            "note",
            "Note",
            tooltip="Leave a note for the agents without deciding yet",
            id="checkpoint.note",
        ),
        Binding(
            "escape",
            "cancel_revise",
            "Back",
            tooltip="Back from the note to the checkpoint",
            id="checkpoint.back",
        ),
    ]

    revising: reactive[bool] = reactive(False, bindings=True)

    def __init__(
        self,
        request: CheckpointRequest,
        edit_file: EditFile | None = None,
        project_root: Path | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self._edit_file = edit_file
        self._project_root = project_root
        self._note_action = "revise"  # what the note input answers: a revision or a waiver

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="checkpoint-dialog") as dialog:
            dialog.border_title = KIND_TITLES.get(request.kind, KIND_TITLES["stage"])
            yield Static(Content(request.title), id="checkpoint-title")
            meta = f"checkpoint {request.checkpoint_id} · stage {request.stage}"
            if request.product and "edit" in request.options:
                meta += f" · e edits {request.product}"
            yield Static(Content(meta), id="checkpoint-meta")
            review = request.kind == "review" and "scores" in request.details
            with VerticalScroll(id="checkpoint-body"):
                if review:
                    from .review_card import ReviewCard

                    yield ReviewCard(request.details)
                else:
                    from textual.widgets import Markdown  # imported when a checkpoint first shows

                    yield Markdown(request.body)
            with Vertical(id="checkpoint-revise"):
                yield Input(placeholder="What should change?", id="checkpoint-note")
                # Input owns enter, so the footer cannot show it: say it here.
                yield Static("enter sends the note · escape goes back", id="checkpoint-revise-hint")
        yield KeyBar()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Only the options the engine offers are live, and while a note is being written the
        # single-letter keys belong to the Input (escape is the way back).
        if action == "decide":
            return not self.revising and parameters[0] in self.request.options
        if action in ("revise", "edit"):
            return not self.revising and action in self.request.options
        if action == "pick":
            return not self.revising and self._can_pick()
        if action == "waive":
            return not self.revising and WAIVE in self.request.options
        if action == "cancel_revise":
            return self.revising
        if action == "note":
            return not self.revising
        return True

    def action_note(self) -> None:
        self.app.action_leave_note()  # type: ignore[attr-defined]

    def action_decide(self, action: str) -> None:
        self.dismiss(Decision(action))

    def action_revise(self) -> None:
        self._ask_for_note("revise", "What should change?")

    def action_waive(self) -> None:
        self._ask_for_note(WAIVE, "Why may these numbers stand? (recorded with the paper)")

    def _ask_for_note(self, action: str, placeholder: str) -> None:
        self._note_action = action
        self.query_one("#checkpoint-note", Input).placeholder = placeholder
        self.revising = True

    def action_edit(self) -> None:
        """Hand the terminal to $EDITOR on the product; the engine commits the edit and asks
        again about the edited product."""
        if self._edit_file is None:
            self.notify("editing is not available here", severity="warning")
            return
        problem = self._edit_file(self.request.product)
        if problem:
            self.notify(problem, title="Could not edit", severity="error", timeout=8)
            return
        self.dismiss(Decision("edit", self.request.product))

    def action_cancel_revise(self) -> None:
        self.revising = False

    def _can_pick(self) -> bool:
        request = self.request
        return bool(
            request.kind == "ideas"
            and request.subjects
            and "edit" in request.options
            and self._project_root is not None
        )

    def action_pick(self) -> None:
        from labtui.core.errors import LabtuiError
        from labtui.core.ideas import load_archive

        from .idea_picker import IdeaPickerScreen

        try:
            archive = {idea.name: idea for idea in load_archive(self._project_root)}
        except LabtuiError as exc:
            self.notify(exc.message, title="Cannot read ideas.json", severity="error", timeout=8)
            return
        ideas = [archive[name] for name in self.request.subjects if name in archive]
        self.app.push_screen(IdeaPickerScreen(ideas), callback=self._picked)

    def _picked(self, marks: dict[str, str] | None) -> None:
        """Write the marks; the engine commits them as the researcher's edit and asks again."""
        from labtui.core.ideas import mark_ideas

        if not marks:
            return
        try:
            mark_ideas(self._project_root, marks)
        except (OSError, ValueError) as exc:
            self.notify(str(exc), title="Could not mark the ideas", severity="error", timeout=8)
            return
        self.dismiss(Decision("edit", self.request.product))

    def watch_revising(self, revising: bool) -> None:
        note = self.query_one("#checkpoint-note", Input)
        self.query_one("#checkpoint-revise").display = revising
        self.set_class(revising, "-revising")  # the note's room comes out of the body
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
        self.dismiss(Decision(self._note_action, note))


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
