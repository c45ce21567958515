"""What a failed or stopped run wrote outside its run folder, cleared away so that the next run,
the commit and the researcher's ``git status`` do not find it.

Which files: those the project's watch (core/machine/disk_growth.py) had not seen when the run
started (its baseline walk, so nothing is walked twice), less tracked files and less the folders
of other runs (a parallel seed's, running or done). A file that existed before the run is never
touched, even if the run rewrote it.

What becomes of them:

* over a cap, removed: all of them when the run went over ``[sandbox] project_cap_mb`` or
  ``max_files`` (the watcher already removed what it had to as it stopped the run), else each
  file that reached ``[sandbox] max_file_mb`` (the size cap stops a file there; what it holds is
  no result, and it can fill a disk);
* the rest moved aside to ``.labtui/failed/<run_id>/`` (git ignores ``.labtui/``), each at its
  place relative to the project: only what git would show (untracked, not ignored; a download
  into an ignored ``data/`` stays), and only when no other run goes on in the project (its
  files could not be told from this one's).

A Notice says what went where and how much disk was given back; the run record keeps it
(``LeftOutside``). ``move_aside`` and the helpers below serve ``labtui init``'s checks too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..events import Event, Notice
from ..machine.disk_growth import ProjectGrowth
from ..workspace.run_folder import RUN_RECORD, LeftOutside

Emit = Callable[[Event], None]

FAILED_DIR = ".labtui/failed"  # a failed run's strays go to FAILED_DIR/<run_id>/
SHOWN = 3  # files named in the Notice; the rest are counted
RECORDED = 100  # files named in the run record; the rest are counted
CAP_WORDS = {"disk": "over [sandbox] project_cap_mb", "files": "over [sandbox] max_files"}

_active: dict[Path, set[str]] = {}  # project -> its runs going on now, in this process
_active_lock = threading.Lock()


@dataclass(frozen=True)
class Stray:
    """A file the run created outside its folder: project-relative, its disk use and size."""

    name: str
    used: int  # allocated bytes: what removing it gives back
    size: int  # its length: what the size cap compares
    shown: bool  # untracked and not ignored: git would show it


@contextmanager
def running(root: Path, run_id: str) -> Iterator[None]:
    """While a run goes on in ``root``: the files of the others there are not its strays."""
    with _active_lock:
        _active.setdefault(root, set()).add(run_id)
    try:
        yield
    finally:
        with _active_lock:
            _active[root].discard(run_id)


def _others(root: Path, run_id: str) -> set[str]:
    with _active_lock:
        return _active.get(root, set()) - {run_id}


def settle(
    root: Path,
    run_id: str,
    growth: ProjectGrowth,
    max_file_mb: int,
    emit: Emit,
    stage: str,
    *,
    into: str = "",
) -> LeftOutside:
    """The strays of the failed run ``run_id`` removed or moved to ``into`` as the module
    docstring says; said in a Notice. ``into`` defaults to ``.labtui/failed/<run_id>``, emptied
    first (an earlier attempt's); a caller that names its own empties it itself."""
    own = not into
    into = into or f"{FAILED_DIR}/{run_id}"
    others = _others(root, run_id)
    strays = _strays(root, growth, others)
    removing, why = _over_caps(strays, growth, max_file_mb)
    gone = {s.name for s in removing}
    moving = [] if others else [s for s in strays if s.shown and s.name not in gone]
    removed = [(s.name, s.used) for s in removing if _remove(root / s.name)]
    _prune_folders_of(root, [name for name, _ in removed], kept=growth.existed)
    removed = sorted([*growth.removed, *removed], key=lambda item: -item[1])
    if moving and own:
        clear(root / into)
    moved = move_aside(root, [s.name for s in moving], into, kept=growth.existed)
    outcome = LeftOutside(
        moved_to=into if moved else "",
        moved=moved[:RECORDED],
        moved_count=len(moved),
        removed=[name for name, _ in removed[:RECORDED]],
        removed_count=len(removed),
        freed_bytes=sum(used for _, used in removed),
        why_removed=why if removed else "",
    )
    if removed or moved:
        moved_bytes = sum(s.used for s in moving)
        emit(Notice(stage=stage, text=_told(run_id, outcome, moved_bytes)))
    return outcome


def _strays(root: Path, growth: ProjectGrowth, others: set[str]) -> list[Stray]:
    status = _git_status(root)
    run_folders: dict[str, bool] = {}  # top-level name -> whether it is a run's folder
    strays = []
    for path, used in growth.new_files():
        name = Path(os.path.relpath(path, root)).as_posix()
        top = name.partition("/")[0]
        if top not in run_folders:
            run_folders[top] = top in others or (root / top / RUN_RECORD).is_file()
        if run_folders[top] or status.get(name) == "tracked":
            continue
        try:
            size = os.lstat(path).st_size
        except OSError:
            continue
        shown = status.get(name) == "untracked" if status else True
        strays.append(Stray(name, used, size, shown))
    return sorted(strays, key=lambda s: s.name)


def _git_status(root: Path) -> dict[str, str]:
    """Project-relative path -> "tracked" or "untracked" (not ignored); {} outside git."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        return {}
    status = {}
    for line in listed.stdout.decode("utf-8", "replace").split("\0"):
        tag, _, name = line.partition(" ")
        if name:
            status[name] = "untracked" if tag == "?" else "tracked"
    return status


def _over_caps(
    strays: list[Stray], growth: ProjectGrowth, max_file_mb: int
) -> tuple[list[Stray], str]:
    """The strays to remove, and why: all of them past a project cap, else those at the size
    cap (RLIMIT_FSIZE stops a file at exactly the cap)."""
    if growth.tripped:
        return strays, CAP_WORDS[growth.tripped]
    cap = max_file_mb * 2**20
    large = [s for s in strays if cap and s.size >= cap]
    return large, f"over [sandbox] max_file_mb = {max_file_mb} MB"


def _remove(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    return True


def _prune_folders_of(root: Path, names: list[str], kept: Callable[[str], bool]) -> None:
    """The folders that removing ``names`` left empty, deepest first, once each."""
    folders = {(root / name).parent for name in names}
    for folder in sorted(folders, key=lambda f: -len(f.parts)):
        prune_empty_parents(root, folder, kept=kept)


def move_aside(
    root: Path, names: list[str], into: str, kept: Callable[[str], bool] = lambda _: False
) -> list[str]:
    """The project-relative ``names`` (files or folders) that existed, moved under ``into`` at
    the same relative places; the folders a move leaves empty go too, unless ``kept``."""
    target = root / into
    moved = []
    for name in names:
        source = root / name
        if not source.exists() and not source.is_symlink():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target / name))
        moved.append(name)
        prune_empty_parents(root, source.parent, kept=kept)
    return moved


def prune_empty_parents(
    root: Path, folder: Path, kept: Callable[[str], bool] = lambda _: False
) -> None:
    """``folder`` and its parents up to ``root`` removed while empty and not ``kept``."""
    while folder != root and root in folder.parents and not kept(str(folder)):
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return
        folder = folder.parent


def clear(path: Path) -> None:
    """``path`` gone, whether a folder, a file or a link."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _told(run_id: str, outcome: LeftOutside, moved_bytes: int) -> str:
    """The Notice: what the failed run left outside its folder, what became of it, and the
    disk given back."""
    parts = []
    if outcome.removed_count:
        files = _files(outcome.removed_count, f"outside {run_id}/")
        shown = _names(outcome.removed, outcome.removed_count)
        parts.append(f"{files} ({in_words(outcome.freed_bytes)}, {shown}) "
                     f"{_were(outcome.removed_count)} removed: {outcome.why_removed}")  # fmt: skip
    if outcome.moved_count:
        files = _files(outcome.moved_count, f"outside {run_id}/")
        if outcome.removed_count:
            files = files.replace("the ", "the other ", 1)
        shown = _names(outcome.moved, outcome.moved_count)
        parts.append(f"{files} ({in_words(moved_bytes)}, {shown}) "
                     f"{_were(outcome.moved_count)} moved to {outcome.moved_to}/")  # fmt: skip
    given = f"; {in_words(outcome.freed_bytes)} given back" if outcome.freed_bytes else ""
    return f"{run_id} failed: " + "; ".join(parts) + given


def _files(count: int, where: str) -> str:
    return f"the {count:,} file{'s' if count > 1 else ''} it wrote {where}"


def _were(count: int) -> str:
    return "were" if count > 1 else "was"


def _names(names: list[str], count: int) -> str:
    more = count - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more:,} more" if more > 0 else "")


def in_words(count: int) -> str:
    """Bytes as a person reads them: 8.0 GB, 3.4 MB, 12 KB, 0 bytes."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
