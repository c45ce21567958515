"""Runs as Slurm jobs through submitit (``[cluster] backend = "slurm"``).

A run becomes one job: ``core/slurm_node.run_on_node`` does it on the compute node exactly as a
local run (same command, environment, folder and sandbox), and this side follows the job from
the login node: its stdout/stderr into the logs pane as they grow, its queue state (PENDING and
why, RUNNING where, how long) as JobState events, and, at the end, the node's ProcessResult or,
when Slurm ended the job (TIMEOUT, OUT_OF_MEMORY, CANCELLED, a node failure), that state in
words the fix loop and the researcher can act on.

Each submitted job is written to ``.labtui/jobs/<run id>.json`` (and its id to the journal) and
forgotten once collected, so a session that was killed finds the job again when it resumes:
still queued or running, it is followed; finished while labtui was away, it is collected. A
labtui that stops cancels the jobs it has running and says so.

What a job asks sbatch for is ``core.slurm.job_request``; asking Slurm where it stands,
``core.slurm.job_watch``; how it ended, ``core.slurm.job_end``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Aborted, LabtuiError
from ..events import Event, Notice
from ..machine.processes import ProcessResult, last_line
from .follow import JobFollower
from .job_end import collected_outcome, process_result
from .job_request import JOBS_DIR, job_key, job_minutes, sbatch_parameters
from .job_watch import JobWatch, forgotten_but_done
from .node import NodeOutcome, NodeRun, run_on_node
from .queue import SlurmUnavailable, cancel, job_state

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class JobResult:
    process: ProcessResult
    outcome: NodeOutcome | None  # None when the job ended before the run did
    job_id: str
    state: str


# -- jobs of this process, for quitting -----------------------------------------------------


class _LiveJobs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, str] = {}  # job id -> run id
        self.cancelled: set[str] = set()  # jobs labtui cancelled because it was stopping

    def add(self, job_id: str, run_id: str) -> None:
        with self._lock:
            self._jobs[job_id] = run_id

    def discard(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)

    def take_all(self) -> dict[str, str]:
        with self._lock:
            jobs = dict(self._jobs)
            self.cancelled.update(jobs)
            return jobs


_live = _LiveJobs()


def cancel_live_jobs(emit: Emit, why: str) -> list[str]:
    """Cancel every job this labtui has queued or running and say so; their runs end as
    stopped, and a resume submits them again. Returns the ids."""
    jobs = _live.take_all()
    if not jobs:
        return []
    listed = ", ".join(f"{job_id} ({run_id})" for job_id, run_id in sorted(jobs.items()))
    try:
        cancel(sorted(jobs))
    except SlurmUnavailable as exc:
        emit(Notice(text=f"could not cancel Slurm job(s) {listed}: {exc}; run scancel yourself"))
        return []
    emit(Notice(text=f"{why}: cancelled Slurm job(s) {listed}; resume submits them again"))
    return sorted(jobs)


# -- submitting or finding a run's job -------------------------------------------------------


def gpu_log_pattern(root: Path) -> str:
    """Where a job's node writes its GPU readings (``%j``: the job's id, known on the node)."""
    return str(root / JOBS_DIR / "%j" / "%j_gpus.jsonl")


def _record_path(root: Path, run_id: str) -> Path:
    return root / JOBS_DIR / f"{run_id}.json"


def earlier_job(root: Path, run: NodeRun, commit: str, emit: Emit) -> str:
    """The id of this run's job that a session before this one submitted and never collected
    ('' when there is none). A job of an earlier version of the run (its code or command has
    changed since) is cancelled if it still runs, and said so: its result would count for
    nothing, and it would spend the allocation."""
    path = _record_path(root, run.run_id)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(record, dict):
        return ""
    job_id = str(record.get("job_id", ""))
    try:
        state = job_state(job_id)
    except SlurmUnavailable:
        return job_id if record.get("key") == job_key(run, commit) else ""
    if record.get("key") == job_key(run, commit):
        return job_id if state is not None else ""
    if state is not None and not state.ended:
        cancel([job_id])
        emit(
            Notice(
                stage=run.stage,
                text=f"{run.run_id}: cancelled Slurm job {job_id}, left by an earlier session "
                "for a version of this run that has changed since",
            )
        )
    path.unlink(missing_ok=True)
    return ""


def _submit(
    root: Path, runs: list[NodeRun], settings: ClusterSection, commits: list[str]
) -> list[str]:
    """Submit ``runs`` (one job, or a job array of several) and record each; their job ids."""
    import submitit  # noqa: PLC0415 -- ~150 ms to import: only a Slurm cluster needs it

    executor = submitit.SlurmExecutor(folder=str(root / JOBS_DIR / "%j"), max_num_timeout=0)
    minutes = job_minutes(settings, max(run.timeout_s for run in runs))
    name = f"labtui-{root.name}-{runs[0].run_id if len(runs) == 1 else 'seeds'}"
    executor.update_parameters(**sbatch_parameters(settings, name, minutes))
    try:
        if len(runs) == 1:
            jobs = [executor.submit(run_on_node, runs[0])]
        else:
            with executor.batch():
                jobs = [executor.submit(run_on_node, run) for run in runs]
    except Exception as exc:  # sbatch's refusal arrives as several kinds of error
        named = ", ".join(run.run_id for run in runs)
        raise LabtuiError(
            f"Slurm refused {named}'s job: {last_line(str(exc)) or exc!r}",
            "check [cluster] partition, account, qos, gres, cpus and mem_gb in labtui.toml "
            "(`sinfo` lists the partitions; `labtui doctor` checks the cluster)",
        ) from None
    submitted_at = datetime.now(UTC).isoformat(timespec="seconds")
    for job, run, commit in zip(jobs, runs, commits, strict=True):
        record = {
            "job_id": str(job.job_id),
            "key": job_key(run, commit),
            "run_id": run.run_id,
            "submitted_at": submitted_at,
        }
        path = _record_path(root, run.run_id)
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return [str(job.job_id) for job in jobs]


GATHER_S = 10.0  # how long an array's first run waits for the others before going alone


class JobArray:
    """Runs of the same code that are known together (a search's seeds), submitted as one Slurm
    job array: each run's thread hands in its run and gets its task's job id once all
    ``expected`` have come. A run that never comes (it failed before) does not hold the others
    back for more than GATHER_S: those present go then, as an array of their own."""

    def __init__(self, expected: int) -> None:
        self._expected = expected
        self._pending: list[_Waiting] = []
        self._ready = threading.Condition()

    def submit(self, root: Path, run: NodeRun, settings: ClusterSection, commit: str) -> str:
        mine = _Waiting(root, run, commit)
        with self._ready:
            self._pending.append(mine)
            deadline = time.monotonic() + GATHER_S
            while mine.job_id is None and mine.error is None:
                left = deadline - time.monotonic()
                if len(self._pending) >= self._expected or left <= 0:
                    self._submit_pending(settings)
                    break
                self._ready.wait(left)
        if mine.error is not None:
            raise mine.error
        assert mine.job_id is not None
        return mine.job_id

    def _submit_pending(self, settings: ClusterSection) -> None:
        pending, self._pending = self._pending, []
        self._expected -= len(pending)
        # The array's folder is its checkout's: runs of other checkouts go as arrays of theirs.
        for root in dict.fromkeys(waiting.root for waiting in pending):
            group = [waiting for waiting in pending if waiting.root == root]
            try:
                ids = _submit(root, [w.run for w in group], settings, [w.commit for w in group])
            except LabtuiError as exc:
                for waiting in group:
                    waiting.error = exc
            else:
                for waiting, job_id in zip(group, ids, strict=True):
                    waiting.job_id = job_id
        self._ready.notify_all()


@dataclass
class _Waiting:
    root: Path
    run: NodeRun
    commit: str
    job_id: str | None = None
    error: LabtuiError | None = None


# -- following it to the end ---------------------------------------------------------------


def run_as_job(
    root: Path,
    run: NodeRun,
    *,
    settings: ClusterSection,
    emit: Emit,
    commit: str = "",
    earlier: str = "",
    stop: threading.Event | None = None,
    array: JobArray | None = None,
) -> JobResult:
    """Do ``run`` as a Slurm job, a task of ``array`` when given (or follow ``earlier``, the job a
    killed session submitted) and return how it went. Aborted when labtui stopped and cancelled it (cancel_live_jobs)."""
    root = Path(root)
    started = time.monotonic()
    if earlier:
        job_id = earlier
    elif array is not None:
        job_id = array.submit(root, run, settings, commit)
    else:
        job_id = _submit(root, [run], settings, [commit])[0]
    folder = root / JOBS_DIR / job_id
    gpu_log = folder / f"{job_id}_gpus.jsonl"
    _live.add(job_id, run.run_id)
    watch = JobWatch(job_id, run, settings, emit, reattached=bool(earlier))
    follower = JobFollower(
        folder / f"{job_id}_0_log.out",
        folder / f"{job_id}_0_log.err",
        gpu_log,
        emit=emit,
        stage=run.stage,
        run_id=run.run_id,
    )
    stopped = False
    try:
        while True:
            follower.poll()
            if stop is not None and stop.is_set() and not stopped:
                stopped = True
                _cancel_for_stop(job_id, run, emit)
            state = watch.check() or forgotten_but_done(watch, folder, job_id)
            if state is not None and state.ended:
                break
            if stop is not None and not stopped:
                stop.wait(settings.poll_s)
            else:
                time.sleep(settings.poll_s)
        follower.finish()
    finally:
        _live.discard(job_id)
    if job_id in _live.cancelled:
        raise Aborted(
            f"labtui stopped: {run.run_id}'s Slurm job {job_id} was cancelled; "
            "resume submits the run again"
        )
    outcome = collected_outcome(root, job_id, state)
    _record_path(root, run.run_id).unlink(missing_ok=True)
    process = process_result(
        outcome, state, follower, job_id, settings, run, time.monotonic() - started, stopped
    )
    return JobResult(process=process, outcome=outcome, job_id=job_id, state=state.state)


def _cancel_for_stop(job_id: str, run: NodeRun, emit: Emit) -> None:
    try:
        cancel([job_id])
    except SlurmUnavailable as exc:
        emit(Notice(stage=run.stage, text=f"could not cancel Slurm job {job_id}: {exc}"))
        return
    emit(Notice(stage=run.stage, text=f"{run.run_id}: cancelled its Slurm job {job_id}"))
