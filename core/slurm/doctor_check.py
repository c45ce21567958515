"""``labtui doctor`` on a cluster: Slurm's version and partitions, whether its accounting answers
(submitit needs it to see a cancelled job end), and a test job's round trip, submitted with the
project's ``[cluster]`` settings, that also says whether the node can isolate runs.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .job_request import sbatch_parameters
from .node import node_facts
from .queue import SlurmUnavailable, accounting_problem, job_state, partitions, version

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

TEST_JOB_WAIT_S = 300.0  # a busy cluster may queue the test job: it is given this long
POLL_S = 0.2


class Finding(NamedTuple):
    name: str
    ok: bool
    detail: str


def cluster_findings(settings: ClusterSection) -> list[Finding]:
    """What the doctor says about ``[cluster]``: one line for the local backend; for Slurm its
    version, partitions, accounting and a test job."""
    if settings.backend == "local":
        return [Finding("cluster", True, 'runs execute here ([cluster] backend = "local")')]
    try:
        found = [Finding("slurm", True, version())]
    except SlurmUnavailable as exc:
        fix = 'run labtui on the cluster\'s login node, or set [cluster] backend = "local"'
        return [Finding("slurm", False, f"{exc}; {fix}")]
    found.append(_partitions(settings))
    problem = accounting_problem()
    if problem:
        found.append(
            Finding(
                "slurm accounting",
                False,
                f"{problem}: without it a cancelled or killed job never counts as ended; "
                "ask the cluster's admins for slurmdbd accounting",
            )
        )
        return found
    found.append(Finding("slurm accounting", True, "sacct answers"))
    return [*found, test_job(settings)]


def _partitions(settings: ClusterSection) -> Finding:
    try:
        lines = partitions()
    except SlurmUnavailable as exc:
        return Finding("slurm partitions", False, str(exc))
    names = [line.split()[0].rstrip("*") for line in lines]
    if settings.partition and settings.partition not in names:
        return Finding(
            "slurm partitions",
            False,
            f"[cluster] partition = {settings.partition!r} is not one of {', '.join(names)}",
        )
    return Finding("slurm partitions", True, "; ".join(lines) or "none listed")


def test_job(settings: ClusterSection, wait_s: float = TEST_JOB_WAIT_S) -> Finding:
    """Submit a tiny job with the project's settings and time it: submitted → running →
    result. Its result says what the node offers a run."""
    import submitit  # noqa: PLC0415 -- ~150 ms to import: only a Slurm cluster needs it

    with tempfile.TemporaryDirectory(prefix="labtui-doctor-") as folder:
        executor = submitit.SlurmExecutor(folder=str(Path(folder) / "%j"), max_num_timeout=0)
        executor.update_parameters(**sbatch_parameters(settings, "labtui-doctor", minutes=5))
        submitted = time.monotonic()
        try:
            job: Any = executor.submit(node_facts)
        except Exception as exc:
            return Finding("slurm test job", False, f"sbatch refused it: {exc}")
        started = 0.0
        while not job.paths.result_pickle.exists():
            state = _state(str(job.job_id))
            if state == "RUNNING" and not started:
                started = time.monotonic() - submitted
            if state in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                return Finding("slurm test job", False, f"job {job.job_id} ended {state}")
            if time.monotonic() - submitted > wait_s:
                job.cancel(check=False)
                return Finding(
                    "slurm test job",
                    False,
                    f"job {job.job_id} did not finish in {wait_s:.0f} s (last state {state}); "
                    "the queue may be full: try again later",
                )
            time.sleep(POLL_S)
        try:
            facts = job.result()
        except Exception as exc:
            return Finding("slurm test job", False, f"job {job.job_id} failed: {exc}")
        took = time.monotonic() - submitted
    return Finding("slurm test job", True, _describe(str(job.job_id), facts, started, took))


def _state(job_id: str) -> str:
    try:
        state = job_state(job_id)
    except SlurmUnavailable:
        return "UNKNOWN"
    return state.state if state is not None else "UNKNOWN"


def _describe(job_id: str, facts: dict[str, Any], started: float, took: float) -> str:
    start = f"running after {started:.1f} s, " if started else ""
    sandbox = (
        "bubblewrap works there"
        if not facts.get("bwrap_problem")
        else f"runs there get limits only ({facts['bwrap_problem']})"
    )
    return (
        f"job {job_id} on {facts.get('host', '?')}: {start}result after {took:.1f} s; "
        f"Python {facts.get('python', '?')}; {sandbox}; GPUs: {facts.get('gpus', '?')}"
    )
