"""The facts a reviewer is given before it reads a paper (core/review/facts.py), and the scores
they cap: computed from the text the reviewer reads, on the hollow paper and on a real one; a
paper with open gaps is a Reject whatever its reviewers said."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hollow_paper import COPIED, HOLLOW
from support.research_script import REVIEW

from labtui.core.review.facts import (
    Cap,
    CappedScore,
    FactSheet,
    capped,
    capped_panel,
    project_facts,
    text_facts,
)
from labtui.core.review.form import PaperReview, parse_review
from labtui.core.review.record import ReviewRecord
from labtui.core.review.reviewer import ReviewPanel
from labtui.core.writeup.completeness import Gap

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "papers"  # Apache-2.0, see its README
HOLLOW_MARKDOWN = "\n\n".join(
    [
        "# Random Features for Two Moons",
        f"## Abstract\n{COPIED}",
        f"## 1 Introduction\n{COPIED}",
        f"## 2 Related Work\n{COPIED}",
        f"## 3 Method\n{HOLLOW['METHOD HERE']}",
        f"## 4 Results\n{HOLLOW['RESULTS HERE']}",
        "## 5 Conclusions and Future Work\nCONCLUSIONS HERE",
        "## References\nRumelhart, D. E. et al. Learning representations. Nature, 1986.",
    ]
)


def test_the_hollow_papers_text_shows_what_it_lacks_and_bounds_its_scores():
    sheet = text_facts(HOLLOW_MARKDOWN, pages=2)
    assert sheet.parts == [
        "Abstract", "Introduction", "Related Work", "Method", "Results",
        "Conclusions and Future Work",
    ]  # fmt: skip
    assert sheet.missing == [] and sheet.placeholders == ["CONCLUSIONS HERE"]
    assert sheet.repeated == [
        "Introduction repeats a paragraph of the Abstract",
        "Related Work repeats a paragraph of the Abstract",
    ]
    assert sheet.figures == 0 and sheet.traced is None, "no runs without a project"
    caps = [(c.score, c.at_most) for c in sheet.caps()]
    assert caps == [("Presentation", 2), ("Clarity", 2), ("Overall", 3)]
    # a placeholder left (and parts too short to be written) make a PDF alone a Reject
    placeholder = "Conclusions and Future Work: still holds the template's 'CONCLUSIONS HERE'"
    assert placeholder in sheet.open_gaps and "Abstract" in sheet.unwritten
    assert not any("repeats" in gap for gap in sheet.open_gaps), "a repeat decides nothing"
    assert sheet.rejection.startswith(f"the paper has {len(sheet.open_gaps)} open gap(s): ")
    text = sheet.text()
    assert text.startswith("Facts about this paper, established by code")
    assert "- template placeholders left: CONCLUSIONS HERE" in text
    assert "So: Presentation at most 2 (template placeholders are left (CONCLUSIONS HERE))" in text
    assert f"; Overall at most 3 ({sheet.rejection})." in text


def test_a_project_paper_without_results_cannot_be_sound():
    sheet = FactSheet(2, ["Results"], [], [], [], [], 0, traced=0, untraced=0, contradicted=0,
                      runs=["run_0", "run_1"], novelty="unchecked")  # fmt: skip
    assert [(c.score, c.at_most) for c in sheet.caps()] == [("Quality", 1), ("Soundness", 1)]
    assert sheet.unverified == ["Originality"]
    assert "- novelty of the idea: unchecked" in sheet.text()


def test_capping_says_what_it_changed():
    fields = {"Quality": 4, "Soundness": 1, "Clarity": 3}
    review, changed = capped(
        PaperReview(fields), [Cap("Quality", 1, "no results"), Cap("Soundness", 1, "no results")]
    )
    assert review.fields == {"Quality": 1, "Soundness": 1, "Clarity": 3}
    assert changed == [CappedScore(score="Quality", was=4, to=1, why="no results")]
    assert changed[0].model_dump() == {"score": "Quality", "from": 4, "to": 1, "why": "no results"}


def test_a_real_ai_scientist_paper_is_whole_but_repeats_itself():
    pdf = CORPUS / "rl_lr_adaptation.pdf"
    from labtui.core.pdf.document import page_count
    from labtui.core.pdf.markdown import paper_markdown

    sheet = text_facts(paper_markdown(pdf), page_count(pdf))
    assert sheet.missing == [] and sheet.placeholders == [] and sheet.unwritten == []
    assert sheet.open_gaps == [] and sheet.rejection == "", "its repeats leave the decision open"
    assert len(sheet.parts) == 8 and sheet.figures >= 1
    # its conclusion repeats a paragraph of its results nearly word for word ("Overall, our work
    # demonstrates the potential of reinforcement learning for dynamic learning rate …")
    assert sheet.repeated == ["CONCLUSIONS AND FUTURE WORK repeats a paragraph of the RESULTS"]
    assert sheet.caps() == []


# A paper's text, as the reader gives it: no placeholder, no part too short to be written.
WHOLE_MARKDOWN = "## Abstract\nWidening the hidden layer raised test accuracy on two moons."
GAPS = [
    Gap("Results", "no_results", 70, "reports no number of run_1 (its results are in …)"),
    Gap("Conclusion", "placeholder", 88, "still holds the template's 'CONCLUSIONS HERE'"),
]
ACCEPT = {**REVIEW, "Quality": 4, "Clarity": 4, "Soundness": 4, "Presentation": 4, "Overall": 8,
          "Decision": "Accept"}  # fmt: skip


def _reviewed_project_paper(tmp_path: Path, gaps: list[Gap], threshold: float = 6.0):
    """A reviewer (its own Area Chair) that accepts the project's paper, 8/10, capped by the
    paper's facts: its numbers traced to its one run, and ``gaps`` open."""
    sheet = project_facts(WHOLE_MARKDOWN, 4, tmp_path, gaps, {"traced": [{"number": "0.94"}]})
    review = parse_review(ACCEPT)
    return capped_panel(ReviewPanel([review], review, threshold), sheet)


