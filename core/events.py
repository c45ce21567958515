"""Typed events: the only way the engine talks outward, and the bus that carries them.

Every event is a frozen dataclass with a stable ``type`` name so that it survives a round trip
through the journal (``to_dict`` / ``event_from_dict``). Front ends subscribe to the bus; the
journal is always the first subscriber, so what a front end sees has already been recorded.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # named for the checker only: the vocabulary imports nothing of labtui
    from .workspace.project import CommitInfo

# Every event class by name, for rebuilding events from the journal.
EVENT_TYPES: dict[str, type[Event]] = {}


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event. ``stage`` is the stage that produced it ('' for project-level)."""

    stage: str = ""
    ts: float = field(default_factory=time.time)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        EVENT_TYPES[cls.__name__] = cls

    @property
    def type(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **dataclasses.asdict(self)}


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its journal form; unknown fields are ignored (older journals)."""
    data = dict(data)
    cls = EVENT_TYPES.get(data.pop("type", ""))
    if cls is None:
        raise ValueError(f"unknown event type in journal: {data!r:.120}")
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, kw_only=True)
class StageStarted(Event):
    # The commit HEAD was on as the stage began: where a rewind to this stage returns the
    # project. '' in journals written before labtui recorded it (core/workspace/rewind.py then finds it).
    head: str = ""


@dataclass(frozen=True, kw_only=True)
class StageFinished(Event):
    status: str = "done"  # done | failed | skipped | aborted
    summary: str = ""
    result: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class AgentMessage(Event):
    role: str
    text: str


@dataclass(frozen=True, kw_only=True)
class AgentChunk(Event):
    """A piece of a message still being streamed; the whole AgentMessage follows."""

    role: str
    text: str


@dataclass(frozen=True, kw_only=True)
class CodeDiff(Event):
    commit: str
    message: str
    files: list[str]
    diff: str

    @classmethod
    def from_commit(cls, stage: str, commit: CommitInfo) -> CodeDiff:
        """From a project commit."""
        return cls(
            stage=stage,
            commit=commit.sha,
            message=commit.message,
            files=list(commit.files),
            diff=commit.diff,
        )


@dataclass(frozen=True, kw_only=True)
class LogLine(Event):
    run_id: str
    stream: str  # stdout | stderr
    text: str


class MetricPointData(TypedDict):
    """One point of a MetricsReported event (core.machine.metric_lines.MetricPoint as the journal keeps it)."""

    values: dict[str, float]
    step: float | None
    step_name: str
    total: float | None
    group: str


@dataclass(frozen=True, kw_only=True)
class MetricsReported(Event):
    """The metrics a run's output reported (core.machine.metric_lines reads them from its lines)."""

    run_id: str
    points: list[MetricPointData]


@dataclass(frozen=True, kw_only=True)
class GpuSample(Event):
    """One sample of every GPU: dicts with index, name, util, mem_used_mb, mem_total_mb, temp_c."""

    gpus: list[dict[str, Any]]
    host: str = ""  # the compute node that read them ('': this machine)
    job_id: str = ""  # the cluster job on that node whose GPUs they are


@dataclass(frozen=True, kw_only=True)
class JobState(Event):
    """Where a run's cluster job stands, said when it changes: Slurm's state (PENDING, RUNNING,
    COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, ...), its reason while it waits, the
    node it runs on and how long it has run. ``reattached``: a resumed session found the job
    it had submitted before, instead of submitting the run again."""

    run_id: str
    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    elapsed_s: float = 0.0
    reattached: bool = False


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    """A run begins: run ``index`` of ``total`` planned in this stage (the baseline is 0 of 0)."""

    run_id: str
    index: int = 0
    total: int = 0
    command: str = ""


@dataclass(frozen=True, kw_only=True)
class RunFinished(Event):
    run_id: str
    returncode: int
    wall_s: float
    means: dict[str, Any] = field(default_factory=dict)
    error_tail: str = ""
    timed_out: bool = False


@dataclass(frozen=True, kw_only=True)
class LatexUpdated(Event):
    path: str
    text: str
    # Every \\includegraphics target of the draft: {"path": str, "exists": bool}.
    figures: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class CompileResult(Event):
    ok: bool
    pdf: str = ""
    pages: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class CostUpdate(Event):
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    stage_tokens_in: int
    stage_tokens_out: int
    stage_cost_usd: float
    total_cost_usd: float
    budget_usd: float
    # The call's timing, when it was measured (0 when not): seconds until the first token
    # arrived (prompt processing, on a local server) and for the whole call.
    first_token_s: float = 0.0
    seconds: float = 0.0

    @property
    def prompt_tps(self) -> float:
        """Prompt tokens read per second (0 when not measured)."""
        return self.tokens_in / self.first_token_s if self.first_token_s > 0 else 0.0

    @property
    def output_tps(self) -> float:
        """Tokens written per second after the first one (0 when not measured)."""
        writing = self.seconds - self.first_token_s
        return self.tokens_out / writing if writing > 0 and self.tokens_out else 0.0


@dataclass(frozen=True, kw_only=True)
class CheckpointRequested(Event):
    checkpoint_id: str
    title: str
    body: str
    options: list[str] = field(default_factory=lambda: ["approve", "revise", "skip", "abort"])
    kind: str = "stage"  # what is judged: ideas | novelty | plan | run | plots | section | review
    product: str = ""  # the file (relative to the project) that `edit` opens; "" if none
    subjects: list[str] = field(default_factory=list)  # what may be picked in it (idea names)
    details: dict[str, Any] = field(default_factory=dict)  # structured facts (a review's scores)


