"""What a test session makes once and its pytest-xdist workers share: a folder they all see, and
a lock so that the first worker makes a thing while the others wait for it and then reuse it
(the fault tests' reference run, compiled LaTeX fixtures)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """The session's base temporary folder, the same for all its workers (each worker's own
    ``getbasetemp()`` is a ``popen-gw<n>`` folder inside it)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made if missing) across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
