"""An estimate in words: a table per stage, the total, the time left, then each input named."""

from __future__ import annotations

import time

from .estimator import Estimate, Range, StageEstimate

HEADERS = ("stage", "calls", "tok in", "tok out", "$", "model time", "experiment", "total")


def duration(seconds: float) -> str:
    """'45 s', '12 min', '2 h 05 min'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def span(value: Range) -> str:
    """'12 min (8 min–20 min)', or one number where low and high agree."""
    if round(value.low) == round(value.high):
        return duration(value.expected)
    return f"{duration(value.expected)} ({duration(value.low)}–{duration(value.high)})"


def eta_words(estimate: Estimate) -> str:
    """'ETA 21:40, ±15 min' (local time), or '' when nothing is left or it is unknown."""
    left = estimate.remaining_s
    if left.expected <= 0 or estimate.unknown_speed:
        return ""
    finish = time.localtime(estimate.made_at + left.expected)
    spread = max(left.expected - left.low, left.high - left.expected)
    return f"ETA {time.strftime('%H:%M', finish)}, ±{duration(spread)}"


def estimate_table(estimate: Estimate) -> list[str]:
    rows = [_row(stage) for stage in estimate.stages]
    tokens_in, tokens_out = estimate.tokens
    rows.append(
        (
            "total",
            "",
            f"{tokens_in:,.0f}",
            f"{tokens_out:,.0f}",
            f"{estimate.usd:.2f}",
            "",
            "",
            span(estimate.total_s) + (" + model time" if estimate.unknown_speed else ""),
        )
    )
    widths = [max(len(row[i]) for row in [HEADERS, *rows]) for i in range(len(HEADERS))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [HEADERS, *rows]
    ]


def _row(stage: StageEstimate) -> tuple[str, ...]:
    calls = stage.calls
    counted = (
        f"{calls.expected:.0f}"
        if round(calls.low) == round(calls.high)
        else f"{calls.expected:.0f} ({calls.low:.0f}–{calls.high:.0f})"
    )
    model = span(stage.model_s) if stage.speed_known else "unknown"
    return (
        stage.stage + (" ✔" if stage.done else ""),
        counted,
        f"{stage.tokens_in:,.0f}",
        f"{stage.tokens_out:,.0f}",
        f"{stage.usd:.2f}",
        model,
        span(stage.experiment_s) if stage.experiment_s.high else "",
        span(stage.wall_s) + ("" if stage.speed_known else " + model time"),
    )


def estimate_text(estimate: Estimate, title: str = "estimate") -> str:
    """The table, the time left, the inputs and what is unknown, for a terminal or a pane."""
    lines = [f"{title} (✔: done, as spent):", *estimate_table(estimate)]
    left = estimate.remaining_s
    if estimate.left_undone():
        eta = eta_words(estimate)
        unknown = " + model time (unknown)" if estimate.unknown_speed else ""
        lines.append(f"left: {span(left)}{unknown}" + (f" · {eta}" if eta else ""))
    lines.append("from:")
    lines += [f"  - {said}" for said in estimate.inputs]
    lines += [f"  - unknown: {said}" for said in estimate.unknown]
    return "\n".join(lines)
