"""review.json as one typed record (core/review/record.py): what the review stage writes reads
back the same, a file from before the facts and the reviewer were kept still reads, and a file
that is not a review record is an error naming the file and the field; the reviewer's trust is
data (core/review/calibration_store.py), not a sentence to parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.research_script import REVIEW

from labtui.core.errors import LabtuiError
from labtui.core.review.calibration_store import (
    PROBE_FAILED,
    PROBE_NOTICED,
    UNCALIBRATED,
    trust_in,
)
from labtui.core.review.facts import FactSheet, capped_panel
from labtui.core.review.form import SCORE_RANGES, parse_review
from labtui.core.review.record import (
    Improvement,
    ReviewRecord,
    UndoneRound,
    read_review_record,
    save_review_record,
)
from labtui.core.review.reviewer import ReviewPanel, reviewer_facts
from labtui.core.settings.sections import ReviewSection


def _reviewed():
    """Three reviews (Overall 3, 5, 4) of a paper whose numbers no run backs: Quality and
    Soundness capped at 1."""
    reviews = [parse_review({**REVIEW, "Overall": overall}) for overall in (3, 5, 4)]
    panel = ReviewPanel(reviews, parse_review(REVIEW), 6.0)
    sheet = FactSheet(4, ["Introduction", "Results"], ["method", "conclusion"], [], [], [], 1,
                      traced=0, untraced=2, contradicted=0, runs=["run_1"], novelty="unchecked")  # fmt: skip
    return capped_panel(panel, sheet)


def _record() -> ReviewRecord:
    reviewed = _reviewed()
    means = {name: mean for name, (mean, _) in reviewed.panel.scores().items()}
    return ReviewRecord.of(
        reviewed,
        reviewer=reviewer_facts("openai/scripted-review", ReviewSection()),
        improvements=[Improvement(round=1, before=means, after=means, commit="1a2b3c4d", pages=4)],
        undone=[UndoneRound(round=2, why="the paper does not compile")],
    )


def test_a_record_written_reads_back_the_same(tmp_path: Path) -> None:
    record = _record()
    save_review_record(tmp_path, record)
    saved = json.loads((tmp_path / "review.json").read_text(encoding="utf-8"))
    assert read_review_record(tmp_path) == record
    assert ReviewRecord.from_json(saved, "review.json").to_json() == saved
    # the keys and spellings readers of review.json know
    assert list(saved) == [
        "decision", "decision_reason", "overall", "threshold", "scores", "meta_review", "reviews",
        "grounding", "left_out", "facts", "capped", "unverified", "reviewer", "improvements",
        "undone",
    ]  # fmt: skip
    assert saved["decision_reason"] == "" and saved["facts"]["open_gaps"] == [], "no gap decided"
    assert saved["capped"][0] == {
        "score": "Quality",
        "from": 2,
        "to": 1,
        "why": "no number in the paper is traced to a run",
    }
    assert saved["facts"]["caps"][0]["at_most"] == 1, "the sheet keeps the bounds it set"
    assert saved["unverified"] == ["Originality"] and saved["scores"]["Quality"]["mean"] == 1.0
    assert record.rounds == 2 and record.means()["Overall"] == 4.0


def test_an_undone_round_is_added_to_a_copy() -> None:
    record = _record()
    undone = record.with_undone(3, "numbers no run produced: 97.2")
    assert [u.round for u in undone.undone] == [2, 3] and [u.round for u in record.undone] == [2]
    assert "*Improvement round 3 was undone: numbers no run produced: 97.2*" in undone.markdown()


def test_a_file_from_before_the_facts_and_the_reviewer_reads_as_it_was(tmp_path: Path) -> None:
    """review.json as the first ensemble review wrote it: no grounding, points left out, facts,
    caps or reviewer; an improvement round without its pages."""
    form = {**REVIEW, "Overall": 4}
    means = {name: float(form[name]) for name in SCORE_RANGES}
    old = {
        "decision": "Reject",
        "overall": 4.0,
        "threshold": 6.0,
        "scores": {name: {"mean": float(form[name]), "spread": 0.0} for name in SCORE_RANGES},
        "meta_review": form,
        "reviews": [form],
        "improvements": [{"round": 1, "before": means, "after": means, "commit": "abc"}],
        "undone": [],
    }
    (tmp_path / "review.json").write_text(json.dumps(old), encoding="utf-8")
    record = read_review_record(tmp_path)
    assert record is not None and record.to_json() == old, "written back as it was read"
    assert record.facts is None and record.reviewer is None and record.capped == []
    assert record.decision_reason == "", "the reviews decided, as they then always did"
    assert record.improvements[0].pages is None and record.rounds == 1
    assert record.markdown().startswith("**Reject** · overall 4.00/10 (Accept from 6) · 1 reviewer")


def test_no_file_is_no_record(tmp_path: Path) -> None:
    assert read_review_record(tmp_path) is None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"improvements": [{"round": "first", "before": {}, "after": {}}]}, "improvements.0.round"),
        (
            {"improvements": [{"round": 1, "before": {"Overall": 3.0}, "after": {}}]},
            "improvements.0.before: no value for Originality",
        ),
        ({"meta_review": {"Summary": "A study."}}, "meta_review: the review form lacks Strengths"),
        ({"scores": {"Overall": {"mean": 4.0}}}, "scores.Overall.spread: Field required"),
        ({"scores": {"Overall": {"mean": 4.0, "spread": 0.0}}}, "scores: no value for Originality"),
        ({"facts": {"pages": 2}}, "facts.parts: Field required"),
        ({"decision": None}, "decision:"),
    ],
)
def test_a_file_that_is_no_review_record_names_the_file_and_the_field(
    tmp_path: Path, change: dict, says: str
) -> None:
    (tmp_path / "review.json").write_text(json.dumps({**_record().to_json(), **change}))
    with pytest.raises(LabtuiError) as raised:
        read_review_record(tmp_path)
    assert f"{tmp_path / 'review.json'} is not a review record" in raised.value.message
    assert says in raised.value.message


def test_a_score_that_is_no_whole_number_is_named(tmp_path: Path) -> None:
    data = _record().to_json()
    data["reviews"][1]["Overall"] = "five"
    with pytest.raises(
        LabtuiError, match=r"reviews\.1: scores that are not whole numbers: Overall"
    ):
        ReviewRecord.from_json(data, "review.json")


def test_a_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    (tmp_path / "review.json").write_text('{"decision": "Reject",')
    with pytest.raises(LabtuiError, match=r"review\.json is not JSON: .*line 1"):
        read_review_record(tmp_path)


def test_the_reviewers_trust_is_data_not_a_sentence() -> None:
    uncalibrated = trust_in(None)
    assert not uncalibrated.calibrated and not uncalibrated.flagged
    assert uncalibrated.line == UNCALIBRATED

    metrics = {"papers": 40, "balanced_accuracy": 0.58}
    measured = {"metrics": metrics, "benchmark": {"name": "ICLR 2022"}}
    assert trust_in(measured).calibrated and trust_in(measured).line == (
        "this reviewer: balanced accuracy 0.58 on 40 ICLR 2022 papers"
    )
    noticed = trust_in({**measured, "probe": {"noticed": True}})
    assert noticed.probe == PROBE_NOTICED and not noticed.flagged
    failed = trust_in({"probe": {"noticed": False}})
    assert failed.flagged == PROBE_FAILED and not failed.calibrated
    assert failed.line == f"{UNCALIBRATED} · FLAGGED: {PROBE_FAILED}"
