"""The stages' typed results: journaled as the JSON each stage has always written, and read back
typed, from this labtui's journals and from journals written before the records existed."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from labtui.core.checkpoints import ResearcherNotes
from labtui.core.events import StageFinished, event_from_dict
from labtui.core.journal import replay
from labtui.core.stage_context import StageContext, StageOutput, StageServices
from labtui.core.workspace.stage_results import (
    CompileResult,
    ExperimentsResult,
    IdeasResult,
    LiteratureResult,
    NoveltyResult,
    PlanResult,
    PlotsResult,
    ReviewResult,
    SearchSummary,
    StageResult,
    WriteupResult,
)

SEARCH = SearchSummary(
    strategy="climb",
    metric="val_loss",
    direction="lower",
    best={"step": 3, "run": "run_3", "value": 0.5, "commit": "abc", "seeds": [0.5], "mean": 0.5},
    noise={"values": [0.9, 0.91], "threshold": 0.02},
    counts={"keep": 1, "discard": 2},
    ledger=".labtui/climb/x/results.tsv",
    branch="labtui/climb/x",
    reason="3 steps used",
)

# Each record and the JSON its stage wrote before the records existed (key for key).
WRITTEN: list[tuple[StageResult, dict[str, Any]]] = [
    (
        LiteratureResult(summary="two papers", papers=["2401.1", None]),
        {"summary": "two papers", "papers": ["2401.1", None]},
    ),
    (IdeasResult(ideas=["a", "b"]), {"ideas": ["a", "b"]}),
    (
        NoveltyResult(idea="a", evidence={"decision": "novel"}),
        {"idea": "a", "evidence": {"decision": "novel"}},
    ),
    (PlanResult(idea="a", runs=[{"change": "x"}]), {"idea": "a", "runs": [{"change": "x"}]}),
    (
        PlanResult(idea="a", written={"data.py": "abc"}),
        {"idea": "a", "runs": [], "written": {"data.py": "abc"}},
    ),
    (
        ExperimentsResult(idea="a", runs=["run_1"], means={"run_1": {"m": 1}}, baseline={"m": 0}),
        {"idea": "a", "runs": ["run_1"], "means": {"run_1": {"m": 1}}, "baseline": {"m": 0}},
    ),
    (
        ExperimentsResult(idea="a", abandoned={"run_1": "crashed"}, parallel={"b": {"runs": {}}}),
        {
            "idea": "a",
            "runs": [],
            "means": {},
            "baseline": {},
            "abandoned": {"run_1": "crashed"},
            "parallel": {"b": {"runs": {}}},
        },
    ),
    (
        ExperimentsResult(idea="a", runs=["run_3"], search=SEARCH),
        {
            "idea": "a",
            "strategy": "climb",
            "runs": ["run_3"],
            "means": {},
            "baseline": {},
            "metric": "val_loss",
            "direction": "lower",
            "best": SEARCH.best,
            "noise": SEARCH.noise,
            "counts": SEARCH.counts,
            "ledger": SEARCH.ledger,
            "branch": SEARCH.branch,
            "reason": SEARCH.reason,
        },
    ),
    (
        PlotsResult(figures=["a.png"], descriptions={"a.png": "loss"}, plot_failed=True),
        {"figures": ["a.png"], "descriptions": {"a.png": "loss"}, "plot_failed": True},
    ),
    (
        WriteupResult(tex="paper.tex", traced=3, open_problems=["no results"]),
        {
            "tex": "paper.tex",
            "placeholders_left": [],
            "flagged": [],
            "traced": 3,
            "untraced": 0,
            "waived": 0,
            "contradicted": 0,
            "claims_waived": 0,
            "open_problems": ["no results"],
        },
    ),
    (
        CompileResult(pdf="paper.pdf", pages=4, problems=[]),
        {"pdf": "paper.pdf", "pages": 4, "problems": []},
    ),
    (
        ReviewResult(overall=5.5, decision="Reject", review="review.json", improvements=1),
        {"overall": 5.5, "decision": "Reject", "review": "review.json", "improvements": 1},
    ),
]


OLD_SEARCH_RESULT = WRITTEN[7][1]


@pytest.mark.parametrize(("record", "written"), WRITTEN)
def test_a_result_is_journaled_as_its_stage_always_wrote_it_and_read_back_whole(record, written):
    assert record.to_json() == written
    assert type(record).from_json(json.loads(json.dumps(written))) == record


def test_a_result_an_older_journal_lacks_or_holds_as_null_reads_as_the_defaults():
    assert PlotsResult.from_json({"figures": ["a.png"]}) == PlotsResult(figures=["a.png"])
    assert PlotsResult.from_json({"figures": None, "descriptions": None}) == PlotsResult()
    assert ExperimentsResult.from_json({}) == ExperimentsResult()
    assert ExperimentsResult.from_json({"idea": "a", "gone": 1}).search is None
    assert NoveltyResult.from_json({}).idea == ""


def _context(journal_lines: list[dict[str, Any]]) -> StageContext:
    state = replay([event_from_dict(line) for line in journal_lines])
    project: Any = SimpleNamespace(config=None)
    services = StageServices(project, print, lambda: None, ResearcherNotes(print), state.result)
    return StageContext(services, "writeup", [])


def test_a_stage_reads_earlier_results_typed_from_a_journal_written_before_the_records():
    """Journal lines as an older labtui wrote them: a search's facts among the experiments'
    keys, a plots result without its descriptions, no novelty stage at all."""
    lines = [
        {"type": "StageFinished", "stage": "ideas", "status": "done", "result": {"ideas": ["a"]}},
        {
            "type": "StageFinished",
            "stage": "experiments",
            "status": "done",
            "result": OLD_SEARCH_RESULT,
        },
        {
            "type": "StageFinished",
            "stage": "plots",
            "status": "done",
            "result": {"figures": ["f.png"]},
        },
    ]
    ctx = _context(lines)
    experiments = ctx.result(ExperimentsResult)
    assert experiments.runs == ["run_3"] and experiments.search == SEARCH
    assert ctx.result(PlotsResult) == PlotsResult(figures=["f.png"])
    assert ctx.result(NoveltyResult) == NoveltyResult()  # never ran: its defaults
    assert ctx.result(IdeasResult).ideas == ["a"]


def test_an_output_is_journaled_as_json_and_a_stage_reads_its_own_result_back():
    output = StageOutput("1 idea", result=IdeasResult(ideas=["a"]))
    finished = StageFinished(stage="ideas", result=output.journaled_result())
    assert finished.result == {"ideas": ["a"]}
    assert output.result_as(IdeasResult).ideas == ["a"]
    assert StageOutput("skipped").journaled_result() == {}
    assert StageOutput("skipped").result_as(IdeasResult) == IdeasResult()
