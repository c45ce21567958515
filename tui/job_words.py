"""A run's Slurm job, and what a flood of its output left unshown, in words, for the logs pane
and the headless printer alike.

Everything is computed from the JobState event (its elapsed seconds included), never from a
clock, so that what is shown is the same on every replay and in every snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence

from labtui.core.events import JobState
from labtui.core.slurm.queue import ENDED


def ended(job: JobState) -> bool:
    """The job does nothing more: COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, ..."""
    return job.state in ENDED


def elapsed_words(seconds: float) -> str:
    """As Slurm writes a job's time: '0:42', '12:05', '1:02:03'."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:d}:{secs:02d}"


def state_words(job: JobState) -> str:
    """'PENDING (Resources)', 'RUNNING on node7 · 0:42', 'TIMEOUT after 1:05'."""
    if job.state == "PENDING":
        return f"PENDING ({job.reason})" if job.reason else "PENDING"
    if ended(job):
        why = f" ({job.reason})" if job.reason and job.state != "COMPLETED" else ""
        after = f" after {elapsed_words(job.elapsed_s)}" if job.elapsed_s >= 1 else ""
        return f"{job.state}{why}{after}"
    where = f" on {job.node}" if job.node else ""
    return f"{job.state}{where} · {elapsed_words(job.elapsed_s)}"


def end_words(state: str) -> str:
    """A failed run's Slurm end for the results table: 'out of memory', 'timed out'."""
    return "timed out" if state == "TIMEOUT" else state.lower().replace("_", " ")


def idle_gpu_line(cluster: str) -> str:
    """The GPU status line before any reading: this machine's, or, when runs are Slurm jobs,
    a word that this (login) machine's GPUs are not the runs'."""
    return "GPUs on the cluster: no job yet" if cluster == "slurm" else "CPU only"


def cluster_gpu_lines(job: JobState, width: int) -> list[str]:
    """The GPU status line while a run's job has sent no GPU readings: where its GPUs are, not
    this (login) machine's 'CPU only'. 'GPUs on the cluster: job 12 on node7 (no GPU
    readings)', or 'job 12 on node7: no GPU readings' where that does not fit."""
    if job.node:
        long = f"GPUs on the cluster: job {job.job_id} on {job.node} (no GPU readings)"
        short = f"job {job.job_id} on {job.node}: no GPU readings"
    else:
        long = f"GPUs on the cluster: job {job.job_id} {job.state}"
        short = f"cluster job {job.job_id} {job.state}"
    return [long if len(long) <= width else short]


def not_shown(skipped: int, streams: Sequence[str]) -> str:
    """'… 5,971 lines not shown (stdout.log in the run folder has all)'."""
    files = " and ".join(f"{stream}.log" for stream in streams)
    have = "have" if len(streams) > 1 else "has"
    return f"… {skipped:,} lines not shown ({files} in the run folder {have} all)"
