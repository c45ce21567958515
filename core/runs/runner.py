"""Experiment runs: the project's ``[experiment] command`` (the template contract's ``python
experiment.py --out_dir=run_i`` by default) under the sandbox, on leased GPUs, judged by the
numbers ``[results]`` says where to find (core/runs/result_sources.py), which end up in the run's
``final_info.json`` whatever their source. Each run is recorded in ``run_i/labtui_run.json``
(command, interpreter, package versions, commit, timing, sandbox, where its numbers came from;
core/workspace/run_folder.py) so that any result can be traced and redone. A run a limit stopped
is a failed result whose problem names the limit, never an exception: the pipeline goes on.

This module runs the steps in order; each lives in its own: the run made ready
(core/runs/run_setup.py), executed here or on Slurm (core/runs/placement.py), judged
(core/runs/judging.py), and the project kept clean of what it may not leave
(core/runs/project_guard.py).
"""

from __future__ import annotations

import shlex
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import Event, MetricPointData, Notice, RunFinished, RunStarted
from ..machine.gpu import GpuPool
from ..machine.run_env import THREAD_VARIABLES
from ..machine.sandbox import SandboxSpec
from ..settings.contract import NO_TERMS, RunTerms
from ..settings.sections import ClusterSection, ExperimentSection, ResultsSection, SandboxSection
from ..workspace.run_folder import (
    FinalInfo,
    LeftOutside,
    ResultsOrigin,
    RunRecord,
    write_run_record,
)
from . import strays
from .judging import Ended, Verdict, judge, keeping_points
from .placement import Executed
from .project_guard import (
    exclude_logs,
    ignore_large_files,
    ignore_large_project_files,
    restore_protected,
)
from .run_setup import ReadyRun, prepare_run

if TYPE_CHECKING:
    from ..settings.config import Config
    from ..slurm.jobs import JobArray

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class RunResult:
    run_id: str
    returncode: int
    timed_out: bool
    wall_s: float
    stderr_tail: str
    stdout_tail: str
    final_info: FinalInfo | None
    means: dict[str, Any] = field(default_factory=dict)  # dataset -> its "means" dict
    problem: str = ""  # '' when the run succeeded and final_info.json is valid
    peak_memory_mb: float = 0.0  # the run's peak resident memory, as sampled
    peak_gpu_memory_mb: float = 0.0  # the most its GPUs held, sampled once a second (0: none)
    over_budget: bool = False  # stopped at its budget and judged on what it had written
    left_outside: LeftOutside = field(default_factory=LeftOutside)  # a failed run's strays

    @property
    def ok(self) -> bool:
        return not self.problem


def configured(config: Config) -> dict[str, Any]:
    """The keyword arguments of ``run_experiment`` that a project's labtui.toml sets."""
    return {
        "python": config.python,
        "timeout_s": config.limits.run_timeout_s,
        "stall_s": config.limits.stall_s,
        "stall_stop_s": config.limits.stall_stop_s,
        "sandbox": config.sandbox,
        "experiment": config.experiment,
        "results": config.results,
        "cluster": config.cluster,
        "log_mb": config.limits.run_log_mb,
    }


