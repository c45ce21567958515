"""Writing the local model into the user's cache without leaving it half done: room checked
before 1.1 GB is fetched, a full disk met during the write said in words (and the half-written
file removed), and small records replaced whole. Shared by every source of the weights.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import LabtuiError

_ROOM_HINT = (
    "free some space there, or point XDG_CACHE_HOME at a disk with room "
    "(labtui keeps the model under $XDG_CACHE_HOME/labtui)"
)


class DiskFull(LabtuiError):
    """No room in the user's cache for the model: a fault of the disk, not of the bytes fetched
    (what was fetched so far is kept, to go on from once there is room)."""


def ensure_room(folder: Path, needed: int, what: str) -> None:
    """Raise LabtuiError when ``folder``'s disk has fewer than ``needed`` bytes free."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise room_error(folder, needed, free, what)


def room_error(folder: Path, needed: int, free: int | None, what: str) -> DiskFull:
    """The error of a disk without room for ``what``; ``free`` None: it is unknown."""
    if free is None:
        with contextlib.suppress(OSError):
            free = shutil.disk_usage(folder).free
    has = f"{_size(free)} free" if free is not None else "no room left"
    return DiskFull(
        f"the disk is full for {what}: {folder} needs {_size(needed)} ({needed:,} bytes), "
        f"and has {has}",
        _ROOM_HINT,
    )


def is_disk_full(error: OSError) -> bool:
    return error.errno in (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def removed_unless_done(temporary: Path, needed: int, what: str) -> Iterator[Path]:
    """Yields ``temporary``; if the block fails, the file is removed so that no half file is
    ever taken for a whole one, and a full disk is said as one (naming the folder)."""
    try:
        yield temporary
    except OSError as error:
        temporary.unlink(missing_ok=True)
        if is_disk_full(error):
            raise room_error(temporary.parent, needed, None, what) from error
        raise
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a small record whole: a reader sees the old one or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with removed_unless_done(temporary, 4096, f"the record {path.name}"):
        temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)


def _size(count: int) -> str:
    if count >= 1 << 30:
        return f"{count / (1 << 30):.1f} GiB"
    return f"{count / (1 << 20):.1f} MiB"
