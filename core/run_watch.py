"""Watchers of a sandboxed run: they kill its whole group when it holds too many tasks (a fork
bomb) or its run folder outgrows the disk cap; ``reason`` then names the limit and by how much.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from .process_group import PROC, signal_group
from .sandbox import SandboxSpec

PROCESS_WATCH_S = 0.2  # how often the process count of a sandboxed run is checked
DISK_WATCH_S = 0.5  # how often the size of its run folder is summed


def _group_tasks(pgid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) in the group or session ``pgid``;
    zombies not counted. The session catches children that made a group of their own."""
    total = 0
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        # state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
        # cutime cstime priority nice num_threads ...
        if len(fields) > 17 and fields[0] != "Z" and str(pgid) in (fields[2], fields[3]):
            total += int(fields[17]) if fields[17].isdigit() else 1
    return total


def _disk_usage(folder: Path) -> int:
    """Bytes of disk a folder's files take (allocated blocks: a sparse file is what it holds)."""
    total = 0
    for path, _dirs, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(path, name))
            except OSError:
                continue
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total


class RunWatcher(threading.Thread):
    """Kills a sandboxed run's whole group when it holds too many tasks or its run folder
    outgrows the disk cap; ``reason`` then says which limit and by how much."""

    def __init__(self, pgid: int, sandbox: SandboxSpec) -> None:
        super().__init__(name=f"labtui-watch-{pgid}", daemon=True)
        self._pgid = pgid
        self._sandbox = sandbox
        self._done = threading.Event()
        self.reason = ""

    @staticmethod
    def wanted(sandbox: SandboxSpec | None) -> bool:
        if sandbox is None or not sandbox.limited:
            return False
        return bool(sandbox.max_processes or (sandbox.run_dir and sandbox.run_dir_cap_mb))

    def stop(self) -> None:
        self._done.set()

    def run(self) -> None:
        spec = self._sandbox
        next_disk = 0.0
        while not self._done.wait(PROCESS_WATCH_S):
            if spec.max_processes and PROC.is_dir():
                tasks = _group_tasks(self._pgid)
                if tasks > spec.max_processes:
                    self._trip(
                        f"process limit exceeded: {tasks} processes/threads running, more than "
                        f"[sandbox] max_processes = {spec.max_processes} (a fork bomb?)"
                    )
                    return
            if spec.run_dir and spec.run_dir_cap_mb and time.monotonic() >= next_disk:
                next_disk = time.monotonic() + DISK_WATCH_S
                used = _disk_usage(spec.run_dir)
                if used > spec.run_dir_cap_mb * 1024 * 1024:
                    self._trip(
                        f"disk cap exceeded: {spec.run_dir.name}/ holds {used / 2**20:.1f} MB, "
                        f"more than [sandbox] run_dir_cap_mb = {spec.run_dir_cap_mb} MB"
                    )
                    return

    def _trip(self, reason: str) -> None:
        self.reason = reason
        # No grace period: a disk filler or a fork bomb must not get another second.
        # Under bubblewrap the group holds the sandbox's PID 1, whose death ends every process
        # in the sandbox, including any that left the group.
        signal_group(self._pgid, signal.SIGKILL)
