"""The checkpoint modal: what a stage proposes, and the researcher's decision (approve, revise with
a note, edit the product, skip, abort; waive, improve and pick where the stage offers them; retry
after an interrupt; rewind to the stage before).

Inside a hill-climb or tree search (``kind="search"``, every ``checkpoint_every`` steps) the same
keys mean: approve goes on, revise gives the next proposals a note, skip ends the search here
(its best is the result), abort stops it (resumable); the key bar says "End search" for skip.
"""

import dataclasses
from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from labtui.core.checkpoints import WAIVE, CheckpointRequest, Decision

from ..keybar import KeyBar
from .idea_picker import IdeaPickerScreen

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
    "interrupted": "Interrupted",
    "search": "Search checkpoint",
    "stage": "Checkpoint",
}

# What skip and the note say inside a search, where skip ends the search rather than a stage.
SEARCH_SKIP = ("End search", "End the search here: its best so far is the result")
SEARCH_NOTE = "A note for the next proposals"

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
            "t",
            "decide('retry')",
            "Retry",
            tooltip="Retry: run the interrupted stage again from its start",
            id="checkpoint.retry",
        ),
        Binding(
            "b",
            "decide('rewind')",
            "Rewind",
            tooltip="Rewind: back to the commit before the stage before (the work after it is "
            "kept on a tag) and on from there",
            id="checkpoint.rewind",
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

    # Not watched at mount: the screen can be torn down (the app closing) before its children
    # exist, and the state at mount is the stylesheet's (note hidden) with the body focused.
    revising: reactive[bool] = reactive(False, bindings=True, init=False)
    AUTO_FOCUS = "#checkpoint-body"

    def __init__(
        self,
        request: CheckpointRequest,
        edit_file: EditFile | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self._edit_file = edit_file
        self._note_action = "revise"  # what the note input answers: a revision or a waiver
        if self.in_search:
            bindings = self._bindings.key_to_bindings
            description, tooltip = SEARCH_SKIP
            bindings["s"] = [
                dataclasses.replace(b, description=description, tooltip=tooltip)
                if b.action == "decide('skip')"
                else b
                for b in bindings.get("s", [])
            ]

    @property
    def in_search(self) -> bool:
        """A checkpoint inside a search (not the experiments stage's own one after it, which
        offers edit): skip ends the search."""
        return self.request.kind == "search" and "edit" not in self.request.options

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="checkpoint-dialog") as dialog:
            dialog.border_title = KIND_TITLES.get(request.kind, KIND_TITLES["stage"])
            yield Static(Content(request.title), id="checkpoint-title")
            meta = f"checkpoint {request.checkpoint_id} · stage {request.stage}"
            if request.product and "edit" in request.options:
                meta += f" · e edits {request.product}"
            yield Static(Content(meta), id="checkpoint-meta")
            with VerticalScroll(id="checkpoint-body"):
                card = None
                if request.kind == "review" and request.details:
                    # the review card reads through core's review package (~70 modules, ~0.1 s):
                    # imported when a review checkpoint first shows, not for the first paint
                    from ..review_card import review_card  # noqa: PLC0415

                    card = review_card(request.details)  # None: details that are no review
                if card is not None:
                    yield card
                else:
                    # markdown-it: imported when a checkpoint first shows, not for the first paint
                    from textual.widgets import Markdown  # noqa: PLC0415

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
        self._ask_for_note("revise", SEARCH_NOTE if self.in_search else "What should change?")

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
            and bool(request.details.get("ideas"))
        )

    def action_pick(self) -> None:
        """The picker over the ideas the checkpoint carries (the UI reads no project file)."""
        # ~70 ms of pydantic answer models that the first paint does not need
        from labtui.core.workspace.ideas import parse_idea  # noqa: PLC0415

        ideas = [parse_idea(data) for data in self.request.details["ideas"]]
        self.app.push_screen(IdeaPickerScreen(ideas), callback=self._picked)

    def _picked(self, marks: dict[str, str] | None) -> None:
        """The marks go back as the decision; the engine writes and commits them as the
        researcher's edit, and asks again."""
        if marks:
            self.dismiss(Decision("edit", picks=marks))

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
