"""The status header: project, the stage bar, run n of N, elapsed time, the estimated end (ETA),
tokens, the model's speed, spend and model.

``Progress`` keeps what the header shows and is updated from engine events (the journal's on
replay, then the live ones), so a reopened project shows where it stands before anything runs.
The clock is injected: the app passes ``time.monotonic``; tests and screenshots pass a fixed one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from labtui.core.estimate.render import duration
from labtui.core.events import (
    CostUpdate,
    EstimateMade,
    Event,
    PipelineEnded,
    RunStarted,
    StageFinished,
    StageStarted,
)
from labtui.core.llm.streaming import speed_words
from labtui.core.stage_list import STAGES

Clock = Callable[[], float]

# How each stage state looks in the bar; "pending" stages are dim.
STAGE_MARKS: dict[str, tuple[str, str]] = {
    "pending": ("·", "$text-muted"),
    "running": ("▶", "bold $text-accent"),
    "done": ("✔", "$text-success"),
    "skipped": ("↷", "$text-muted"),
    "failed": ("✘", "bold $text-error"),
    "aborted": ("■", "$text-warning"),
}


@dataclass
class Progress:
    """Where the pipeline stands, as far as the events tell."""

    budget_usd: float | None = None  # None until the session's facts are read
    models: Mapping[str, str] = field(default_factory=dict)
    stages: dict[str, str] = field(default_factory=lambda: dict.fromkeys(STAGES, "pending"))
    current: str = ""
    run_id: str = ""
    run_index: int = 0
    run_total: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    phase: str = ""
    # The model's speed in the last call whose timing was measured (0: none measured yet):
    # prompt tokens read per second, and tokens written per second.
    prompt_tps: float = 0.0
    output_tps: float = 0.0
    # When the last estimate expects the pipeline to end (time.time(); 0: not known) and how
    # far either way.
    eta: float = 0.0
    eta_spread_s: float = 0.0

    def apply(self, event: Event) -> bool:
        """Take what the header shows from ``event``; True when something changed."""
        if isinstance(event, StageStarted):
            self.current = event.stage
            self.stages[event.stage] = "running"
            self.run_id, self.run_index, self.run_total = "", 0, 0
        elif isinstance(event, StageFinished):
            self.stages[event.stage] = event.status
        elif isinstance(event, RunStarted):
            self.run_id, self.run_index, self.run_total = event.run_id, event.index, event.total
        elif isinstance(event, EstimateMade):
            self.eta = event.ts + event.remaining_s if event.remaining_s > 0 else 0.0
            self.eta_spread_s = event.spread_s
        elif isinstance(event, PipelineEnded):
            self.eta = 0.0  # nothing runs to an end: a replayed ETA would be a stale time
        elif isinstance(event, CostUpdate):
            self.tokens += event.tokens_in + event.tokens_out
            self.cost_usd = event.total_cost_usd
            self.budget_usd = event.budget_usd or self.budget_usd
            if event.first_token_s > 0:
                self.prompt_tps, self.output_tps = event.prompt_tps, event.output_tps
        else:
            return False
        return True

    @property
    def model(self) -> str:
        return self.models.get(self.current, "") if self.current else ""


def format_elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}"


def speed_text(progress: Progress) -> str:
    """'in 31 tok/s · out 9.8 tok/s' for the last measured call, '' before any."""
    return speed_words(progress.prompt_tps, progress.output_tps)


def eta_text(progress: Progress) -> str:
    """'ETA 21:40, ±15 min' (local time) from the last estimate; '' when none is known."""
    if not progress.eta:
        return ""
    finish = time.strftime("%H:%M", time.localtime(progress.eta))
    return f"ETA {finish}, ±{duration(progress.eta_spread_s)}"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.1f}k"
    return str(tokens)


# Where the whole bar is wider than the header, the stages not running take these names.
SHORT_NAMES = {"literature": "lit", "experiments": "exp", "writeup": "write", "compile": "tex"}


def stage_bar(progress: Progress, width: int = 78) -> Content:
    """'✔ lit ✔ ideas ✔ novelty ✔ plan ▶ experiments · plots …', the running stage highlighted.

    The marks separate the stages; where the full names do not fit in ``width`` columns, the
    stages other than the running one are shortened, so the pipeline fits in 80 columns."""
    bar = _stage_bar(progress, short=False)
    return bar if bar.cell_length <= width else _stage_bar(progress, short=True)


def _stage_bar(progress: Progress, *, short: bool) -> Content:
    parts = []
    for stage, state in progress.stages.items():
        mark, style = STAGE_MARKS.get(state, STAGE_MARKS["pending"])
        name = stage
        if stage == progress.current and state == "running":
            style = "bold reverse $text-accent"
        elif short:
            name = SHORT_NAMES.get(stage, stage)
        parts.append(Content.styled(f"{mark} {name}", style))
    return Content(" ").join(parts)


def summary_line(project: str, progress: Progress, elapsed_s: float) -> Content:
    """Project, stage, run n of N, elapsed, tokens, speed (once measured), spend against budget,
    model."""
    parts = [Content.styled(project, "bold")]
    if progress.run_total:
        parts.append(Content(f"run {progress.run_index} of {progress.run_total}"))
    elif progress.run_id:
        parts.append(Content(progress.run_id))
    parts.append(Content(f"elapsed {format_elapsed(elapsed_s)}"))
    if eta := eta_text(progress):
        parts.append(Content(eta))
    parts.append(Content(f"{format_tokens(progress.tokens)} tok"))
    if speed := speed_text(progress):
        parts.append(Content.styled(speed, "$text-muted"))
    budget = progress.budget_usd
    spend = f"${progress.cost_usd:.2f}" + (f" / ${budget:.2f}" if budget is not None else "")
    over = budget and progress.cost_usd >= 0.8 * budget
    parts.append(Content.styled(spend, "bold $text-warning" if over else ""))
    if progress.model:
        parts.append(Content.styled(progress.model, "$text-muted"))
    if progress.phase:
        parts.append(Content.styled(progress.phase, "italic $text-secondary"))
    return Content(" │ ").join(parts)


class StatusHeader(Vertical):
    """Two lines at the top of the main screen; ticks once a second for the elapsed time."""

    DEFAULT_CSS = """
    StatusHeader {
        height: 2;
        background: $panel;
        padding: 0 1;
    }
    StatusHeader Static {
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, project: str, progress: Progress, clock: Clock, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.project = project
        self.progress = progress
        self._clock = clock
        self._started = clock()

    def compose(self) -> ComposeResult:
        yield Static(id="status-summary")
        yield Static(id="status-stages")

    def on_mount(self) -> None:
        self.refresh_status()
        self.set_interval(1.0, self._tick, name="elapsed-clock")

    def _tick(self) -> None:
        # Fixed one-line widgets: a tick must not cost a layout of the whole screen.
        self.query_one("#status-summary", Static).update(self._summary(), layout=False)

    def _summary(self) -> Content:
        return summary_line(self.project, self.progress, self._clock() - self._started)

    def refresh_status(self) -> None:
        self._tick()
        width = self.content_size.width or 78
        self.query_one("#status-stages", Static).update(
            stage_bar(self.progress, width), layout=False
        )

    def on_resize(self) -> None:
        self.refresh_status()
