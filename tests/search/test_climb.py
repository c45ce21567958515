"""The overnight hill-climb ([experiment] strategy = "climb") with a scripted searcher on a toy
experiment whose score is a constant of its code: changes kept only when they beat the best by
more than the baseline's noise, discarded ones reset and kept in the ledger, crashes fixed."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY
from support.research_script import last_user_text
from support.search_script import (
    IDEA,
    TOY,
    Change,
    ScriptedSearcher,
    crashing,
    fixed,
    git,
    score_change,
    toy_session,
    with_score,
)

from labtui.core.checkpoints import CheckpointRequest, Checkpoints, Decision
from labtui.core.errors import ConfigError
from labtui.core.events import SearchEnded, SearchStarted, SearchStep
from labtui.core.provenance.numbers import trace
from labtui.core.provenance.record import run_sources
from labtui.core.search.ledger import SearchLedger
from labtui.core.search.target import find_target
from labtui.core.settings.sections import ClimbSection
from labtui.core.stages import experiments as experiments_stage
from labtui.core.workspace.run_folder import FinalInfo
from labtui.core.writeup.ledger_appendix import appendix_latex, with_appendix


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    """A project with the toy experiment, its baseline, the idea chosen, the climb set up."""
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    climb = ClimbSection(
        metric="score",
        direction="higher",
        run_budget_s=60,
        max_runs=5,
        baseline_repeats=2,
        seeds=2,
    )
    return toy_session(tmp_path / "p", llm_server.url, arxiv_server.url, "climb", climb)


def test_a_climb_keeps_two_improvements_discards_worse_and_noise_and_fixes_a_crash(
    session, llm_server
):
    root = session.project.root
    searcher = ScriptedSearcher(
        root,
        [
            score_change(0.6),
            score_change(0.55),
            Change("set SCORE to 0.7", crashing, fix=lambda code: with_score(fixed(code), 0.7)),
            score_change(0.65),
            score_change(0.705, "nudge SCORE to 0.705"),
        ],
    )
    searcher.install(llm_server)
    output = experiments_stage.run(session.context_for("experiments"))

    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.step, s.status) for s in steps] == [
        (1, "keep"),
        (2, "discard"),
        (3, "keep"),
        (4, "discard"),
        (5, "discard"),
    ]
    assert [s.value for s in steps] == pytest.approx([0.6, 0.55, 0.7, 0.65, 0.705])
    assert "within the noise" in steps[4].problem
    started = next(e for e in session.events if isinstance(e, SearchStarted))
    assert started.metric == "toy.score" and started.noise == pytest.approx(0.008 * 2**0.5)
    ended = next(e for e in session.events if isinstance(e, SearchEnded))
    assert ended.best_step == 3 and ended.seed_mean == pytest.approx(0.7)

    # The ledger: the baseline and its repeats, five attempts, two seed runs of the best.
    ledger = root / "ledgers" / "climb-higher_score"
    rows = [line.split("\t") for line in (ledger / "results.tsv").read_text().splitlines()]
    assert rows[0][:6] == ["attempt", "commit", "toy.score", "memory_mb", "status", "description"]
    assert rows[0][6:] == ["wall_s", "tokens"]
    assert [(r[0], r[4]) for r in rows[1:]] == [
        ("0", "baseline"),
        ("0/seed1", "baseline"),
        ("0/seed2", "baseline"),
        ("1", "keep"),
        ("2", "discard"),
        ("3", "keep"),
        ("4", "discard"),
        ("5", "discard"),
        ("3/seed1", "seed"),
        ("3/seed2", "seed"),
    ]
    assert [r[5] for r in rows[4:9]] == [
        "set SCORE to 0.6",
        "set SCORE to 0.55",
        "set SCORE to 0.7",
        "set SCORE to 0.65",
        "nudge SCORE to 0.705",
    ]
    assert all(r[6] and r[7] for r in rows[4:9]), "every attempt has its wall time and tokens"
    assert "SCORE = 0.55" in (ledger / "steps" / "0002" / "change.diff").read_text()
    kept_run = json.loads((ledger / "steps" / "0002" / "run" / "final_info.json").read_text())
    assert kept_run["toy"]["means"]["score"] == pytest.approx(0.55), "a discard's numbers stay"
    crash = json.loads((ledger / "steps" / "0003" / "step.json").read_text())
    assert "the toy exploded" in crash["tried"][0] and len(crash["tried"]) == 1

    # The branch has the kept changes only; the project has the best code and the path's runs.
    branch = git(root, "log", "--format=%s", "labtui/climb/higher_score")
    assert "run_1 results (kept" in branch and "run_3 results (kept" in branch
    assert "run_2" not in branch and "run_4" not in branch and "run_5" not in branch
    assert "SCORE = 0.7" in (root / "experiment.py").read_text()
    assert sorted(p.name for p in root.glob("run_*")) == ["run_0", "run_1", "run_3"]
    assert output.result.runs == ["run_1", "run_3"]
    assert output.result.search.best["step"] == 3

    notes = (root / "notes.md").read_text()
    assert "## run_1" in notes and "## run_3" in notes and "## run_2" not in notes
    assert "## The climb" in notes and "mean 0.7" in notes
    assert git(root, "status", "--porcelain") == ""


def test_the_ledgers_appendix_traces_every_number_to_a_run_of_the_ledger(session, llm_server):
    root = session.project.root
    session.config.climb.max_runs = 2
    ScriptedSearcher(root, [score_change(0.6), score_change(0.55)]).install(llm_server)
    experiments_stage.run(session.context_for("experiments"))

    ledger = SearchLedger(root, "climb", "higher_score", "toy.score")
    appendix = appendix_latex(ledger, 0.5)
    assert "run\\_2 & discard & 0.5500 & \\labtuistep{set SCORE to 0.55} \\\\" in appendix
    report = trace(appendix, run_sources(root))
    assert report.untraced == []
    assert len(report.traced) == 3 + 2 + 2, "the baseline's three runs, two attempts, two seeds"
    runs = {source.run for _, source in report.traced}
    assert "climb-higher_score: steps/0002/run" in runs, "a discarded attempt's own run"

    tex = (root / "latex" / "template.tex").read_text()
    once = with_appendix(tex, appendix)
    assert with_appendix(once, appendix) == once, "written again, it replaces itself"
    assert once.index("\\usepackage{longtable}") < once.index("\\begin{document}")
    assert once.index("The search ledger") < once.index("\\end{document}")


class Researcher:
    """TEST-ONLY port: answers the climb's checkpoints in turn (approve after the list)."""

    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions)
        self.asked: list[CheckpointRequest] = []

    def ask(self, request: CheckpointRequest) -> Decision:
        self.asked.append(request)
        return self.decisions.pop(0) if self.decisions else Decision("approve")