@pytest.mark.parametrize("threshold", [6.0, 0.0], ids=["the mean decides", "the chair decides"])
def test_a_project_paper_with_open_gaps_is_a_reject_whatever_its_reviews_say(
    tmp_path: Path, threshold: float
) -> None:
    reviewed = _reviewed_project_paper(tmp_path, GAPS, threshold)
    reason = (
        "the paper has 2 open gap(s): Results, line 70: reports no number of run_1 (its results "
        "are in …); Conclusion, line 88: still holds the template's 'CONCLUSIONS HERE'"
    )
    assert reviewed.panel.decision == "Reject" and reviewed.panel.rejected_because == reason
    assert (
        reviewed.panel.overall == 3.0 and reviewed.panel.reviews[0].fields["Decision"] == "Accept"
    )
    assert CappedScore(score="Overall", was=8, to=3, why=reason) in reviewed.capped
    saved = ReviewRecord.of(reviewed).to_json()
    assert saved["decision"] == "Reject" and saved["decision_reason"] == reason
    assert saved["reviews"][0]["Overall"] == 3 and saved["scores"]["Overall"]["mean"] == 3.0
    assert saved["facts"]["open_gaps"] == [gap.text for gap in GAPS]
    assert {"score": "Overall", "at_most": 3, "why": reason} in saved["facts"]["caps"]
    record = ReviewRecord.from_json(saved, "review.json")
    assert record.to_json() == saved and record.facts is not None
    assert record.markdown().splitlines()[1] == f"*Reject whatever the reviews say: {reason}*"


def test_a_project_paper_without_open_gaps_keeps_its_reviewers_accept(tmp_path: Path) -> None:
    reviewed = _reviewed_project_paper(tmp_path, [])
    assert reviewed.panel.decision == "Accept" and reviewed.panel.overall == 8.0
    assert reviewed.facts.rejection == "" and "Overall" not in {c.score for c in reviewed.capped}
    saved = ReviewRecord.of(reviewed).to_json()
    assert saved["decision"] == "Accept" and saved["decision_reason"] == ""


def test_a_project_papers_open_gaps_are_the_write_ups_not_its_texts(tmp_path: Path) -> None:
    """The write-up's gaps, less those the researcher waived, decide: a placeholder the text
    shows was accepted by the researcher when the stage passes no gap for it."""
    sheet = project_facts("## Conclusion\nCONCLUSIONS HERE", 1, tmp_path, [], {})
    assert sheet.placeholders == ["CONCLUSIONS HERE"] and sheet.open_gaps == []
    assert sheet.rejection == "" and all(cap.score != "Overall" for cap in sheet.caps())


def test_a_review_record_from_before_open_gaps_reads_without_them(tmp_path: Path) -> None:
    saved = ReviewRecord.of(_reviewed_project_paper(tmp_path, [])).to_json()
    del saved["decision_reason"], saved["facts"]["open_gaps"]
    record = ReviewRecord.from_json(saved, "review.json")
    assert record.decision_reason == "" and record.facts is not None
    assert record.facts.open_gaps == [] and record.decision == "Accept"
