"""The ETA in the app's header: from the last estimate, gone once the pipeline ends."""

from __future__ import annotations

import time

from labtui.core.events import EstimateMade, PipelineEnded
from labtui.tui.status import Progress, eta_text


def test_the_header_shows_when_the_run_should_end_and_forgets_it_when_it_ends(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        progress = Progress()
        assert eta_text(progress) == ""
        # 2023-11-14 22:13:20 UTC, 48 minutes left, ±15 minutes
        progress.apply(
            EstimateMade(text="", remaining_s=2880.0, spread_s=900.0, ts=1_700_000_000.0)
        )
        assert eta_text(progress) == "ETA 23:01, ±15 min"
        progress.apply(EstimateMade(text="", remaining_s=0.0, ts=1_700_000_100.0))
        assert eta_text(progress) == "", "unknown (a model never timed) or nothing left"
        progress.apply(EstimateMade(text="", remaining_s=60.0, ts=1_700_000_100.0))
        progress.apply(PipelineEnded(outcome="stopped"))
        assert eta_text(progress) == ""
    finally:
        monkeypatch.undo()
        time.tzset()
