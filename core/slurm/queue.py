"""What Slurm says about jobs and itself, through its own commands: a job's state, reason, node
and elapsed time (``squeue`` while Slurm holds it, ``sacct`` after), cancelling, and the facts
``labtui doctor`` reports (version, partitions, accounting).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

COMMAND_TIMEOUT_S = 30.0  # a busy slurmctld can take seconds to answer; never hang on it
# States after which a job does nothing more (sacct's and squeue's long names).
ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)


class SlurmUnavailable(Exception):
    """A Slurm command is missing or did not answer; the message says which and why."""


@dataclass(frozen=True)
class QueueState:
    state: str  # PENDING, RUNNING, COMPLETING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    reason: str = ""  # why it waits (Priority, Resources, ...) or how it ended; '' for None
    node: str = ""
    elapsed_s: float = 0.0
    exit_code: str = ""  # sacct's "code:signal" once ended

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def slurm_command(*argv: str, timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    """A Slurm command's stdout; SlurmUnavailable when it is missing, fails or hangs."""
    if shutil.which(argv[0]) is None:
        raise SlurmUnavailable(f"{argv[0]} is not on PATH: this machine is no Slurm login node")
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"`{' '.join(argv)}` did not answer in {timeout_s:g} s") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise SlurmUnavailable(f"`{' '.join(argv)}` failed: {why[-1] if why else done.returncode}")
    return done.stdout


def job_state(job_id: str) -> QueueState | None:
    """Where the job stands now; None when neither the queue nor accounting knows it."""
    try:
        listed = slurm_command("squeue", "-h", "-j", job_id, "-o", "%T|%r|%N|%M")
    except SlurmUnavailable:
        listed = ""  # squeue refuses ids it has forgotten: accounting may still know them
    for line in listed.splitlines():
        state, reason, node, elapsed = _fields(line, 4)
        if state:
            return QueueState(state, _reason(reason), node, parse_elapsed(elapsed))
    return _accounted_state(job_id)


def _accounted_state(job_id: str) -> QueueState | None:
    listed = slurm_command(
        "sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,Reason,NodeList,ElapsedRaw,ExitCode"
    )
    for line in listed.splitlines():
        state, reason, node, elapsed, exit_code = _fields(line, 5)
        if state:
            # "CANCELLED by 0": the state is the first word
            seconds = float(elapsed) if elapsed.strip().isdigit() else 0.0
            node = "" if node.startswith("None") else node
            return QueueState(state.split()[0], _reason(reason), node, seconds, exit_code)
    return None


def _fields(line: str, count: int) -> list[str]:
    """The ``count`` fields of a '|'-separated line, '' for any it lacks."""
    return [*line.split("|"), *[""] * count][:count]


def _reason(reason: str) -> str:
    return "" if reason.strip() in ("None", "(null)") else reason.strip()


def parse_elapsed(text: str) -> float:
    """Seconds of squeue's elapsed time: "42", "1:23", "1:02:03" or "2-01:02:03"."""
    text = text.strip()
    days = 0
    if "-" in text:
        head, _, text = text.partition("-")
        days = int(head) if head.isdigit() else 0
    seconds = 0.0
    for part in text.split(":"):
        if not part.isdigit():
            return 0.0
        seconds = seconds * 60 + int(part)
    return days * 86400 + seconds


def cancel(job_ids: list[str]) -> None:
    if job_ids:
        slurm_command("scancel", *job_ids)


# -- for labtui doctor ---------------------------------------------------------------------------


def version() -> str:
    """'slurm 22.05.8', as sinfo says it."""
    return slurm_command("sinfo", "--version").strip()


def partitions() -> list[str]:
    """'debug* up 1 node(s) idle, time limit infinite, gres (null)': one line per partition."""
    listed = slurm_command("sinfo", "-h", "-o", "%P|%a|%D|%t|%l|%G")
    lines = []
    for line in listed.splitlines():
        name, avail, nodes, state, limit, gres = _fields(line, 6)
        lines.append(
            f"{name} {avail}, {nodes} node(s) {state}, time limit {limit}, gres {gres or '-'}"
        )
    return lines


def accounting_problem() -> str:
    """'' when Slurm's accounting answers; else why not. submitit needs it: without it a
    cancelled or killed job never counts as ended."""
    try:
        slurm_command("sacct", "-n", "-X", "-S", "now-1minutes", "-o", "JobID")
    except SlurmUnavailable as exc:
        return str(exc)
    return ""
