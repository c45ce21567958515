"""How a Slurm job ended: what the node's run returned, once its result file shows, as the run's
ProcessResult, or, when Slurm ended the job first (TIMEOUT, OUT_OF_MEMORY, CANCELLED, a node
failure), that state in words the fix loop and the researcher can act on.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LabtuiError
from ..machine.processes import ProcessResult
from .follow import JobFollower
from .job_request import JOBS_DIR, job_minutes
from .node import NodeOutcome, NodeRun
from .queue import QueueState

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

RESULT_WAIT_S = 30.0  # a shared file system can show the result file after Slurm's COMPLETED
# States that end a job before its function returned, and what they mean for the run.
ENDED_BY_SLURM = ("TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "BOOT_FAIL", "PREEMPTED")


def collected_outcome(root: Path, job_id: str, state: QueueState) -> NodeOutcome | None:
    """What ``run_on_node`` returned, once its result file shows (None: it never returned)."""
    import submitit  # noqa: PLC0415 -- ~150 ms to import: only a Slurm cluster needs it

    job: Any = submitit.SlurmJob(folder=root / JOBS_DIR / job_id, job_id=job_id)
    deadline = time.monotonic() + (RESULT_WAIT_S if state.state == "COMPLETED" else 1.0)
    while not job.paths.result_pickle.exists():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)
    try:
        outcome = job.result()
    except Exception as exc:  # the node's labtui failed (its trace is in the message)
        raise LabtuiError(
            f"Slurm job {job_id} could not do the run: {_last_error(str(exc))}",
            f"read {job.paths.stderr} for the whole trace",
        ) from None
    return outcome if isinstance(outcome, NodeOutcome) else None


def _last_error(trace: str) -> str:
    lines = [line for line in trace.splitlines() if line.strip() and not line.startswith("-")]
    errors = [line for line in lines if "Error" in line.split(":")[0]]
    return (errors or lines or [trace])[-1].strip()


def process_result(
    outcome: NodeOutcome | None,
    state: QueueState,
    follower: JobFollower,
    job_id: str,
    settings: ClusterSection,
    run: NodeRun,
    wall_s: float,
    stopped: bool,
) -> ProcessResult:
    ended = "" if stopped else slurm_end(state, job_id, settings, run.timeout_s)
    if outcome is not None:
        process = outcome.process
        return replace(process, scheduler_end=ended)
    if not ended and not stopped:
        ended = f"ended as Slurm job {job_id} in state {state.state} without a result"
    code = state.exit_code.split(":")[0]
    return ProcessResult(
        returncode=int(code) if code.isdigit() and int(code) else -1,
        timed_out=False,
        wall_s=state.elapsed_s or wall_s,
        stdout_tail=follower.stdout_tail,
        stderr_tail=follower.stderr_tail,
        stopped=stopped,
        scheduler_end=ended,
    )


def slurm_end(state: QueueState, job_id: str, settings: ClusterSection, timeout_s: float) -> str:
    """How Slurm ended a job, in words that say what to change; '' when the run ended itself."""
    where = f" on {state.node}" if state.node else ""
    job = f"Slurm job {job_id}{where}, state {state.state}"
    if state.state == "TIMEOUT":
        minutes = job_minutes(settings, timeout_s)
        return (
            f"was stopped by Slurm at its time limit of {minutes} min ({job}): raise "
            "[cluster] time_min in labtui.toml or make the run shorter"
        )
    if state.state == "OUT_OF_MEMORY":
        return (
            f"ran out of memory ({job}; [cluster] mem_gb = {settings.mem_gb:g}): use less memory "
            "(smaller batches or models, fewer workers) or raise [cluster] mem_gb"
        )
    if state.state == "CANCELLED":
        return f"was cancelled outside labtui ({job}{_reason(state)})"
    if state.state in ENDED_BY_SLURM:
        return f"was ended by the cluster ({job}{_reason(state)}): run it again"
    return ""


def _reason(state: QueueState) -> str:
    return f", reason {state.reason}" if state.reason else ""
