"""Runs that are Slurm jobs, as the front ends show them: the queue state in the logs pane's
border, where the GPUs are in its GPU line, how Slurm ended a run in the results table, and one
headless line per JobState.

Every event carries a fixed timestamp and elapsed time, so the snapshots are stable.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable

from rich.console import Console
from test_tui_logs import (
    H100,
    LARGE,
    SMALL,
    TS,
    LogsApp,
    finished,
    log,
    moons_lines,
    rendered,
    run_app,
)
from textual.pilot import Pilot
from textual.widgets import Static

from labtui.core.events import Event, GpuSample, JobState, RunFinished, RunStarted
from labtui.tui.headless import HeadlessPrinter
from labtui.tui.job_words import cluster_gpu_lines, elapsed_words, end_words, state_words
from labtui.tui.panes.logs import LogsPane
from labtui.tui.panes.run_results import ResultColours, results_table


def job(state: str, run_id: str = "run_1", job_id: str = "12", **fields: object) -> JobState:
    return JobState(ts=TS, stage="experiments", run_id=run_id, job_id=job_id, state=state, **fields)  # type: ignore[arg-type]


def started(run_id: str = "run_1", index: int = 1, total: int = 3) -> RunStarted:
    return RunStarted(ts=TS, stage="experiments", run_id=run_id, index=index, total=total)


def sample(host: str = "node7", job_id: str = "12", gpus: list | None = None) -> GpuSample:
    return GpuSample(
        ts=TS, stage="experiments", gpus=[H100] if gpus is None else gpus, host=host, job_id=job_id
    )


def gpu_text(app: LogsApp) -> str:
    """The GPU status line(s) as shown, without the line's padding."""
    return "\n".join(
        line.strip() for line in rendered(app.query_one("#gpu-status", Static)).splitlines()
    )


# -- words (pure) ----------------------------------------------------------------------------


def test_elapsed_is_written_as_slurm_writes_it() -> None:
    assert [elapsed_words(s) for s in (0, 0.9, 42, 65, 725, 3723, 90061)] == [
        "0:00",
        "0:00",
        "0:42",
        "1:05",
        "12:05",
        "1:02:03",
        "25:01:01",
    ]


def test_state_words_say_why_it_waits_where_it_runs_and_how_it_ended() -> None:
    assert state_words(job("PENDING", reason="Resources")) == "PENDING (Resources)"
    assert state_words(job("PENDING")) == "PENDING"
    assert state_words(job("RUNNING", node="node7", elapsed_s=42.7)) == "RUNNING on node7 · 0:42"
    assert state_words(job("TIMEOUT", node="node7", elapsed_s=65)) == "TIMEOUT after 1:05"
    assert state_words(job("CANCELLED", reason="Dependency")) == "CANCELLED (Dependency)"
    assert state_words(job("COMPLETED", elapsed_s=3)) == "COMPLETED after 0:03"
    assert [end_words(s) for s in ("TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL")] == [
        "timed out",
        "out of memory",
        "node fail",
    ]


def test_the_cluster_gpu_line_says_where_the_gpus_are_as_it_fits() -> None:
    running = job("RUNNING", node="node7")
    assert cluster_gpu_lines(running, 78) == [
        "GPUs on the cluster: job 12 on node7 (no GPU readings)"
    ]
    assert cluster_gpu_lines(running, 38) == ["job 12 on node7: no GPU readings"]
    assert cluster_gpu_lines(job("PENDING", reason="Priority"), 78) == [
        "GPUs on the cluster: job 12 PENDING"
    ]
    assert cluster_gpu_lines(job("PENDING"), 30) == ["cluster job 12 PENDING"]


def test_a_run_slurm_ended_says_so_in_the_results_table_not_its_exit_code() -> None:
    colours = ResultColours("green", "red", "dim")
    runs = [finished("run_0", 0.93, 0.12), finished("run_1", 0, 0, -1), finished("run_2", 0, 0, 1)]
    ends = {"run_0": "COMPLETED", "run_1": "OUT_OF_MEMORY", "run_2": "FAILED"}
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with console.capture() as capture:
        console.print(results_table(runs, 100, colours, ends))
    text = capture.get()
    assert "run_1 ✘ out of memory" in text and "exit -1" not in text
    assert "run_2 ✘ exit 1" in text  # the run itself failed: its exit code tells more


