"""The part of a cluster run that executes on the compute node, inside the Slurm job.

submitit pickles ``run_on_node`` with its NodeRun and calls it there with labtui's own Python
(the cluster shares the file system). It runs the same command, environment and folder as a
local run, through the same ``run_process``: the sandbox is resolved on the node (bubblewrap
where the node has a working one, else limits only), and the watchers, limits and OOM reading
are the local ones. The run's lines go to the job's stdout and stderr files, which labtui
follows from the login node; GPU readings go as JSON lines to a file beside them. Slurm's own
limits (time, memory, GPUs) come from ``[cluster]`` on the sbatch side.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import Event, GpuSample, LogLine, Notice
from ..machine import sandbox_policy
from ..machine.bubblewrap import bwrap_problem
from ..machine.gpu import describe, gpu_sampling, memory_peaks
from ..machine.hardware import run_hardware
from ..machine.processes import ProcessResult, run_process
from ..machine.run_log import RunLogs
from ..machine.watch import Watch
from ..workspace.project import STATE_DIR

if TYPE_CHECKING:
    from ..machine.sandbox import SandboxSpec
    from ..settings.sections import SandboxSection

NOTE_PREFIX = "labtui: "  # a line of the job's stderr that is labtui's, not the run's
# Slurm sets these when it gave the job GPUs; without them, an inherited CUDA_VISIBLE_DEVICES
# is the login node's and names GPUs this job does not have.
SLURM_GPU_VARIABLES = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")


@dataclass(frozen=True)
class NodeRun:
    """Everything the node needs to do a run as labtui would do it locally."""

    argv: list[str]
    cwd: str  # the project: the sandbox's root, and where labtui's logs go
    env: dict[str, str]
    timeout_s: float
    run_id: str
    stage: str
    # [sandbox] as written (or a ready policy): resolved where the run executes
    sandbox: SandboxSection | SandboxSpec | None
    run_dir: str = ""  # the run folder the sandbox watches ('': none, as for plot.py)
    protected: list[str] = field(default_factory=list)
    stall_s: float = 0.0
    stall_stop_s: float = 0.0
    project_cap_mb: int = 0
    gpu_log: str = ""  # where the node writes its GPU readings, %j the job id ('': nowhere)
    log_mb: int = 0  # [limits] run_log_mb: the cap of run_dir's stdout.log and stderr.log
    workdir: str = ""  # [experiment] workdir: where the command starts, relative to cwd


@dataclass(frozen=True)
class NodeOutcome:
    process: ProcessResult
    host: str
    sandbox: dict[str, Any]  # the sandbox the run had, as SandboxSpec.record() says
    sandbox_note: str  # why it was not isolated on this node ('' when it was)
    cuda_visible_devices: str | None
    gpu_peak_mb: float
    hardware: dict[str, Any] = field(default_factory=dict)  # the node's: machine.hardware


def run_on_node(run: NodeRun) -> NodeOutcome:
    """Do ``run`` here, on the compute node: its lines to this job's stdout/stderr."""
    if not any(os.environ.get(name) for name in SLURM_GPU_VARIABLES):
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    cwd = Path(run.cwd)
    spec = sandbox_policy.resolve(run.sandbox, cwd, _unsaid, run.stage)  # its note says it
    spec = spec.for_run_dir(Path(run.run_dir) if run.run_dir else None).protecting(run.protected)
    devices = _visible_devices()
    host = socket.gethostname()
    job_id = _job_id()
    emit = _JobOutput(run.gpu_log.replace("%j", job_id), host, job_id)
    with gpu_sampling(emit, run.stage):
        memory_peaks.start(devices)
        process = run_process(
            run.argv,
            cwd=cwd / run.workdir,
            timeout_s=run.timeout_s,
            run_id=run.run_id,
            emit=emit,
            stage=run.stage,
            sandbox=spec,
            env=run.env,
            watch=Watch(
                stall_s=run.stall_s,
                stall_stop_s=run.stall_stop_s,
                project_cap_mb=run.project_cap_mb,
            ),
            logs=_run_logs(run),
        )
    return NodeOutcome(
        process=process,
        host=host,
        sandbox=spec.record(),
        sandbox_note=spec.note,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        gpu_peak_mb=memory_peaks.peak_mb(devices),
        hardware=run_hardware(os.environ.get("CUDA_VISIBLE_DEVICES")).to_json(),
    )


def _run_logs(run: NodeRun) -> RunLogs | None:
    """The run folder's logs, as a local run has them (none for a run without a folder)."""
    if not run.run_dir:
        return None
    return RunLogs.from_mb(Path(run.run_dir), Path(run.cwd) / STATE_DIR / "logs", run.log_mb)


def _unsaid(event: Event) -> None:
    """Where the node's sandbox notice goes: the login side says it, once, from the outcome."""


def _job_id() -> str:
    """This job's id as sbatch and squeue name it: an array's task is '<array>_<task>'."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID", "")


def _visible_devices() -> tuple[int, ...]:
    """The GPU indices Slurm gave this job, as NVML numbers them (empty: none, or not numbers)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    parts = [part.strip() for part in visible.split(",") if part.strip()]
    return tuple(int(part) for part in parts) if all(p.isdigit() for p in parts) else ()


class _JobOutput:
    """The events of a run on the node, as files: lines to the job's stdout or stderr (the
    login node follows them), notices as stderr lines of labtui's, GPU readings as JSON lines."""

    def __init__(self, gpu_log: str, host: str, job_id: str) -> None:
        self._gpu_log = gpu_log
        self._host = host
        self._job_id = job_id
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, LogLine):
                stream = sys.stdout if event.stream == "stdout" else sys.stderr
                stream.write(event.text + "\n")
                stream.flush()
            elif isinstance(event, Notice):
                sys.stderr.write(f"{NOTE_PREFIX}{event.text}\n")
                sys.stderr.flush()
            elif isinstance(event, GpuSample) and self._gpu_log:
                reading = {"host": self._host, "job_id": self._job_id, "gpus": event.gpus}
                with open(self._gpu_log, "a", encoding="utf-8") as log:
                    log.write(json.dumps(reading) + "\n")


def node_facts() -> dict[str, Any]:
    """What a compute node offers a run, for ``labtui doctor``'s test job: its name, its
    Python, whether bubblewrap works there and which GPUs the job was given."""
    return {
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "bwrap_problem": bwrap_problem(),
        "gpus": describe(),
    }
