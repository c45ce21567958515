"""Process groups: every child labtui starts is the leader of its own group (its own session), so
that a timeout, or the end of a run, can stop everything it started: data-loader workers and
other grandchildren included, which would otherwise keep holding the GPU. One implementation for
experiments, plots and the LaTeX tools.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

KILL_GRACE_S = 3.0  # between SIGTERM and SIGKILL: time to flush logs and free the GPU


PROC = Path("/proc")


def _live_members_linux(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running, zombies not counted.

    Orphaned grandchildren become zombies until init reaps them, which some container inits do
    only every second or two; counting them would make every kill wait out its grace period.
    """
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # Fields after "(comm)": state ppid pgrp ...; comm itself may hold spaces and ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, but a member changed user: still ours to try to stop
    if PROC.is_dir():
        return _live_members_linux(pgid)
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc: subprocess.Popen[bytes], grace_s: float | None = None) -> None:
    """SIGTERM the child's whole group, wait up to ``grace_s`` for it to go, then SIGKILL the rest.

    The group id is the child's pid (``start_new_session``). The child is reaped while we wait:
    an unreaped zombie still counts as a group member and would make every kill wait out the
    full grace period.
    """
    pgid = proc.pid
    proc.poll()
    if not group_alive(pgid):
        return
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + (KILL_GRACE_S if grace_s is None else grace_s)
    while time.monotonic() < deadline:
        proc.poll()
        if not group_alive(pgid):
            return
        time.sleep(0.05)
    signal_group(pgid, signal.SIGKILL)


RUN_MARK = "LABTUI_RUN_MARK"


def kill_marked(mark: str) -> int:
    """SIGKILL every process whose environment carries ``RUN_MARK=mark``; how many there were."""
    needle = f"{RUN_MARK}={mark}".encode()
    killed = 0
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError):
            continue  # gone already, or not ours to read
    return killed
