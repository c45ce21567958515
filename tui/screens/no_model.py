"""The screen shown when no model can answer yet: labtui's own local model offered (what setting
it up does, with sizes and times; ``l`` sets it up with a progress bar per step and then starts
the pipeline), or how to configure another."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Header, ProgressBar, Static

from labtui.core.errors import LabtuiError

from ..keybar import KeyBar
from ..model_help import MODEL_HELP
from ..model_progress import sized

if TYPE_CHECKING:
    from labtui.core.local_model.manage import LocalOffer
    from labtui.core.local_model.progress import Progress

    from ..session import Session

EXIT_NO_MODEL = 2


@dataclass(frozen=True)
class ModelCheck:
    """What the app learns before it starts: what keeps the models from answering, and labtui's
    own model offered where setting it up would help."""

    problems: list[str]
    offer: "LocalOffer | None" = None

    @classmethod
    def of(cls, session: "Session") -> "ModelCheck":
        problems = session.model_problems()
        return cls(problems, session.local_model_offer() if problems else None)


class NoModelScreen(Screen[bool]):
    """Shown instead of starting the pipeline when no model can answer. Dismissed with True once
    the local model is set up (the app then starts the pipeline)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "set_up_local", "Use the local model", id="no_model.local"),
        Binding("q", "quit_no_model", "Quit", id="no_model.quit"),
    ]

    def __init__(self, problems: Sequence[str], offer: "LocalOffer | None" = None) -> None:
        super().__init__()
        # the offer says what setting the local model up does: its problem need not be said too
        said = offer.problem if offer is not None else None
        self.problems = [problem for problem in problems if problem != said]
        self.offer = offer
        self._steps: dict[str, tuple[Static, ProgressBar | None]] = {}
        self._setting_up = False

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="no-model"):
            title = "No model set up yet" if self.offer else "No model configured"
            yield Static(title, id="no-model-title")
            yield Static(
                Content("\n".join(f"✘ {problem}" for problem in self.problems)),
                id="no-model-problems",
            )
            yield Static(
                "Nothing is lost: the project is saved and the baseline run (run_0) is done.",
                id="no-model-saved",
            )
            if self.offer is not None:
                yield Static(Content(_offer_text(self.offer)), id="no-model-offer")
                yield Vertical(id="no-model-progress")
            # The same text the headless CLI prints, so the two never disagree.
            yield Static(Content(MODEL_HELP), id="no-model-help")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#no-model-problems").display = bool(self.problems)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "set_up_local":
            return self.offer is not None and not self._setting_up
        return True

    def action_quit_no_model(self) -> None:
        self.app.exit(return_code=EXIT_NO_MODEL)

    def action_set_up_local(self) -> None:
        if self.offer is None or self._setting_up:
            return
        self._setting_up = True
        self.refresh_bindings()
        self.query_one("#no-model-title", Static).update(f"Setting up {self.offer.title}")
        self._set_up(self.offer)

    @work(thread=True, exclusive=True, exit_on_error=False, group="local-model")
    def _set_up(self, offer: "LocalOffer") -> None:
        try:
            offer.set_up(lambda step: self.app.call_from_thread(self.show_progress, step))
        except LabtuiError as error:
            self.app.call_from_thread(self._failed, error)
            return
        self.app.call_from_thread(self.dismiss, True)

    def show_progress(self, step: "Progress") -> None:
        """One step's progress: a bar for what has a size, elapsed seconds for a build."""
        shown = self._steps.get(step.step)
        if shown is None:
            label = Static(classes="no-model-step")
            bar = ProgressBar(total=step.total, show_eta=False) if step.unit == "B" else None
            self.query_one("#no-model-progress", Vertical).mount_all(
                [label] if bar is None else [label, bar]
            )
            shown = self._steps[step.step] = (label, bar)
        label, bar = shown
        if bar is not None:
            bar.update(total=step.total, progress=step.done)
            label.update(Content(f"{step.step}  {sized(step)}"))
        else:
            label.update(Content(f"{step.step}  {step.done:.0f} s  {step.detail[-70:]}"))

    def _failed(self, error: LabtuiError) -> None:
        self._setting_up = False
        self.refresh_bindings()
        self.query_one("#no-model-title", Static).update("Could not set up the local model")
        problems = self.query_one("#no-model-problems", Static)
        problems.update(Content(f"✘ {error}"))
        problems.display = True


def _offer_text(offer: "LocalOffer") -> str:
    steps = "\n".join(f"    · {step}" for step in offer.todo)
    return (
        f"Press l to use labtui's own local model, {offer.title}: it runs on this machine "
        f"and nothing leaves it. Setting it up will\n{steps}\n"
        "Or configure another model as below, then run labtui again."
    )