def test_a_checkpoint_every_two_attempts_takes_a_note_to_the_proposals_and_skip_ends_the_climb(
    session, llm_server
):
    root = session.project.root
    session.config.climb.checkpoint_every = 2
    session.config.climb.seeds = 0
    searcher = ScriptedSearcher(root, [score_change(v) for v in (0.6, 0.7, 0.8, 0.9, 0.95)])
    searcher.install(llm_server)
    port = Researcher(Decision("revise", note="try the learning rate next"), Decision("skip"))
    context = session.context_for("experiments", checkpoints=Checkpoints(port, session.emit))
    output = experiments_stage.run(context)

    asked = [r for r in port.asked if r.kind == "search"]
    assert [r.title.split(" — ")[1] for r in asked] == [
        "2 attempt(s), best toy.score 0.7",
        "4 attempt(s), best toy.score 0.9",
    ]
    assert asked[0].options == ("approve", "revise", "skip", "abort")
    proposals = [
        r
        for r in llm_server.requests_for("scripted-experiments")
        if last_user_text(r).startswith("You are running a hill-climb")
    ]
    assert "try the learning rate next" not in json.dumps(proposals[1]["messages"])
    assert "try the learning rate next" in json.dumps(proposals[2]["messages"])
    assert searcher.proposals == 4, "skip at the second checkpoint ended the climb"
    assert output.result.search.reason == "stopped at a checkpoint by the researcher"
    assert output.result.search.best["step"] == 4


def test_a_model_that_gives_no_usable_proposal_three_times_ends_the_climb_with_the_reason(
    session, llm_server
):
    root = session.project.root
    session.config.llm.reasks = 0
    session.config.climb.labtui_steps = False
    llm_server.default("scripted-experiments", "I would try something clever, maybe later.")
    output = experiments_stage.run(session.context_for("experiments"))

    steps = [e for e in session.events if isinstance(e, SearchStep)]
    assert [(s.status, s.description) for s in steps] == [("crash", "(no usable proposal)")] * 3
    assert "no usable proposal 3 times in a row" in output.result.search.reason
    assert "[models] experiments" in output.result.search.reason
    assert output.result.search.best["step"] == 0 and output.result.runs == []
    assert (root / "experiment.py").read_text() == TOY, "nothing was merged"
    rows = (root / "ledgers" / "climb-higher_score" / "results.tsv").read_text().splitlines()
    assert rows[4].split("\t")[4:6] == ["crash", "(no usable proposal)"]


