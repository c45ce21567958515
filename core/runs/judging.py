"""A finished run judged: its numbers found where ``[results]`` says and kept in the run folder's
``final_info.json`` (core/workspace/run_folder.py), or why it failed, said in words the
researcher and the fix loop can act on. A run a limit stopped is a failed verdict whose problem
names the limit, never an exception: the pipeline goes on.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import Event, MetricPointData, MetricsReported, Notice
from ..machine.processes import ProcessResult, last_line
from ..machine.sandbox import SandboxSpec
from ..settings.contract import NO_TERMS, RunTerms
from ..settings.sections import ResultsSection
from ..workspace.run_folder import (
    FINAL_INFO,
    FinalInfo,
    RunFolderError,
    read_final_info,
    write_final_info,
)
from .result_sources import read_results

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class Verdict:
    """What a run's end says: its numbers (None when it has none to count), '' or why it
    failed, the files its numbers came from, and whether it was stopped at its budget and judged
    on what it had written by then."""

    final_info: FinalInfo | None
    problem: str = ""
    sources: list[str] = field(default_factory=list)
    over_budget: bool = False

    @property
    def means(self) -> dict[str, Any]:
        """{dataset: its means} ({} without numbers)."""
        return self.final_info.means() if self.final_info is not None else {}


@dataclass(frozen=True)
class Ended:
    """How a run's process ended, and what it was allowed."""

    run_id: str
    process: ProcessResult
    timeout_s: float
    sandbox: SandboxSpec | None  # where it can explain a failure (None: ran on a cluster)
    terms: RunTerms = NO_TERMS

    @property
    def early(self) -> bool:
        """Stopped, killed, failed or timed out: anything but a normal end."""
        proc = self.process
        return bool(
            proc.timed_out or proc.stopped or proc.returncode or proc.limit_hit
            or proc.scheduler_end
        )  # fmt: skip

    @property
    def at_budget(self) -> bool:
        """Stopped at a search's budget (and not by a limit): judged on what it had written."""
        return bool(self.process.timed_out and self.terms.budget_s and not self.process.limit_hit)


def judge(
    ended: Ended,
    results: ResultsSection,
    root: Path,
    started: float,
    points: list[MetricPointData],
    emit: Emit,
    stage: str,
) -> Verdict:
    """The verdict on a run that ``ended`` (``started`` at that time, having printed
    ``points``): its numbers when it ended normally or at its budget with valid ones, else
    the failure in words."""
    verdict = Verdict(None)
    if ended.at_budget or not ended.early:
        verdict = collect_results(results, root, root / ended.run_id, started, points)
    if ended.early and (verdict.problem or not ended.at_budget):
        return Verdict(None, describe_failure(ended), verdict.sources)
    if ended.at_budget:
        emit(
            Notice(
                stage=stage,
                text=f"{ended.run_id} reached its budget of {ended.terms.budget_s:g} s and was "
                f"stopped after {ended.timeout_s:g} s; it is judged on the results it had "
                "written",
            )
        )
        return Verdict(verdict.final_info, verdict.problem, verdict.sources, over_budget=True)
    return verdict


def keeping_points(emit: Emit, points: list[MetricPointData]) -> Emit:
    """``emit``, keeping the metric points the run's log lines reported on the way."""

    def emit_and_keep(event: Event) -> None:
        if isinstance(event, MetricsReported):
            points.extend(event.points)
        emit(event)

    return emit_and_keep


# -- the numbers ----------------------------------------------------------------------------


def collect_results(
    results: ResultsSection,
    root: Path,
    run_dir: Path,
    started: float,
    points: list[MetricPointData],
) -> Verdict:
    """The numbers of a run that exited normally, the problem with them, and the files they
    came from.

    Whatever the source, the numbers end up in the run folder's final_info.json, and a source
    file outside the folder (a fixed ``outputs/metrics.json``, W&B's summary) is copied in
    beside it: the run's record must not change when the next run overwrites that file."""
    if results.source == "final_info" and not results.path:
        return _own_final_info(run_dir)
    read = read_results(results, root=root, run_dir=run_dir, since=started, log_points=points)
    sources = [_keep_in_run_dir(path, root, run_dir) for path in read.files]
    if read.final_info is not None:
        write_final_info(run_dir, read.final_info)
    return Verdict(read.final_info, read.problem, sources)