def run_experiment(
    root: Path,
    run_id: str,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    commit: str = "",
    index: int = 0,
    total: int = 0,
    sandbox: SandboxSection | SandboxSpec | None = None,
    gpus: GpuPool | None = None,
    stop: threading.Event | None = None,
    experiment: ExperimentSection | None = None,
    results: ResultsSection | None = None,
    smoke: bool = False,
    stall_s: float = 0.0,
    stall_stop_s: float = 0.0,
    project_cap_mb: int | None = None,
    terms: RunTerms = NO_TERMS,
    overrun_s: float = 0.0,
    cluster: ClusterSection | None = None,
    array: JobArray | None = None,
    log_mb: int | None = None,
    strays_to: str = "",
) -> RunResult:
    """Run ``[experiment] command`` (None: the template contract's) for ``run_id`` in ``root``
    and judge the numbers ``results`` (None: its final_info.json) points at; ``smoke`` runs the
    smoke command instead.

    The run folder always ends up holding ``labtui_run.json`` (command, interpreter, package
    versions, commit, timing, sandbox, the files its numbers came from), failed runs included,
    so any result can be traced and redone; and ``final_info.json`` when its numbers were found.
    ``sandbox`` is the project's ``[sandbox]`` section (None: its defaults) or a ready policy; a
    run a limit stopped is a failed RunResult that names the limit. Files ``[experiment]
    protect`` names are read-only to the run (under bubblewrap), or put back after it (else),
    and a run that changed one failed. ``stop`` ends the run early (see ``run_process``).
    ``stall_s``/``stall_stop_s`` are the stall watchdog's periods (0: off) and ``project_cap_mb``
    caps what the run adds to the project folder (None: ``[sandbox] project_cap_mb``).

    ``terms`` gives a search's run its budget and seed ($LABTUI_RUN_BUDGET_S, $LABTUI_SEED):
    with a budget the run is stopped ``overrun_s`` after it (not at ``timeout_s``) and judged on
    the results it had written by then.

    ``cluster`` (``[cluster]``) makes the run a Slurm job (core/slurm/jobs.py), a task of
    ``array`` when it is one of several runs submitted together.

    The whole output is kept in ``run_i/stdout.log`` and ``stderr.log``, each capped at
    ``log_mb`` (None: ``[limits] run_log_mb``'s default; core/machine/run_log.py).

    What a failed run wrote outside its folder is moved aside to ``strays_to`` ('':
    ``.labtui/failed/<run_id>``), or removed when it is over a cap (core/runs/strays.py).
    """
    experiment = experiment or ExperimentSection()
    results = results or ResultsSection()
    ready = prepare_run(
        root, run_id, python=python, timeout_s=timeout_s, emit=emit, stage=stage, commit=commit,
        sandbox=sandbox, experiment=experiment, smoke=smoke, stall_s=stall_s,
        stall_stop_s=stall_stop_s, project_cap_mb=project_cap_mb, terms=terms,
        overrun_s=overrun_s, cluster=cluster, array=array, log_mb=log_mb,
    )  # fmt: skip
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.time()
    points: list[MetricPointData] = []  # what the run printed, for a stdout source
    run_emit = keeping_points(emit, points) if results.source == "stdout" else emit
    emit(
        RunStarted(
            stage=stage, run_id=run_id, index=index, total=total, command=shlex.join(ready.argv)
        )
    )
    # Until its record is written, another run's failure must not take its files for strays.
    with strays.running(ready.root, run_id):
        done = ready.execute(run_emit, stop, gpus, stage)
        verdict = _judged(ready, done, results, started, points, emit, stage)
        left = _clear_strays(ready, verdict, strays_to, emit, stage)
        exclude_logs(ready.root, run_id, [log.name for log in done.process.logs])
        large = _keep_large_files_out(ready, experiment.commit_file_mb, emit, stage)
        record = _run_record(ready, started_at, done, verdict, results.source, large, left)
        write_run_record(ready.run_dir, record)
    proc = done.process
    error_tail = "" if not verdict.problem else f"{verdict.problem}\n{proc.stderr_tail}".strip()
    emit(
        RunFinished(
            stage=stage,
            run_id=run_id,
            returncode=proc.returncode,
            wall_s=proc.wall_s,
            means=verdict.means,
            error_tail=error_tail,
            timed_out=proc.timed_out,
        )
    )
    return RunResult(
        run_id=run_id,
        returncode=proc.returncode,
        timed_out=proc.timed_out,
        wall_s=proc.wall_s,
        stderr_tail=proc.stderr_tail,
        stdout_tail=proc.stdout_tail,
        final_info=verdict.final_info,
        means=verdict.means,
        problem=verdict.problem,
        peak_memory_mb=record.peak_memory_mb,
        peak_gpu_memory_mb=record.peak_gpu_memory_mb,
        over_budget=record.over_budget,
        left_outside=left,
    )