# -- the headless printer --------------------------------------------------------------------


def printed(events: list[Event]) -> list[str]:
    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=120, color_system=None))
    for event in events:
        printer(event)
    return out.getvalue().splitlines()


def test_headless_prints_one_line_per_job_state() -> None:
    lines = printed(
        [
            job("PENDING", reason="Priority"),
            job("PENDING", reason="Resources"),
            job("RUNNING", node="node7", elapsed_s=1),
            sample(),
            job("RUNNING", node="node7", elapsed_s=31),
            job("TIMEOUT", node="node7", elapsed_s=65),
        ]
    )
    assert lines == [
        "run_1: Slurm job 12 PENDING (Priority)",
        "run_1: Slurm job 12 PENDING (Resources)",
        "run_1: Slurm job 12 RUNNING on node7",
        "GPUs on node7: NVIDIA H100",
        "run_1: Slurm job 12 still RUNNING on node7 · 0:31",
        "run_1: Slurm job 12 TIMEOUT after 1:05",
    ]


def test_headless_says_a_resumed_session_re_attached_to_its_job() -> None:
    lines = printed(
        [
            job("RUNNING", "run_2", "13", node="node8", elapsed_s=42, reattached=True),
            job("RUNNING", "run_2", "13", node="node8", elapsed_s=72, reattached=True),
            job("COMPLETED", "run_2", "13", node="node8", elapsed_s=3725, reattached=True),
        ]
    )
    assert lines == [
        "run_2: re-attached to Slurm job 13: RUNNING on node8 · 0:42",
        "run_2: Slurm job 13 still RUNNING on node8 · 1:12",
        "run_2: Slurm job 13 COMPLETED after 1:02:05",
    ]


# -- the logs pane ---------------------------------------------------------------------------


def test_the_pane_handles_job_states() -> None:
    assert JobState in LogsPane.HANDLES


def test_the_border_follows_the_job_from_the_queue_to_its_end() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        pane = app.pane
        app.feed([started()])
        assert pane.border_subtitle == "run 1 of 3"
        app.feed([job("PENDING", reason="Resources")])
        assert pane.border_subtitle == "run 1 of 3 · Slurm job 12 · PENDING (Resources)"
        app.feed([job("RUNNING", node="node7", elapsed_s=42)])
        assert pane.border_subtitle == "run 1 of 3 · Slurm job 12 · RUNNING on node7 · 0:42"
        app.feed([job("TIMEOUT", node="node7", elapsed_s=65)])
        assert pane.border_subtitle == "run 1 of 3 · Slurm job 12 · TIMEOUT after 1:05"
        app.feed([finished("run_1", 0, 0, returncode=-1)])
        assert pane.border_subtitle == "run 1 of 3 · Slurm job 12 · TIMEOUT after 1:05 · failed"
        app.feed([started("run_2", 2)])
        assert pane.border_subtitle == "run 2 of 3"  # the last run's job is not this one's
        app.feed([job("RUNNING", "run_2", "13", node="node8", elapsed_s=5, reattached=True)])
        assert pane.border_subtitle == (
            "run 2 of 3 · Slurm job 13 (re-attached) · RUNNING on node8 · 0:05"
        )
        # The job's last word was RUNNING when the run ended: the run's end says enough.
        app.feed([finished("run_2", 0.95, 0.1)])
        assert pane.border_subtitle == "run 2 of 3 · Slurm job 13 (re-attached) · done"

    run_app(steps, LARGE)


def test_a_narrow_pane_keeps_the_job_state_and_drops_words() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        pane = app.pane
        app.feed([started(), job("PENDING")])
        assert pane.border_subtitle == "run 1 of 3 · job 12 · PENDING"
        app.feed([job("PENDING", reason="Priority")])
        assert pane.border_subtitle == "job 12 · PENDING (Priority)"
        app.feed([job("RUNNING", node="node7", elapsed_s=42)])
        assert pane.border_subtitle == "job 12 · RUNNING on node7 · 0:42"
        await pilot.pause()
        assert "job 12 · RUNNING on node7 · 0:42" in rendered(pane).splitlines()[-1]

    run_app(steps, SMALL)


