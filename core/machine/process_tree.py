"""The process tree of one run: counted several times a second (processes, threads, resident
memory, CPU time) cheaply enough for a machine with thousands of processes, and stopped as a whole.

A process is the run's when it is the run, shares its process group or session (the run is started
with setsid), descends from one of the run's processes by parent pid, or carries the run's mark in
its environment. Descent finds a child that called setsid while its parent lives, and under
bubblewrap every process of the sandbox's PID namespace (orphans there are re-parented to the
sandbox's init, itself bwrap's child). The mark finds an orphan that left the session without
bubblewrap (core/machine/process_group.py's RUN_MARK).

Whether a process is the run's is decided once and remembered: a process that was not the run's
when first seen can never become it (re-parenting goes to init, setsid makes a session of one's
own), so a scan lists /proc and reads the stat of the run's processes and of new ones only.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass

from .process_group import RUN_MARK

PROC = "/proc"
REFRESH_S = 5.0  # every so often everything is read again: a recycled pid must not stay hidden
KILL_ROUNDS = 50  # freeze rounds before the kill; each one stops the children the last one missed
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class ProcStat:
    """The fields of /proc/PID/stat a watcher needs."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    cpu_ticks: int  # its own CPU time and that of the children it has reaped
    threads: int
    rss_pages: int
    start_ticks: int  # since boot: tells a recycled pid from the process it had before

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    """/proc/PID/stat parsed; None when the process is gone (or /proc is not there)."""
    try:
        fd = os.open(f"{PROC}/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 2048)
        finally:
            os.close(fd)
    except OSError:
        return None
    # The command name may hold spaces and ')': the fields start after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) < 22:
        return None
    return ProcStat(
        pid=pid,
        state=fields[0].decode(),
        ppid=int(fields[1]),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        cpu_ticks=sum(int(fields[i]) for i in (11, 12, 13, 14)),
        threads=int(fields[17]),
        rss_pages=int(fields[21]),
        start_ticks=int(fields[19]),
    )


def _marked(pid: int, needle: bytes) -> bool:
    try:
        with open(f"{PROC}/{pid}/environ", "rb") as env:
            return needle in env.read().split(b"\0")
    except OSError:
        return False


@dataclass(frozen=True)
class TreeSample:
    """The run's live processes at one moment (zombies not counted)."""

    processes: int = 0
    tasks: int = 0  # threads included, as RLIMIT_NPROC counts them
    rss_bytes: int = 0  # summed over its processes: pages they share count once per process
    cpu_s: float = 0.0

    @property
    def rss_mb(self) -> float:
        return self.rss_bytes / 2**20


class RunTree:
    """The processes of the run whose leader is ``root_pid`` (see the module docstring); ``mark``
    is the value of its RUN_MARK, '' when it has none (under bubblewrap descent is enough)."""

    def __init__(self, root_pid: int, mark: str = "") -> None:
        self._root = root_pid
        self._needle = f"{RUN_MARK}={mark}".encode() if mark else b""
        self._members: dict[int, ProcStat] = {}
        self._foreign: dict[int, int] = {}  # pid -> start ticks, of processes not the run's
        root = read_stat(root_pid)
        self._root_start = root.start_ticks if root else 0
        self._refresh_at = time.monotonic() + REFRESH_S
        self._lock = threading.Lock()  # the watcher samples while the run's end may kill

    @property
    def pids(self) -> list[int]:
        """The run's processes at the last scan, zombies included."""
        return list(self._members)

    def sample(self) -> TreeSample:
        """Scan /proc and sum up the run's live processes."""
        with self._lock:
            return self._scan()

    def _scan(self) -> TreeSample:
        refresh = time.monotonic() >= self._refresh_at
        if refresh:
            self._refresh_at = time.monotonic() + REFRESH_S
        try:
            listed = [int(name) for name in os.listdir(PROC) if name.isdigit()]
        except OSError:
            return TreeSample()
        fresh: dict[int, ProcStat] = {}
        members: dict[int, ProcStat] = {}
        foreign: dict[int, int] = {}
        for pid in listed:
            if pid in self._foreign and not refresh:
                foreign[pid] = self._foreign[pid]
                continue
            stat = read_stat(pid)
            if stat is None:
                continue
            known = self._members.get(pid)
            if known is not None and known.start_ticks == stat.start_ticks:
                members[pid] = stat
            elif self._foreign.get(pid) == stat.start_ticks:
                foreign[pid] = stat.start_ticks
            else:
                fresh[pid] = stat
        self._members = members
        self._foreign = foreign
        self._adopt(fresh)
        live = [s for s in self._members.values() if not s.zombie]
        return TreeSample(
            processes=len(live),
            tasks=sum(s.threads for s in live),
            rss_bytes=sum(s.rss_pages for s in live) * _PAGE,
            cpu_s=sum(s.cpu_ticks for s in live) / _TICKS,
        )

    def _adopt(self, fresh: dict[int, ProcStat]) -> None:
        """Sort processes not seen before into the run's and the others (remembered as such)."""
        children: dict[int, list[int]] = {}
        found: list[int] = []
        for pid, stat in fresh.items():
            if self._joins_directly(stat):
                found.append(pid)
            else:
                children.setdefault(stat.ppid, []).append(pid)
        # A new child may be listed before its new parent: follow descent among the new ones.
        while found:
            pid = found.pop()
            self._members[pid] = fresh.pop(pid)
            found += children.pop(pid, [])
        self._foreign.update((pid, stat.start_ticks) for pid, stat in fresh.items())

    def _joins_directly(self, stat: ProcStat) -> bool:
        if stat.start_ticks < self._root_start:
            return False  # older than the run
        if self._root in (stat.pid, stat.pgrp, stat.session) or stat.ppid in self._members:
            return True
        return bool(self._needle) and _marked(stat.pid, self._needle)

    def kill(self) -> int:
        """Stop every process of the run; how many of them had left its process group.

        Each is frozen first (SIGSTOP), round after round until a scan finds none new: a frozen
        process forks no more, and its children stay its children (a killed parent's would be
        re-parented out of reach). Whole process groups are signalled too, which the kernel
        does atomically with respect to fork: a fork bomb's newest child cannot slip through.
        Every group of the run's processes is the run's: a process can only join a group of
        its own session, and every session here was made by the run. Then all are killed."""
        frozen: dict[int, int] = {}  # pid -> its process group
        with self._lock:
            for _ in range(KILL_ROUNDS):
                self._scan()
                new = {
                    pid: stat.pgrp
                    for pid, stat in self._members.items()
                    if not stat.zombie and pid not in frozen
                }
                if not new:
                    break
                _signal_all(new, signal.SIGSTOP)
                frozen.update(new)
            _signal_all(frozen, signal.SIGKILL)
        return sum(group != self._root for group in frozen.values())


def _signal_all(groups: dict[int, int], sig: signal.Signals) -> None:
    """``sig`` to each process group of ``groups`` (pid -> group), then to each process."""
    own = os.getpgrp()
    for group in set(groups.values()) - {0, 1, own}:
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in groups:
        _signal(pid, sig)


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
