"""One pipeline per project at a time: the lock a session holds while it runs, and
``labtui rewind``, which takes the lock to rewind a project no labtui is running on.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TextIO

from ..errors import LabtuiError
from ..journal import JOURNAL_NAME, Journal, read_events, replay
from ..workspace.project import Project
from ..workspace.rewind import rewind_to


def hold_project_lock(state_dir: Path) -> TextIO:
    """One pipeline per project at a time. The OS drops the lock when the process dies, so a
    killed run never leaves a stale lock behind."""
    handle = (state_dir / "lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise LabtuiError(
            f"another labtui is running on this project ({holder})",
            "wait for it to finish, or stop it; its work is kept and resumable",
        ) from None
    handle.truncate(0)
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def rewind_project(directory: Path, stage: str) -> str:
    """``labtui rewind STAGE``: the project back to before ``stage`` while no labtui runs on
    it, journaled; says what was done (LabtuiError when refused)."""
    project = Project.open(directory)
    try:
        lock = hold_project_lock(project.state_dir)
    except LabtuiError as exc:
        raise LabtuiError(
            f"rewind: {exc.message}",
            "stop it first (q in its window), or rewind inside it: the command palette's Rewind",
        ) from None
    try:
        state = replay(read_events(project.state_dir / JOURNAL_NAME))
        rewound, told = rewind_to(project, state, stage)
        journal = Journal(project.state_dir)
        try:
            journal.append(rewound)
        finally:
            journal.close()
        return told
    finally:
        lock.close()
