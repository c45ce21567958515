"""The logs pane: the running experiment's output (bounded), GPU status, a live plot of the
metrics the run prints, and each finished run's means against the baseline. A run that is a
Slurm job shows the job's queue state in the border (PENDING and why, RUNNING where and how long,
how it ended), and the GPU line says where its GPUs are rather than this login node's "CPU only".

A run may print 100,000 lines as fast as it can and the app hands them over in batches (every
0.1 s), so the work per batch on the UI thread is bounded: a batch shows at most its newest
``LINES_PER_WRITE`` lines and counts the rest in a marker (the run folder's stdout.log has every
line; log_burst.py); the log stores plain strings and renders only the lines on screen
(Textual's RichLog renders every line as it is written, tens of microseconds each); the metrics
come parsed by the engine (``MetricsReported``), and the plot redraws at most once per screen
refresh, only when new points arrived and only while it is visible.

The lower section of the pane switches (key ``v``) between the log alone, the plot and the
results table, and during a hill-climb or tree search its ledger (ledger_view.py), which comes
up by itself when a search begins unless the researcher picked a view. A tall pane shows the
plot, table or ledger under the log; a short one (a 2×2 grid on an 80×24 terminal) shows one of
them in place of the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Static

from labtui.core.events import (
    GpuSample,
    JobState,
    LogLine,
    MetricsReported,
    Rewound,
    RunFinished,
    RunStarted,
    SearchEnded,
    SearchStarted,
    SearchStep,
)
from labtui.core.journal import stages_from
from labtui.core.machine.metric_lines import point_of
from labtui.core.machine.metric_series import MetricSeries

from ..job_words import cluster_gpu_lines, ended, idle_gpu_line, state_words
from .base import Pane
from .gpu_status import gpu_lines
from .ledger_view import LedgerView
from .log_burst import last_rows
from .metric_plot import MetricPlot, load_plotext, plotext_loaded
from .run_log import LineStyle, RunLog, printable
from .run_results import ResultColours, flatten_means, results_table, succeeded
from .search_record import SearchRecord

LOG_MAX_LINES = 5000
# Of a live batch (the app writes ten a second), the newest lines shown; a flood's others are
# counted in a marker. ~1 ms of the UI thread's time, so a key waits for no more than that.
LINES_PER_WRITE = 1000
VIEWS: tuple[str, ...] = ("log", "plot", "results", "ledger")  # the ledger: during a search
# From this many content rows the plot or table fits under the log instead of replacing it.
TALL_ROWS = 16


class LogsPane(Pane):
    """Experiment output (bounded), GPU status, a live metric plot, and each run's outcome."""

    TITLE = "Experiment logs"
    HANDLES = (
        LogLine,
        MetricsReported,
        GpuSample,
        JobState,
        RunStarted,
        RunFinished,
        SearchStarted,
        SearchStep,
        SearchEnded,
        Rewound,
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "v",
            "cycle_view",
            "View",
            tooltip="Cycle the lower section: log, plot, results, search ledger",
            id="logs.view",
        ),
        Binding(
            "p",
            "cycle_metric",
            "Metric",
            tooltip="Cycle the plotted metric; a hidden plot is shown first",
            id="logs.metric",
        ),
    ]
    DEFAULT_CSS = """
    LogsPane #metric-plot, LogsPane #run-results, LogsPane #ledger-view {
        display: none;
        height: 1fr;
        padding: 0 1;
    }
    LogsPane.-view-plot #metric-plot, LogsPane.-view-results #run-results,
    LogsPane.-view-ledger #ledger-view {
        display: block;
    }
    LogsPane.-short.-view-plot #run-log, LogsPane.-short.-view-results #run-log,
    LogsPane.-short.-view-ledger #run-log {
        display: none;
    }
    LogsPane.-tall #ledger-view {
        height: 3fr;
    }
    LogsPane.-tall #run-results {
        height: auto;
        max-height: 60%;
    }
    """

    def __init__(self, cluster: str = "local", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._cluster = cluster  # "slurm": runs are jobs, this machine's GPUs are not theirs
        self._current_run = ""
        self._series = MetricSeries()
        self._view: str | None = None  # None until the researcher picks: then it follows height
        self._tall = False
        self._sample: GpuSample | None = None  # the newest GPU sample
        self._finished: dict[str, RunFinished] = {}
        self._run_status = ""  # 'run 1 of 3', 'baseline run_0'
        self._run_id = ""  # the run the border speaks of
        self._outcome = ""  # 'done' or 'failed' once that run finished
        self._jobs: dict[str, JobState] = {}  # each cluster run's newest job state, by run id
        self._last_job: JobState | None = None
        self._ends: dict[str, str] = {}  # how each run's job ended (TIMEOUT, ...), by run id
        self._plotext_requested = False
        self._search = SearchRecord()

    def compose(self) -> ComposeResult:
        yield Static(idle_gpu_line(self._cluster), id="gpu-status", classes="status-line")
        yield RunLog(id="run-log", max_lines=LOG_MAX_LINES)
        yield MetricPlot(self._series, id="metric-plot")
        yield Static(Text("no finished runs yet", style="dim italic"), id="run-results")
        yield LedgerView(self._search, id="ledger-view")

    def set_cluster(self, cluster: str) -> None:
        """Where runs execute, once the session's facts are read (before any run's output)."""
        self._cluster = cluster
        if self._sample is None and self._last_job is None:
            self.query_one("#gpu-status", Static).update(idle_gpu_line(cluster))

    def on_mount(self) -> None:
        # Pane.on_mount (the title) runs too: Textual calls the handler of every class.
        self._apply_view()

    def preload_plotext(self) -> None:
        """Import plotext in a thread: the app asks right after the first paint, and a run's
        first output asks again (for a pane used without the app). Never during the first
        paint (it would slow it) nor at the first plot (the screen would freeze)."""
        if not plotext_loaded() and not self._plotext_requested:
            self._plotext_requested = True
            self.run_worker(load_plotext, name="load plotext", thread=True, exit_on_error=False)

    @property
    def log_widget(self) -> RunLog:
        return self.query_one("#run-log", RunLog)

    @property
    def plot(self) -> MetricPlot:
        return self.query_one("#metric-plot", MetricPlot)

    @property
    def ledger(self) -> LedgerView:
        return self.query_one("#ledger-view", LedgerView)

    @property
    def views(self) -> tuple[str, ...]:
        """What ``v`` cycles through: the ledger only once a search has begun."""
        return VIEWS if self._search.active else VIEWS[:-1]

    @property
    def view(self) -> str:
        """What the lower section shows: the researcher's choice, else a search's ledger, else
        what fits the height."""
        if self._view in self.views:
            return self._view
        if self._search.active:
            return "ledger"
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
        if self._run_id in self._jobs:
            self._show_run_status()  # the longest words about the job that fit

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
        for widget in (self.log_widget, *(self._lower(name) for name in VIEWS[1:])):
            widget.can_focus = widget is shown
        if had_focus:
            self.call_after_refresh(shown.focus)

    def _lower(self, view: str) -> Widget:
        if view == "plot":
            return self.plot
        if view == "ledger":
            return self.ledger
        return self.query_one("#run-results", Static)

    def action_cycle_view(self) -> None:
        views = self.views
        self._view = views[(views.index(self.view) + 1) % len(views)]
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

    def write_log_lines(self, events: Sequence[LogLine], *, live: bool = True) -> None:
        """Write a burst of output: one append per line, one log write per batch.

        A LogLine carries the lines of one pipe read. A live batch shows at most
        ``LINES_PER_WRITE`` of its newest lines (log_burst.py), the journal's replay as many as
        the log keeps; what is left out is counted in a marker line.
        """
        burst = last_rows(events, LINES_PER_WRITE if live else LOG_MAX_LINES)
        if not burst.rows:
            return
        texts: list[str] = []
        styles: list[LineStyle] = []
        if burst.skipped:
            texts.append(burst.marker())
            styles.append("dim italic")
        error = self.colour("error")
        for run_id, stream, text in burst.rows:
            if run_id != self._current_run:
                self._current_run = run_id
                texts.append(f"── {run_id} ──")
                styles.append("dim")
            texts.append(printable(text))
            styles.append(error if stream == "stderr" else "")
        self.log_widget.write_lines(texts, styles)

    def _on_MetricsReported(self, event: MetricsReported) -> None:
        """The engine's points go into the series; the plot redraws if any was kept."""
        self.preload_plotext()
        series = self._series
        version = series.version
        if event.run_id != series.run_id:
            series.start(event.run_id)
        for point in event.points:
            series.add(point_of(point))
        if series.version != version:
            self.plot.refresh()

    def _on_GpuSample(self, event: GpuSample) -> None:
        self._sample = event
        self._show_gpus()

    def _show_gpus(self) -> None:
        """This machine's GPUs, or a compute node's ('node7: GPU0 …'). While a run is a Slurm
        job that has sent no readings, where its GPUs are: on a login node this machine's
        'CPU only' would mislead."""
        width = max(1, self.content_size.width - 2)  # the status line's padding
        sample = self._sample
        job = self._jobs.get(self._run_id) or self._last_job
        if job is not None and (sample is None or sample.job_id != job.job_id):
            lines = cluster_gpu_lines(job, width)
        else:
            gpus = sample.gpus if sample is not None else []
            host = f"{sample.host}: " if sample is not None and sample.host else ""
            fit = gpu_lines(gpus, max(1, width - len(host)), one_per_gpu=self._tall)
            lines = [host + line for line in fit]
        self.query_one("#gpu-status", Static).update(Content("\n".join(lines)))

    def _on_JobState(self, event: JobState) -> None:
        self._jobs[event.run_id] = event
        self._last_job = event
        if ended(event):
            self._ends[event.run_id] = event.state
        if not self._run_id:
            self._run_id = event.run_id  # a job followed before its run was announced
        if event.run_id == self._run_id:
            self._show_run_status()
        self._show_gpus()
        if event.run_id in self._finished:
            self._show_results()

    def _show_run_status(self) -> None:
        """The border's words about the run: 'run 1 of 3', then its Slurm job where it is one
        ('run 1 of 3 · Slurm job 12 · RUNNING on node7 · 0:42'), then how it ended ('done').
        The job's words shorten to fit a narrow pane."""
        label = self._run_status or self._run_id
        outcome = [self._outcome] if self._outcome else []
        job = self._jobs.get(self._run_id)
        if job is None:
            self.border_subtitle = " · ".join([label, *outcome])
            return
        # A job's last state before the run's end may be a RUNNING one: the end says enough.
        said = [state_words(job)] if ended(job) or not outcome else []
        again = " (re-attached)" if job.reattached else ""
        room = self.size.width - 4  # the corners and a space each side
        forms = (
            [label, f"Slurm job {job.job_id}{again}", *said, *outcome],
            [label, f"job {job.job_id}", *said, *outcome],
            [f"job {job.job_id}", *said, *outcome],
        )
        for words in forms:
            subtitle = " · ".join(words)
            if len(subtitle) <= room:
                break
        self.border_subtitle = subtitle

    def _on_RunStarted(self, event: RunStarted) -> None:
        self.preload_plotext()
        self._series.start(event.run_id, fresh=True)
        self.plot.refresh()
        self._run_status = (
            f"run {event.index} of {event.total}" if event.total else f"baseline {event.run_id}"
        )
        self._run_id, self._outcome = event.run_id, ""
        # A rerun after a fix gets a job of its own.
        self._jobs.pop(event.run_id, None)
        self._ends.pop(event.run_id, None)
        self._show_run_status()
        if self._last_job is not None:
            self._show_gpus()

    def _on_RunFinished(self, event: RunFinished) -> None:
        self.log_widget.write_text(run_summary(event, self.colour("success"), self.colour("error")))
        # A later run gets its own separator even if the engine reuses the id after a fix.
        self._current_run = ""
        self._finished.pop(event.run_id, None)  # a rerun after a fix replaces its row
        self._finished[event.run_id] = event
        self._show_results()
        self._run_id = event.run_id
        self._outcome = "done" if succeeded(event) else "failed"
        self._show_run_status()

    def _on_SearchStarted(self, event: SearchStarted) -> None:
        self._search_event(event)

    def _on_SearchStep(self, event: SearchStep) -> None:
        self._search_event(event)

    def _on_SearchEnded(self, event: SearchEnded) -> None:
        self._search_event(event)

    def _search_event(self, event: SearchStarted | SearchStep | SearchEnded) -> None:
        """Into the record; the ledger is drawn when it is next on screen."""
        self.preload_plotext()  # the climb's plot
        began = not self._search.active
        self._search.apply(event)
        self.ledger.changed()
        if began and self._search.active:
            self._apply_view()  # the ledger comes up (unless a view was picked) and joins `v`

    def _on_Rewound(self, event: Rewound) -> None:
        """A rewind to the search's stage or before takes its ledger away with it."""
        if self._search.active and self._search.stage in stages_from(event.stage):
            self._search.forget()
            self.ledger.changed()
            self._apply_view()

    def _show_results(self) -> None:
        colours = ResultColours(self.colour("success"), self.colour("error"), "dim")
        width = max(1, self.content_size.width - 2)  # the table's padding
        table = results_table(list(self._finished.values()), width, colours, self._ends)
        self.query_one("#run-results", Static).update(table)


def run_summary(event: RunFinished, ok_colour: str, error_colour: str) -> Text:
    if succeeded(event):
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
