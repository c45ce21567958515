"""Experiment runs: the project's ``[experiment] command`` (the template contract's ``python
experiment.py --out_dir=run_i`` by default) under the sandbox, on leased GPUs, judged by the
numbers ``[results]`` says where to find (core/runs/result_sources.py), which end up in the run's
``final_info.json`` whatever their source. Each run is recorded in ``run_i/labtui_run.json``
(command, interpreter, package versions, commit, timing, sandbox, where its numbers came from)
so that any result can be traced and redone. A run a limit stopped is a failed result whose
problem names the limit, never an exception: the pipeline goes on.

The interpreter is always passed in (``[experiment] python`` in labtui.toml): the researcher's
environment is theirs, and labtui's own pins must not decide which numpy an experiment sees.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LabtuiError
from ..events import Event, MetricPointData, MetricsReported, Notice, RunFinished, RunStarted
from ..machine import sandbox_policy
from ..machine.gpu import GpuPool
from ..machine.interpreter import probe_interpreter
from ..machine.processes import ProcessResult, last_line
from ..machine.sandbox import SandboxSpec
from ..machine.watch import Watch
from ..settings.contract import NO_TERMS, RunTerms, protected_files, run_argv, run_env
from ..settings.sections import ClusterSection, ExperimentSection, ResultsSection, SandboxSection
from ..settings.templates import check_final_info
from .placement import Command, OnCluster, run_here

if TYPE_CHECKING:
    from ..settings.config import Config
    from ..slurm.jobs import JobArray

Emit = Callable[[Event], None]

RUN_RECORD_NAME = "labtui_run.json"
FINAL_INFO_NAME = "final_info.json"


@dataclass(frozen=True)
class RunResult:
    run_id: str
    returncode: int
    timed_out: bool
    wall_s: float
    stderr_tail: str
    stdout_tail: str
    final_info: dict[str, Any] | None
    means: dict[str, Any] = field(default_factory=dict)  # dataset -> its "means" dict
    problem: str = ""  # '' when the run succeeded and final_info.json is valid
    peak_memory_mb: float = 0.0  # the run's peak resident memory, as sampled
    peak_gpu_memory_mb: float = 0.0  # the most its GPUs held, sampled once a second (0: none)
    over_budget: bool = False  # stopped at its budget and judged on what it had written

    @property
    def ok(self) -> bool:
        return not self.problem


def _check_run_id(run_id: str) -> None:
    # The run folder is deleted before a rerun: a run id must never reach outside the project.
    if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id:
        raise ValueError(f"run_id must be a plain folder name like 'run_1', not {run_id!r}")


def _describe_failure(
    run_id: str,
    proc: ProcessResult,
    timeout_s: float,
    sandbox: SandboxSpec | None = None,
    terms: RunTerms = NO_TERMS,
) -> str:
    last = last_line(proc.stderr_tail)
    if proc.stopped:
        return f"{run_id} was stopped early: the experiments stage ended before it finished"
    if proc.scheduler_end:
        told = f"; its last words: {last}" if last else ""
        return f"{run_id} {proc.scheduler_end}{told}"
    if proc.limit_hit:
        told = f"; its last words: {last}" if last else ""
        return f"{run_id} was stopped by the sandbox: {proc.limit_hit}{told}"
    if proc.timed_out and terms.budget_s:
        return (
            f"{run_id} ran past its budget of {terms.budget_s:g} s and was stopped after "
            f"{timeout_s:g} s without valid results: the code must stop training by "
            "$LABTUI_RUN_BUDGET_S seconds and write them"
        )
    if proc.timed_out:
        return f"{run_id} timed out after {timeout_s:g} s and was stopped"
    code = proc.returncode
    if proc.oom_struck and code == -signal.SIGKILL:
        return _out_of_memory(run_id, proc, sandbox, last)
    if code < 0:
        try:
            how = f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"failed with exit code {code}"
    why = sandbox.explain(proc.stderr_tail, code) if sandbox is not None else ""
    if why:
        how = f"{how} (sandbox: {why})"
    elif proc.oom_struck:
        # A data-loader worker the OOM killer chose: the run then fails with some other error.
        how = f"{how} (the kernel's OOM killer struck during the run: {_peak(proc)})"
    return f"{run_id} {how}: {last}" if last else f"{run_id} {how} (nothing on stderr)"


def _peak(proc: ProcessResult) -> str:
    return f"peak {proc.peak_rss_mb:.0f} MB seen" if proc.peak_rss_mb else "no peak seen"


def _out_of_memory(run_id: str, proc: ProcessResult, sandbox: SandboxSpec | None, last: str) -> str:
    """A run the kernel's OOM killer ended: said as such, for the researcher and the fix loop."""
    cap = (
        f"; [sandbox] memory_mb = {sandbox.memory_mb} MB per process"
        if sandbox is not None and sandbox.memory_mb
        else ""
    )
    told = f"; its last words: {last}" if last else ""
    return (
        f"{run_id} ran out of memory ({_peak(proc)}{cap}): the kernel's OOM killer ended it "
        f"with SIGKILL. Use less memory (smaller batches or models, fewer workers){told}"
    )


