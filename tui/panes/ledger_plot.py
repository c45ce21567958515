"""The hill-climb's plot in the ledger view: the metric over attempts, drawn by plotext.

Kept attempts are dots in the success colour, discarded ones in a muted colour, crashes (no
value) crosses in the error colour along the bottom, and the best so far a step line from the
baseline (attempt 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labtui.core.events import SearchStep

from .metric_plot import Ticks, load_plotext, ticks

Rgb = tuple[int, int, int]
KEEP, DISCARD, CRASH = "keep", "discard", "crash"


@dataclass(frozen=True)
class PlotColours:
    best: Rgb
    keep: Rgb
    discard: Rgb
    crash: Rgb


@dataclass(frozen=True)
class Marks:
    """Points of one kind: plotext's marker name and colour, and whether they are joined."""

    xs: list[float]
    ys: list[float]
    marker: str
    rgb: Rgb
    joined: bool = False


def best_line(baseline: float, steps: Sequence[SearchStep]) -> tuple[list[float], list[float]]:
    """The best so far as a step line: flat from each attempt to the next, rising (or falling)
    at the attempt that set it."""
    xs, ys = [0.0], [baseline]
    best = baseline
    for step in steps:
        xs.append(float(step.step))
        ys.append(best)
        if step.best is not None and step.best != best:
            best = step.best
            xs.append(float(step.step))
            ys.append(best)
    return xs, ys


def climb_marks(baseline: float, steps: Sequence[SearchStep], colours: PlotColours) -> list[Marks]:
    """What the plot draws, bottom layer first."""
    line_xs, line_ys = best_line(baseline, steps)
    valued = [s for s in steps if s.value is not None]
    low = min([*line_ys, *(s.value for s in valued if s.value is not None)])
    marks = [Marks(line_xs, line_ys, "hd", colours.best, joined=True)]
    for status, marker, rgb in (
        (DISCARD, "dot", colours.discard),
        (KEEP, "circle", colours.keep),
    ):
        chosen = [s for s in valued if s.status == status and s.value is not None]
        if chosen:
            marks.append(
                Marks(
                    [float(s.step) for s in chosen], [s.value or 0.0 for s in chosen], marker, rgb
                )
            )
    crashed = [float(s.step) for s in steps if s.status == CRASH or s.value is None]
    if crashed:
        marks.append(Marks(crashed, [low] * len(crashed), "xmark", colours.crash))
    return marks


def attempt_ticks(last: float, count: int) -> Ticks:
    """Ticks at round attempt numbers from 0: every 1, 2, 5, 10, 20, 50, … attempts."""
    span = max(1.0, last)
    rough = span / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(rough)) if rough >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= rough)
    positions = [float(n * step) for n in range(int(span // step) + 1)]
    return positions, [f"{position:g}" for position in positions]


def climb_plot_ansi(marks: Sequence[Marks], width: int, height: int) -> str:
    """The marks drawn by plotext as ANSI text, ``width`` × ``height`` cells, on a transparent
    background with default-coloured axes (plotext 6; plotext 5 draws with its own API)."""
    plt = load_plotext()
    xs = [x for mark in marks for x in mark.xs]
    ys = [y for mark in marks for y in mark.ys]
    x_ticks = attempt_ticks(max(xs), max(2, min(6, width // 12)))
    y_ticks = ticks(min(ys), max(ys), max(2, min(5, (height - 2) // 2)))
    if not (hasattr(plt, "figure") and hasattr(plt.figure, "signal")):
        plt.clf()
        plt.limit_size(False, False)
        plt.plot_size(width, height)
        plt.theme("clear")
        for mark in marks:
            draw = plt.plot if mark.joined else plt.scatter
            draw(mark.xs, mark.ys, color=mark.rgb, marker=mark.marker)
        plt.xticks(*x_ticks)
        plt.yticks(*y_ticks)
        return str(plt.build())
    figure = plt.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("colorless")
    figure.legend(active=False)
    for mark in marks:
        marker = plt.marker(mark.marker).fill(plt.pixel(foreground=mark.rgb))
        signal = figure.signal(mark.xs, mark.ys, marker=marker)
        figure.draw(signal.lines() if mark.joined else signal)
    figure.ruler("x").ticks(*x_ticks)
    figure.ruler("y").ticks(*y_ticks)
    return str(figure.build().string())