def _own_final_info(run_dir: Path) -> Verdict:
    """The final_info.json the run wrote itself (the template contract)."""
    sources = [f"{run_dir.name}/{FINAL_INFO}"]
    try:
        info = read_final_info(run_dir)
    except RunFolderError as error:
        said = f"the run exited normally but wrote no {error.file}" if error.missing else ""
        return Verdict(None, said or error.message, sources)
    return Verdict(info, info.problem, sources)


def _keep_in_run_dir(path: Path, root: Path, run_dir: Path) -> str:
    """The project-relative name of a source file, copied under ``run_dir/results/`` first when
    it lies outside the run folder."""
    path = Path(path).resolve()
    if run_dir.resolve() in path.parents:
        return path.relative_to(root).as_posix()
    kept = run_dir / "results" / path.name
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, kept)
    return kept.relative_to(root).as_posix()


# -- a failure in words ---------------------------------------------------------------------


def describe_failure(ended: Ended) -> str:
    """Why the run failed: stopped, ended by its scheduler or a limit, past its time, out of
    memory, killed, or its exit code, with its last words on stderr."""
    run_id, proc, timeout_s, sandbox = ended.run_id, ended.process, ended.timeout_s, ended.sandbox
    last = last_line(proc.stderr_tail)
    told = f"; its last words: {last}" if last else ""
    if proc.stopped:
        return f"{run_id} was stopped early: the experiments stage ended before it finished"
    if proc.scheduler_end:
        return f"{run_id} {proc.scheduler_end}{told}"
    if proc.limit_hit:
        return f"{run_id} was stopped by the sandbox: {proc.limit_hit}{told}"
    if proc.timed_out and ended.terms.budget_s:
        return (
            f"{run_id} ran past its budget of {ended.terms.budget_s:g} s and was stopped after "
            f"{timeout_s:g} s without valid results: the code must stop training by "
            "$LABTUI_RUN_BUDGET_S seconds and write them"
        )
    if proc.timed_out:
        return f"{run_id} timed out after {timeout_s:g} s and was stopped"
    if proc.oom_struck and proc.returncode == -signal.SIGKILL:
        return _out_of_memory(run_id, proc, sandbox, told)
    how = _how_it_ended(proc.returncode)
    why = sandbox.explain(proc.stderr_tail, proc.returncode) if sandbox is not None else ""
    if why:
        how = f"{how} (sandbox: {why})"
    elif proc.oom_struck:
        # A data-loader worker the OOM killer chose: the run then fails with some other error.
        how = f"{how} (the kernel's OOM killer struck during the run: {_peak(proc)})"
    return f"{run_id} {how}: {last}" if last else f"{run_id} {how} (nothing on stderr)"


def _how_it_ended(code: int) -> str:
    if code >= 0:
        return f"failed with exit code {code}"
    try:
        return f"was killed by signal {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"


def _peak(proc: ProcessResult) -> str:
    return f"peak {proc.peak_rss_mb:.0f} MB seen" if proc.peak_rss_mb else "no peak seen"


def _out_of_memory(run_id: str, proc: ProcessResult, sandbox: SandboxSpec | None, told: str) -> str:
    """A run the kernel's OOM killer ended: said as such, for the researcher and the fix loop."""
    cap = (
        f"; [sandbox] memory_mb = {sandbox.memory_mb} MB per process"
        if sandbox is not None and sandbox.memory_mb
        else ""
    )
    return (
        f"{run_id} ran out of memory ({_peak(proc)}{cap}): the kernel's OOM killer ended it "
        f"with SIGKILL. Use less memory (smaller batches or models, fewer workers){told}"
    )
