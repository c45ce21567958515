"""Waiting for a Textual app under test: on a condition, never on a bare sleep, so the tests pass
on a loaded machine as on an idle one."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

FLUSH_S = 0.15  # the app hands bursty events to the panes this often
# App time (the sum of the pauses; wall time is longer): only a hang reaches it, so a loaded
# machine that is slow to reach a state fails nothing.
TIMEOUT_S = 30.0


async def wait_for(pilot: Pilot, predicate: Callable[[], bool], timeout: float = TIMEOUT_S) -> None:
    """Let the app run until ``predicate`` holds (an AssertionError after ``timeout`` s of app
    time)."""
    waited = 0.0
    while not predicate():
        if waited > timeout:
            raise AssertionError("the app did not reach the expected state in time")
        await pilot.pause(0.02)
        waited += 0.02


async def settle(
    pilot: Pilot, predicate: Callable[[], bool] = lambda: True, timeout: float = TIMEOUT_S
) -> None:
    """Wait until ``predicate`` holds and the app has rendered every event it was handed, then
    for a flush period and a repaint: what the screen shows is then what the app holds."""
    await wait_for(pilot, lambda: predicate() and _rendered(pilot.app), timeout)
    await pilot.pause(FLUSH_S)
    await pilot.pause()


def _rendered(app: object) -> bool:
    """True once the app has drawn every engine event handed to it (an app without an inbox has
    nothing pending)."""
    return not getattr(app, "pending_events", 0)
