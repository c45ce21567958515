"""The live plot of a run's metrics in the logs pane, drawn by plotext (imported lazily)."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.color import Color
from textual.widget import Widget

from labtui.core.machine.metric_series import MetricSeries, Segment

from .base import format_number

# Curve colours, from the app theme so they suit dark and light themes alike.
CURVE_COLOURS: tuple[str, ...] = ("primary", "warning", "success", "error", "accent", "secondary")
MIN_PLOT_SIZE = (16, 4)

_plotext: ModuleType | None = None
_plotext_lock = threading.Lock()


def load_plotext() -> ModuleType:
    """plotext, imported once. plotext 6 takes a third of a second to import, so the pane
    starts this in a thread as soon as a run prints anything (see ``preload_plotext``)."""
    global _plotext
    with _plotext_lock:
        if _plotext is None:
            import plotext  # noqa: PLC0415 -- a third of a second: see the docstring

            if hasattr(plotext, "terminal") and hasattr(plotext.terminal, "limit"):
                plotext.terminal.limit(False, False)  # plotext 6: size by the widget, not the tty
            _plotext = plotext
        return _plotext


def plotext_loaded() -> bool:
    """Whether plotext is imported already (``load_plotext`` returns at once)."""
    return _plotext is not None


Ticks = tuple[list[float], list[str]]
Axes = tuple[Ticks, Ticks]  # the x ticks, the y ticks


@dataclass(frozen=True)
class Curve:
    xs: list[float]
    ys: list[float]
    rgb: tuple[int, int, int]


def thin(xs: list[float], ys: list[float], limit: int) -> tuple[list[float], list[float]]:
    """At most about ``limit`` evenly spaced points, the last one always kept: a plot ``w`` cells
    wide shows no more than ``2·w`` distinct x positions, and plotext's cost grows with points."""
    if len(xs) <= limit:
        return xs, ys
    stride = math.ceil(len(xs) / limit)
    thin_xs, thin_ys = xs[::stride], ys[::stride]
    if thin_xs[-1] != xs[-1]:
        thin_xs.append(xs[-1])
        thin_ys.append(ys[-1])
    return thin_xs, thin_ys


def short_number(value: float) -> str:
    """Tick labels that stay narrow: 1.2k, 250, 0.412, 3e-05."""
    magnitude = abs(value)
    if magnitude >= 1e4:
        for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if magnitude >= limit:
                return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def ticks(low: float, high: float, count: int, *, whole: bool = False) -> Ticks:
    """``count`` evenly spaced ticks from ``low`` to ``high``; ``whole`` rounds them to integers
    (steps and epochs: tick 76 reads better than 75.8)."""
    if high <= low:
        return [low], [short_number(low)]
    positions = [low + (high - low) * i / (count - 1) for i in range(count)]
    if whole:
        positions = sorted({float(round(position)) for position in positions})
    return positions, [short_number(position) for position in positions]


