from __future__ import annotations

import json

import pytest

from labtui.core.events import (
    AgentMessage,
    Bus,
    CheckpointDecided,
    CostUpdate,
    LogLine,
    StageFinished,
    StageStarted,
    event_from_dict,
)
from labtui.core.journal import REDACTED, Journal, read_events, redact, replay


def test_every_event_round_trips_through_the_journal(tmp_path):
    journal = Journal(tmp_path)
    bus = Bus()
    bus.subscribe(journal.append)
    sent = [
        StageStarted(stage="ideas", ts=1.0),
        AgentMessage(stage="ideas", role="ideator", text="hello", ts=2.0),
        LogLine(stage="experiments", run_id="run_1", stream="stderr", text="boom", ts=3.0),
        StageFinished(
            stage="ideas", status="done", summary="1 idea", result={"ideas": ["a"]}, ts=4.0
        ),
    ]
    for event in sent:
        bus.emit(event)
    assert read_events(journal.path) == sent
    # flushed per line: readable before close
    assert len(journal.path.read_text().splitlines()) == 4
    journal.close()


def test_secrets_are_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_PROVIDER_API_KEY", "supersecretvalue123")
    journal = Journal(tmp_path)
    journal.append(
        AgentMessage(role="x", text="key sk-ant-abcdefghijklmnopqrstuvwx and supersecretvalue123")
    )
    journal.append(
        LogLine(run_id="r", stream="stdout", text="Authorization: Bearer abcdefghijklmnop1234")
    )
    journal.close()
    text = journal.path.read_text()
    assert "sk-ant-abcdef" not in text and "supersecretvalue123" not in text
    assert "abcdefghijklmnop1234" not in text
    assert text.count(REDACTED) == 3
    assert redact("no secrets here") == "no secrets here"


def test_replay_rebuilds_state_and_resume_point(tmp_path):
    events = [
        StageFinished(stage="ideas", status="done", result={"ideas": ["a", "b"]}),
        CheckpointDecided(
            stage="novelty", checkpoint_id="novelty-1", action="revise", note="look harder"
        ),
        StageFinished(stage="novelty", status="done", result={"idea": "a"}),
        StageFinished(stage="plan", status="done", result={"runs": []}),
        StageFinished(stage="experiments", status="failed"),
        CostUpdate(
            stage="ideas",
            model="m",
            tokens_in=1,
            tokens_out=1,
            cost_usd=0.5,
            stage_tokens_in=1,
            stage_tokens_out=1,
            stage_cost_usd=0.5,
            total_cost_usd=0.5,
            budget_usd=1.0,
        ),
    ]
    state = replay(events)
    assert state.next_stage == "experiments"
    # Begun before the literature review existed: the project goes on, it does not go back.
    assert state.passed_over() == ["literature"]
    assert replay([]).passed_over() == [] and replay([]).next_stage == "literature"
    assert state.result("novelty") == {"idea": "a"}
    assert state.notes_for("novelty") == ["look harder"]
    assert state.total_cost_usd == 0.5


def test_torn_last_line_is_ignored_but_a_broken_middle_line_is_reported(tmp_path):
    path = tmp_path / "journal.jsonl"
    good = json.dumps(StageStarted(stage="ideas").to_dict())
    path.write_text(good + "\n" + '{"type": "StageSta')
    assert [e.type for e in read_events(path)] == ["StageStarted"]
    path.write_text('{"broken\n' + good + "\n")
    with pytest.raises(ValueError, match=r"journal.jsonl:1"):
        read_events(path)


def test_unknown_event_type_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown event type"):
        event_from_dict({"type": "Nope"})
