"""What a project's journal says an estimate needs: per stage, the calls, tokens, model seconds,
refused replies and wall time spent so far, and which stages are done.

A stage's wall time runs from its start to its end, less the time a checkpoint waited for the
researcher (that is their time, not the pipeline's). ``read_estimate_events`` reads only the
journal lines these need, by their type's first bytes, so an estimate of a long run's project
is quick.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..events import (
    CheckpointDecided,
    CheckpointRequested,
    CostUpdate,
    Event,
    Refused,
    StageFinished,
    StageStarted,
    event_from_dict,
)
from ..journal import JOURNAL_NAME, replay
from ..workspace.project import STATE_DIR

ESTIMATE_TYPES = frozenset(
    {
        "StageStarted",
        "StageFinished",
        "CostUpdate",
        "Refused",
        "CheckpointRequested",
        "CheckpointDecided",
        "Rewound",
        "EstimateMade",
    }
)
TYPE_PREFIX = '{"type": "'


@dataclass
class StageActual:
    """What one stage spent, over every attempt the journal holds."""

    stage: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float = 0.0
    model_s: float = 0.0
    refused: int = 0
    wall_s: float = 0.0


@dataclass
class History:
    """The journal's facts: per stage what it spent, the stages done (or skipped), and the
    stage under way with when it (re)started."""

    stages: dict[str, StageActual] = field(default_factory=dict)
    done: tuple[str, ...] = ()
    running: str = ""
    running_since: float = 0.0

    @property
    def calls(self) -> int:
        return sum(actual.calls for actual in self.stages.values())

    def spent_s(self, now: float) -> float:
        """The pipeline's working time over every session: its stages' wall time, the stage
        under way included up to ``now``."""
        ongoing = max(0.0, now - self.running_since) if self.running else 0.0
        return sum(actual.wall_s for actual in self.stages.values()) + ongoing


def read_estimate_events(root: Path) -> list[Event]:
    """The events of the journal of the project at ``root`` that an estimate reads; [] when
    there is no journal."""
    journal = root / STATE_DIR / JOURNAL_NAME
    try:
        lines = journal.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    events: list[Event] = []
    for line in lines:
        if not line.startswith(TYPE_PREFIX):
            continue
        kind = line[len(TYPE_PREFIX) : line.find('"', len(TYPE_PREFIX))]
        if kind in ESTIMATE_TYPES:
            try:
                events.append(event_from_dict(json.loads(line)))
            except (ValueError, TypeError):
                continue  # a torn line
    return events


def history_of(events: list[Event]) -> History:
    """Per stage what the journal's events spent, and where the pipeline stands."""
    history = History()
    open_since: dict[str, float] = {}
    asked_at = 0.0

    def actual(stage: str) -> StageActual:
        return history.stages.setdefault(stage, StageActual(stage))

    for event in events:
        if isinstance(event, StageStarted):
            open_since[event.stage] = event.ts
        elif isinstance(event, CheckpointRequested):
            asked_at = event.ts
        elif isinstance(event, CheckpointDecided) and asked_at:
            if event.stage in open_since:  # the researcher's wait is not the stage's work
                open_since[event.stage] += event.ts - asked_at
            asked_at = 0.0
        elif isinstance(event, StageFinished) and event.stage in open_since:
            actual(event.stage).wall_s += max(0.0, event.ts - open_since.pop(event.stage))
        elif isinstance(event, CostUpdate):
            _book(actual(event.stage), event)
        elif isinstance(event, Refused):
            actual(event.stage).refused += 1
    state = replay(events)
    history.done = tuple(state.finished)
    if open_since:
        history.running, history.running_since = max(open_since.items(), key=lambda kv: kv[1])
    return history


def _book(actual: StageActual, cost: CostUpdate) -> None:
    actual.calls += 1
    actual.tokens_in += cost.tokens_in
    actual.tokens_out += cost.tokens_out
    actual.usd += cost.cost_usd
    actual.model_s += cost.seconds