def test_the_climb_stops_when_its_hours_are_used(session, llm_server):
    root = session.project.root
    session.config.climb.max_hours = 1e-9  # any attempt uses it up
    session.config.climb.seeds = 0
    ScriptedSearcher(root, [score_change(0.6), score_change(0.7)]).install(llm_server)
    output = experiments_stage.run(session.context_for("experiments"))
    assert output.result.search.reason == "1e-09 hours used"
    assert [e.step for e in session.events if isinstance(e, SearchStep)] == []


def test_a_metric_the_baseline_lacks_is_refused_before_any_run(session, llm_server):
    session.config.climb.metric = "accuracy"
    with pytest.raises(ConfigError) as raised:
        experiments_stage.run(session.context_for("experiments"))
    assert raised.value.message.endswith(
        "labtui.toml: [climb] metric = 'accuracy' names no mean of the baseline's "
        "final_info.json (run_0 reports toy.score)"
    )
    assert raised.value.hint == 'write [climb] metric = "<one of those>"'
    assert not (session.project.root / "ledgers").exists()


def test_a_metric_whose_better_way_is_unknown_needs_a_direction(tmp_path):
    section = ClimbSection(metric="widgets")
    with pytest.raises(ConfigError) as raised:
        find_target(section, "climb", {"toy": {"widgets": 3.0}}, tmp_path)
    assert "[climb] direction is empty" in raised.value.message
    assert raised.value.hint == 'write [climb] direction = "higher" (or "lower")'
    target = find_target(
        ClimbSection(metric="widgets", direction="lower"),
        "climb",
        {"toy": {"widgets": 3.0}},
        tmp_path,
    )
    assert (target.key, target.direction) == ("toy.widgets", "lower")
    assert target.gain(2.0, 3.0) == 1.0


def test_without_a_metric_the_first_the_project_declares_is_climbed(tmp_path):
    (tmp_path / "prompt.json").write_text(json.dumps({"metrics": {"test_accuracy_mean": "higher"}}))
    baseline = {"moons": {"train_time_s_mean": 0.2, "test_accuracy_mean": 0.93}}
    target = find_target(ClimbSection(), "climb", baseline, tmp_path)
    assert (target.key, target.direction) == ("moons.test_accuracy_mean", "higher")


def test_the_approved_plans_runs_are_the_directions_the_proposals_start_from(session, llm_server):
    root = session.project.root
    plan = {"idea": IDEA["Name"], "runs": [{"change": "Try SCORE 0.8", "measure": "the score"}]}
    (root / "plan.json").write_text(json.dumps(plan))
    session.project.commit("test: the plan")
    session.config.climb.max_runs = 1
    session.config.climb.seeds = 0
    ScriptedSearcher(root, [score_change(0.8)]).install(llm_server)
    experiments_stage.run(session.context_for("experiments"))
    asked = [
        last_user_text(r)
        for r in llm_server.requests_for("scripted-experiments")
        if last_user_text(r).startswith("You are running a hill-climb")
    ]
    assert "Directions the researcher approved in the plan" in asked[0]
    assert "- Try SCORE 0.8" in asked[0]


def test_tied_repeats_of_a_coarse_metric_take_the_noise_from_the_runs_own_standard_error():
    """Seen with moons: seeds 0-2 and 3-5 both averaged 0.936667 (accuracy moves in steps of
    0.001), so the spread of the repeats was 0, yet each run reported a standard error."""
    from labtui.core.search.ledger import Noise
    from labtui.core.search.seeds import noise_said
    from labtui.core.search.target import Target

    target = Target("moons", "test_accuracy_mean", "higher")
    final_info = {"moons": {"means": {}, "stderrs": {"test_accuracy_stderr": 0.0021}}}
    assert target.stderr(FinalInfo.from_json(final_info)) == 0.0021
    assert target.stderr(FinalInfo.of_means({"moons": {}})) is None
    tied = Noise([0.936667, 0.936667], 2.0, stderrs=[0.0021, 0.0025])
    assert tied.spread == 0 and tied.std == pytest.approx(0.0023)
    assert tied.threshold == pytest.approx(2 * 2**0.5 * 0.0023), "a difference of two runs"
    assert "the noise is the runs' own standard error instead, 0.0023" in noise_said(target, tied)
    silent = Noise([0.5, 0.5, 0.5], 2.0)
    assert silent.threshold == 0
    assert "ignores $LABTUI_SEED or has no randomness" in noise_said(target, silent)
    spread = Noise([0.5, 0.504, 0.496], 2.0, stderrs=[0.001])
    assert spread.std == pytest.approx(0.004), "the larger estimate wins"
