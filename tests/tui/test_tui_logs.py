"""The logs pane alone, in a tiny app: log lines, GPU status, the live plot, the results table.

Every event carries a fixed timestamp and every number is fixed, so the snapshots are stable.
Async tests run under ``asyncio.run`` (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from rich.text import Text
from support.pane_app import PaneApp
from textual.app import ComposeResult
from textual.color import Color
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from labtui.core.events import (
    Event,
    GpuSample,
    LogLine,
    Rewound,
    RunFinished,
    RunStarted,
    SearchEnded,
    SearchStarted,
    SearchStep,
)
from labtui.core.journal import Journal, read_events
from labtui.core.machine.metric_lines import metrics_reported
from labtui.tui.panes.gpu_status import gpu_lines, gpu_status
from labtui.tui.panes.ledger_view import LedgerView
from labtui.tui.panes.log_burst import Burst, last_rows
from labtui.tui.panes.logs import LINES_PER_WRITE, LOG_MAX_LINES, VIEWS, LogsPane
from labtui.tui.panes.metric_plot import MetricPlot, short_number, thin, ticks
from labtui.tui.panes.run_log import RunLog, printable
from labtui.tui.panes.run_results import flatten_means
from labtui.tui.panes.search_record import SearchRecord

TS = 1_700_000_000.0  # every event carries this: nothing displayed may depend on the clock
SMALL = (40, 11)  # the pane in a 2×2 grid on an 80×24 terminal
LARGE = (80, 24)  # the pane in a 2×2 grid on a 160×48 terminal

H100 = {
    "index": 0,
    "name": "NVIDIA H100",
    "util": 87.0,
    "mem_used_mb": 12288.0,
    "mem_total_mb": 81559.0,
    "temp_c": 64.0,
}
A100 = {
    "index": 1,
    "name": "NVIDIA A100",
    "util": 12.0,
    "mem_used_mb": 2048.0,
    "mem_total_mb": 40960.0,
    "temp_c": 41.0,
}


def ev(cls: type[Event], **fields: object) -> Event:
    return cls(ts=TS, **fields)  # type: ignore[call-arg]


def log(text: str, run_id: str = "run_1", stream: str = "stdout") -> LogLine:
    return LogLine(ts=TS, stage="experiments", run_id=run_id, stream=stream, text=text)


def moons_lines(run_id: str = "run_1", seeds: int = 2, shift: float = 0.0) -> list[LogLine]:
    """What the moons template prints, with made-up but smooth numbers."""
    lines = []
    for seed in range(seeds):
        for epoch in range(25, 151, 25):
            loss = 0.7 / (1 + epoch / 20) + 0.02 * seed + shift
            accuracy = 0.97 - loss / 4
            lines.append(
                log(
                    f"seed {seed} epoch {epoch:4d}/150 "
                    f"train_loss {loss:.4f} test_accuracy {accuracy:.4f}",
                    run_id,
                )
            )
    lines.append(
        log(
            "final test_accuracy_mean 0.9300 train_loss_mean 0.1234 train_time_s_mean 1.2300",
            run_id,
        )
    )
    return lines


def with_metrics(events: Sequence[Event]) -> list[Event]:
    """The events as the engine emits them: each LogLine followed by its MetricsReported."""
    out: list[Event] = []
    for event in events:
        out.append(event)
        if isinstance(event, LogLine) and (reported := metrics_reported(event)):
            out.append(reported)
    return out


def finished(run_id: str, accuracy: float, loss: float, returncode: int = 0) -> RunFinished:
    means = {"moons": {"means": {"test_accuracy_mean": accuracy, "train_loss_mean": loss}}}
    return RunFinished(
        ts=TS, stage="experiments", run_id=run_id, returncode=returncode, wall_s=3.2, means=means
    )


class LogsApp(PaneApp):
    """Just the logs pane, styled like the real app."""

    def compose(self) -> ComposeResult:
        yield LogsPane(id="logs")

    @property
    def pane(self) -> LogsPane:
        return self.query_one(LogsPane)

    def feed(self, events: Sequence[Event]) -> None:
        """Hand events to the pane the way the app does: consecutive log lines as one batch, and
        after each its metrics, read by the engine's function as the runner does."""
        batch: list[LogLine] = []
        for event in with_metrics(events):
            if isinstance(event, LogLine):
                batch.append(event)
                continue
            if batch:
                self.pane.write_log_lines(batch)
                batch = []
            self.pane.apply(event)
        if batch:
            self.pane.write_log_lines(batch)


