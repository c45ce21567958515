"""Waiting for a condition outside a Textual app (threads, child processes, files): never a bare
sleep, and a deadline far beyond what an idle machine needs, so a loaded machine (two CPU burners
on two cores) passes as an idle one does. How long things take is the bench's to measure."""

from __future__ import annotations

import time
from collections.abc import Callable

GENEROUS_S = 60.0  # only a hang reaches this: the wait ends as soon as the condition holds


def wait_until(
    condition: Callable[[], object], what: str = "the condition", timeout_s: float = GENEROUS_S
) -> None:
    """Return as soon as ``condition()`` is true; AssertionError naming ``what`` after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s:g} s")
        time.sleep(0.01)
