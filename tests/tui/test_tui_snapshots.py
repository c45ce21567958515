"""A picture of every screen and modal, from the scenes in support/tui_scenes.py (the README screenshots
come from the same scenes). Deterministic: fixed events, clock, GPU samples and sizes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.tui_scenes import SCENES


@pytest.mark.parametrize("name", list(SCENES))
def test_snapshot(name: str, snap_compare: Callable[..., bool]) -> None:
    scene = SCENES[name]
    assert snap_compare(scene.app(), terminal_size=scene.size, run_before=scene.run_before)
