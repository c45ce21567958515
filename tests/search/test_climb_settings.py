"""A climb whose proposals set settings of the code: made by labtui (a ``settings:`` commit, no
coder asked), judged like any attempt; ``[climb] settings`` and ``code_changes`` say what the
proposals may change. Scripted (TEST-ONLY) proposals on the toy experiment of
tests/support/search_script.py, whose score is its SCORE constant."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY
from support.research_script import fenced_json, last_user_text
from support.search_script import TOY, git, toy_session

from labtui.core.errors import ConfigError
from labtui.core.events import SearchStep
from labtui.core.settings.sections import ClimbSection
from labtui.core.stages import experiments as experiments_stage


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    climb = ClimbSection(
        metric="score", direction="higher", run_budget_s=60, max_runs=3, seeds=0,
        settings=["SCORE"], code_changes=False,
    )  # fmt: skip
    return toy_session(tmp_path / "p", llm_server.url, arxiv_server.url, "climb", climb)


def proposals(*scores: float):
    """TEST-ONLY: each proposal (or re-ask) sets SCORE to the next score (the last one, in
    words), each with its own description."""
    queue = list(scores)

    def reply(request):
        assert not last_user_text(request).startswith("Make this change"), "no coder asked"
        score = queue.pop(0)
        given = [] if not queue else [{"name": "SCORE", "value": score}]
        change = (
            f"SCORE = {score}" if not queue else "a higher score should follow from a higher SCORE"
        )
        description = f"try the score {score} ({len(queue)} left)"
        return fenced_json({"description": description, "settings": given, "change": change})

    return reply


def test_settings_proposals_are_made_by_code_and_judged(session, llm_server):
    llm_server.default("scripted-experiments", proposals(0.6, 0.59, 0.59, 0.7))
    output = experiments_stage.run(session.context_for("experiments"))
    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.step, s.status) for s in steps] == [(1, "keep"), (2, "discard"), (3, "keep")]
    log = git(session.project.root, "log", "--all", "--format=%s")
    assert "settings: SCORE 0.5 → 0.6 (run_1)" in log
    assert "settings: SCORE 0.6 → 0.7 (run_3)" in log, "words that are only a setting"
    assert output.result.search.best["value"] == pytest.approx(0.7)
    asked = [json.dumps(r) for r in llm_server.requests_for("scripted-experiments")]
    assert not [a for a in asked if "Make this change to" in a]
    repeat = "step 2 (discard) already ran the code SCORE = 0.59 gives; propose another change"
    assert [a for a in asked if repeat in a], "a repeat is asked again, not run as an attempt"
    schema = llm_server.requests_for("scripted-experiments")[0]["response_format"]
    assert '"const": "SCORE"' in json.dumps(schema) and '"minItems": 1' in json.dumps(schema)


def test_a_setting_the_code_does_not_state_is_refused_before_any_run(session, llm_server):
    session.config.climb.settings = ["SCORES"]
    with pytest.raises(ConfigError) as raised:
        experiments_stage.run(session.context_for("experiments"))
    assert "[climb] settings names SCORES, which experiment.py does not state" in str(
        raised.value.message
    )
    assert "SCORE" in raised.value.hint
    assert (session.project.root / "experiment.py").read_text() == TOY


def test_a_repeat_is_told_which_settings_no_step_has_changed_yet():
    from labtui.core.search.ledger import Step
    from labtui.core.search.shared import untried_settings
    from labtui.core.source.setting_edit import python_editables

    settings = python_editables("HIDDEN_UNITS = 32\nLEARNING_RATE = 0.01\nEPOCHS = 150\n", "e.py")
    earlier = [
        Step(step=1, status="discard", description="wider", change="settings: HIDDEN_UNITS = 64")
    ]
    assert untried_settings(settings, earlier) == (
        "; settings no step has changed yet: LEARNING_RATE, EPOCHS"
    )
    assert untried_settings(settings[:1], earlier) == ""


def test_when_the_model_gives_nothing_usable_labtui_steps_in_and_its_steps_are_judged(
    session, llm_server
):
    session.config.llm.reasks = 0
    llm_server.default("scripted-experiments", "I would try something clever, maybe later.")
    output = experiments_stage.run(session.context_for("experiments"))

    steps = [e for e in session.events if isinstance(e, SearchStep)]
    # SCORE 0.5 is a fraction: its nearest moves stay below 1 (half, then 1.5 times)
    assert [(s.status, s.description) for s in steps] == [
        ("discard", "Set SCORE from 0.5 to 0.25 (labtui's step)"),
        ("keep", "Set SCORE from 0.5 to 0.75 (labtui's step)"),
        ("keep", "Set SCORE from 0.75 to 0.875 (labtui's step)"),
    ]
    log = git(session.project.root, "log", "--all", "--format=%s")
    assert "settings: SCORE 0.5 → 0.75 (run_2)" in log
    assert output.result.search.best["value"] == pytest.approx(0.875)
    ledger = session.project.root / "ledgers" / "climb-higher_score" / "steps"
    records = [json.loads(p.read_text()) for p in sorted(ledger.glob("*/step.json"))]
    assert [r["proposer"] for r in records] == ["labtui"] * 3
    assert all(
        "as the model gave no usable proposal" in r["change"] or r["change"] for r in records
    )