@dataclass(frozen=True, kw_only=True)
class CheckpointDecided(Event):
    checkpoint_id: str
    action: str  # approve | revise | edit | skip | abort
    note: str = ""
    # An edit given as marks of the checkpoint's subjects (idea name -> "chosen" | "rejected"):
    # the engine applies them, so a front end never writes a project file.
    picks: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ResearcherNote(Event):
    """A note the researcher left at any time; the next LLM call of the pipeline sees it."""

    text: str


@dataclass(frozen=True, kw_only=True)
class Notice(Event):
    """Something the researcher should read that is not an error (e.g. running without a sandbox)."""

    text: str


@dataclass(frozen=True, kw_only=True)
class Refused(Event):
    """labtui refused what a model produced, and why: an edit (before it touched the files), a
    structured answer (asked again), a claim that the computed effects contradict, or a run of
    code that was already run. The dialogue pane, the headless printer and the journal show it."""

    what: str  # edit | answer | claim | run
    reason: str
    subject: str = ""  # the file, the record or the run it concerns


@dataclass(frozen=True, kw_only=True)
class RunAbandoned(Event):
    """A planned run that failed every fix attempt: its code was reverted to the last good
    commit, the failure is in notes.md, and the stage goes on with the next planned run."""

    run_id: str
    attempts: int
    problem: str
    reverted_to: str = ""  # the commit whose code was restored


@dataclass(frozen=True, kw_only=True)
class SearchStarted(Event):
    """A hill-climb or tree search begins (or goes on after a resume): what it improves, which
    way, the noise a change must beat, and the baseline it starts from."""

    strategy: str  # climb | tree
    idea: str
    metric: str  # "dataset.metric" as final_info.json has it
    direction: str  # higher | lower
    baseline: float
    noise: float  # a change must beat the best by more than this (0: any strict improvement)
    run_budget_s: float
    limit: int  # attempts or nodes at most
    ledger: str  # the ledger's TSV, relative to the project
    branch: str  # labtui/climb/<idea>, or the prefix of labtui/tree/<idea>/node-<n>


@dataclass(frozen=True, kw_only=True)
class SearchStep(Event):
    """One attempt of a hill-climb or one node of a tree search, judged and written to the
    ledger: the logs pane's ledger view, the headless printer and notifications read it."""

    strategy: str  # climb | tree
    step: int  # the attempt's or node's number (its run is run_<step>)
    status: str  # climb: keep | discard | crash; tree: ok | buggy
    description: str
    value: float | None = None  # the metric as the run reported it (None: it reported none)
    best: float | None = None  # the best value after this step
    new_best: bool = False
    run_id: str = ""
    commit: str = ""  # the code's commit (kept on the branch, or only in the ledger's diff)
    parent: int = 0  # tree: the node it was made from (0: a root draft from the project's code)
    action: str = ""  # tree: draft | debug | improve; climb: ''
    problem: str = ""  # why it crashed or is buggy
    wall_s: float = 0.0
    tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class SearchEnded(Event):
    """A search ended: why, and the result the paper is written from (the best code's mean over
    its seed runs when there were any)."""

    strategy: str
    reason: str  # what ended it, in words ("100 attempts", "10 hours", "stopped by you")
    steps: int
    best_step: int  # 0: nothing beat the baseline
    best: float
    seed_mean: float | None = None
    seed_std: float | None = None
    seed_runs: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # status -> how many


@dataclass(frozen=True, kw_only=True)
class Rewound(Event):
    """The project went back to the commit before ``stage`` started (``to_commit``); the work
    after it is kept on the tag ``kept_as`` ('' when there was none). Replay forgets ``stage``
    and every stage after it, with their decisions; ``note`` (the researcher's reason, if any)
    reaches the stage's next attempt. ``stage`` is the stage returned to."""

    to_commit: str
    kept_as: str = ""
    from_commit: str = ""  # HEAD before the rewind (the tip of ``kept_as``)
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class StageInterrupted(Event):
    """The researcher interrupted the stage's work (Escape): ``what`` was stopped (an LLM call,
    a run); a checkpoint asks how to go on. Everything committed before stays."""

    what: str = ""


@dataclass(frozen=True, kw_only=True)
class PipelineEnded(Event):
    """A session's pipeline ended: ``outcome`` is finished, stopped or failed."""

    outcome: str


@dataclass(frozen=True, kw_only=True)
class EstimateMade(Event):
    """What the rest of the run is expected to take (core/estimate/): made before the first
    model call, at the plan's checkpoint and after each stage. ``text`` is the table with its
    inputs named; ``remaining_s`` and ``spread_s`` the time left, from ``ts``, for an ETA
    (both 0 where a model's speed is unknown); ``stages`` its stages as plain records."""

    text: str
    remaining_s: float = 0.0
    spread_s: float = 0.0
    stages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class EstimateChecked(Event):
    """At a pipeline's end: the estimate made before the run against what each stage spent."""

    text: str


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(Event):
    message: str
    hint: str = ""


Subscriber = Callable[[Event], None]


class Bus:
    """Delivers events to subscribers in subscription order. Thread-safe; never drops events."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, event: Event) -> None:
        with self._lock:
            for subscriber in list(self._subscribers):
                subscriber(event)
