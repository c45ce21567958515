"""The logs pane: the running experiment's output (bounded), GPU status, a live plot of the
metrics the run prints, and each finished run's means against the baseline.

A run may print 100,000 lines as fast as it can and the app hands them over in batches (every
0.1 s), so the work per line on the UI thread is kept to a few list appends: the log stores
plain strings and renders only the lines on screen (Textual's RichLog renders every line as it
is written, tens of microseconds each), metrics are parsed from at most the last
``MAX_PARSED_PER_BATCH`` lines of a batch, and the plot redraws at most once per screen refresh,
only when new points arrived and only while it is visible.

The lower section of the pane switches (key ``v``) between the log alone, the plot and the
results table. A tall pane shows the plot or table under the log; a short one (a 2×2 grid on an
80×24 terminal) shows one of them in place of the log.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from rich import box
from rich.cells import cell_len
from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.color import Color
from textual.content import Content
from textual.events import Resize
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from labtui.core.events import GpuSample, LogLine, RunFinished, RunStarted
from labtui.core.metrics import MetricSeries, Segment, lower_is_better, parse_metrics

from .base import Pane, format_number

LOG_MAX_LINES = 5000
# A flood of output is sampled for metrics: the newest lines of each batch, a contiguous window
# (a stride would alias with a metric printed every n-th line). The plot cannot show more than
# a couple of points per column anyway.
MAX_PARSED_PER_BATCH = 256
BASELINE_RUN = "run_0"
VIEWS: tuple[str, ...] = ("log", "plot", "results")
# From this many content rows the plot or table fits under the log instead of replacing it.
TALL_ROWS = 16
# One status line per GPU only on a tall pane and a small machine; otherwise one compact line.
MAX_GPU_LINES = 4
# Curve colours, from the app theme so they suit dark and light themes alike.
CURVE_COLOURS: tuple[str, ...] = ("primary", "warning", "success", "error", "accent", "secondary")
MIN_PLOT_SIZE = (16, 4)


# -- results ---------------------------------------------------------------------------------


def flatten_numbers(means: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"ds": {"means": {"acc": 0.91}}}`` → ``{"ds.acc": 0.91}``.

    The AI-Scientist contract nests each dataset's numbers under a ``means`` key; that level adds
    nothing for the reader, so it is skipped.
    """
    flat: dict[str, Any] = {}
    for key, value in means.items():
        name = prefix if key == "means" and prefix else f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            flat.update(flatten_numbers(value, name))
        else:
            flat[name] = value
    return flat


