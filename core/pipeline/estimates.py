"""The session's estimates: made before the first model call, at the plan's checkpoint and after
each stage (``EstimateMade``); the time cap, checked once each stage's checkpoint is decided;
and at the pipeline's end the estimate made before the run held against what was spent
(``EstimateChecked``). Every timed call also adds to the model's speed in the user's cache."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..errors import BudgetExceeded
from ..estimate.estimator import estimate_project
from ..estimate.history import ESTIMATE_TYPES, history_of
from ..estimate.reckoning import reckoning_text, stage_records
from ..estimate.render import duration, estimate_text, spread_s
from ..estimate.speeds import SpeedRecorder
from ..events import EstimateChecked, EstimateMade, Event
from ..stage_list import STAGES
from ..workspace.project import Project

Emit = Callable[[Event], None]


class SessionEstimates:
    """A bus subscriber that keeps the events an estimate reads, and makes the estimates."""

    def __init__(self, project: Project, emit: Emit, history: list[Event]) -> None:
        self.project = project
        self._emit = emit
        self._events = [event for event in history if event.type in ESTIMATE_TYPES]
        self._speeds = SpeedRecorder("run")

    def __call__(self, event: Event) -> None:
        if event.type in ESTIMATE_TYPES:
            self._events.append(event)
        self._speeds(event)

    def announce(self, title: str, stage: str = "") -> None:
        """Estimate the project as it stands now and say it."""
        estimate = estimate_project(self.project.root, self.project.config, list(self._events))
        left = estimate.remaining_s
        known = not estimate.unknown_speed
        self._emit(
            EstimateMade(
                stage=stage,
                text=estimate_text(estimate, title),
                remaining_s=left.expected if known else 0.0,
                spread_s=spread_s(left) if known else 0.0,
                stages=stage_records(estimate),
            )
        )

    def at_checkpoint(self, stage: str) -> None:
        """At the plan's checkpoint the runs are known: the estimate is made again."""
        if stage == "plan":
            self.announce("estimate with the plan's runs", stage)

    def check_time(self) -> None:
        """The time cap: BudgetExceeded, naming what is left undone, once [budget] max_hours
        of work are spent. Checked as a stage's checkpoint is decided, so the stage's work is
        kept as the researcher decided it, and the next session goes on from the stage after."""
        hours = self.project.config.budget.max_hours
        if not hours:
            return
        history = history_of(self._events)
        spent = history.spent_s(time.time())
        if spent < hours * 3600:
            return
        undone = [stage for stage in STAGES if stage not in history.done]
        raise BudgetExceeded(
            f"time spent: {duration(spent)} of [budget] max_hours {hours:g}; left undone: "
            + (", ".join(undone) or "nothing"),
            "raise [budget] max_hours in labtui.toml (0: no cap) and run again to continue",
        )

    def check_against_actual(self) -> None:
        """The first estimate this project made, against what its stages spent."""
        if text := reckoning_text(self._events):
            self._emit(EstimateChecked(text=text))
