"""What a run adds to the disk use of its project folder, wherever in it the run writes (its run
folder, the project root, a data folder), with ``.git`` and ``.labtui/`` left aside (labtui writes
those itself while the run goes on), and Python environments too (a folder holding pyvenv.cfg or
conda-meta/: tens of thousands of files a run has no business writing to).

Walking a large project every half second would cost a core. So the tree is walked once as the
run starts (the baseline, in the watcher's thread: the run does not wait for it), then only when
the filesystem's own count of used blocks (one ``statvfs`` call) has grown by more than the cap
since, or every so often in any case (a mount inside the project, or a deletion elsewhere, hides
growth from that count): never more often than a fixed multiple of what one walk takes.

The same walk counts the entries (files, folders, links) the run adds, against ``[sandbox]
max_files``; the filesystem's count of used inodes, from the same ``statvfs`` call, tells when a
walk is due. Counting costs nothing beyond the walk: it stats every file for its size anyway
(about 0.37 s for 100,000 files here, 1.5 s for 400,000).

After a trip over the disk cap, the files the run created outside its run folder (by inode:
unseen by the baseline) are removed, largest first, until what the run added is back under the
cap: a runaway script's 8 GB file must not leave the disk full (``removed`` keeps what went).
``new_files`` lists what the run created outside its run folder, for what becomes of a failed
run's files once it is over (core/runs/strays.py: thousands of small files over the file count
are removed there, where other runs' folders are known). A file the baseline saw is never removed (it may be the
researcher's, even if the run grew it), nor the run folder (the record of what it did, emptied
before its next attempt anyway), nor a file under 1 MB (small files fill no disk). A file the run
wrote before the baseline walk reached it passes for an old one: kept, which errs on the safe side.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SKIPPED = frozenset({".git", ".labtui"})  # top-level names labtui itself writes during a run
ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")  # a folder holding one is a Python environment
REWALK_S = 30.0  # a walk at least this often, statvfs or not
WALK_COST_FACTOR = 50  # and never more often than this many times the last walk's duration
KEPT_BELOW = 1 << 20  # files smaller than this are never removed after a disk cap trip

Over = Literal["", "disk", "files"]  # which cap a run went over ('': none)


@dataclass
class Walk:
    """One walk of the project: bytes allocated, entries seen (files, folders, links: what
    ``[sandbox] max_files`` counts), and its files as (dev, inode) -> (path, bytes)."""

    used: int = 0
    entries: int = 0
    files: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)
    seconds: float = 0.0


def walk(root: Path) -> Walk:
    """Every regular file under ``root`` (symlinks not followed; SKIPPED names at the top and
    Python environments left out), by its allocated blocks: a sparse file counts for what it
    holds."""
    started = time.monotonic()
    result = Walk()
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if folder == str(root) and entry.name in SKIPPED:
                    continue
                result.entries += 1
                try:
                    if entry.is_dir(follow_symlinks=False):
                        result.folders.add(entry.path)
                        if not _environment(entry.path):
                            stack.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                size = stat.st_blocks * 512
                result.used += size
                result.files[(stat.st_dev, stat.st_ino)] = (entry.path, size)
    result.seconds = time.monotonic() - started
    return result


def _environment(folder: str) -> bool:
    return any(os.path.lexists(os.path.join(folder, mark)) for mark in ENVIRONMENT_MARKS)


def _fs_used(root: Path) -> tuple[int, int]:
    """(bytes, inodes) in use on ``root``'s filesystem (inodes 0 where it does not count them)."""
    try:
        fs = os.statvfs(root)
    except OSError:
        return 0, 0
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree


