"""A run made ready to start: its command line, environment and timeout (from ``[experiment]``
and a search's terms), the files it may not change, its watchdog, and where it executes (under
the sandbox here, or as a Slurm job), with the interpreter's packages read for its record.
Everything core/runs/runner.py decides before the run starts.

The run's environment is labtui's own (less API keys), the thread budget over it
(``[experiment] threads``, else the cores the run is given), ``[experiment] env`` over that, and
labtui's LABTUI_* variables over all.

The interpreter is always passed in (``[experiment] python`` in labtui.toml): the researcher's
environment is theirs, and labtui's own pins must not decide which numpy an experiment sees.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LabtuiError
from ..events import Event
from ..machine import sandbox_policy
from ..machine.disk_growth import ProjectGrowth
from ..machine.gpu import GpuPool
from ..machine.interpreter import probe_interpreter
from ..machine.run_env import thread_env
from ..machine.run_log import RunLogs
from ..machine.sandbox import SandboxSpec
from ..machine.watch import Watch
from ..settings.contract import (
    NO_TERMS,
    RunTerms,
    prepare_lines,
    protected_files,
    run_argv,
    run_env,
)
from ..settings.sections import ClusterSection, ExperimentSection, LimitsSection, SandboxSection
from ..workspace.project import STATE_DIR
from .placement import Command, Executed, OnCluster, run_here

if TYPE_CHECKING:
    from ..slurm.jobs import JobArray

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class ReadyRun:
    """A run about to start. ``job`` is its Slurm job when ``[cluster]`` sends it there (its
    node's sandbox is the node's to decide), else ``spec`` is the sandbox it runs under here."""

    root: Path
    run_id: str
    python: str
    commit: str  # of the code it runs
    smoke: bool
    terms: RunTerms
    argv: list[str]
    env: dict[str, str]
    timeout_s: float  # a search's budget and overrun, when it has one
    protected: list[str]
    watch: Watch
    environment: dict[str, Any]  # the interpreter and its packages, as probed
    job: OnCluster | None = None
    spec: SandboxSpec | None = None
    prepare: tuple[str, ...] = ()  # [experiment] prepare: shell lines run before argv
    log_mb: int = LimitsSection().run_log_mb  # [limits] run_log_mb: each stream's log cap
    workdir: str = ""  # [experiment] workdir: where the run starts, relative to root

    @property
    def run_dir(self) -> Path:
        return self.root / self.run_id

    @property
    def cwd(self) -> Path:
        return self.root / self.workdir

    def execute(
        self, emit: Emit, stop: threading.Event | None, gpus: GpuPool | None, stage: str
    ) -> Executed:
        """The run, as its Slurm job, or here under its sandbox on leased GPUs (``gpus``; None:
        the machine's)."""
        if self.job is not None:
            return self.job.run(emit, stop)
        assert self.spec is not None
        argv = with_prepare(self.argv, self.prepare)
        logs = RunLogs.from_mb(self.run_dir, self.root / STATE_DIR / "logs", self.log_mb)
        command = Command(argv, self.cwd, self.run_id, self.timeout_s, stage, self.env, logs)
        return run_here(command, emit, self.spec, stop, self.watch, gpus)


def prepare_run(
    root: Path,
    run_id: str,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    commit: str,
    sandbox: SandboxSection | SandboxSpec | None,
    experiment: ExperimentSection,
    smoke: bool = False,
    stall_s: float = 0.0,
    stall_stop_s: float = 0.0,
    project_cap_mb: int | None = None,
    terms: RunTerms = NO_TERMS,
    overrun_s: float = 0.0,
    cluster: ClusterSection | None = None,
    array: JobArray | None = None,
    log_mb: int | None = None,
) -> ReadyRun:
    """``run_id`` in the project at ``root`` made ready (see ``run_experiment`` for the
    arguments); its folder, left by a failed attempt, is emptied first unless a Slurm job a
    killed session submitted is found again for it."""
    _check_run_id(run_id)
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabtuiError(f"cannot run {run_id}: project folder {root} does not exist")
    _check_workdir(root, experiment.workdir, run_id)
    python = _from_project(root, python, experiment.workdir)
    argv = run_argv(experiment, python, run_id, smoke=smoke, terms=terms, timeout_s=timeout_s)
    prepare = prepare_lines(experiment, python)
    if terms.budget_s:
        timeout_s = terms.budget_s + overrun_s
    protected = protected_files(root, experiment)
    # labtui's own variables go over the researcher's [experiment] env, which goes over the
    # thread budget (set per placement below: the cores a run is given depend on where it runs)
    env = {**_researcher_env(experiment, root / run_id), **run_env(root, run_id), **terms.env()}
    cap_mb = _project_cap(sandbox, project_cap_mb)
    watch = Watch(stall_s=stall_s, stall_stop_s=stall_stop_s, project_cap_mb=cap_mb)
    log_mb = LimitsSection().run_log_mb if log_mb is None else log_mb
    job: OnCluster | None = None
    if cluster is not None and cluster.backend == "slurm":
        env = {**thread_env(experiment.threads or cluster.cpus), **env}
        job = OnCluster.prepare(
            root, run_id, with_prepare(argv, prepare), env, timeout_s, stage, sandbox,
            protected, watch, cluster, commit, emit, array=array, log_mb=log_mb,
            workdir=experiment.workdir,
        )  # fmt: skip
    run_dir = root / run_id
    if run_dir.exists() and not (job and job.earlier):
        # Left by a failed attempt: its partial files must not pass for this run's results.
        shutil.rmtree(run_dir)
    spec = None
    if job is None:
        spec = sandbox_policy.resolve(sandbox, root, emit, stage)
        spec = spec.for_run_dir(run_dir).protecting(protected)
        watch = replace(watch, growth=_project_watch(spec, cap_mb))
        env = {**thread_env(experiment.threads or spec.containment.cores()), **env}
    # On a cluster the node's sandbox is the node's to decide: here the interpreter is only read.
    environment = probe_interpreter(python, root, sandbox=spec)
    return ReadyRun(
        root, run_id, python, commit, smoke, terms, argv, env, timeout_s, protected, watch,
        environment, job, spec, tuple(prepare), log_mb, experiment.workdir,
    )  # fmt: skip


def with_prepare(argv: list[str], prepare: Sequence[str]) -> list[str]:
    """``argv`` after the ``[experiment] prepare`` lines, in one shell that stops at the first
    that fails (its message is the run's) and then becomes the experiment (exec: the run's
    process is the experiment's, for signals and its exit status)."""
    if not prepare:
        return argv
    steps = " && ".join(f"( {line} )" for line in prepare)
    return ["sh", "-c", f'{steps} && exec "$@"', "labtui-prepare", *argv]


def _researcher_env(experiment: ExperimentSection, run_dir: Path) -> dict[str, str]:
    """``[experiment] env`` with {out_dir} as the run sees its folder: the absolute path, the
    same here, under the sandbox (which binds the project where it is) and on a Slurm node
    (which shares the project's filesystem)."""
    return {
        name: value.replace("{out_dir}", str(run_dir)) for name, value in experiment.env.items()
    }


def _check_workdir(root: Path, workdir: str, run_id: str) -> None:
    """A working folder that is gone (renamed, or on a branch without it) fails before the run,
    naming the setting, not as a process that could not start."""
    if workdir and not (root / workdir).is_dir():
        raise LabtuiError(
            f"cannot run {run_id}: labtui.toml's [experiment] workdir = {workdir!r} is no folder "
            f"of {root}",
            "set workdir to the folder the experiment runs in, relative to the project "
            '(workdir = "" for the project\'s own)',
        )


def _from_project(root: Path, python: str, workdir: str) -> str:
    """An interpreter written relative to the project (.venv/bin/python) as a run started in
    the working folder must name it."""
    if workdir and "/" in python and not Path(python).is_absolute():
        return str(root / python)
    return python


def _check_run_id(run_id: str) -> None:
    # The run folder is deleted before a rerun: a run id must never reach outside the project.
    if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id:
        raise ValueError(f"run_id must be a plain folder name like 'run_1', not {run_id!r}")


def _project_watch(spec: SandboxSpec, cap_mb: int) -> ProjectGrowth:
    """The walk of the project for a run here: its caps (none when the sandbox is off), and,
    after the run, what it created (core/runs/strays.py)."""
    if not spec.limited:
        return ProjectGrowth(spec.root, spec.run_dir, 0)
    return ProjectGrowth(spec.root, spec.run_dir, cap_mb * 2**20, spec.max_files)


def _project_cap(sandbox: SandboxSection | SandboxSpec | None, cap_mb: int | None) -> int:
    """The project's disk cap for a run: as given, else as ``[sandbox]`` (or its default) says;
    a ready SandboxSpec carries none."""
    if cap_mb is not None:
        return cap_mb
    if isinstance(sandbox, SandboxSpec):
        return 0
    return (sandbox or SandboxSection()).project_cap_mb
