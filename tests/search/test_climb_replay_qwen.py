"""The 1.5B model's own climb proposals, replayed (tests/recorded/real_model/
qwen15_moons_climb_experiments.jsonl: seven of the 54 proposal calls of the 30-minute climb on
moons of issue 42, in the order given here).

Each reply is structured: a setting from the enum with a typed value. The model fixes on
HIDDEN_UNITS: its second proposal repeats the first's 64 (asked again before anything runs: it
gives 8), and three replies that would run code a step already ran, or set the value the code
has, are all refused, so labtui makes attempt 4 a settings step of its own. What is expected is
computed from the recorded replies and the moons template's settings, never typed in from a
guess; only labtui's own step is written here, as labtui computes it."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY
from support.recorded_replies import exchanges
from support.search_script import seed_idea_session

from labtui.core.events import Refused, SearchStep
from labtui.core.search.ledger import LABTUI, MODEL
from labtui.core.settings.sections import ClimbSection
from labtui.core.stages import experiments as experiments_stage

RECORDING = "qwen15_moons_climb_experiments"
MODEL_NAME = "scripted-experiments"
IDEA = "weight_decay_label_noise"  # any moons seed idea: the proposals do not read it


def proposals() -> list[dict]:
    return [json.loads(e["reply"]) for e in exchanges(RECORDING)]


def chosen(reply: dict) -> dict:
    return {item["name"]: item["value"] for item in reply["settings"]}


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    # settings only, as the small-model profile climbs
    climb = ClimbSection(
        max_runs=4, baseline_repeats=1, seeds=0, run_budget_s=60, code_changes=False
    )
    session = seed_idea_session(tmp_path / "p", llm_server.url, arxiv_server.url, IDEA, climb)
    session.config.llm.reasks = 2  # three replies an attempt, as recorded
    return session


def test_the_recording_is_the_climb_replayed_below():
    replies = proposals()
    assert [chosen(r) for r in replies] == [
        {"HIDDEN_UNITS": v} for v in (64, 64, 8, 128, 64, 32, 64)
    ], "a re-recording that changes these fails here first"


def test_the_real_models_proposals_are_made_by_code_and_its_repeats_refused(session, llm_server):
    replies = proposals()
    llm_server.script(MODEL_NAME, *[e["reply"] for e in exchanges(RECORDING)])
    output = experiments_stage.run(session.context_for("experiments"))

    assert llm_server.remaining(MODEL_NAME) == 0 and llm_server.errors == []
    asked = llm_server.requests_for(MODEL_NAME)
    assert not [r for r in asked if "Make this change" in json.dumps(r)], "no coder asked"

    steps = [e for e in session.events if isinstance(e, SearchStep)]
    ran = [chosen(replies[i]) for i in (0, 2, 3)]  # the proposals that passed
    assert [s.step for s in steps] == [1, 2, 3, 4]
    ledger = session.project.root / "ledgers" / f"climb-{IDEA}" / "steps"
    records = [json.loads(p.read_text()) for p in sorted(ledger.glob("*/step.json"))]
    for record, wanted in zip(records, ran, strict=False):
        [(name, value)] = wanted.items()
        assert record["change"] == f"settings: {name} = {value!r}"
        assert f"settings: {name} 32 → {value}" in record["computed"], "computed from the code"

    refused = [e.reason for e in session.events if isinstance(e, Refused)]
    assert len(refused) == 4, "one repeat in attempt 2, all three of attempt 4"
    assert "step 1 (discard) already ran the code HIDDEN_UNITS = 64" in refused[0] or (
        "step 1 (keep) already ran the code HIDDEN_UNITS = 64" in refused[0]
    )
    assert "the code already has HIDDEN_UNITS = 32" in " ".join(refused[1:])

    # attempt 4: labtui's own step, the setting no step changed first among the method's
    fourth = steps[3]
    assert fourth.description == "Set ACTIVATION from 'tanh' to 'relu' (labtui's step)"
    assert [r["proposer"] for r in records] == [MODEL, MODEL, MODEL, LABTUI]
    assert output.result.search.reason == "4 attempts made"
