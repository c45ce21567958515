"""A front end that cannot keep up with a run's flood is shown less of it, never dropped, and
is told how much it missed; everything else still reaches it in order."""

from __future__ import annotations

import json

from labtui.core.engine.front_ends import Outbox
from labtui.core.events import LogLine, MetricsReported, RunFinished, event_from_dict


def _events(outbox: Outbox) -> list:
    lines = outbox.take() or []
    return [event_from_dict(e) for line in lines for e in json.loads(line)["events"]]


def _read(first: int, n: int = 10) -> dict:
    text = "\n".join(f"line {first + i}" for i in range(n))
    return LogLine(stage="experiments", run_id="run_1", stream="stdout", text=text).to_dict()


def test_run_output_past_the_limit_is_counted_and_the_count_said_when_it_has_caught_up() -> None:
    outbox = Outbox(log_chars=300)
    for read in range(10):  # ~100 characters a read: three fit
        assert outbox.offer(_read(read * 10))
        metrics = MetricsReported(stage="experiments", run_id="run_1", points=[]).to_dict()
        assert outbox.offer(metrics)  # the rest of what a run says is never left out
    first = _events(outbox)
    shown = [e for e in first if isinstance(e, LogLine)]
    assert [e.text.split("\n")[0] for e in shown] == ["line 0", "line 10", "line 20"]
    assert sum(isinstance(e, MetricsReported) for e in first) == 10

    assert outbox.offer(_read(100))  # the front end has caught up: said first, then shown
    said, resumed = _events(outbox)
    assert said.text.startswith("… 70 lines not shown: this view fell behind the run")
    assert "stdout.log" in said.text and resumed.text.startswith("line 100")


def test_the_count_is_said_at_the_runs_end_when_no_more_output_comes() -> None:
    outbox = Outbox(log_chars=150)
    for read in range(5):
        outbox.offer(_read(read * 10))
    end = RunFinished(stage="experiments", run_id="run_1", returncode=0, wall_s=1.0)
    outbox.offer(end.to_dict())
    events = _events(outbox)
    assert "30 lines not shown" in events[-2].text and isinstance(events[-1], RunFinished)
