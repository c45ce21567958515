"""A run's execution wherever ``[cluster]`` puts it, as core/runs/runner.py needs it: the process's
result, its GPU memory peak, which GPUs it saw, its sandbox and, on a cluster, its job.

Locally that is ``run_process`` on leased GPUs (``run_here``); on Slurm it is a job
(core/slurm/jobs.py) whose node runs the same command in the same folder with the same
environment and sandbox settings.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import Event
from ..machine import sandbox_policy
from ..machine.gpu import (
    GpuPool,
    gpu_activity,
    gpu_sampling,
    lease_gpus,
    memory_peaks,
    shared_gpu_pool,
)
from ..machine.hardware import run_hardware
from ..machine.processes import ProcessResult, run_process
from ..machine.run_log import RunLogs
from ..machine.sandbox import SandboxSpec, programs_of
from ..machine.watch import Watch
from ..slurm.jobs import JobArray, earlier_job, gpu_log_pattern, run_as_job
from ..slurm.node import NodeRun

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection, SandboxSection

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class Executed:
    process: ProcessResult
    gpu_peak_mb: float
    cuda_visible_devices: str | None
    sandbox_record: dict[str, Any]
    spec: SandboxSpec | None = None  # the sandbox, where it can explain a failure here
    cluster_record: dict[str, Any] = field(default_factory=dict)  # the job ({}: ran here)
    hardware: dict[str, Any] = field(default_factory=dict)  # machine.hardware.Hardware's record


@dataclass(frozen=True)
class OnCluster:
    """A run about to become a Slurm job, or to be found again as the job a killed session
    submitted (``earlier``: its id)."""

    root: Path
    node_run: NodeRun
    settings: ClusterSection
    commit: str
    earlier: str
    array: JobArray | None = None  # submitted with other runs as one job array

    @classmethod
    def prepare(
        cls,
        root: Path,
        run_id: str,
        argv: list[str],
        env: dict[str, str],
        timeout_s: float,
        stage: str,
        sandbox: SandboxSection | SandboxSpec | None,
        protected: list[str],
        watch: Watch,
        settings: ClusterSection,
        commit: str,
        emit: Emit,
        *,
        run_dir: bool = True,
        array: JobArray | None = None,
        log_mb: int = 0,
        workdir: str = "",
    ) -> OnCluster:
        node_run = NodeRun(
            argv=argv,
            cwd=str(root),
            workdir=workdir,
            env=env,
            timeout_s=timeout_s,
            run_id=run_id,
            stage=stage,
            sandbox=sandbox,
            run_dir=str(root / run_id) if run_dir else "",
            protected=protected,
            stall_s=watch.stall_s,
            stall_stop_s=watch.stall_stop_s,
            project_cap_mb=watch.project_cap_mb,
            gpu_log=gpu_log_pattern(root),
            log_mb=log_mb,
        )
        earlier = earlier_job(root, node_run, commit, emit)
        return cls(root, node_run, settings, commit, earlier, array)

    def run(self, emit: Emit, stop: threading.Event | None) -> Executed:
        job = run_as_job(
            self.root,
            self.node_run,
            settings=self.settings,
            emit=emit,
            commit=self.commit,
            earlier=self.earlier,
            stop=stop,
            array=self.array,
        )
        outcome = job.outcome
        record = {
            "backend": "slurm",
            "job_id": job.job_id,
            "state": job.state,
            "partition": self.settings.partition,
            "reattached": bool(self.earlier),
        }
        if outcome is None:
            return Executed(
                job.process, 0.0, None, {"ran": "no: Slurm ended the job"}, None, record
            )
        if outcome.sandbox_note:
            problem = f"on the compute node {outcome.host}, {outcome.sandbox_note}"
            sandbox_policy.warn_not_isolated(emit, self.node_run.stage, problem)
        return Executed(
            job.process,
            outcome.gpu_peak_mb,
            outcome.cuda_visible_devices,
            outcome.sandbox,
            None,
            {**record, "node": outcome.host},
            outcome.hardware,
        )


@dataclass(frozen=True)
class Command:
    """What runs, where, for how long, with what added to its environment."""

    argv: list[str]
    cwd: Path
    run_id: str
    timeout_s: float
    stage: str
    env: dict[str, str]
    logs: RunLogs | None = None  # where the whole output is kept (the run folder)


def run_here(
    command: Command,
    emit: Emit,
    spec: SandboxSpec,
    stop: threading.Event | None,
    watch: Watch,
    gpus: GpuPool | None,
) -> Executed:
    """The run on this machine, pinned to free GPUs (waiting while none is free): other jobs
    on a shared server, or labtui's own parallel runs, keep theirs."""
    with (
        lease_gpus(gpus or shared_gpu_pool(), emit, command.stage, command.run_id) as lease,
        gpu_sampling(emit, command.stage),
        gpu_activity(lease.devices) as gpu_busy,
    ):
        memory_peaks.start(lease.devices)
        proc = run_process(
            command.argv,
            cwd=command.cwd,
            timeout_s=command.timeout_s,
            run_id=command.run_id,
            emit=emit,
            stage=command.stage,
            sandbox=spec,
            env={**lease.env, **command.env},
            stop=stop,
            watch=replace(watch, gpu_busy=gpu_busy),
            logs=command.logs,
        )
    devices = lease.env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    return Executed(
        process=proc,
        gpu_peak_mb=memory_peaks.peak_mb(lease.devices),
        cuda_visible_devices=devices,
        sandbox_record=spec.record(programs_of(command.argv)),
        spec=spec,
        hardware=run_hardware(devices).to_json(),
    )