def run_app(
    steps: Callable[[Pilot, LogsApp], Awaitable[None]], size: tuple[int, int] = LARGE
) -> None:
    async def test() -> None:
        app = LogsApp()
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(test())


def log_text(app: LogsApp) -> list[str]:
    return app.query_one("#run-log", RunLog).lines


def rendered(widget: Widget) -> str:
    """What the widget shows on screen, as plain text."""
    strips = widget.render_lines(Region(0, 0, *widget.region.size))
    return "\n".join(strip.text.rstrip() for strip in strips)


def plotted(app: LogsApp) -> str:
    return rendered(app.query_one(MetricPlot))


# -- GPU status (pure) -----------------------------------------------------------------------


def test_gpu_status_for_zero_one_and_two_gpus() -> None:
    assert gpu_status([]) == "CPU only"
    assert gpu_status([H100]) == "GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C"
    assert gpu_status([H100, A100]).count(" │ ") == 1


def test_gpu_lines_one_per_gpu_when_tall_else_one_compact_line() -> None:
    assert gpu_lines([], 30, one_per_gpu=True) == ["CPU only"]
    assert gpu_lines([H100, A100], 100, one_per_gpu=True) == [
        "GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C",
        "GPU1 NVIDIA A100 12% · 2.0/40.0 GB · 41°C",
    ]
    assert gpu_lines([H100, A100], 60, one_per_gpu=False) == [
        "GPU0 87% 12/80G 64°C │ GPU1 12% 2/40G 41°C"
    ]
    assert gpu_lines([H100, A100], 36, one_per_gpu=False) == ["GPU0 87% 12G 64° │ GPU1 12% 2G 41°"]
    # Nine GPUs never take nine lines of a pane.
    many = [dict(H100, index=n) for n in range(9)]
    assert len(gpu_lines(many, 200, one_per_gpu=True)) == 1


# -- plot helpers (pure) ---------------------------------------------------------------------


def test_thin_keeps_the_last_point_and_the_bound() -> None:
    xs = [float(n) for n in range(1001)]
    thin_xs, thin_ys = thin(xs, xs, 100)
    assert len(thin_xs) <= 101 and thin_xs[0] == 0.0 and thin_xs[-1] == 1000.0
    assert thin_ys == thin_xs
    assert thin([1.0, 2.0], [3.0, 4.0], 100) == ([1.0, 2.0], [3.0, 4.0])


def test_tick_labels_stay_short() -> None:
    assert [short_number(v) for v in (1234567, 25000, 250, 0.41234, 3e-05)] == [
        "1.23M",
        "25k",
        "250",
        "0.412",
        "3e-05",
    ]
    assert ticks(1, 150, 3, whole=True) == ([1.0, 76.0, 150.0], ["1", "76", "150"])
    assert ticks(0.5, 0.5, 4) == ([0.5], ["0.5"])


def test_flatten_means_still_skips_the_means_level() -> None:
    assert flatten_means({"ds": {"means": {"acc": 0.91234, "n": 3}}}) == ["ds.acc=0.9123", "ds.n=3"]


# -- the pane in an app ----------------------------------------------------------------------


def test_log_lines_appear_with_a_separator_per_run_and_stderr_kept() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([log("hello"), log("oops", stream="stderr"), log("again"), log("next", "run_2")])
        await pilot.pause()
        assert log_text(app) == ["── run_1 ──", "hello", "oops", "again", "── run_2 ──", "next"]

    run_app(steps)


