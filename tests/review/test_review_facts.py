"""The facts a reviewer is given before it reads a paper (core/review/facts.py), and the scores
they cap: computed from the text the reviewer reads, on the hollow paper and on a real one."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hollow_paper import COPIED, HOLLOW

from labtui.core.review.facts import Cap, CappedScore, FactSheet, capped, text_facts
from labtui.core.review.form import PaperReview

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "papers"
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
    assert [(c.score, c.at_most) for c in sheet.caps()] == [("Presentation", 2), ("Clarity", 2)]
    text = sheet.text()
    assert text.startswith("Facts about this paper, established by code")
    assert "- template placeholders left: CONCLUSIONS HERE" in text
    assert "So: Presentation at most 2 (template placeholders are left (CONCLUSIONS HERE))" in text


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
    if not pdf.is_file():
        pytest.skip(f"the corpus paper {pdf} is not here (shared/ beside the repository)")
    from labtui.core.pdf.document import page_count
    from labtui.core.pdf.markdown import paper_markdown

    sheet = text_facts(paper_markdown(pdf), page_count(pdf))
    assert sheet.missing == [] and sheet.placeholders == [] and sheet.unwritten == []
    assert len(sheet.parts) == 8 and sheet.figures >= 1
    # its conclusion repeats a paragraph of its results nearly word for word ("Overall, our work
    # demonstrates the potential of reinforcement learning for dynamic learning rate …")
    assert sheet.repeated == ["CONCLUSIONS AND FUTURE WORK repeats a paragraph of the RESULTS"]
    assert sheet.caps() == []
