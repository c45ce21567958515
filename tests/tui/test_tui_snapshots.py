"""A picture of every screen and modal, from the scenes in support/tui_scenes.py (the README screenshots
come from the same scenes). Deterministic: fixed events, clock, GPU samples and sizes."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from support.tui_scenes import SCENES


@pytest.fixture(autouse=True)
def _utc(monkeypatch):
    """The ETA is a time of day in local time: pictures are taken in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("name", list(SCENES))
def test_snapshot(name: str, snap_compare: Callable[..., bool]) -> None:
    scene = SCENES[name]
    assert snap_compare(scene.app(), terminal_size=scene.size, run_before=scene.run_before)
