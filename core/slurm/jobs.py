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
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Aborted, LabtuiError
from ..events import Event, JobState, Notice
from ..machine.processes import ProcessResult, last_line
from .follow import JobFollower
from .node import NodeOutcome, NodeRun, run_on_node
from .queue import QueueState, SlurmUnavailable, cancel, job_state

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

Emit = Callable[[Event], None]

JOBS_DIR = Path(".labtui") / "jobs"
STARTUP_MARGIN_MIN = 5  # added to a run's own limit for the job's: starting, collecting
RESULT_WAIT_S = 30.0  # a shared file system can show the result file after Slurm's COMPLETED
RUNNING_REPORT_S = 30.0  # a running job's elapsed time is said this often
UNANSWERED_WARN_S = 60.0  # Slurm silent this long: said once (the job is followed on)
# States that end a job before its function returned, and what they mean for the run.
ENDED_BY_SLURM = ("TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "BOOT_FAIL", "PREEMPTED")


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


def job_key(run: NodeRun, commit: str) -> str:
    """What makes a job the same run: its command, folder, environment, limit and code."""
    text = json.dumps([run.argv, run.cwd, run.env, run.timeout_s, commit], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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


def job_minutes(settings: ClusterSection, timeout_s: float) -> int:
    """The job's Slurm time limit: ``[cluster] time_min``, else the run's own limit plus a margin."""
    if settings.time_min:
        return settings.time_min
    return math.ceil(timeout_s / 60) + STARTUP_MARGIN_MIN


def sbatch_parameters(settings: ClusterSection, name: str, minutes: int) -> dict[str, Any]:
    """What submitit passes to sbatch for a job of ``[cluster]``'s settings."""
    parameters: dict[str, Any] = {
        "job_name": name,
        "time": minutes,
        "cpus_per_task": settings.cpus,
        # submitit asks Slurm for USR2 before the time limit, sent to every process of the
        # job: it would kill the experiment (USR2's default) or make submitit end or requeue
        # the job itself. Sent to the batch shell alone, which ignores it, the job reaches its
        # limit and ends as TIMEOUT, which is what the researcher is told.
        "additional_parameters": {"signal": "B:USR2@30"},
        "setup": ["trap '' USR2", *settings.setup],
    }
    optional = {
        "partition": settings.partition,
        "account": settings.account,
        "qos": settings.qos,
        "gres": settings.gres,
        "mem": f"{round(settings.mem_gb * 1024)}M" if settings.mem_gb else "",
    }
    parameters.update({key: value for key, value in optional.items() if value})
    return parameters


def _submit(
    root: Path, runs: list[NodeRun], settings: ClusterSection, commits: list[str]
) -> list[str]:
    """Submit ``runs`` (one job, or a job array of several) and record each; their job ids."""
    import submitit

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
    watch = _JobWatch(job_id, run, settings, emit, reattached=bool(earlier))
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
            state = watch.check() or _forgotten_but_done(watch, folder, job_id)
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
    outcome = _outcome(root, job_id, state)
    _record_path(root, run.run_id).unlink(missing_ok=True)
    process = _process_result(
        outcome, state, follower, job_id, settings, run, time.monotonic() - started, stopped
    )
    return JobResult(process=process, outcome=outcome, job_id=job_id, state=state.state)


def _forgotten_but_done(watch: _JobWatch, folder: Path, job_id: str) -> QueueState | None:
    """A job Slurm no longer knows (purged, no accounting) whose result is there: it completed.
    Without this a forgotten job would be followed forever."""
    if watch.silent_s() >= UNANSWERED_WARN_S and (folder / f"{job_id}_0_result.pkl").exists():
        return QueueState("COMPLETED")
    return None


def _cancel_for_stop(job_id: str, run: NodeRun, emit: Emit) -> None:
    try:
        cancel([job_id])
    except SlurmUnavailable as exc:
        emit(Notice(stage=run.stage, text=f"could not cancel Slurm job {job_id}: {exc}"))
        return
    emit(Notice(stage=run.stage, text=f"{run.run_id}: cancelled its Slurm job {job_id}"))


class _JobWatch:
    """Asks Slurm where a job stands and says it when that changes (and, while it runs, every
    RUNNING_REPORT_S); a Slurm that does not answer is said once and asked again."""

    def __init__(
        self, job_id: str, run: NodeRun, settings: ClusterSection, emit: Emit, *, reattached: bool
    ) -> None:
        self._job_id = job_id
        self._run = run
        self._settings = settings
        self._emit = emit
        self._reattached = reattached
        self._said: tuple[str, str, str] | None = None
        self._said_at = 0.0
        self._silent_since = 0.0
        self._warned = False
        self.last: QueueState | None = None

    def check(self) -> QueueState | None:
        try:
            state = job_state(self._job_id)
        except SlurmUnavailable as exc:
            self._unanswered(str(exc))
            return None
        self._silent_since = 0.0
        if state is None:
            # Just submitted, not yet in the queue's answer; or forgotten by Slurm entirely.
            self._unanswered(f"Slurm does not know job {self._job_id} (yet)")
            return None
        self.last = state
        now = time.monotonic()
        seen = (state.state, state.reason, state.node)
        running_long = state.state == "RUNNING" and now - self._said_at >= RUNNING_REPORT_S
        if seen != self._said or running_long:
            self._said, self._said_at = seen, now
            self._emit(
                JobState(
                    stage=self._run.stage,
                    run_id=self._run.run_id,
                    job_id=self._job_id,
                    state=state.state,
                    reason=state.reason,
                    node=state.node,
                    elapsed_s=state.elapsed_s,
                    reattached=self._reattached,
                )
            )
            if self._reattached and not self._warned:
                self._say_reattached(state)
        return state

    def _say_reattached(self, state: QueueState) -> None:
        self._warned = True
        where = f" on {state.node}" if state.node else ""
        what = "collected" if state.ended else "followed"
        self._emit(
            Notice(
                stage=self._run.stage,
                text=f"{self._run.run_id}: re-attached to Slurm job {self._job_id} "
                f"({state.state}{where}), submitted before labtui stopped; {what}, "
                "not submitted again",
            )
        )

    def silent_s(self) -> float:
        """How long Slurm has said nothing of the job (0 while it answers)."""
        return time.monotonic() - self._silent_since if self._silent_since else 0.0

    def _unanswered(self, problem: str) -> None:
        now = time.monotonic()
        self._silent_since = self._silent_since or now
        if not self._warned and now - self._silent_since >= UNANSWERED_WARN_S:
            self._warned = True
            self._emit(
                Notice(
                    stage=self._run.stage,
                    text=f"{self._run.run_id}: no answer about Slurm job {self._job_id} for "
                    f"{UNANSWERED_WARN_S:.0f} s ({problem}); still following it",
                )
            )


def _outcome(root: Path, job_id: str, state: QueueState) -> NodeOutcome | None:
    """What ``run_on_node`` returned, once its result file shows (None: it never returned)."""
    import submitit

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


def _process_result(
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
        return ProcessResult(**{**asdict(process), "scheduler_end": ended})
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
