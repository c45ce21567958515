"""What a run adds to the disk use of its project folder, wherever in it the run writes (its run
folder, the project root, a data folder), with ``.git`` and ``.labtui/`` left aside (labtui writes
those itself while the run goes on), and Python environments too (a folder holding pyvenv.cfg or
conda-meta/: tens of thousands of files a run has no business writing to).

Walking a large project every half second would cost a core. So the tree is walked once as the
run starts (the baseline, in the watcher's thread: the run does not wait for it), then only when
the filesystem's own count of used blocks (one ``statvfs`` call) has grown by more than the cap
since, or every so often in any case (a mount inside the project, or a deletion elsewhere, hides
growth from that count): never more often than a fixed multiple of what one walk takes.

After a trip, the files the run created outside its run folder (by inode: unseen by the baseline)
are removed, largest first, until what the run added is back under the cap: a runaway script's
8 GB file must not leave the disk full. A file the baseline saw is never removed (it may be the
researcher's, even if the run grew it), nor the run folder (the record of what it did, emptied
before its next attempt anyway), nor a file under 1 MB (small files fill no disk). A file the run
wrote before the baseline walk reached it passes for an old one: kept, which errs on the safe side.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED = frozenset({".git", ".labtui"})  # top-level names labtui itself writes during a run
ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")  # a folder holding one is a Python environment
REWALK_S = 30.0  # a walk at least this often, statvfs or not
WALK_COST_FACTOR = 50  # and never more often than this many times the last walk's duration
KEPT_BELOW = 1 << 20  # files smaller than this are never removed after a trip


@dataclass
class Walk:
    """One walk of the project: bytes allocated, and its files as (dev, inode) -> (path, bytes)."""

    used: int = 0
    files: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)
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
                try:
                    if entry.is_dir(follow_symlinks=False):
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


def _fs_used(root: Path) -> int:
    try:
        fs = os.statvfs(root)
    except OSError:
        return 0
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


class ProjectGrowth:
    """The growth of ``root``'s disk use since it was made (made before the run starts; its
    baseline walk, ``start``, may come as the run does)."""

    def __init__(self, root: Path, run_dir: Path | None, cap_bytes: int) -> None:
        self._root = Path(root)
        self._run_dir = str(run_dir) + os.sep if run_dir else ""
        self._cap = cap_bytes
        self._baseline = Walk()
        self._fs_baseline = _fs_used(self._root)
        self._next_walk = 0.0
        self._walked_at = 0.0
        self._ready = False  # no verdict, and above all no removal, before the baseline is known
        self.last = Walk()

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

    def over_cap(self, *, walk_now: bool = False) -> bool:
        """Whether the run has added more than the cap; walks only when it may have (or when
        ``walk_now``)."""
        if not self._ready:
            return False
        now = time.monotonic()
        filled = self.filled()
        # Other writers on the filesystem may keep ``filled`` true: walks stay a small share.
        due = now >= self._next_walk
        if walk_now or due or (filled and now - self._walked_at >= 10 * self.last.seconds):
            self.last = walk(self._root)
            self._schedule()
        return self.growth() > self._cap

    def filled(self) -> bool:
        """Whether the filesystem as a whole grew by more than the cap: the project may have."""
        return _fs_used(self._root) - self._fs_baseline > self._cap

    def remove_new_files(self) -> list[tuple[str, int]]:
        """After a trip: the files the run created outside its run folder, largest first, removed
        until its growth is back under the cap; (project-relative path, bytes) of each."""
        if not self._ready:
            return []
        self.last = walk(self._root)
        created = [
            (path, size)
            for key, (path, size) in self.last.files.items()
            if key not in self._baseline.files
            and size >= KEPT_BELOW
            and not (self._run_dir and path.startswith(self._run_dir))
        ]
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
        return removed