def _judged(
    ready: ReadyRun,
    done: Executed,
    results: ResultsSection,
    started: float,
    points: list[MetricPointData],
    emit: Emit,
    stage: str,
) -> Verdict:
    """The run judged; one that changed a protected file (put back here) failed."""
    undone = restore_protected(ready.root, ready.protected)
    ended = Ended(ready.run_id, done.process, ready.timeout_s, done.spec, ready.terms)
    verdict = judge(ended, results, ready.root, started, points, emit, stage)
    if not undone:
        return verdict
    return Verdict(
        verdict.final_info,
        f"{ready.run_id} changed {', '.join(undone)}, which [experiment] protect keeps from any "
        "change; labtui put it back, and the run's numbers do not count",
        verdict.sources,
    )


def _clear_strays(
    ready: ReadyRun, verdict: Verdict, into: str, emit: Emit, stage: str
) -> LeftOutside:
    """A failed run's files outside its folder moved aside or removed (core/runs/strays.py);
    nothing for a run that worked, or one whose project walk was on a Slurm node."""
    growth = ready.watch.growth
    if not verdict.problem or growth is None or ready.spec is None:
        return LeftOutside()
    return strays.settle(
        ready.root, ready.run_id, growth, ready.spec.max_file_mb, emit, stage, into=into
    )


def _keep_large_files_out(
    ready: ReadyRun, cap_mb: int, emit: Emit, stage: str
) -> tuple[list[str], list[str]]:
    """The run folder's files over ``[experiment] commit_file_mb`` and the project's, each
    listed in a .gitignore, and said."""
    ignored = ignore_large_files(ready.run_dir, cap_mb)
    ignored_elsewhere = ignore_large_project_files(ready.root, cap_mb)
    if ignored or ignored_elsewhere:
        names = [f"{ready.run_id}/{name}" for name in ignored] + ignored_elsewhere
        emit(
            Notice(
                stage=stage,
                text=f"{len(names)} file(s) over [experiment] commit_file_mb = "
                f"{cap_mb} MB stay on disk but out of git (listed in "
                f".gitignore): {', '.join(names)}",
            )
        )
    return ignored, ignored_elsewhere


def _run_record(
    ready: ReadyRun,
    started_at: str,
    done: Executed,
    verdict: Verdict,
    source: str,
    large: tuple[list[str], list[str]],
    left: LeftOutside,
) -> RunRecord:
    """What labtui_run.json keeps of the run, failed runs included."""
    proc = done.process
    return RunRecord(
        run_id=ready.run_id,
        argv=ready.argv,
        cwd=str(ready.cwd),
        interpreter=ready.python,
        interpreter_path=shutil.which(ready.python) or ready.python,
        environment=ready.environment,
        commit=ready.commit,
        started_at=started_at,
        wall_s=round(proc.wall_s, 3),
        returncode=proc.returncode,
        timed_out=proc.timed_out,
        stopped=proc.stopped,
        timeout_s=ready.timeout_s,
        budget_s=ready.terms.budget_s,
        seed=ready.terms.seed,
        over_budget=verdict.over_budget,
        cuda_visible_devices=done.cuda_visible_devices,
        threads={name: ready.env[name] for name in THREAD_VARIABLES if name in ready.env},
        sandbox=done.sandbox_record,
        cluster=done.cluster_record,
        hardware=done.hardware,
        limit_hit=proc.limit_hit,
        peak_memory_mb=round(proc.peak_rss_mb, 1),
        peak_gpu_memory_mb=round(done.gpu_peak_mb, 1),
        oom_killer_struck=proc.oom_struck,
        problem=verdict.problem,
        smoke=ready.smoke,
        results=ResultsOrigin(source, verdict.sources),
        not_committed=large[0],
        not_committed_elsewhere=large[1],
        left_outside=left,
        output_bytes={log.name: log.bytes for log in proc.logs},
        logs_cut=[log.name for log in proc.logs if log.cut],
    )
