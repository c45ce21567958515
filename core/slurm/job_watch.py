"""Where a Slurm job stands, asked of Slurm while ``core.slurm.jobs`` follows it: JobState events
when its state changes (and while it runs), a Slurm that does not answer said once, a re-attached
job said so, and a job Slurm forgot counted as done once its result is there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..events import Event, JobState, Notice
from .node import NodeRun
from .queue import QueueState, SlurmUnavailable, job_state

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

Emit = Callable[[Event], None]

RUNNING_REPORT_S = 30.0  # a running job's elapsed time is said this often
UNANSWERED_WARN_S = 60.0  # Slurm silent this long: said once (the job is followed on)


def forgotten_but_done(watch: JobWatch, folder: Path, job_id: str) -> QueueState | None:
    """A job Slurm no longer knows (purged, no accounting) whose result is there: it completed.
    Without this a forgotten job would be followed forever."""
    if watch.silent_s() >= UNANSWERED_WARN_S and (folder / f"{job_id}_0_result.pkl").exists():
        return QueueState("COMPLETED")
    return None


class JobWatch:
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