def test_the_log_stays_bounded() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        for batch in range(3):
            app.feed([log(f"line {batch * 4000 + n}") for n in range(4000)])
        app.feed([log(f"line {12_000 + n}") for n in range(LOG_MAX_LINES + 10)])
        await pilot.pause()
        lines = log_text(app)
        assert len(lines) <= LOG_MAX_LINES
        assert lines[-1] == f"line {12_000 + LOG_MAX_LINES + 9}"

    run_app(steps)


def test_the_log_follows_the_end_until_scrolled_up() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        run_log = app.query_one("#run-log", RunLog)
        app.feed([log(f"a {n}") for n in range(100)])
        # The scroll happens after the next refresh, which a loaded machine may delay.
        for _ in range(100):
            if run_log.is_vertical_scroll_end and run_log.scroll_y > 0:
                break
            await pilot.pause(0.02)
        assert run_log.is_vertical_scroll_end and run_log.scroll_y > 0
        run_log.scroll_home(animate=False, immediate=True)
        app.feed([log(f"b {n}") for n in range(100)])
        for _ in range(5):
            await pilot.pause(0.02)
        assert run_log.scroll_y == 0  # the researcher is reading: do not pull them away
        assert rendered(run_log).splitlines()[0] == "── run_1 ──"

    run_app(steps)


def test_stderr_lines_are_drawn_in_the_error_colour() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([log("fine"), log("broken", stream="stderr")])
        await pilot.pause()
        run_log = app.query_one("#run-log", RunLog)
        colours = [
            {segment.style.color for segment in run_log.render_line(y) if segment.text.strip()}
            for y in (1, 2)
        ]
        error = Color.parse(str(app.current_theme.error)).rich_color
        assert error not in colours[0] and colours[1] == {error}

    run_app(steps, SMALL)


def test_control_codes_never_reach_the_screen() -> None:
    assert printable("plain line 1") == "plain line 1"
    assert printable("\x1b[31mred\x1b[0m text") == "red text"
    assert printable(" 10%|█\r 50%|█████\r100%|██████████\r") == "100%|██████████"
    assert printable("a\tb") == "a       b"
    assert printable("bell\x07") == "bell�"


def test_gpu_status_line_for_zero_one_and_two_gpus() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        status = app.query_one("#gpu-status", Static)
        assert "CPU only" in rendered(status)
        app.feed([ev(GpuSample, stage="experiments", gpus=[])])
        await pilot.pause()
        assert "CPU only" in rendered(status)
        app.feed([ev(GpuSample, stage="experiments", gpus=[H100])])
        await pilot.pause()
        assert "GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C" in rendered(status)
        app.feed([ev(GpuSample, stage="experiments", gpus=[H100, A100])])
        await pilot.pause()
        text = rendered(status)
        assert "GPU0 NVIDIA H100 87%" in text and "GPU1 NVIDIA A100 12%" in text
        assert status.size.height == 2  # a tall pane: one line per GPU

    run_app(steps, LARGE)


def test_two_gpus_share_one_line_on_a_small_pane() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([ev(GpuSample, stage="experiments", gpus=[H100, A100])])
        await pilot.pause()
        status = app.query_one("#gpu-status", Static)
        assert status.size.height == 1
        assert "GPU0 87%" in rendered(status)

    run_app(steps, SMALL)


def test_no_plot_until_two_points_then_the_first_metric_that_is_not_a_time() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        assert app.pane.view == "plot"  # a tall pane shows the plot under the log
        await pilot.pause()
        assert "no metrics reported yet" in plotted(app)
        app.feed([log("step 1 wall_time_s 0.5 loss 2.0")])
        await pilot.pause()
        assert "no metrics reported yet" in plotted(app)
        app.feed([log("step 2 wall_time_s 0.9 loss 1.5")])
        await pilot.pause()
        text = plotted(app)
        assert text.strip().startswith("loss 1.5 · step 2")
        assert "┤" in text  # plotext drew axes

    run_app(steps)


