"""The session's real Slurm cluster (tests/support/slurm_cluster.py) does what the Slurm tests rely
on: the debug partition's node is up and schedules, submitit runs a function on it and brings its
value back, and accounting records jobs, so that a cancelled job counts as done. Skipped where no
cluster can run (not root, the packages missing: run bash .ci/setup as root)."""

from __future__ import annotations

import os

import pytest
import submitit
from support.waiting import wait_until

pytestmark = pytest.mark.slurm

DEADLINE_S = 120.0  # only a hang reaches it: every wait ends as soon as its condition holds


def _executor(folder, cluster) -> submitit.AutoExecutor:
    executor = submitit.AutoExecutor(folder=folder / "%j")
    assert executor.cluster == "slurm"
    executor.update_parameters(
        slurm_partition=cluster.partition, timeout_min=10, cpus_per_task=1, mem_gb=0.5
    )
    return executor


def _sacct(cluster, job_id: str) -> dict[str, str]:
    """The job's own line in sacct (its steps left out): field -> value; {} until it is there."""
    result = cluster.run("sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,Partition")
    for line in result.stdout.splitlines():
        job, state, partition = line.split("|")
        if job == job_id:
            return {"JobID": job, "State": state, "Partition": partition}
    return {}


def test_the_debug_partition_has_the_node_up_and_idle(slurm_cluster):
    partitions = slurm_cluster.run("sinfo", "-h", "-o", "%P|%a|%l|%N|%c").stdout.split()
    assert partitions == ["debug*|up|infinite|localhost|8"]

    def idle_or_busy_with_jobs() -> bool:
        # another test of the session may hold the node: idle once no job runs
        state = slurm_cluster.node_state()
        running = slurm_cluster.run("squeue", "-h", "-t", "R,CG", "-o", "%i").stdout.split()
        return state == "idle" or (state in ("mix", "alloc") and bool(running))

    wait_until(idle_or_busy_with_jobs, "the node idle (or running jobs)", timeout_s=DEADLINE_S)
    assert slurm_cluster.version.count(".") == 2
    assert os.environ["SLURM_CONF"] == slurm_cluster.env["SLURM_CONF"]


def test_a_submitit_job_returns_its_value_and_sacct_lists_it(slurm_cluster, tmp_path):
    def square_on_a_node(x: int) -> tuple[int, str]:
        import os

        return x * x, os.environ.get("SLURM_JOB_ID", "")

    job = _executor(tmp_path, slurm_cluster).submit(square_on_a_node, 12)
    wait_until(job.done, f"job {job.job_id} done", timeout_s=DEADLINE_S)

    assert job.result() == (144, job.job_id)
    # slurmdbd may hear of the job's end before its start: the record fills in as both arrive
    listed = {"JobID": job.job_id, "State": "COMPLETED", "Partition": "debug"}
    wait_until(
        lambda: _sacct(slurm_cluster, job.job_id) == listed,
        f"sacct listing job {job.job_id} as {listed}",
        timeout_s=DEADLINE_S,
    )


def test_a_cancelled_job_is_cancelled_and_done(slurm_cluster, tmp_path):
    def wait_for_ever() -> None:
        import time

        while True:
            time.sleep(1)

    job = _executor(tmp_path, slurm_cluster).submit(wait_for_ever)
    wait_until(
        lambda: _sacct(slurm_cluster, job.job_id).get("State") == "RUNNING",
        f"job {job.job_id} running",
        timeout_s=DEADLINE_S,
    )
    assert not job.done()

    job.cancel()
    wait_until(job.done, f"cancelled job {job.job_id} done", timeout_s=DEADLINE_S)

    assert job.state.startswith("CANCELLED")  # sacct says "CANCELLED by <uid>"
    assert _sacct(slurm_cluster, job.job_id)["State"].startswith("CANCELLED")
