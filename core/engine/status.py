"""Where a project stands, read from its files alone (engine.json, the engine lock and the
journal): no socket, no model, fast enough for ``labtui status`` over many projects.

Only the journal lines that say where a project is (stages, checkpoints, costs) are parsed; a
line's type is read from its first bytes, so a long run's log lines cost a string compare each.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabtuiError
from ..events import CheckpointRequested, CostUpdate, Event, StageStarted, event_from_dict
from ..journal import JOURNAL_NAME, PipelineState, replay
from ..settings.config import load_config
from ..workspace.stage_results import WriteupResult
from . import files as files

WHERE_TYPES = frozenset(
    {"StageStarted", "StageFinished", "CheckpointRequested", "CheckpointDecided", "CostUpdate"}
)
TYPE_PREFIX = '{"type": "'


@dataclass(frozen=True)
class ProjectStatus:
    root: Path
    running: bool
    pid: int | None
    auto: bool
    stage: str  # the stage in progress ('' between stages or when none runs)
    next_stage: str | None  # the first stage not finished (None: every stage is done)
    waiting: str  # the title of the checkpoint waiting for an answer ('' when none)
    spent_usd: float
    budget_usd: float
    last_event_age_s: float | None
    outcome: str  # how the last engine ended ('' while one runs, or when none ever did)
    open_problems: tuple[str, ...] = ()  # what the paper still lacks (the write-up's gaps)

    @property
    def end_state(self) -> str:
        """Where a project whose every stage is done stands: done, or its paper incomplete."""
        return paper_end_state(list(self.open_problems))


def paper_open_problems(state: PipelineState) -> list[str]:
    """What the write-up found its paper still lacks and nobody accepted (its gaps)."""
    return [str(p) for p in WriteupResult.from_json(state.result("writeup")).open_problems]


def project_open_problems(root: Path) -> list[str]:
    """What the project's paper still lacks, as its journal on disk says: the app reads it when
    a run it followed (here, or in an engine) finished, for its exit status."""
    where, _ = _where_events(Path(root) / files.STATE_DIR / JOURNAL_NAME)
    return paper_open_problems(replay(where))


def paper_end_state(problems: list[str]) -> str:
    """ "every stage done", or "paper incomplete: …" naming the first open problems."""
    if not problems:
        return "every stage done"
    shown = "; ".join(problems[:3]) + (
        f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
    )
    return f"paper incomplete: {len(problems)} open problem(s): {shown}"


def project_status(root: Path, now: float | None = None) -> ProjectStatus:
    root = Path(root).resolve()
    info = files.find_engine(root)
    running = files.engine_running(root)
    where, last_ts = _where_events(root / files.STATE_DIR / JOURNAL_NAME)
    state = replay(where)
    stage, waiting = _in_progress(where)
    now = time.time() if now is None else now
    return ProjectStatus(
        root=root,
        running=running,
        pid=info.pid if info else None,
        auto=info.auto if info else False,
        stage=stage if running else "",
        next_stage=state.next_stage,
        waiting=waiting if running else "",
        spent_usd=state.total_cost_usd,
        budget_usd=_budget(root, where),
        last_event_age_s=None if last_ts is None else max(0.0, now - last_ts),
        outcome="" if running else str(files.read_last_outcome(root).get("outcome", "")),
        open_problems=tuple(paper_open_problems(state)),
    )


def _where_events(journal: Path) -> tuple[list[Event], float | None]:
    """The journal's events that say where the project is, and the time of its last event."""
    try:
        lines = journal.read_text(encoding="utf-8").splitlines()
    except OSError:
        return [], None
    events: list[Event] = []
    for line in lines:
        if not line.startswith(TYPE_PREFIX):
            continue
        kind = line[len(TYPE_PREFIX) : line.find('"', len(TYPE_PREFIX))]
        if kind in WHERE_TYPES and (event := _parse(line)) is not None:
            events.append(event)
    last = next((e for line in reversed(lines) if (e := _parse(line)) is not None), None)
    return events, last.ts if last else None


def _parse(line: str) -> Event | None:
    try:
        return event_from_dict(json.loads(line))
    except (json.JSONDecodeError, ValueError, TypeError):
        return None  # a torn line: status reads past it


def _in_progress(events: list[Event]) -> tuple[str, str]:
    """The stage started and not yet finished, and the checkpoint asked and not yet answered
    (as of the journal's end)."""
    stage = waiting = ""
    for event in events:
        if isinstance(event, StageStarted):
            stage, waiting = event.stage, ""
        elif isinstance(event, CheckpointRequested):
            waiting = event.title
        elif not isinstance(event, CostUpdate):  # a decision, or the stage finished
            waiting = ""
            stage = "" if event.type == "StageFinished" else stage
    return stage, waiting


def _budget(root: Path, events: list[Event]) -> float:
    try:
        return load_config(root).budget.usd
    except (LabtuiError, OSError, ValueError):
        costs = [e for e in events if isinstance(e, CostUpdate)]
        return costs[-1].budget_usd if costs else 0.0