def test_p_cycles_the_plotted_metric() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed(moons_lines())
        await pilot.pause()
        plot = app.query_one(MetricPlot)
        assert plot.metric == "train_loss"
        await pilot.press("p")
        assert plot.metric == "test_accuracy"
        await pilot.press("p")
        assert plot.metric == "train_loss"  # the one-point "final" means are not plottable
        assert "━ seed 0" in plotted(app) and "━ seed 1" in plotted(app)

    run_app(steps)


def test_a_new_run_starts_a_fresh_plot_but_keeps_the_chosen_metric() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed(moons_lines("run_1"))
        await pilot.press("p")
        plot = app.query_one(MetricPlot)
        app.feed([ev(RunStarted, stage="experiments", run_id="run_2", index=2, total=3)])
        await pilot.pause()
        assert "no metrics reported yet" in plotted(app)
        assert app.pane.border_subtitle == "run 2 of 3"
        app.feed(moons_lines("run_2", seeds=1))
        await pilot.pause()
        assert plot.metric == "test_accuracy"
        assert "━ seed" not in plotted(app)  # one curve needs no legend

    run_app(steps)


def test_v_cycles_the_views_and_a_small_pane_starts_with_the_log() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        pane = app.pane
        run_log = app.query_one("#run-log", RunLog)
        plot = app.query_one(MetricPlot)
        results = app.query_one("#run-results", Static)
        assert pane.view == "log" and run_log.display and not plot.display
        await pilot.press("v")
        await pilot.pause()
        assert pane.view == "plot" and plot.display and not run_log.display
        await pilot.press("v")
        await pilot.pause()
        assert pane.view == "results" and results.display and not run_log.display
        await pilot.press("v")
        assert pane.view == "log"
        await pilot.press("p")  # with the plot hidden, p shows it first
        assert pane.view == "plot"

    run_app(steps, SMALL)


def test_the_keys_are_live_while_the_pane_has_focus_whatever_it_shows() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        for _ in range(len(VIEWS)):
            bindings = app.screen.active_bindings
            live = {key: bindings[key].binding for key in ("v", "p") if key in bindings}
            assert {key: (b.id, b.description) for key, b in live.items()} == {
                "v": ("logs.view", "View"),
                "p": ("logs.metric", "Metric"),
            }
            assert len([w for w in app.pane.query("*") if w.focusable]) == 1  # one tab stop
            await pilot.press("v")
            await pilot.pause()

    run_app(steps, SMALL)


def test_a_run_started_names_the_run_in_the_border() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([ev(RunStarted, stage="experiments", run_id="run_0")])
        assert app.pane.border_subtitle == "baseline run_0"
        app.feed([finished("run_0", 0.93, 0.12)])
        assert app.pane.border_subtitle == "baseline run_0 · done"
        app.feed([ev(RunStarted, stage="experiments", run_id="run_1", index=1, total=4)])
        assert app.pane.border_subtitle == "run 1 of 4"

    run_app(steps, SMALL)


def test_results_table_puts_the_baseline_first_with_deltas() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed(
            [
                finished("run_1", 0.95, 0.10),
                finished("run_0", 0.93, 0.12),
                finished("run_2", 0.0, 0.0, returncode=1),
            ]
        )
        await pilot.press("v")  # plot → results
        await pilot.pause()
        text = rendered(app.query_one("#run-results", Static))
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines[0].split() == ["moons", "test_accuracy_mean", "train_loss_mean"]
        assert lines[2].split() == ["run_0", "0.93", "0.12"]
        assert lines[3].split() == ["run_1", "0.95", "0.1"]
        assert lines[4].split() == ["+0.02", "-0.02"]
        assert lines[5].split() == ["run_2", "✘", "exit", "1", "–", "–"]
        assert app.pane.border_subtitle == "run_2 · failed"

    run_app(steps)


def test_results_are_transposed_when_the_pane_is_narrow() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([finished("run_0", 0.93, 0.12), finished("run_1", 0.95, 0.10)])
        await pilot.press("v", "v")  # log → plot → results
        await pilot.pause()
        text = rendered(app.query_one("#run-results", Static))
        lines = [line for line in text.splitlines() if line.strip()]
        assert lines[0].split() == ["moons", "run_0", "run_1"]
        assert lines[2].split() == ["test_accuracy_mean", "0.93", "0.95"]

    run_app(steps, SMALL)


