"""The tree search ([experiment] strategy = "tree") with a scripted searcher on the toy
experiment: drafts, a debug step of a buggy leaf, an improvement of the best node; the best
chosen by the metric and re-run with seeds; every node a commit on its own branch."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY
from support.search_script import (
    Change,
    ScriptedSearcher,
    crashing,
    fixed,
    git,
    score_change,
    toy_session,
    with_score,
)

from labtui.core.events import SearchEnded, SearchStep
from labtui.core.search.ledger import Step
from labtui.core.search.target import Target
from labtui.core.search.tree_rules import Choice, choose
from labtui.core.settings.sections import TreeSection
from labtui.core.stages import experiments as experiments_stage

HIGHER = Target("toy", "score", "higher")


def node(number, status, value=None, parent=0, action="draft", depth=0, commit="c0de") -> Step:
    return Step(
        number,
        status,
        f"node {number}",
        value=value,
        parent=parent,
        action=action,
        depth=depth,
        commit=commit,
    )


# -- the rules of the next step ----------------------------------------------------------------


def test_drafts_come_first_then_a_buggy_leaf_is_debugged_or_the_best_improved():
    rules = TreeSection(drafts=2, debug_prob=1.0, max_debug_depth=2)
    assert choose([], [], rules, HIGHER) == ("draft", None)
    one = [node(1, "ok", 0.6)]
    assert choose(one, [Choice("draft", None, 2)], rules, HIGHER) == ("improve", one[0])
    nodes = [node(1, "ok", 0.6), node(2, "buggy")]
    assert choose(nodes, [], rules, HIGHER) == ("debug", nodes[1])
    # a leaf being debugged already, or with a child, or at the depth limit, is not debugged
    busy = [Choice("debug", nodes[1], 3)]
    assert choose(nodes, busy, rules, HIGHER) == ("improve", nodes[0])
    deep = [node(1, "ok", 0.6), node(2, "buggy", depth=2)]
    assert choose(deep, [], rules, HIGHER) == ("improve", deep[0])
    never = TreeSection(drafts=2, debug_prob=0.0)
    assert choose(nodes, [], never, HIGHER) == ("improve", nodes[0])


def test_the_best_by_the_metric_is_improved_whichever_way_is_better():
    rules = TreeSection(drafts=1, debug_prob=0.0)
    nodes = [node(1, "ok", 0.6), node(2, "ok", 0.9, parent=1, action="improve")]
    assert choose(nodes, [], rules, HIGHER)[1].step == 2
    assert choose(nodes, [], rules, Target("toy", "loss", "lower"))[1].step == 1


def test_with_nothing_working_and_no_leaf_left_to_debug_it_drafts_again():
    rules = TreeSection(drafts=1, debug_prob=0.5, max_debug_depth=1)
    assert choose([node(1, "buggy", depth=1)], [], rules, HIGHER) == ("draft", None)
    # a node without code (the model never gave a usable proposal) is no leaf to debug
    assert choose([node(1, "buggy", commit="")], [], rules, HIGHER) == ("draft", None)


def test_the_coin_is_seeded_so_a_resumed_tree_makes_the_same_choices():
    rules = TreeSection(drafts=1, debug_prob=0.5, seed=7)
    nodes = [node(1, "ok", 0.6), node(2, "buggy", parent=1, action="improve")]
    first = [choose(nodes, [], rules, HIGHER)[0] for _ in range(5)]
    assert len(set(first)) == 1


# -- a whole tree -------------------------------------------------------------------------------


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    tree = TreeSection(
        metric="score",
        direction="higher",
        run_budget_s=60,
        max_nodes=4,
        drafts=2,
        debug_prob=1.0,
        baseline_repeats=2,
        seeds=2,
        finalists=2,
    )
    return toy_session(tmp_path / "p", llm_server.url, arxiv_server.url, "tree", tree)


def test_a_tree_with_two_drafts_a_debug_step_and_an_improvement(session, llm_server):
    root = session.project.root
    ScriptedSearcher(
        root,
        [
            score_change(0.6, "a draft at 0.6"),
            Change("a draft that crashes", crashing),
            Change("fix the crash and set 0.65", lambda code: with_score(fixed(code), 0.65)),
            score_change(0.75, "improve to 0.75"),
        ],
    ).install(llm_server)
    output = experiments_stage.run(session.context_for("experiments"))

    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.step, s.action, s.parent, s.status) for s in steps] == [
        (1, "draft", 0, "ok"),
        (2, "draft", 0, "buggy"),
        (3, "debug", 2, "ok"),
        (4, "improve", 3, "ok"),
    ]
    assert "the toy exploded" in steps[1].problem
    assert [s.new_best for s in steps] == [True, False, True, True]

    # Every node is a commit on its own branch; the buggy one keeps its code and its error.
    for number in (1, 2, 3, 4):
        assert git(root, "rev-parse", f"labtui/tree/higher_score/node-{number}").strip()
    assert "the toy exploded" in git(root, "show", "labtui/tree/higher_score/node-2:experiment.py")
    ledger = root / "ledgers" / "tree-higher_score"
    for number in ("0001", "0003", "0004"):
        assert (ledger / "steps" / number / "run" / "final_info.json").is_file()
        assert "SCORE" in (ledger / "steps" / number / "change.diff").read_text()
    buggy = json.loads((ledger / "steps" / "0002" / "step.json").read_text())
    assert buggy["status"] == "buggy" and "the toy exploded" in buggy["stderr_tail"]

    # The best by the metric, re-run with seeds with the runner-up; its path is in the project.
    final = json.loads((ledger / "final.json").read_text())
    assert final["best_step"] == 4 and set(final["seeds"]) == {"3", "4"}
    assert final["seeds"]["4"] == pytest.approx([0.754, 0.746])
    ended = next(e for e in session.events if isinstance(e, SearchEnded))
    assert ended.best_step == 4 and ended.seed_mean == pytest.approx(0.75)
    assert "SCORE = 0.75" in (root / "experiment.py").read_text()
    assert sorted(p.name for p in root.glob("run_*")) == ["run_0", "run_3", "run_4"]
    assert output.result.runs == ["run_3", "run_4"]

    rows = [line.split("\t") for line in (ledger / "results.tsv").read_text().splitlines()]
    assert rows[0][:5] == ["node", "parent", "action", "commit", "toy.score"]
    assert [(r[0], r[1], r[2], r[6]) for r in rows[4:8]] == [
        ("1", "0", "draft", "ok"),
        ("2", "0", "draft", "buggy"),
        ("3", "2", "debug", "ok"),
        ("4", "3", "improve", "ok"),
    ]
    notes = (root / "notes.md").read_text()
    assert "## The tree search" in notes
    assert "- node 2 (draft, buggy)" in notes and "  - node 3 (debug, ok)" in notes
    assert git(root, "status", "--porcelain") == ""
