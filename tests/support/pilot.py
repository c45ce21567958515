"""Waiting for a Textual app under test: on a condition, never on a bare sleep, so the tests pass
on a loaded machine as on an idle one."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

FLUSH_S = 0.15  # the app hands bursty events to the panes this often


async def wait_for(pilot: Pilot, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until ``predicate`` holds (an AssertionError after ``timeout`` s of app
    time)."""
    waited = 0.0
    while not predicate():
        if waited > timeout:
            raise AssertionError("the app did not reach the expected state in time")
        await pilot.pause(0.02)
        waited += 0.02


async def settle(
    pilot: Pilot, predicate: Callable[[], bool] = lambda: True, timeout: float = 10.0
) -> None:
    """Wait until ``predicate`` holds, then for the flush of bursty events and a repaint: what
    the screen shows is then what the app holds."""
    await wait_for(pilot, predicate, timeout)
    await pilot.pause(FLUSH_S)
    await pilot.pause()