def test_a_rerun_replaces_its_row() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([finished("run_0", 0.93, 0.12), finished("run_1", 0.5, 0.9, returncode=1)])
        app.feed([finished("run_1", 0.95, 0.10)])
        await pilot.press("v")
        await pilot.pause()
        text = rendered(app.query_one("#run-results", Static))
        assert text.count("run_1") == 1 and "✘" not in text

    run_app(steps)


# -- snapshots -------------------------------------------------------------------------------


def scripted_run() -> list[Event]:
    return [
        ev(RunStarted, stage="experiments", run_id="run_0", index=0, total=0),
        *moons_lines("run_0", shift=0.01),
        finished("run_0", 0.93, 0.12),
        ev(RunStarted, stage="experiments", run_id="run_1", index=1, total=3),
        ev(GpuSample, stage="experiments", gpus=[H100, A100]),
        log("warning: slow dataloader", "run_1", "stderr"),
        *moons_lines("run_1"),
        finished("run_1", 0.95, 0.10),
        ev(RunStarted, stage="experiments", run_id="run_2", index=2, total=3),
        *moons_lines("run_2", seeds=3, shift=-0.01)[:-1],
    ]


def snapshot_steps(*keys: str) -> Callable[[Pilot], Awaitable[None]]:
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, LogsApp)
        await pilot.pause()
        app.feed(scripted_run())
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_snapshot_small_log(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=SMALL, run_before=snapshot_steps())


def test_snapshot_small_plot(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=SMALL, run_before=snapshot_steps("v"))


def test_snapshot_small_results(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=SMALL, run_before=snapshot_steps("v", "v"))


def test_snapshot_large_plot(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=LARGE, run_before=snapshot_steps())


def test_snapshot_large_results(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=LARGE, run_before=snapshot_steps("v"))


def test_a_flood_keeps_only_what_the_log_can_hold_and_counts_the_rest() -> None:
    events = [log("\n".join(f"{block}.{n}" for n in range(1000))) for block in range(12)]
    burst = last_rows(events, 2500)
    assert [text for _, _, text in burst.rows] == [
        f"{block}.{n}" for block in (9, 10, 11) for n in range(1000)
    ][-2500:]
    assert burst.skipped == 12_000 - 2500
    assert burst.marker() == "… 9,500 lines not shown (stdout.log in the run folder has all)"
    assert last_rows([], 10) == Burst()


def test_the_marker_names_each_stream_whose_lines_were_left_out() -> None:
    events = [log("a\nb", stream="stderr"), log("c\nd"), log("e")]
    burst = last_rows(events, 2)
    assert [text for _, _, text in burst.rows] == ["d", "e"]
    assert burst.marker() == (
        "… 3 lines not shown (stdout.log and stderr.log in the run folder have all)"
    )


def test_a_live_flood_shows_its_newest_lines_after_a_count_of_the_rest() -> None:
    """Each live batch shows at most LINES_PER_WRITE lines (the UI thread's work per frame is
    bounded); the journal's replay shows as many as the log keeps."""
    flood = [log("\n".join(f"{block}.{n}" for n in range(1000))) for block in range(5)]

    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.pane.write_log_lines(flood)
        await pilot.pause()
        skipped = 5000 - LINES_PER_WRITE
        assert log_text(app)[:3] == [
            f"… {skipped:,} lines not shown (stdout.log in the run folder has all)",
            "── run_1 ──",
            f"4.{1000 - LINES_PER_WRITE}",
        ]
        assert log_text(app)[-1] == "4.999"
        assert len(log_text(app)) == LINES_PER_WRITE + 2

    async def replayed(pilot: Pilot, app: LogsApp) -> None:
        app.pane.write_log_lines(flood, live=False)
        await pilot.pause()
        # every line, no count: the separator is what the log's bound drops
        assert log_text(app)[0] == "0.0"
        assert len(log_text(app)) == LOG_MAX_LINES

    run_app(steps)
    run_app(replayed)


