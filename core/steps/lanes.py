"""Several ideas at once (``[experiment] parallel`` or ``labtui run --parallel K``).

The chosen idea runs in the project itself, with the researcher's checkpoints. Each other idea
runs beside it in a *lane*: a git worktree under ``.labtui/worktrees/<idea>`` on branch
``labtui/idea/<idea>``, with its own plan, runs, notebook and tags, so its results stay apart
and any of them can be checked out later. Every run leases free GPUs from the one pool of the
process, so lanes queue when GPUs are scarce and never share one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from ..errors import Aborted, BudgetExceeded, LabtuiError
from ..workspace.ideas import Idea
from ..workspace.project import Project

WORKTREES = "worktrees"
FORK_TAG = "labtui/experiments/start"  # where every lane starts: before any idea's runs

T = TypeVar("T")


def lane_branch(idea: str) -> str:
    return f"labtui/idea/{idea}"


def lane_ideas(archive: list[Idea], ranked: list[str], chosen: str, count: int) -> list[Idea]:
    """The ``count`` best-ranked ideas to run beside ``chosen``; ideas judged not novel are left
    out (the researcher can still choose one by editing ideas.json at a checkpoint)."""
    by_name = {idea.name: idea for idea in archive}
    picks = [
        by_name[name]
        for name in dict.fromkeys(ranked)
        if name in by_name and name != chosen and by_name[name].status != "not_novel"
    ]
    return picks[: max(0, count)]


def mark_fork_point(project: Project) -> str:
    """Tag the commit the experiments start from, once: lanes made later (after a revision or a
    resume) still start from the template and the baseline, not from the chosen idea's code."""
    if not project.has_ref(f"refs/tags/{FORK_TAG}"):
        project.tag(FORK_TAG, "experiments start here; parallel ideas branch from this commit")
    return FORK_TAG


def open_lane(project: Project, idea: str) -> Project:
    folder = project.state_dir / WORKTREES / idea
    folder.parent.mkdir(parents=True, exist_ok=True)
    return project.worktree(folder, lane_branch(idea), mark_fork_point(project))


@dataclass
class IdeaRuns:
    """The runs one idea has finished so far (kept when it fails half-way)."""

    means: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> its means
    last_edit: Any = None
    last_review: Any = None  # run_analysis.RunReview of the last run
    abandoned: dict[str, str] = field(default_factory=dict)  # run id -> why it was given up


@dataclass
class LaneOutcome:
    idea: str
    status: str  # done | failed | stopped
    branch: str
    worktree: str
    runs: dict[str, dict[str, Any]]  # run id -> its means
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_alongside(
    main: Callable[[], T], lanes: dict[str, Callable[[], Any]], stop: threading.Event
) -> tuple[T, dict[str, BaseException | None]]:
    """Run ``main`` here and every lane in a thread of its own, all at once. When ``main`` ends
    normally the lanes are waited for; when it raises (abort, budget, failure) ``stop`` tells
    the lanes to end now, and they are waited for before the exception goes on, so no lane is
    left editing or running behind the pipeline's back. Returns main's value and, per lane,
    the exception it ended with (None when it finished)."""
    if not lanes:
        return main(), {}
    with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="labtui-lane") as pool:
        futures = {name: pool.submit(job) for name, job in lanes.items()}
        try:
            value = main()
        except BaseException:
            stop.set()
            raise
        finally:
            ended = {name: future.exception() for name, future in futures.items()}
    return value, ended


def outcome(lane: Project, idea: str, runs: IdeaRuns, error: BaseException | None) -> LaneOutcome:
    """What became of one lane, in words a researcher can act on."""
    if error is None:
        status, problem = "done", ""
    elif isinstance(error, Aborted | BudgetExceeded):
        status, problem = "stopped", error.message
    elif isinstance(error, LabtuiError):
        status, problem = (
            "failed",
            f"{error.message} ({error.hint})" if error.hint else error.message,
        )
    else:  # a bug must not lose the other ideas' work: report it with this lane
        status, problem = "failed", f"internal error: {error!r}"
    return LaneOutcome(
        idea=idea,
        status=status,
        branch=lane_branch(idea),
        worktree=str(lane.root),
        runs=dict(runs.means),
        problem=problem,
    )


def comparison_markdown(
    baseline: dict[str, dict[str, Any]], finals: dict[str, dict[str, dict[str, Any]]]
) -> str:
    """One row per idea (its last run's means), one column per baseline metric."""
    columns = [(d, m) for d, values in baseline.items() for m in values][:6]
    if not columns or not finals:
        return ""
    header = "| idea | " + " | ".join(f"{d} {m}" for d, m in columns) + " |"
    rows = [header, "|---" * (len(columns) + 1) + "|"]
    rows.append("| baseline (run_0) | " + " | ".join(_cell(baseline, c) for c in columns) + " |")
    for idea, means in finals.items():
        rows.append(f"| {idea} | " + " | ".join(_cell(means, c) for c in columns) + " |")
    return "\n".join(rows)


def _cell(means: dict[str, dict[str, Any]], column: tuple[str, str]) -> str:
    value = means.get(column[0], {}).get(column[1])
    if value is None:
        return "—"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
