"""A review must be about the paper it reviews (core/review/grounding.py): each Strength and
Weakness, and the Summary, names something that paper's text contains. Checked on real papers
(The AI Scientist's, in tests/corpus/papers, Apache-2.0) read as the reviewer reads
them (``read_paper``); a generic point, a point about another paper and a copy of the form's
example are refused, and the reviewer is asked again with the reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import TEST_API_KEY
from support.recorded_replies import exchanges
from support.research_script import REVIEW, fenced_json

from labtui.core.answers.json_reply import extract_json
from labtui.core.errors import LLMError
from labtui.core.events import Notice, Refused
from labtui.core.review.form import parse_review
from labtui.core.review.grounding import PaperIndex, ground_review, is_grounded, specific_terms
from labtui.core.review.reviewer import (
    parse_reflection,
    read_paper,
    review_panel,
    review_text,
    standalone_llm,
)
from labtui.core.settings.prompts import load_prompt
from labtui.core.settings.sections import ReviewSection

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "papers"  # Apache-2.0, see its README

# Every review below is written by hand (none is a model's reply): points a careful reviewer of
# the paper would write, and points that fit any paper, as small models write them (issue 27).
DUALDIFF = {
    **REVIEW,
    "Summary": "DualDiff replaces the single denoiser of a low-dimensional diffusion model with "
    "two expert networks mixed by a gating network; on the dino dataset KL divergence falls "
    "from 1.060 to 0.873.",
    "Strengths": [
        "The gating mechanism that combines two expert networks is a clear way to capture modes.",
        "The bimodal distribution of gating weights in Figure 5 supports the specialisation claim.",
    ],
    "Weaknesses": [
        "Training time rises by about 45% and inference time by 42%, which is not weighed.",
        "Only 2D datasets (circle, dino, line, moons) are tested.",
    ],
}
GENERIC = [
    "The paper is well written.",
    "The method is novel.",
    "The experiments are limited.",
    "The results are significant and convincing.",
    "The proposed approach outperforms existing baselines on several benchmarks.",
    "a specific weakness of this paper",  # the form's example without its brackets
    # Recorded: Qwen2.5-Coder-1.5B's only weakness of rl_lr_adaptation.pdf (qwen15_review.jsonl)
    "None identified",
]
ABOUT_ANOTHER_PAPER = [
    "The transformer ablation on ImageNet is convincing.",
    "The BERT fine-tuning results on GLUE are impressive.",
    # the Q-learning paper's own points (rl_lr_adaptation.pdf), on the diffusion paper
    "Experiments span three character-level datasets: shakespeare_char, enwik8 and text8.",
    "The ablation over initial learning rates, reward signals and epsilon decay is informative.",
]


def corpus_text(name: str) -> str:
    return read_paper(CORPUS / f"{name}.pdf")


@pytest.fixture(scope="module")
def dualdiff_text() -> str:
    """DualDiff (dual_expert_denoiser.pdf) as the reviewer reads it; read once (~1 s)."""
    return corpus_text("dual_expert_denoiser")


@pytest.fixture(scope="module")
def dualdiff(dualdiff_text) -> PaperIndex:
    return PaperIndex(dualdiff_text)


def with_point(field: str, point: str) -> dict:
    """DUALDIFF with its second Strength or Weakness replaced by ``point``."""
    return {**DUALDIFF, field: [DUALDIFF[field][0], point]}


# -- the check on a real paper --------------------------------------------------------------------


def test_a_review_about_the_paper_passes_with_what_each_point_names(dualdiff):
    points = ground_review(DUALDIFF, dualdiff)
    named = {(p.field, p.item): p.terms for p in points}
    assert {"dino", "1.060", "0.873", "gating", "expert"} <= set(named[("Summary", 0)])
    assert {"figure 5", "bimodal distribution"} <= set(named[("Strengths", 2)])
    assert {"45", "42", "inference"} <= set(named[("Weaknesses", 1)])
    assert {"circle dino", "moons"} <= set(named[("Weaknesses", 2)])


@pytest.mark.parametrize("point", GENERIC)
def test_a_point_that_fits_any_paper_is_refused_quoting_it(dualdiff, point):
    with pytest.raises(ValueError) as refused:
        ground_review(with_point("Weaknesses", point), dualdiff)
    assert str(refused.value).startswith(
        f"Weaknesses item 2 ({point!r}) names nothing this paper contains"
    )
    assert "say which experiment, section, table or claim of this paper" in str(refused.value)


@pytest.mark.parametrize("point", ABOUT_ANOTHER_PAPER)
def test_a_point_about_another_paper_is_refused(dualdiff, point):
    with pytest.raises(ValueError, match=r"^Strengths item 2 \(") as refused:
        ground_review(with_point("Strengths", point), dualdiff)
    assert re.search(r"imagenet|glue|enwik8|epsilon", str(refused.value)), "what it lacks"


def test_a_summary_of_any_paper_or_of_another_is_refused(dualdiff):
    for summary in (
        "This paper proposes a novel method and shows strong results on several benchmarks.",
        "The paper trains a vision transformer with contrastive pretraining on ImageNet.",
    ):
        with pytest.raises(ValueError, match=r"^the Summary \(.* names too little of this paper"):
            ground_review({**DUALDIFF, "Summary": summary}, dualdiff)


def test_every_refused_point_is_named_in_one_answer(dualdiff):
    review = {**DUALDIFF, "Strengths": GENERIC[:2], "Weaknesses": [DUALDIFF["Weaknesses"][0]]}
    with pytest.raises(ValueError) as refused:
        ground_review(review, dualdiff)
    said = str(refused.value)
    assert "Strengths item 1 ('The paper is well written.')" in said
    assert "Strengths item 2 ('The method is novel.')" in said
    assert "Weaknesses" not in said, "a grounded point is not refused"


def test_words_match_across_case_hyphenation_plurals_and_inflection():
    paper = PaperIndex(
        "## 3 Method\n\nA dual-expert denoiser with a gating network. Table 2: the ablation. "
        "The multi-scale grid reduces KL divergence by 12.8% on 2D data (5×5 grid)."
    )
    for point in (
        "The Dual Expert DENOISERS",  # case, plurals, a hyphen written as a space
        "the multiscale grids",  # a hyphenated word written as one
        "Gating networks reduce the divergence",
        "Table 2 and Section 3",
        "a 12.8 % drop on the 2D data with a 5x5 grid",
    ):
        assert is_grounded(paper.ground("Strengths", 1, point)), point
    assert paper.ground("Strengths", 1, "Table 7 is wrong").absent == ("table 7",)


def test_the_list_of_references_is_not_what_the_paper_contains():
    body = "## 1 Introduction\n\n" + "We study dino samples from a diffusion model. " * 200
    cited = "\n\n## REFERENCES\n\nA. Author. Vision transformers on ImageNet. 2023.\n"
    point = "The transformers on ImageNet are strong."
    refused = PaperIndex(body + cited).ground("Strengths", 1, point)
    assert refused.terms == () and refused.absent == ("transformers", "imagenet")
    appendix = "\n## A Appendix\n\nImageNet transformers, twice: ImageNet transformers."
    assert is_grounded(PaperIndex(body + cited + appendix).ground("Strengths", 1, point))


def test_specific_terms_leave_out_review_and_field_vocabulary():
    assert specific_terms("The paper is clearly written and the results are significant.") == []
    assert specific_terms("The model achieves strong accuracy on the test set.") == []
    assert specific_terms("The noise schedule of DDPM") == [
        "noise schedule",
        "noise",
        "schedule",
        "ddpm",
    ]


# -- in the reviewer: refused and asked again -----------------------------------------------------


@pytest.fixture
def events() -> list:
    return []


@pytest.fixture
def reviewer(llm_server, monkeypatch, events):
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    return standalone_llm("openai/scripted-review", 1.0, emit=events.append)


def _last_ask(llm_server, number: int) -> str:
    return llm_server.requests_for("scripted-review")[number]["messages"][-1]["content"]


def test_a_generic_review_is_asked_again_and_the_grounded_one_completes(
    reviewer, llm_server, events, dualdiff_text
):
    generic = with_point("Weaknesses", "The experiments are limited.")
    llm_server.script("scripted-review", fenced_json(generic), fenced_json(DUALDIFF))
    review = review_text(reviewer, load_prompt, dualdiff_text)
    assert review.fields["Weaknesses"] == DUALDIFF["Weaknesses"]
    refused = [e for e in events if isinstance(e, Refused)]
    assert len(refused) == 1 and refused[0].subject == "review"
    assert refused[0].reason.startswith(
        "Weaknesses item 2 ('The experiments are limited.') names nothing this paper contains: "
        "say which experiment, section, table or claim"
    )
    assert refused[0].reason in _last_ask(llm_server, 1), "the model is told what to fix"
    assert {g.field for g in review.grounding} == {"Summary", "Strengths", "Weaknesses"}


def test_a_copy_of_the_forms_example_is_refused_end_to_end(reviewer, llm_server, dualdiff_text):
    copied = with_point("Strengths", "<a specific strength of this paper>")
    unbracketed = with_point("Strengths", "A specific strength of this paper.")
    llm_server.script(
        "scripted-review", fenced_json(copied), fenced_json(unbracketed), fenced_json(DUALDIFF)
    )
    assert (
        review_text(reviewer, load_prompt, dualdiff_text)
        .fields["Strengths"][1]
        .startswith("The bimodal distribution")
    )
    assert "'Strengths' item 2 is a placeholder" in _last_ask(llm_server, 1)
    assert "Strengths item 2 ('A specific strength of this paper.') names nothing" in _last_ask(
        llm_server, 2
    )


def test_a_revision_that_turns_generic_is_refused_and_the_review_stands(dualdiff):
    first = parse_review(DUALDIFF)
    parse = parse_reflection(first, dualdiff)
    with pytest.raises(ValueError, match=r"Strengths item 2 .* names nothing"):
        parse({"done": False, "review": with_point("Strengths", "The method is novel.")})
    assert parse({"done": True}) == (True, first)


def test_review_json_keeps_what_each_point_named(reviewer, llm_server, dualdiff_text):
    def answer(request):
        if "You are the Area Chair" in json.dumps(request["messages"]):
            return fenced_json({**DUALDIFF, "Overall": 5})
        return fenced_json(DUALDIFF)

    llm_server.default("scripted-review", answer)
    settings = ReviewSection(ensemble=2, reflections=0, few_shot=0)
    saved = review_panel(reviewer, load_prompt, dualdiff_text, settings).to_json()
    meta = saved["grounding"]["meta_review"]
    assert meta[0]["field"] == "Summary" and "dino" in meta[0]["terms"]
    assert [(p["field"], p["item"]) for p in meta[1:]] == [
        ("Strengths", 1),
        ("Strengths", 2),
        ("Weaknesses", 1),
        ("Weaknesses", 2),
    ]
    assert len(saved["grounding"]["reviews"]) == 2
    json.dumps(saved)  # review.json is written from it


def test_the_area_chair_is_held_to_the_paper_the_reviewers_read(
    reviewer, llm_server, dualdiff_text
):
    chair = iter([with_point("Strengths", "The reviewers agree the method is novel."), DUALDIFF])

    def answer(request):
        if "You are the Area Chair" in json.dumps(request["messages"]):
            return fenced_json(next(chair))
        return fenced_json(DUALDIFF)

    llm_server.default("scripted-review", answer)
    settings = ReviewSection(ensemble=2, reflections=0, few_shot=0)
    panel = review_panel(reviewer, load_prompt, dualdiff_text, settings)
    assert panel.meta.fields["Strengths"] == DUALDIFF["Strengths"]
    asks = [json.dumps(r["messages"]) for r in llm_server.requests_for("scripted-review")]
    assert any("Strengths item 2 ('The reviewers agree the method is novel.')" in a for a in asks)


def test_a_real_small_models_review_of_a_corpus_paper_is_about_it_but_its_none_is_refused():
    # Recorded: Qwen2.5-Coder-1.5B reviewing rl_lr_adaptation.pdf with `labtui review`
    # (qwen15_review.jsonl, line 2; 413 s on 2 cores): every score 4 of 4 (the enums held), a
    # summary and strengths that name the paper (Q-learning, enwik8, text8), and one weakness:
    # "None identified", which the grounding took for the paper's word "none" until now.
    reply = next(e["reply"] for e in exchanges("qwen15_review") if e["reply"].startswith("{"))
    fields = extract_json(reply)
    assert fields["Weaknesses"] == ["None identified"] and fields["Soundness"] == 4
    paper = PaperIndex(corpus_text("rl_lr_adaptation"))
    with pytest.raises(ValueError) as refused:
        ground_review(fields, paper)
    assert str(refused.value).startswith("Weaknesses item 1 ('None identified') names nothing")
    assert "Strengths" not in str(refused.value), "the summary and strengths name the paper"


def _moons_paper_and_replies() -> tuple[str, list[str]]:
    # Recorded (qwen15_moons_ethics_review.jsonl): Qwen2.5-Coder-1.5B reviewing the moons paper
    # labtui wrote with it (2026-11-28), the paper as the first prompt holds it. Its first answer
    # had a grounded weakness and "The experiment does not address ethical concerns"; asked
    # again, it copied the form's Summary, then kept only the ethics point: no review, and the
    # run ended at its last stage.
    recorded = exchanges("qwen15_moons_ethics_review")
    prompt = recorded[0]["request"]["messages"][-1]["content"]
    paper = prompt[prompt.index("<paper>") + len("<paper>") : prompt.index("</paper>")]
    return paper, [e["reply"] for e in recorded]


def test_a_stray_point_that_outlives_the_re_asks_is_left_out_and_said(reviewer, llm_server, events):
    paper, answers = _moons_paper_and_replies()
    llm_server.script("scripted-review", *answers)

    review = review_text(reviewer, load_prompt, paper)

    first = extract_json(answers[0])
    assert review.fields["Weaknesses"] == first["Weaknesses"][:1], "the grounded one stays"
    assert review.fields["Strengths"] == first["Strengths"]
    assert len(review.left_out) == 1 and "ethical concerns" in review.left_out[0]
    assert len([e for e in events if isinstance(e, Refused)]) == 3, "every answer was refused"
    said = [e.text for e in events if isinstance(e, Notice)]
    assert any("stands without 1 point(s)" in text and "ethical" in text for text in said)


def test_a_review_with_no_grounded_weakness_left_is_still_no_review(reviewer, llm_server):
    paper, answers = _moons_paper_and_replies()
    llm_server.script("scripted-review", answers[1], answers[2], answers[2])
    with pytest.raises(LLMError, match="gave no usable review after 3 attempts"):
        review_text(reviewer, load_prompt, paper)