def test_an_attach_rebuilds_the_log_from_the_bounded_journal_head_note_and_tail(
    tmp_path: Path,
) -> None:
    """What a flood left in the journal (its head, a count, its tail) replays into the log in
    the order it was printed, as `labtui attach` and a resume show it."""
    journal = Journal(tmp_path)
    journal.append(ev(RunStarted, stage="experiments", run_id="run_1"))
    for block in range(2000):  # 64 lines of 1 KB a read: 128 MB printed
        journal.append(log("\n".join(f"{block * 64 + n:07d} " + "x" * 1016 for n in range(64))))
    journal.append(ev(RunFinished, stage="experiments", run_id="run_1", returncode=0, wall_s=9.0))
    journal.close()
    lines = [e for e in read_events(journal.path) if isinstance(e, LogLine)]

    async def replayed(pilot: Pilot, app: LogsApp) -> None:
        app.pane.write_log_lines(lines, live=False)
        await pilot.pause()
        shown = log_text(app)
        note = next(i for i, line in enumerate(shown) if "not kept in the journal" in line)
        assert shown[note - 1].startswith("0000") and shown[note + 1][:7] > shown[note - 1][:7]
        assert shown[-1].startswith(f"{2000 * 64 - 1:07d} ")

    run_app(replayed)


# -- a search's ledger ------------------------------------------------------------------------


def search_started(strategy: str = "climb", limit: int = 100, idea: str = "toy") -> Event:
    return ev(
        SearchStarted,
        stage="experiments",
        strategy=strategy,
        idea=idea,
        metric="toy.score",
        direction="higher",
        baseline=0.5,
        noise=0.02,
        run_budget_s=60.0,
        limit=limit,
        ledger=f".labtui/search/{strategy}-{idea}/results.tsv",
        branch=f"labtui/{strategy}/{idea}",
    )


# (status, value) of a climb's attempts 1, 2, …
CLIMB = [("keep", 0.55), ("discard", 0.52), ("crash", None), ("keep", 0.65), ("discard", 0.6)]


def climb_steps(attempts: Sequence[tuple[str, float | None]] = CLIMB) -> list[Event]:
    events, best = [], 0.5
    for number, (status, value) in enumerate(attempts, 1):
        best = value if status == "keep" and value is not None else best
        events.append(
            ev(
                SearchStep,
                stage="experiments",
                strategy="climb",
                step=number,
                status=status,
                description=f"set SCORE to {value}",
                value=value,
                best=best,
                new_best=status == "keep",
                wall_s=0.4,
                tokens=1700,
            )
        )
    return events


def node(number: int, parent: int, action: str, value: float | None, best: bool = False) -> Event:
    return ev(
        SearchStep,
        stage="experiments",
        strategy="tree",
        step=number,
        status="ok" if value is not None else "buggy",
        description=f"change {number}",
        value=value,
        new_best=best,
        parent=parent,
        action=action,
    )


def ledger_text(app: LogsApp) -> str:
    return rendered(app.query_one(LedgerView))


def colour_of(app: LogsApp, part: str) -> Color | None:
    """The colour the ledger view draws ``part`` in (the first line showing it)."""
    ledger = app.query_one(LedgerView)
    for y in range(ledger.size.height):
        for segment in ledger.render_line(y):
            if part in segment.text and segment.style is not None:
                colour = segment.style.color
                return Color.from_rich_color(colour) if colour is not None else None
    raise AssertionError(f"{part!r} is not on screen")


def test_a_search_brings_its_ledger_up_and_v_offers_it_only_then() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        pane = app.pane
        assert pane.views == ("log", "plot", "results") and pane.view == "log"
        app.feed([search_started()])
        await pilot.pause()
        ledger = app.query_one(LedgerView)
        assert pane.view == "ledger" and ledger.display
        assert not app.query_one("#run-log", RunLog).display  # a short pane: in the log's place
        assert "no attempts yet" in ledger_text(app)
        seen = []
        for _ in range(4):
            await pilot.press("v")
            seen.append(pane.view)
        assert seen == ["log", "plot", "results", "ledger"]

    run_app(steps, SMALL)