def read_final_info(run_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """(final_info, means per dataset, problem) for a finished run folder; problem '' if valid."""
    path = run_dir / FINAL_INFO_NAME
    where = f"{run_dir.name}/{FINAL_INFO_NAME}"
    if not path.is_file():
        return None, {}, f"the run exited normally but wrote no {where}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return (
            None,
            {},
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
        )
    except UnicodeDecodeError:
        return None, {}, f"{where} is not UTF-8 text"
    problems = check_final_info(data, where)
    if not isinstance(data, dict):
        return None, {}, "; ".join(problems)
    return data, _means_of(data), "; ".join(problems)


def _keeping_points(emit: Emit, points: list[MetricPointData]) -> Emit:
    """``emit``, keeping the metric points the run's log lines reported on the way."""

    def emit_and_keep(event: Event) -> None:
        if isinstance(event, MetricsReported):
            points.extend(event.points)
        emit(event)

    return emit_and_keep


def _collect_results(
    results: ResultsSection,
    root: Path,
    run_dir: Path,
    started: float,
    points: list[MetricPointData],
) -> tuple[dict[str, Any] | None, str, list[str]]:
    """(final_info, problem, the files the numbers came from) of a run that exited normally.

    Whatever the source, the numbers end up in the run folder's final_info.json, and a source
    file outside the folder (a fixed ``outputs/metrics.json``, W&B's summary) is copied in
    beside it: the run's record must not change when the next run overwrites that file."""
    if results.source == "final_info" and not results.path:
        final_info, _, problem = read_final_info(run_dir)
        return final_info, problem, [f"{run_dir.name}/{FINAL_INFO_NAME}"]
    from .result_sources import read_results

    read = read_results(results, root=root, run_dir=run_dir, since=started, log_points=points)
    sources = [_keep_in_run_dir(path, root, run_dir) for path in read.files]
    if read.final_info is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(read.final_info, indent=2)
        (run_dir / FINAL_INFO_NAME).write_text(text + "\n", encoding="utf-8")
    return read.final_info, read.problem, sources


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


def _means_of(final_info: dict[str, Any] | None) -> dict[str, Any]:
    return {
        name: entry["means"]
        for name, entry in (final_info or {}).items()
        if isinstance(entry, dict) and isinstance(entry.get("means"), dict)
    }