def plot_ansi(curves: Sequence[Curve], width: int, height: int) -> str:
    """The curves drawn by plotext as ANSI text, ``width`` × ``height`` cells, on a transparent
    background with default-coloured axes (readable on dark and light themes alike)."""
    plt = load_plotext()
    xs = [x for curve in curves for x in curve.xs]
    ys = [y for curve in curves for y in curve.ys]
    whole = all(float(x).is_integer() for x in xs)
    axes = (
        ticks(min(xs), max(xs), max(2, min(6, width // 12)), whole=whole),
        ticks(min(ys), max(ys), max(2, min(5, (height - 2) // 2))),
    )
    if hasattr(plt, "figure") and hasattr(plt.figure, "signal"):
        return _plot_ansi_v6(plt, curves, width, height, axes)
    return _plot_ansi_v5(plt, curves, width, height, axes)


def _plot_ansi_v6(
    plt: ModuleType, curves: Sequence[Curve], width: int, height: int, axes: Axes
) -> str:
    figure = plt.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("colorless")
    figure.legend(active=False)  # the pane draws its own legend: plotext's would hide the curves
    for curve in curves:
        marker = plt.marker("hd").fill(plt.pixel(foreground=curve.rgb))
        figure.draw(figure.signal(curve.xs, curve.ys, marker=marker).lines())
    figure.ruler("x").ticks(*axes[0])
    figure.ruler("y").ticks(*axes[1])
    return str(figure.build().string())


def _plot_ansi_v5(
    plt: ModuleType, curves: Sequence[Curve], width: int, height: int, axes: Axes
) -> str:
    plt.clf()
    plt.limit_size(False, False)
    plt.plot_size(width, height)
    plt.theme("clear")
    for curve in curves:
        plt.plot(curve.xs, curve.ys, color=curve.rgb, marker="hd")
    plt.xticks(*axes[0])
    plt.yticks(*axes[1])
    return str(plt.build())


class MetricPlot(Widget):
    """The live plot of one metric of the current run, redrawn only when its data or size changed.

    ``render`` runs at most once per screen refresh and never while the plot is hidden, so a
    burst of points costs one plotext build, not one per line.
    """

    def __init__(self, series: MetricSeries, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.series = series
        self.chosen: str | None = None  # the metric picked with `p`; None: the default one
        self._cache_key: tuple[Any, ...] = ()
        self._cached: RenderableType = ""

    @property
    def metric(self) -> str | None:
        """What is plotted: the chosen metric while the run reports it, else the default."""
        plottable = self.series.plottable()
        if self.chosen in plottable:
            return self.chosen
        return self.series.default_metric()

    def cycle(self) -> None:
        names = self.series.plottable()
        if not names:
            return
        current = self.metric
        index = names.index(current) if current in names else -1
        self.chosen = names[(index + 1) % len(names)]
        self.refresh()

    def render(self) -> RenderableType:
        key = (self.series.version, self.size, self.metric, self.app.current_theme.name)
        if key != self._cache_key:
            self._cached = self._draw()
            self._cache_key = key
        return self._cached

    def _draw(self) -> RenderableType:
        metric = self.metric
        if metric is None:
            return Text("no metrics reported yet", style="dim italic")
        colours = [_rgb(self._colour(name)) for name in CURVE_COLOURS]
        segments = self.series.segments(metric)
        header = self._header(metric, segments, colours)
        width, height = self.size.width, self.size.height - 1
        if width < MIN_PLOT_SIZE[0] or height < MIN_PLOT_SIZE[1]:
            return header
        curves = []
        for index, segment in enumerate(segments):
            xs, ys = thin(*segment.points(), 2 * width)
            curves.append(Curve(xs, ys, colours[index % len(colours)]))
        try:
            plot = Text.from_ansi(plot_ansi(curves, width, height))
        except ImportError:
            plot = Text("plotext is not installed: pip install plotext", style="dim italic")
        except Exception as error:  # a plotting bug must not take the research session down
            plot = Text(f"could not draw the plot: {error}", style="dim italic")
        return Text("\n").join([header, plot])

    def _header(
        self, metric: str, segments: list[Segment], colours: list[tuple[int, int, int]]
    ) -> Text:
        """'train_loss 0.4123 · epoch 25/200  ━ seed 0 ━ seed 1': what, how far, which curve."""
        header = Text(metric, style="bold")
        latest = self.series.latest(metric)
        if latest is not None:
            header.append(f" {format_number(latest)}")
        if self.series.progress:
            header.append(f" · {self.series.progress}", style="dim")
        if len(segments) > 1:
            for index, segment in enumerate(segments):
                r, g, b = colours[index % len(colours)]
                header.append(f"  ━ {segment.label}", style=f"rgb({r},{g},{b})")
        header.truncate(self.size.width, overflow="ellipsis")
        return header

    def _colour(self, name: str) -> str:
        theme = self.app.current_theme
        return str(getattr(theme, name, None) or theme.primary)


def _rgb(colour: str) -> tuple[int, int, int]:
    return Color.parse(colour).rgb