def test_a_view_the_researcher_picked_stays_when_a_search_begins() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        await pilot.press("v", "v")  # log → plot → results
        app.feed([search_started(), *climb_steps()])
        await pilot.pause()
        assert app.pane.view == "results" and "ledger" in app.pane.views

    run_app(steps, SMALL)


def test_the_climb_shows_its_header_plot_and_last_attempts() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([search_started(), *climb_steps()])
        await pilot.pause()
        assert app.pane.view == "ledger"  # on a tall pane too, under the log
        assert app.query_one("#run-log", RunLog).display
        lines = ledger_text(app).splitlines()
        assert lines[0].split() == "climb · toy.score ↑ · noise 0.02 · toy".split()
        assert lines[1].strip() == "5/100 attempts · 2 keep · 2 discard · 1 crash"
        assert lines[2].strip() == "best 0.65 (attempt 4) · baseline 0.5"
        assert "┤" in "\n".join(lines[3:-5])  # plotext drew axes
        assert [line.split()[:3] for line in lines[-5:]] == [
            ["1", "keep", "0.55"],
            ["2", "discard", "0.52"],
            ["3", "crash", "–"],
            ["4", "keep", "0.65", "★"][:3],
            ["5", "discard", "0.6"],
        ]
        assert "★ set SCORE to 0.65" in lines[-2]
        theme = app.current_theme
        assert colour_of(app, "4 keep") == Color.parse(theme.success)
        assert colour_of(app, "3 crash") == Color.parse(theme.error)
        assert colour_of(app, "set SCORE to 0.52") != Color.parse(theme.success)  # discarded

    run_app(steps)


def test_a_short_pane_lists_the_attempts_that_fit_without_a_plot() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([search_started(), *climb_steps(CLIMB * 3)])
        await pilot.pause()
        lines = [line for line in ledger_text(app).splitlines() if line.strip()]
        assert "┤" not in ledger_text(app)
        assert lines[-1].split()[:2] == ["15", "discard"]  # the newest at the bottom

    run_app(steps, SMALL)


def test_the_tree_nests_children_under_their_parent_and_marks_the_best() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed(
            [
                search_started("tree", limit=20),
                node(1, 0, "draft", 0.6, best=True),
                node(2, 0, "draft", None),
                node(3, 1, "improve", 0.66, best=True),
                node(5, 3, "improve", 0.71, best=True),  # grown before node 4 finished
                node(4, 2, "debug", 0.58),
                node(6, 3, "improve", None),
            ]
        )
        await pilot.pause()
        lines = ledger_text(app).splitlines()
        assert lines[1].strip() == "6/20 nodes · 4 ok · 2 buggy"
        assert lines[2].strip() == "best 0.71 (node 5) · baseline 0.5"
        assert [line.rstrip() for line in lines[3:9]] == [
            " 1 draft ok 0.6  change 1",
            " └─ 3 improve ok 0.66  change 3",
            "    ├─ 5 improve ok 0.71 ★  change 5",
            "    └─ 6 improve buggy –  change 6",
            " 2 draft buggy –  change 2",
            " └─ 4 debug ok 0.58  change 4",
        ]
        assert colour_of(app, "improve buggy") == Color.parse(app.current_theme.error)
        assert colour_of(app, "change 6") == Color.parse(app.current_theme.error)

    run_app(steps)


def test_a_tree_taller_than_the_view_scrolls() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([search_started("tree", limit=40)])
        app.feed([node(n, n - 1, "improve", 0.5 + n / 100) for n in range(1, 31)])
        await pilot.pause()
        ledger = app.query_one(LedgerView)
        assert ledger.virtual_size.height == 3 + 30 and ledger.max_scroll_y > 0
        ledger.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        last = ledger_text(app).splitlines()[-1].split()
        assert last[:5] == ["…", "└─", "30", "improve", "ok"]  # deep: its indentation cut

    run_app(steps, SMALL)