def restore_protected(root: Path, protected: list[str]) -> list[str]:
    """The protected files a run changed (tracked ones as git has them), each put back from the
    last commit. Under bubblewrap they are read-only and this finds nothing; with limits only
    it is what keeps a run from editing its own evaluation."""
    if not protected:
        return []
    changed = subprocess.run(
        ["git", "diff", "--name-only", "HEAD", "--", *protected],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if changed:
        subprocess.run(["git", "checkout", "HEAD", "--", *changed], cwd=root, check=False)
    return changed


def ignore_large_files(run_dir: Path, cap_mb: int) -> list[str]:
    """Files of the run folder over ``cap_mb`` (model checkpoints, say), listed in the folder's
    own .gitignore so that committing the run keeps them on disk but out of git; [] when none
    (or ``cap_mb`` is 0: no cap)."""
    if not cap_mb or not run_dir.is_dir():
        return []
    cap = cap_mb * 1024 * 1024
    large = sorted(
        path.relative_to(run_dir).as_posix()
        for path in run_dir.rglob("*")
        if path.is_file() and not path.is_symlink() and path.stat().st_size > cap
    )
    if large:
        lines = [f"# labtui: files over {cap_mb} MB stay out of git ([experiment] commit_file_mb)"]
        (run_dir / ".gitignore").write_text("\n".join([*lines, *large]) + "\n", encoding="utf-8")
    return large


GITIGNORE_HEADER = "# labtui: files over [experiment] commit_file_mb stay on disk but out of git"


def ignore_large_project_files(root: Path, cap_mb: int) -> list[str]:
    """Files a commit would take (untracked, not ignored) anywhere in the project that are over
    ``cap_mb``, appended to the project's .gitignore; [] when none, when ``cap_mb`` is 0, or when
    the project is no git repository."""
    if not cap_mb:
        return []
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        return []
    cap = cap_mb * 1024 * 1024
    large = []
    for name in sorted(filter(None, listed.stdout.decode("utf-8", "replace").split("\0"))):
        path = root / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size > cap:
            large.append(name)
    if large:
        gitignore = root / ".gitignore"
        text = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else ""
        lines = [] if GITIGNORE_HEADER in text else [GITIGNORE_HEADER]
        # Anchored, with glob characters escaped: the entry names this file and no other.
        lines += ["/" + re.sub(r"([*?\[\]!#\\])", r"\\\1", name) for name in large]
        joiner = "" if not text or text.endswith("\n") else "\n"
        gitignore.write_text(text + joiner + "\n".join(lines) + "\n", encoding="utf-8")
    return large


def _project_cap(sandbox: SandboxSection | SandboxSpec | None, cap_mb: int | None) -> int:
    """The project's disk cap for a run: as given, else as ``[sandbox]`` (or its default) says;
    a ready SandboxSpec carries none."""
    if cap_mb is not None:
        return cap_mb
    if isinstance(sandbox, SandboxSpec):
        return 0
    return (sandbox or SandboxSection()).project_cap_mb


def _write_run_record(run_dir: Path, record: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str)
    (run_dir / RUN_RECORD_NAME).write_text(text + "\n", encoding="utf-8")


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
    """
    experiment = experiment or ExperimentSection()
    results = results or ResultsSection()
    _check_run_id(run_id)
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabtuiError(f"cannot run {run_id}: project folder {root} does not exist")
    run_dir = root / run_id
    argv = run_argv(experiment, python, run_id, smoke=smoke, terms=terms, timeout_s=timeout_s)
    if terms.budget_s:
        timeout_s = terms.budget_s + overrun_s
    protected = protected_files(root, experiment)
    env = {**run_env(root, run_id), **terms.env()}
    cap_mb = _project_cap(sandbox, project_cap_mb)
    watch = Watch(stall_s=stall_s, stall_stop_s=stall_stop_s, project_cap_mb=cap_mb)
    job: OnCluster | None = None
    if cluster is not None and cluster.backend == "slurm":
        job = OnCluster.prepare(
            root, run_id, argv, env, timeout_s, stage, sandbox, protected, watch, cluster, commit,
            emit, array=array,
        )  # fmt: skip
    if run_dir.exists() and not (job and job.earlier):
        # Left by a failed attempt: its partial files must not pass for this run's results.
        shutil.rmtree(run_dir)
    spec = None
    if job is None:
        spec = sandbox_policy.resolve(sandbox, root, emit, stage)
        spec = spec.for_run_dir(run_dir).protecting(protected)
    # On a cluster the node's sandbox is the node's to decide: here the interpreter is only read.
    environment = probe_interpreter(python, root, sandbox=spec)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.time()
    points: list[MetricPointData] = []  # what the run printed, for a stdout source
    run_emit = _keeping_points(emit, points) if results.source == "stdout" else emit
    emit(RunStarted(stage=stage, run_id=run_id, index=index, total=total, command=shlex.join(argv)))
    if job is not None:
        done = job.run(run_emit, stop)
    else:
        assert spec is not None
        command = Command(argv, root, run_id, timeout_s, stage, env)
        done = run_here(command, run_emit, spec, stop, watch, gpus)
    proc = done.process
    gpu_peak_mb = done.gpu_peak_mb
    undone = restore_protected(root, protected)
    sources: list[str] = []
    ended_early = bool(
        proc.timed_out or proc.stopped or proc.returncode or proc.limit_hit or proc.scheduler_end
    )
    over_budget = bool(proc.timed_out and terms.budget_s and not proc.limit_hit)
    final_info: dict[str, Any] | None = None
    means: dict[str, Any] = {}
    problem = ""
    if over_budget or not ended_early:
        final_info, problem, sources = _collect_results(results, root, run_dir, started, points)
        means = _means_of(final_info)
    if ended_early and (problem or not over_budget):
        final_info, means = None, {}
        problem = _describe_failure(run_id, proc, timeout_s, done.spec, terms)
    elif over_budget:
        emit(
            Notice(
                stage=stage,
                text=f"{run_id} reached its budget of {terms.budget_s:g} s and was stopped "
                f"after {timeout_s:g} s; it is judged on the results it had written",
            )
        )
    if undone:
        problem = (
            f"{run_id} changed {', '.join(undone)}, which [experiment] protect keeps from any "
            "change; labtui put it back, and the run's numbers do not count"
        )
    ignored = ignore_large_files(run_dir, experiment.commit_file_mb)
    ignored_elsewhere = ignore_large_project_files(root, experiment.commit_file_mb)
    if ignored or ignored_elsewhere:
        names = [f"{run_id}/{name}" for name in ignored] + ignored_elsewhere
        emit(
            Notice(
                stage=stage,
                text=f"{len(names)} file(s) over [experiment] commit_file_mb = "
                f"{experiment.commit_file_mb} MB stay on disk but out of git (listed in "
                f".gitignore): {', '.join(names)}",
            )
        )

    _write_run_record(
        run_dir,
        {
            "run_id": run_id,
            "argv": argv,
            "cwd": str(root),
            "interpreter": python,
            "interpreter_path": shutil.which(python) or python,
            "environment": environment,
            "commit": commit,
            "started_at": started_at,
            "wall_s": round(proc.wall_s, 3),
            "returncode": proc.returncode,
            "timed_out": proc.timed_out,
            "stopped": proc.stopped,
            "timeout_s": timeout_s,
            "budget_s": terms.budget_s,
            "seed": terms.seed,
            "over_budget": over_budget and not problem,
            "CUDA_VISIBLE_DEVICES": done.cuda_visible_devices,
            "sandbox": done.sandbox_record,
            "cluster": done.cluster_record,
            "limit_hit": proc.limit_hit,
            "peak_memory_mb": round(proc.peak_rss_mb, 1),
            "peak_gpu_memory_mb": round(gpu_peak_mb, 1),
            "oom_killer_struck": proc.oom_struck,
            "problem": problem,
            "smoke": smoke,
            "results": {"source": results.source, "files": sources},
            "not_committed": ignored,
            "not_committed_elsewhere": ignored_elsewhere,
        },
    )
    error_tail = "" if not problem else f"{problem}\n{proc.stderr_tail}".strip()
    emit(
        RunFinished(
            stage=stage,
            run_id=run_id,
            returncode=proc.returncode,
            wall_s=proc.wall_s,
            means=means,
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
        final_info=final_info,
        means=means,
        problem=problem,
        peak_memory_mb=round(proc.peak_rss_mb, 1),
        peak_gpu_memory_mb=round(gpu_peak_mb, 1),
        over_budget=over_budget and not problem,
    )