class ProjectGrowth:
    """The growth of ``root``'s disk use and entries since it was made (made before the run
    starts; its baseline walk, ``start``, may come as the run does). A cap of 0 is none."""

    def __init__(self, root: Path, run_dir: Path | None, cap_bytes: int, file_cap: int = 0) -> None:
        self._root = Path(root)
        self._run_dir = str(run_dir) + os.sep if run_dir else ""
        self._cap = cap_bytes
        self.file_cap = file_cap
        self._baseline = Walk()
        self._fs_baseline = _fs_used(self._root)
        self._next_walk = 0.0
        self._walked_at = 0.0
        self._ready = False  # no verdict, and above all no removal, before the baseline is known
        self.last = Walk()
        self.removed: list[tuple[str, int]] = []  # what a trip removed: (relative path, bytes)
        self.tripped: Over = ""  # the first cap a check found the run over

    def start(self) -> None:
        self._baseline = walk(self._root)
        self._ready = True
        self.last = self._baseline
        self._schedule()

    def _schedule(self) -> None:
        self._walked_at = time.monotonic()
        self._next_walk = self._walked_at + max(REWALK_S, WALK_COST_FACTOR * self.last.seconds)

    def growth(self) -> int:
        """Bytes the project holds beyond its baseline, as of the last walk."""
        return self.last.used - self._baseline.used

    def created(self) -> int:
        """Entries the project holds beyond its baseline, as of the last walk."""
        return self.last.entries - self._baseline.entries

    def over_cap(self, *, walk_now: bool = False) -> Over:
        """Which cap the run went over, if any; walks only when it may have (or when
        ``walk_now``). Without caps (the walk is kept for ``new_files``) it never walks."""
        if not self._ready or not (self._cap or self.file_cap):
            return ""
        now = time.monotonic()
        filled = self.filled()
        # Other writers on the filesystem may keep ``filled`` true: walks stay a small share.
        due = now >= self._next_walk
        if walk_now or due or (filled and now - self._walked_at >= 10 * self.last.seconds):
            self.last = walk(self._root)
            self._schedule()
        return self.over()

    def over(self) -> Over:
        """Which cap the run is over as of the last walk ('': none); a trip is remembered
        (``tripped``) for what becomes of its files after the run."""
        over: Over = ""
        if self._cap and self.growth() > self._cap:
            over = "disk"
        elif self.file_cap and self.created() > self.file_cap:
            over = "files"
        self.tripped = self.tripped or over
        return over

    def filled(self) -> bool:
        """Whether the filesystem as a whole grew by more than a cap: the project may have."""
        used, inodes = _fs_used(self._root)
        grew_bytes = self._cap and used - self._fs_baseline[0] > self._cap
        grew_inodes = self.file_cap and inodes - self._fs_baseline[1] > self.file_cap
        return bool(grew_bytes or grew_inodes)

    def new_files(self) -> list[tuple[str, int]]:
        """After the run (a fresh walk): the files it created outside its run folder, as
        (absolute path, bytes); a path the baseline saw is not new, even under a new inode (a
        file rewritten by rename)."""
        if not self._ready:
            return []
        self.last = walk(self._root)
        known = {path for path, _ in self._baseline.files.values()}
        return [
            (path, size)
            for key, (path, size) in self.last.files.items()
            if key not in self._baseline.files
            and path not in known
            and not (self._run_dir and path.startswith(self._run_dir))
        ]

    def existed(self, folder: str) -> bool:
        """Whether ``folder`` (absolute) was there before the run (the root always was)."""
        return folder == str(self._root) or folder in self._baseline.folders

    def remove_new_files(self) -> list[tuple[str, int]]:
        """After a trip over the disk cap: the files the run created outside its run folder,
        largest first, from 1 MB up, removed until its growth is back under the cap;
        (project-relative path, bytes) of each, also kept in ``removed``."""
        created = [(path, size) for path, size in self.new_files() if size >= KEPT_BELOW]
        removed: list[tuple[str, int]] = []
        excess = self.growth() - self._cap
        for path, size in sorted(created, key=lambda item: -item[1]):
            if excess <= 0:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            removed.append((os.path.relpath(path, self._root), size))
            excess -= size
        self.removed += removed
        return removed