def test_a_resumed_search_keeps_its_steps_and_a_rewind_takes_them_away() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([search_started(), *climb_steps()])
        app.feed([search_started(), *climb_steps(CLIMB[:2])])  # resumed: steps told again
        await pilot.pause()
        assert "5/100 attempts · 2 keep · 2 discard" in ledger_text(app)
        assert "best 0.65 (attempt 4)" in ledger_text(app)
        app.feed([ev(Rewound, stage="writeup", to_commit="abc")])  # after the search: kept
        assert app.pane.view == "ledger"
        app.feed([ev(Rewound, stage="experiments", to_commit="abc")])
        await pilot.pause()
        assert app.pane.view == "log" and app.pane.views == VIEWS[:-1]
        app.feed([search_started(idea="other"), *climb_steps(CLIMB[:1])])  # another: fresh
        await pilot.pause()
        assert "1/100 attempts · 1 keep" in ledger_text(app)

    run_app(steps, SMALL)


def test_the_ended_search_says_why_and_its_seed_mean() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        ended = ev(
            SearchEnded,
            stage="experiments",
            strategy="climb",
            reason="5 attempts made",
            steps=5,
            best_step=4,
            best=0.65,
            seed_mean=0.64,
            seed_std=0.01,
            seed_runs=3,
            counts={"keep": 2, "discard": 2, "crash": 1},
        )
        app.feed([search_started(), *climb_steps(), ended])
        await pilot.pause()
        assert ledger_text(app).splitlines()[3].strip() == (
            "ended: 5 attempts made · 3 seed run(s): 0.64 ± 0.01"
        )

    run_app(steps)


def test_the_ledger_is_drawn_only_while_it_is_on_screen(monkeypatch) -> None:
    drawn: list[int] = []
    draw = LedgerView.draw

    def counting(self: LedgerView, width: int, height: int) -> list[Text]:
        drawn.append(self.record.version)
        return draw(self, width, height)

    monkeypatch.setattr(LedgerView, "draw", counting)

    async def steps(pilot: Pilot, app: LogsApp) -> None:
        await pilot.press("v")  # a view picked: the ledger stays hidden when the search begins
        app.feed([search_started(), *climb_steps(CLIMB * 20)])
        await pilot.pause()
        assert drawn == []
        await pilot.press("v", "v")  # plot → results → ledger
        await pilot.pause()
        assert app.pane.view == "ledger" and len(set(drawn)) == 1  # once, for the last version

    run_app(steps, SMALL)


def test_the_search_record_counts_each_step_once() -> None:
    record = SearchRecord()
    assert not record.active and record.best_step() == 0
    for event in [search_started(), *climb_steps(), *climb_steps(CLIMB[:1])]:
        assert record.apply(event)
    assert record.counts == {"keep": 2, "discard": 2, "crash": 1}
    assert [step.step for step in record.ordered()] == [1, 2, 3, 4, 5]
    assert (record.best_step(), record.best_value()) == (4, 0.65)
    assert not record.apply(log("not a search event"))


def test_the_run_log_keeps_its_drawn_lines_until_its_own_style_changes() -> None:
    """A focus change restyles the log without changing how it looks: its drawn lines are
    kept. A new theme changes its colours: they are drawn again."""

    def text_colour(log: RunLog) -> Color:
        segment = next(s for s in log.render_line(0) if "hello" in s.text)
        assert segment.style is not None and segment.style.color is not None
        return Color.from_rich_color(segment.style.color)

    async def steps(pilot: Pilot, app: LogsApp) -> None:
        log = app.query_one(RunLog)
        log.write_lines(["hello"], [""])
        await pilot.pause()
        before = text_colour(log)
        drawn = log._strips[0]
        app.set_focus(None)
        await pilot.pause()
        log.focus()
        await pilot.pause()
        assert log.has_focus
        assert text_colour(log) == before and log._strips[0] is drawn
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        assert text_colour(log) != before

    run_app(steps)