def test_the_gpu_line_says_where_a_jobs_gpus_are_until_its_readings_come() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([started()])
        await pilot.pause()
        assert gpu_text(app) == "CPU only"  # no job yet: this machine, as always
        app.feed([job("PENDING", reason="Priority")])
        await pilot.pause()
        assert gpu_text(app) == "GPUs on the cluster: job 12 PENDING"
        app.feed([job("RUNNING", node="node7", elapsed_s=2)])
        await pilot.pause()
        assert gpu_text(app) == "GPUs on the cluster: job 12 on node7 (no GPU readings)"
        app.feed([sample()])
        await pilot.pause()
        assert gpu_text(app) == "node7: GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C"
        app.feed([started("run_2", 2), job("PENDING", "run_2", "13", reason="Priority")])
        await pilot.pause()
        assert gpu_text(app) == "GPUs on the cluster: job 13 PENDING"  # not run_1's readings
        app.feed([job("RUNNING", "run_2", "13", node="node8"), sample("node8", "13", gpus=[])])
        await pilot.pause()
        assert gpu_text(app) == "node8: CPU only"  # a node without GPUs

    run_app(steps, LARGE)


def test_a_compute_nodes_readings_of_two_gpus_name_the_node_on_each_line() -> None:
    second = dict(H100, index=1, util=12.0)
    events = [started(), job("RUNNING", node="node7"), sample(gpus=[H100, second])]

    async def tall(pilot: Pilot, app: LogsApp) -> None:
        app.feed(events)
        await pilot.pause()
        assert gpu_text(app).splitlines() == [
            "node7: GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C",
            "node7: GPU1 NVIDIA H100 12% · 12.0/79.6 GB · 64°C",
        ]

    async def short(pilot: Pilot, app: LogsApp) -> None:
        app.feed(events)
        await pilot.pause()
        # The node comes first; the status line ellipsizes what does not fit after it.
        assert gpu_text(app).startswith("node7: GPU0 87% 12G 64° │ GPU1 12%")

    run_app(tall, LARGE)
    run_app(short, SMALL)


def test_local_runs_look_as_before() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed([started(), GpuSample(ts=TS, stage="experiments", gpus=[H100])])
        await pilot.pause()
        assert gpu_text(app) == "GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C"
        app.feed([finished("run_1", 0.95, 0.1)])
        assert app.pane.border_subtitle == "run 1 of 3 · done"

    run_app(steps, LARGE)


def test_the_results_table_shows_how_slurm_ended_a_run() -> None:
    async def steps(pilot: Pilot, app: LogsApp) -> None:
        app.feed(
            [
                started("run_0", 0, 0),
                job("COMPLETED", "run_0", "11", node="node7", elapsed_s=30),
                finished("run_0", 0.93, 0.12),
                started(),
                job("OUT_OF_MEMORY", node="node7", elapsed_s=12),
                RunFinished(ts=TS, stage="experiments", run_id="run_1", returncode=-1, wall_s=12),
            ]
        )
        await pilot.press("v")  # plot → results
        await pilot.pause()
        text = rendered(app.query_one("#run-results", Static))
        assert "run_1 ✘ out of memory" in text

    run_app(steps, LARGE)


# -- snapshots -------------------------------------------------------------------------------


def slurm_run() -> list[Event]:
    """A run that waits in the queue, then runs on node7 and prints, with node7's GPU readings."""
    return [
        started(),
        job("PENDING", reason="Priority"),
        job("PENDING", reason="Resources"),
        job("RUNNING", node="node7", elapsed_s=3),
        log("loading moons (n=1000)"),
        sample(),
        *moons_lines("run_1"),
        job("RUNNING", node="node7", elapsed_s=42),
    ]


def snapshot_steps(*keys: str) -> Callable[[Pilot], Awaitable[None]]:
    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, LogsApp)
        await pilot.pause()
        app.feed(slurm_run())
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_snapshot_slurm_large(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=LARGE, run_before=snapshot_steps())


def test_snapshot_slurm_small(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LogsApp(), terminal_size=SMALL, run_before=snapshot_steps())


def test_before_any_job_a_login_node_does_not_call_itself_the_runs_machine() -> None:
    from labtui.tui.job_words import idle_gpu_line

    assert idle_gpu_line("slurm") == "GPUs on the cluster: no job yet"
    assert idle_gpu_line("local") == "CPU only"
