"""What the manager (``server``, ``server_launch``) and the supervisor (``supervisor``) share about
one model's server: its files under the cache, the state record in ``<id>.json``, the lock that
orders whoever starts, stops or retires it, how a process is told from another that got its PID,
and how what a state file names is stopped (``retire``).

Two processes meet here and no other way: the manager, in any labtui process on the machine, and
the supervisor, detached, which owns the server. The state file is the only thing the supervisor
writes (besides lines in the log); a PID alone is not trusted, since the kernel reuses PIDs, and
after a reboot every PID in an old state file names some other process: the boot id and each
process's start time (``/proc/PID/stat``) must match too.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from .catalog import CacheDirs, ModelFacts

PROC = "/proc"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
PF_EXITING = 0x4  # include/linux/sched.h
LOCK_POLL_S = 0.05
STOP_GRACE_S = 10.0  # for the server to free its memory before SIGKILL
SUPERVISOR_GRACE_S = STOP_GRACE_S + 5.0  # it stops its server within STOP_GRACE_S, then exits


@dataclass(frozen=True)
class ServerFiles:
    """The files of one model's server, all in the cache's ``server/`` folder."""

    folder: Path
    model_id: str
    state: Path  # <id>.json
    lock: Path
    used: Path
    """Touched by clients around each request: its mtime is the last use."""
    log: Path
    last_port: Path
    """The port of the last start, kept after the state is gone: a server stopped when idle
    comes back on the same URL when it can."""

    @classmethod
    def named(cls, folder: Path, model_id: str) -> ServerFiles:
        suffixes = (".json", ".lock", ".used", ".log", ".port")
        return cls(folder, model_id, *(folder / f"{model_id}{suffix}" for suffix in suffixes))

    @classmethod
    def of(cls, facts: ModelFacts, dirs: CacheDirs) -> ServerFiles:
        return cls.named(dirs.server, facts.id)


@dataclass(frozen=True)
class ServerState:
    """``<id>.json``: the running server, written by its supervisor (``ready`` False while the
    model loads, True once ``/v1/models`` answered with the model's alias)."""

    port: int
    pid: int
    pid_start: int
    """Start time of the server process in clock ticks since boot (``/proc/PID/stat``)."""
    supervisor_pid: int
    supervisor_start: int
    model: str
    log: str
    boot_id: str
    started_at: float
    """Seconds since the epoch."""
    ready: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ServerState:
        data = json.loads(text)
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})


def boot_id() -> str:
    """This boot of the machine; '' where the kernel does not say."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def process_start(pid: int) -> int | None:
    """When a live process started (clock ticks since boot); None when it is gone, a zombie, or
    on its way out. A server that crashed mid-answer is still listed, and its listening socket
    still takes connections, for a moment after its client saw the connection drop: the
    kernel's PF_EXITING flag, set first thing in the exit, tells it from a live one."""
    try:
        data = Path(f"{PROC}/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The fields after "(comm)", which may hold spaces and ')': state ppid pgrp session tty_nr
    # tpgid flags … starttime (the 20th).
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X") or int(fields[6]) & PF_EXITING:
        return None
    return int(fields[19])


def same_process(pid: int, start: int) -> bool:
    """Whether ``pid`` still names the process that started at ``start``."""
    return pid > 0 and process_start(pid) == start


def read_state(files: ServerFiles) -> ServerState | None:
    """The state file, or None when there is none or it cannot be read (then it is stale)."""
    try:
        return ServerState.from_json(files.state.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_state(files: ServerFiles, state: ServerState) -> None:
    """Replace the state file whole: a reader never sees half of it."""
    partial = files.state.with_name(f"{files.state.name}.{os.getpid()}.tmp")
    partial.write_text(state.to_json(), encoding="utf-8")
    os.replace(partial, files.state)


def remove_state(files: ServerFiles, supervisor_pid: int | None = None) -> None:
    """Remove the state file; with ``supervisor_pid``, only if it is still that supervisor's."""
    if supervisor_pid is not None:
        state = read_state(files)
        if state is None or state.supervisor_pid != supervisor_pid:
            return
    files.state.unlink(missing_ok=True)


def state_problem(state: ServerState) -> str:
    """Why a state file no longer describes a live server, in words; '' when it does."""
    if state.boot_id != boot_id():
        return "it was written before the machine restarted"
    if not same_process(state.supervisor_pid, state.supervisor_start):
        return f"its supervisor (pid {state.supervisor_pid}) is gone"
    if not same_process(state.pid, state.pid_start):
        return f"the server (pid {state.pid}) is gone"
    return ""


def last_used(files: ServerFiles) -> float:
    """When a client last marked the server used (seconds since the epoch); 0 if never."""
    try:
        return files.used.stat().st_mtime
    except OSError:
        return 0.0


def mark_used(files: ServerFiles) -> None:
    files.folder.mkdir(parents=True, exist_ok=True)
    files.used.touch()


class FileLock:
    """An exclusive flock on a file, dropped by the OS when its holder dies: whoever starts,
    stops or retires the server (or builds its runtime) holds it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def acquire(
        self,
        wait_s: float,
        waiting: Callable[[float], None] | None = None,
        give_up: Callable[[], bool] | None = None,
    ) -> bool:
        """Wait up to ``wait_s`` for the lock; ``waiting(seconds so far)`` is called about once a
        second meanwhile, and ``give_up()`` ends the wait early. Whether it was acquired."""
        started = time.monotonic()
        said = started
        while not self.try_acquire():
            now = time.monotonic()
            if now - started > wait_s or (give_up is not None and give_up()):
                return False
            if waiting is not None and now - said >= 1.0:
                said = now
                waiting(now - started)
            time.sleep(LOCK_POLL_S)
        return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the flock
            self._handle = None


def retire(files: ServerFiles, state: ServerState) -> None:
    """Stop what is left of the server ``state`` describes and remove the state file. Its
    supervisor first (it stops its server on SIGTERM), then the server if it is still there."""
    if state.boot_id == boot_id():  # from another boot, its PIDs name other processes
        end_process(state.supervisor_pid, state.supervisor_start, SUPERVISOR_GRACE_S)
        end_process(state.pid, state.pid_start, STOP_GRACE_S)
    remove_state(files)


def end_process(pid: int, start: int, grace_s: float) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``, while ``pid`` is still the process that started
    at ``start``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        if not same_process(pid, start):
            return
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait_s
        while same_process(pid, start) and time.monotonic() < deadline:
            time.sleep(0.02)
