"""An estimate in words: the inputs named, a table per stage (narrow enough for the app's
dialogue pane up to its time column), then the time left and when the run should end."""

from __future__ import annotations

import time

from .estimator import Estimate, Range, StageEstimate


def duration(seconds: float) -> str:
    """'45 s', '12 min', '2 h 05 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def span(value: Range) -> str:
    """'8 min–20 min', or '' where low and high read the same."""
    low, high = duration(value.low), duration(value.high)
    return "" if low == high else f"{low}–{high}"


def spread_s(value: Range) -> float:
    """Half the range's width: the '±' of an ETA."""
    return (value.high - value.low) / 2


def tokens(count: float) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else f"{count:.0f}"


def eta_words(estimate: Estimate) -> str:
    """'ETA 21:40, ±15 min' (local time), or '' when nothing is left or it is unknown."""
    left = estimate.remaining_s
    if left.expected <= 0 or estimate.unknown_speed:
        return ""
    finish = time.localtime(estimate.made_at + left.expected)
    return f"ETA {time.strftime('%H:%M', finish)}, ±{duration(spread_s(left))}"


def estimate_table(estimate: Estimate) -> list[str]:
    priced = estimate.usd > 0
    headers = ("stage", "calls", "tok in", "tok out", *(("$",) if priced else ()))
    headers += ("model", "run/TeX", "total", "range")
    rows = [_row(stage, priced) for stage in estimate.stages]
    rows.append(_total_row(estimate, priced))
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]


def _row(stage: StageEstimate, priced: bool) -> tuple[str, ...]:
    unknown = not stage.speed_known
    return (
        stage.stage + (" ✔" if stage.done else ""),
        f"{stage.calls.expected:.0f}",
        tokens(stage.tokens_in),
        tokens(stage.tokens_out),
        *((f"{stage.usd:.2f}",) if priced else ()),
        "?" if unknown else duration(stage.model_s.expected),
        duration(stage.experiment_s.expected) if stage.experiment_s.high else "",
        ("≥ " if unknown else "") + duration(stage.wall_s.expected),
        span(stage.wall_s),
    )


def _total_row(estimate: Estimate, priced: bool) -> tuple[str, ...]:
    tokens_in, tokens_out = estimate.tokens
    total = estimate.total_s
    return (
        "total",
        "",
        tokens(tokens_in),
        tokens(tokens_out),
        *((f"{estimate.usd:.2f}",) if priced else ()),
        "",
        "",
        ("≥ " if estimate.unknown_speed else "") + duration(total.expected),
        span(total),
    )


def estimate_text(estimate: Estimate, title: str = "estimate") -> str:
    """The inputs and what is unknown, the table, then the time left (✔: a stage done, as it
    spent; ?: no model time without the model's speed; ≥: model time left out)."""
    lines = [f"{title}, from:"]
    lines += [f"  - {said}" for said in estimate.inputs]
    lines += [f"  - unknown: {said}" for said in estimate.unknown]
    lines += estimate_table(estimate)
    if estimate.left_undone():
        left = estimate.remaining_s
        eta = eta_words(estimate)
        unknown = " + the model's time (its speed unknown)" if estimate.unknown_speed else ""
        ranged = f" ({span(left)})" if span(left) else ""
        lines.append(
            f"left: {duration(left.expected)}{ranged}{unknown}" + (f" · {eta}" if eta else "")
        )
    return "\n".join(lines)
