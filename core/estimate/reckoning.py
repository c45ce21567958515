"""The estimate held to account: per stage, what the estimate made before the run said against
what the journal says was spent, so the estimator's error is measured, not assumed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..events import EstimateMade, Event
from .estimator import Estimate
from .history import History, history_of
from .render import duration


def stage_records(estimate: Estimate) -> list[dict[str, Any]]:
    """An estimate's stages as the journal keeps them (an event's plain fields)."""
    return [
        {
            "stage": stage.stage,
            "done": stage.done,
            "calls": round(stage.calls.expected, 1),
            "tokens": round(stage.tokens_in + stage.tokens_out),
            "usd": round(stage.usd, 6),
            "wall_s": round(stage.wall_s.expected, 1),
            "wall_low_s": round(stage.wall_s.low, 1),
            "wall_high_s": round(stage.wall_s.high, 1),
            "speed_known": stage.speed_known,
        }
        for stage in estimate.stages
    ]


@dataclass(frozen=True)
class Reckoned:
    """One stage: estimated against spent (the error: (actual − estimate) / estimate)."""

    stage: str
    estimated_s: float
    actual_s: float
    estimated_tokens: float
    actual_tokens: float
    speed_known: bool = True

    @property
    def time_error(self) -> float | None:
        return _error(self.estimated_s, self.actual_s) if self.speed_known else None

    @property
    def token_error(self) -> float | None:
        return _error(self.estimated_tokens, self.actual_tokens)


def _error(estimated: float, actual: float) -> float | None:
    return (actual - estimated) / estimated if estimated > 0 else None


def reckon(before: list[dict[str, Any]], history: History) -> list[Reckoned]:
    """Each stage the estimate before the run expected to do, against the journal's actuals
    (a stage done before that estimate was made is left out: nothing was estimated of it)."""
    rows = []
    for record in before:
        if record.get("done"):
            continue
        stage = str(record.get("stage", ""))
        actual = history.stages.get(stage)
        if actual is None or stage not in history.done:
            continue
        rows.append(
            Reckoned(
                stage=stage,
                estimated_s=float(record.get("wall_s", 0.0)),
                actual_s=actual.wall_s,
                estimated_tokens=float(record.get("tokens", 0.0)),
                actual_tokens=float(actual.tokens_in + actual.tokens_out),
                speed_known=bool(record.get("speed_known", True)),
            )
        )
    return rows


def reckoning_lines(rows: list[Reckoned]) -> list[str]:
    """'stage  estimate  actual  error  tokens est  actual  error' and a total line."""
    if not rows:
        return []
    total = Reckoned(
        "total",
        sum(r.estimated_s for r in rows),
        sum(r.actual_s for r in rows),
        sum(r.estimated_tokens for r in rows),
        sum(r.actual_tokens for r in rows),
        all(r.speed_known for r in rows),
    )
    table = [("stage", "time est", "actual", "error", "tokens est", "actual", "error")]
    for row in [*rows, total]:
        table.append(
            (
                row.stage,
                duration(row.estimated_s) if row.speed_known else "unknown",
                duration(row.actual_s),
                _percent(row.time_error),
                f"{row.estimated_tokens:,.0f}",
                f"{row.actual_tokens:,.0f}",
                _percent(row.token_error),
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]


def _percent(error: float | None) -> str:
    return "—" if error is None else f"{error:+.0%}"


def reckoning_text(events: list[Event]) -> str:
    """The first estimate in ``events`` (the one made before the run) against what each stage
    it expected has spent since; '' when there is none, or no such stage is done."""
    before = next((e for e in events if isinstance(e, EstimateMade)), None)
    lines = reckoning_lines(reckon(before.stages, history_of(events))) if before else []
    return (
        "\n".join(["the estimate before the run against what was spent:", *lines]) if lines else ""
    )