def flatten_means(means: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``{"ds": {"means": {"acc": 0.91}}}`` → ``["ds.acc=0.91"]``."""
    return [
        f"{name}={format_number(value)}" for name, value in flatten_numbers(means, prefix).items()
    ]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _succeeded(run: RunFinished) -> bool:
    return run.returncode == 0 and not run.timed_out


@dataclass(frozen=True)
class ResultColours:
    good: str
    bad: str
    muted: str


def results_table(runs: Sequence[RunFinished], width: int, colours: ResultColours) -> Table:
    """Each finished run's means, the baseline first, with deltas against the baseline.

    One row per run and one column per metric; when that would not fit in ``width`` (a narrow
    pane, long metric names) the table is transposed, one row per metric.
    """
    ordered = sorted(runs, key=lambda run: run.run_id != BASELINE_RUN)  # stable: baseline first
    values = [flatten_numbers(run.means) if _succeeded(run) else {} for run in ordered]
    names = list(dict.fromkeys(name for flat in values for name in flat))
    corner, short_names = _shared_prefix(names)
    baseline = values[0] if ordered and ordered[0].run_id == BASELINE_RUN else None
    header = [Text(corner or "run", style="bold"), *(Text(n, style="bold") for n in short_names)]
    rows = [
        [_run_cell(run, colours), *(_metric_cell(name, flat, baseline, colours) for name in names)]
        for run, flat in zip(ordered, values, strict=True)
    ]
    matrix = [header, *rows]
    if _natural_width(matrix) > width and len(names) > 1:
        matrix = [list(column) for column in zip(*matrix, strict=True)]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), pad_edge=False)
    for cell in matrix[0]:
        table.add_column(cell, no_wrap=False)
    for row in matrix[1:]:
        table.add_row(*row)
    return table


def _shared_prefix(names: list[str]) -> tuple[str, list[str]]:
    """With a single dataset ("moons.acc", "moons.loss") its name goes in the corner cell."""
    heads = {name.split(".", 1)[0] for name in names}
    if len(heads) == 1 and all("." in name for name in names):
        return heads.pop(), [name.split(".", 1)[1] for name in names]
    return "", names


def _run_cell(run: RunFinished, colours: ResultColours) -> Text:
    if _succeeded(run):
        return Text(run.run_id)
    what = "timed out" if run.timed_out else f"exit {run.returncode}"
    return Text.assemble(run.run_id, (f" ✘ {what}", colours.bad))


def _metric_cell(
    name: str, flat: Mapping[str, Any], baseline: Mapping[str, Any] | None, colours: ResultColours
) -> Text:
    if name not in flat:
        return Text("–", style=colours.muted)
    value = flat[name]
    cell = Text(format_number(value))
    reference = baseline.get(name) if baseline is not None and baseline is not flat else None
    if _is_number(value) and _is_number(reference):
        delta = value - reference
        if delta == 0:
            cell.append("\n±0", style=colours.muted)
        else:
            better = (delta < 0) == lower_is_better(name)
            cell.append(f"\n{delta:+.3g}", style=colours.good if better else colours.bad)
    return cell


def _natural_width(matrix: list[list[Text]]) -> int:
    """Columns at their widest cell line, and between two columns the table's padding on both
    sides plus the (blank) column separator of ``box.SIMPLE_HEAD``."""
    widths = [
        max(max(len(line) for line in cell.plain.split("\n")) for cell in column)
        for column in zip(*matrix, strict=True)
    ]
    return sum(widths) + 3 * (len(widths) - 1)


# -- GPU status ------------------------------------------------------------------------------


def gpu_status(gpus: Sequence[Mapping[str, Any]]) -> str:
    """One line for all GPUs of a sample: 'GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C │ …'."""
    if not gpus:
        return "CPU only"
    return " │ ".join(_gpu_long(gpu) for gpu in gpus)


def _gpu_long(gpu: Mapping[str, Any]) -> str:
    used = float(gpu.get("mem_used_mb", 0)) / 1024
    total = float(gpu.get("mem_total_mb", 0)) / 1024
    return (
        f"GPU{gpu.get('index', '?')} {gpu.get('name', '')} {_whole(gpu.get('util', 0))}%"
        f" · {used:.1f}/{total:.1f} GB · {_whole(gpu.get('temp_c', '?'))}°C"
    )


def _gpu_short(gpu: Mapping[str, Any]) -> str:
    """'GPU0 87% 12/80G 64°C': several GPUs on one line of a narrow pane."""
    used = float(gpu.get("mem_used_mb", 0)) / 1024
    total = float(gpu.get("mem_total_mb", 0)) / 1024
    return (
        f"GPU{gpu.get('index', '?')} {_whole(gpu.get('util', 0))}%"
        f" {used:.0f}/{total:.0f}G {_whole(gpu.get('temp_c', '?'))}°C"
    )


def _gpu_tiny(gpu: Mapping[str, Any]) -> str:
    """'GPU0 87% 12G 64°': two GPUs in the 36 columns of the smallest pane."""
    used = float(gpu.get("mem_used_mb", 0)) / 1024
    return (
        f"GPU{gpu.get('index', '?')} {_whole(gpu.get('util', 0))}%"
        f" {used:.0f}G {_whole(gpu.get('temp_c', '?'))}°"
    )


def _whole(value: Any) -> str:
    """NVML readings are whole numbers that travel as floats: '87', not '87.0'."""
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def gpu_lines(gpus: Sequence[Mapping[str, Any]], width: int, *, one_per_gpu: bool) -> list[str]:
    """The GPU status as it fits: a line per GPU when there is room, else one compact line."""
    if not gpus:
        return ["CPU only"]
    if one_per_gpu and 1 < len(gpus) <= MAX_GPU_LINES:
        return [_gpu_long(gpu) for gpu in gpus]
    for describe in (_gpu_long, _gpu_short):
        line = " │ ".join(describe(gpu) for gpu in gpus)
        if len(line) <= width:
            return [line]
    return [" │ ".join(_gpu_tiny(gpu) for gpu in gpus)]  # the status line ellipsizes the rest


# -- plot ------------------------------------------------------------------------------------

_plotext: ModuleType | None = None
_plotext_lock = threading.Lock()


def load_plotext() -> ModuleType:
    """plotext, imported once. plotext 6 takes a third of a second to import, so the pane
    starts this in a thread as soon as a run prints anything (see ``preload_plotext``)."""
    global _plotext
    with _plotext_lock:
        if _plotext is None:
            import plotext

            if hasattr(plotext, "terminal") and hasattr(plotext.terminal, "limit"):
                plotext.terminal.limit(False, False)  # plotext 6: size by the widget, not the tty
            _plotext = plotext
        return _plotext


Ticks = tuple[list[float], list[str]]


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
    x_ticks = ticks(min(xs), max(xs), max(2, min(6, width // 12)), whole=whole)
    y_ticks = ticks(min(ys), max(ys), max(2, min(5, (height - 2) // 2)))
    if hasattr(plt, "figure") and hasattr(plt.figure, "signal"):
        return _plot_ansi_v6(plt, curves, width, height, x_ticks, y_ticks)
    return _plot_ansi_v5(plt, curves, width, height, x_ticks, y_ticks)


def _plot_ansi_v6(
    plt: ModuleType,
    curves: Sequence[Curve],
    width: int,
    height: int,
    x_ticks: Ticks,
    y_ticks: Ticks,
) -> str:
    figure = plt.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("colorless")
    figure.legend(active=False)  # the pane draws its own legend: plotext's would hide the curves
    for curve in curves:
        marker = plt.marker("hd").fill(plt.pixel(foreground=curve.rgb))
        figure.draw(figure.signal(curve.xs, curve.ys, marker=marker).lines())
    figure.ruler("x").ticks(*x_ticks)
    figure.ruler("y").ticks(*y_ticks)
    return str(figure.build().string())


def _plot_ansi_v5(
    plt: ModuleType,
    curves: Sequence[Curve],
    width: int,
    height: int,
    x_ticks: Ticks,
    y_ticks: Ticks,
) -> str:
    plt.clf()
    plt.limit_size(False, False)
    plt.plot_size(width, height)
    plt.theme("clear")
    for curve in curves:
        plt.plot(curve.xs, curve.ys, color=curve.rgb, marker="hd")
    plt.xticks(*x_ticks)
    plt.yticks(*y_ticks)
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


# -- the log ---------------------------------------------------------------------------------

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def printable(text: str) -> str:
    """A child's output line made safe to draw: what a terminal would show of a progress bar
    redrawn with carriage returns, without escape sequences, tabs or other control codes."""
    if text.isprintable():
        return text  # nearly every line: one C-speed check
    if "\r" in text:
        text = next((part for part in reversed(text.split("\r")) if part), "")
    text = _ANSI_ESCAPE.sub("", text).expandtabs()
    return "".join(char if char.isprintable() else "�" for char in text)


LineStyle = str | Text  # a Rich style for a plain line, or a whole styled line


class RunLog(ScrollView, can_focus=True):
    """The run's output: bounded, and drawn lazily.

    A write appends strings (and a style each) to two lists; a line is turned into a strip only
    when it scrolls into view, and that strip is cached. It follows the end unless the researcher
    has scrolled up, and keeps text selection working.
    """

    ALLOW_SELECT = True
    DEFAULT_CSS = """
    RunLog {
        height: 1fr;
        background: transparent;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
    }
    """

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self._texts: list[str] = []
        self._styles: list[LineStyle] = []
        self._first = 0  # the number of lines ever dropped: cache keys survive the trimming
        self._width = 0
        self._strips: LRUCache[int, Strip] = LRUCache(1024)
        self._following = True  # new lines scroll into view (until the researcher scrolls up)
        self._end_pending = False  # a scroll to the end is scheduled for after the refresh

    @property
    def lines(self) -> list[str]:
        """The plain text of every line kept."""
        return list(self._texts)

    def write_lines(self, texts: Sequence[str], styles: Sequence[LineStyle]) -> None:
        """Append lines (no newlines inside, already ``printable``) with one style each."""
        if not texts:
            return
        self._texts.extend(texts)
        self._styles.extend(styles)
        self._width = max(self._width, _widest(texts))
        overflow = len(self._texts) - self.max_lines
        if overflow > 0:
            del self._texts[:overflow]
            del self._styles[:overflow]
            self._first += overflow
        self.virtual_size = Size(self._width, len(self._texts))
        self._follow_end()
        self.refresh()

    def _follow_end(self) -> None:
        # After the refresh: only the new layout knows that a scrollbar is needed (a scroll
        # before it is refused), and a hidden log has no layout at all until it is shown.
        if self._following and not self._end_pending:
            self._end_pending = True
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        self._end_pending = False
        self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Scrolled up by the researcher: stay put while they read; back at the end: follow.
        self._following = new_value >= self.max_scroll_y

    def on_resize(self) -> None:
        self._follow_end()

    def write_text(self, text: Text) -> None:
        """Append a styled, possibly multi-line, Text (a run's summary)."""
        lines = text.split("\n", allow_blank=True)
        self.write_lines([line.plain for line in lines], lines)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._texts):
            return Strip.blank(width, base)
        strip = self._strip(index, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _strip(self, index: int, base: Style) -> Strip:
        selection = self.text_selection
        key = self._first + index
        if selection is None and key in self._strips:
            return self._strips[key]
        # Text.render draws spans only (not Text.style): every style goes in as a span, the
        # widget's own first so that the line's style wins.
        style = self._styles[index]
        if isinstance(style, Text):
            text = style.copy()
            text.stylize_before(text.style)
        else:
            text = Text(self._texts[index], no_wrap=True, end="")
            if style:
                text.stylize(style)
        text.stylize_before(base)
        if selection is not None:
            span = selection.get_span(index)
            if span is not None:
                start, end = span
                highlight = self.screen.get_component_rich_style("screen--selection")
                text.stylize(highlight, start, len(text) if end == -1 else end)
        strip = Strip(text.render(self.app.console), text.cell_len)
        if selection is None:
            self._strips[key] = strip
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self._texts)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._strips.clear()
        self.refresh()


def _widest(texts: Sequence[str]) -> int:
    # Output is nearly always ASCII, where a character is a cell: one C-speed check for all.
    if "".join(texts).isascii():
        return max(map(len, texts))
    return max(map(cell_len, texts))


# -- the pane --------------------------------------------------------------------------------


class LogsPane(Pane):
    """Experiment output (bounded), GPU status, a live metric plot, and each run's outcome."""

    TITLE = "Experiment logs"
    HANDLES = (LogLine, GpuSample, RunStarted, RunFinished)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "cycle_view", "View", id="logs.view"),
        Binding("p", "cycle_metric", "Metric", id="logs.metric"),
    ]
    DEFAULT_CSS = """
    LogsPane #metric-plot, LogsPane #run-results {
        display: none;
        height: 1fr;
        padding: 0 1;
    }
    LogsPane.-view-plot #metric-plot, LogsPane.-view-results #run-results {
        display: block;
    }
    LogsPane.-short.-view-plot #run-log, LogsPane.-short.-view-results #run-log {
        display: none;
    }
    LogsPane.-tall #run-results {
        height: auto;
        max-height: 60%;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._current_run = ""
        self._series = MetricSeries()
        self._view: str | None = None  # None until the researcher picks: then it follows height
        self._tall = False
        self._gpus: list[dict[str, Any]] = []
        self._finished: dict[str, RunFinished] = {}
        self._run_status = ""
        self._plotext_requested = False

    def compose(self) -> ComposeResult:
        yield Static("CPU only", id="gpu-status", classes="status-line")
        yield RunLog(id="run-log", max_lines=LOG_MAX_LINES)
        yield MetricPlot(self._series, id="metric-plot")
        yield Static(Text("no finished runs yet", style="dim italic"), id="run-results")

    def on_mount(self) -> None:
        # Pane.on_mount (the title) runs too: Textual calls the handler of every class.
        self._apply_view()

    def preload_plotext(self) -> None:
        """Import plotext in a thread: the app asks right after the first paint, and a run's
        first output asks again (for a pane used without the app). Never during the first
        paint (it would slow it) nor at the first plot (the screen would freeze)."""
        if _plotext is None and not self._plotext_requested:
            self._plotext_requested = True
            self.run_worker(load_plotext, name="load plotext", thread=True, exit_on_error=False)

    @property
    def log_widget(self) -> RunLog:
        return self.query_one("#run-log", RunLog)

    @property
    def plot(self) -> MetricPlot:
        return self.query_one("#metric-plot", MetricPlot)

    @property
    def view(self) -> str:
        """What the lower section shows: the researcher's choice, else what fits the height."""
        if self._view is not None:
            return self._view
        return "plot" if self._tall else "log"

    # -- layout ----------------------------------------------------------------------------

    def on_resize(self, event: Resize) -> None:
        tall = self.content_size.height >= TALL_ROWS
        if tall != self._tall:
            self._tall = tall
            self._apply_view()
        self._show_gpus()
        if self._finished:
            self._show_results()

    def _apply_view(self) -> None:
        view = self.view
        had_focus = self.has_focus_within
        for name in VIEWS:
            self.set_class(view == name, f"-view-{name}")
        self.set_class(self._tall, "-tall")
        self.set_class(not self._tall, "-short")
        # Exactly one widget of the pane takes focus (one tab stop per pane, and the keys keep
        # working): the log, or what replaces it on a short pane.
        shown = self.log_widget if self._tall or view == "log" else self._lower(view)
        for widget in (self.log_widget, self.plot, self._lower("results")):
            widget.can_focus = widget is shown
        if had_focus:
            self.call_after_refresh(shown.focus)

    def _lower(self, view: str) -> Widget:
        return self.plot if view == "plot" else self.query_one("#run-results", Static)

    def action_cycle_view(self) -> None:
        self._view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self._apply_view()

    def action_cycle_metric(self) -> None:
        # With the plot hidden, the first press shows it rather than changing it unseen.
        if self.view != "plot":
            self._view = "plot"
            self._apply_view()
            return
        self.plot.cycle()

    # -- events ----------------------------------------------------------------------------

    def _on_LogLine(self, event: LogLine) -> None:
        self.write_log_lines([event])

    def write_log_lines(self, events: Sequence[LogLine]) -> None:
        """Write a burst of output: one append per line, one log write per batch.

        A LogLine carries the lines of one pipe read. Only the last ``LOG_MAX_LINES`` of a
        burst can survive the log's bound, so the rest are counted, not kept.
        """
        rows = [(e.run_id, e.stream, text) for e in events for text in e.text.split("\n")]
        if not rows:
            return
        self.preload_plotext()
        if self._collect_metrics(rows[-MAX_PARSED_PER_BATCH:]):
            self.plot.refresh()
        skipped = max(0, len(rows) - LOG_MAX_LINES)
        texts: list[str] = []
        styles: list[LineStyle] = []
        if skipped:
            texts.append(f"… {skipped} earlier lines skipped")
            styles.append("dim italic")
        error = self.colour("error")
        for run_id, stream, text in rows[skipped:]:
            if run_id != self._current_run:
                self._current_run = run_id
                texts.append(f"── {run_id} ──")
                styles.append("dim")
            texts.append(printable(text))
            styles.append(error if stream == "stderr" else "")
        self.log_widget.write_lines(texts, styles)

    def _collect_metrics(self, rows: Sequence[tuple[str, str, str]]) -> bool:
        """Feed every metric the lines report into the series; True if any arrived."""
        series = self._series
        version = series.version
        for run_id, _, text in rows:
            point = parse_metrics(text)
            if point is not None:
                if run_id != series.run_id:
                    series.start(run_id)
                series.add(point)
        return series.version != version

    def _on_GpuSample(self, event: GpuSample) -> None:
        self._gpus = list(event.gpus)
        self._show_gpus()

    def _show_gpus(self) -> None:
        width = max(1, self.content_size.width - 2)  # the status line's padding
        lines = gpu_lines(self._gpus, width, one_per_gpu=self._tall)
        self.query_one("#gpu-status", Static).update(Content("\n".join(lines)))

    def _on_RunStarted(self, event: RunStarted) -> None:
        self.preload_plotext()
        self._series.start(event.run_id, fresh=True)
        self.plot.refresh()
        self._run_status = (
            f"run {event.index} of {event.total}" if event.total else f"baseline {event.run_id}"
        )
        self.border_subtitle = self._run_status

    def _on_RunFinished(self, event: RunFinished) -> None:
        self.log_widget.write_text(run_summary(event, self.colour("success"), self.colour("error")))
        # A later run gets its own separator even if the engine reuses the id after a fix.
        self._current_run = ""
        self._finished.pop(event.run_id, None)  # a rerun after a fix replaces its row
        self._finished[event.run_id] = event
        self._show_results()
        outcome = "done" if _succeeded(event) else "failed"
        self.border_subtitle = f"{self._run_status or event.run_id} · {outcome}"

    def _show_results(self) -> None:
        colours = ResultColours(self.colour("success"), self.colour("error"), "dim")
        width = max(1, self.content_size.width - 2)  # the table's padding
        table = results_table(list(self._finished.values()), width, colours)
        self.query_one("#run-results", Static).update(table)


def run_summary(event: RunFinished, ok_colour: str, error_colour: str) -> Text:
    if _succeeded(event):
        line = Text(f"✔ {event.run_id} finished in {event.wall_s:.1f} s", style=f"bold {ok_colour}")
        means = flatten_means(event.means)
        if means:
            line.append("\n  " + "  ".join(means), style="")
        return line
    what = "timed out" if event.timed_out else f"failed (exit {event.returncode})"
    line = Text(f"✘ {event.run_id} {what} after {event.wall_s:.1f} s", style=f"bold {error_colour}")
    tail = event.error_tail.strip().splitlines()[-5:]
    if tail:
        line.append("\n  " + "\n  ".join(tail), style=error_colour)
    return line
