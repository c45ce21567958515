"""The slots writer's checks on what Qwen2.5-Coder-1.5B really answered (issue 40's bench, moons,
label smoothing with dropout, run_1 worse than the baseline; tests/recorded/real_model/
qwen15_moons_slots_writeup.jsonl with the runs' records beside it in qwen15_moons_slots/): each
sentence is held where it would land, and what a reader must not be told is left out — a title
and a reading that call the worse run an improvement, the idea's own instruction — while the
true sentences stay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from labtui.core.answers.validation import validate
from labtui.core.answers.writeup_answers import (
    PaperClosing,
    PaperFrame,
    RunReading,
    related_answer,
)
from labtui.core.latex.bibliography import bib_text_of, bib_titles
from labtui.core.prose.copied import with_texts
from labtui.core.provenance.record import run_sources
from labtui.core.provenance.setup_claims import recorded_setup
from labtui.core.settings.prompts import prompt_path
from labtui.core.writeup.section_text import SectionRules, instruction_phrases
from labtui.core.writeup.slots import Checked, SlotRules, checked

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "real_model"
EXCHANGES = RECORDED / "qwen15_moons_slots_writeup.jsonl"


@pytest.fixture
def root(tmp_path) -> Path:
    folder = tmp_path / "moons"
    shutil.copytree(RECORDED / "qwen15_moons_slots", folder)
    return folder


# The prompt each recorded exchange answered, as the writer names it: the slots are checked
# against the prompt's own text (its instructions), not the facts filled into it.
_ORDER = ("slots_frame", "slots_reading", "slots_reading", "slots_reading", "slots_closing",
          "slots_related")  # fmt: skip
_PROMPTS: dict[str, str] = {}


def answers() -> list[tuple[str, str]]:
    """(prompt, reply) of each recorded exchange, in order."""
    found = []
    lines = EXCHANGES.read_text(encoding="utf-8").splitlines()
    for name, line in zip(_ORDER, lines, strict=True):
        exchange = json.loads(line)
        prompt = next(m["content"] for m in exchange["request"]["messages"] if m["role"] == "user")
        _PROMPTS[prompt] = name
        found.append((prompt, exchange["reply"]))
    return found


def where(
    root: Path, prompt: str, *, traced: bool, claims: bool, reports: bool, **kind
) -> SlotRules:
    tex = (root / "latex" / "template.tex").read_text(encoding="utf-8")
    rules = SectionRules(
        name="slot",
        bib_text=bib_text_of(tex, root / "latex"),
        paper_dir=root / "latex",
        graphics_dirs=(root,),
        reports=reports,
        root=root if traced else None,
        sources=run_sources(root) if traced else [],
        claims=claims,
        instructions=instruction_phrases(prompt_path(_PROMPTS[prompt]).read_text(encoding="utf-8")),
        known=with_texts([]),  # labtui's prompts and messages; the facts they showed are no copy
    )
    return SlotRules(rules, reports=reports, **kind)


def kept(slot: Checked) -> str:
    return slot.text


def test_the_frame_keeps_its_true_words_and_drops_a_false_title_and_an_instruction(root):
    prompt, reply = answers()[0]
    frame = validate(PaperFrame, json.loads(reply))
    setup = recorded_setup(root)
    title = checked(
        frame.title, where(root, prompt, traced=True, claims=True, reports=True, title=True), setup
    )
    assert title.text == "" and "run_1 is worse than run_0" in title.dropped[0][1], (
        "'Label Smoothing with Dropout Prevents Overfitting' over a worse run"
    )
    # the same model's answer when told why, in issue 40's last moons bench: it claims no gain
    denied = "Label Smoothing with Dropout Does Not Prevent Overfitting on Two Moons"
    as_title = where(root, prompt, traced=True, claims=True, reports=True, title=True)
    assert checked(denied, as_title, setup).text == denied
    idea = checked(frame.idea, where(root, prompt, traced=True, claims=False, reports=True), setup)
    assert "This experiment should compare" not in idea.text and idea.text
    assert "is an instruction" in idea.dropped[0][1]
    problem = checked(
        frame.problem, where(root, prompt, traced=True, claims=True, reports=True), setup
    )
    assert problem.dropped == [] and problem.text.startswith("The two-moons dataset is a classic")
    background = checked(
        frame.background,
        where(root, prompt, traced=False, claims=False, reports=False, others=True),
        setup,
    )
    assert background.dropped == [] and background.text.startswith("Two-moons data is generated")


def test_a_reading_that_calls_the_worse_run_an_improvement_keeps_nothing(root):
    setup = recorded_setup(root)
    for prompt, reply in answers()[1:4]:  # asked three times, the same claim each time
        reading = validate(RunReading, json.loads(reply)).reading
        slot = checked(reading, where(root, prompt, traced=True, claims=True, reports=True), setup)
        assert slot.text == "", reading
        assert any("You wrote that test accuracy improved" in why for _, why in slot.dropped)


def test_the_closing_and_the_related_work_keep_what_is_true(root):
    prompt, reply = answers()[4]
    closing = validate(PaperClosing, json.loads(reply))
    setup = recorded_setup(root)
    rules = where(root, prompt, traced=True, claims=True, reports=True)
    limitations = checked(closing.limitations, rules, setup)
    assert limitations.dropped == [] and "precision, recall, F1 score" in limitations.text
    conclusion = checked(closing.conclusion, rules, setup)
    assert conclusion.text.startswith("Further research is needed")
    assert (
        conclusion.dropped
        and "both label smoothing and dropout can improve" in conclusion.dropped[0][0]
    )
    prompt, reply = answers()[5]
    tex = (root / "latex" / "template.tex").read_text(encoding="utf-8")
    keys = tuple(bib_titles(bib_text_of(tex, root / "latex")))
    related = validate(related_answer(keys), json.loads(reply))
    rules = where(root, prompt, traced=False, claims=False, reports=False, others=True)
    written = {item.key: checked(item.sentence, rules, setup) for item in related.sentences}
    assert set(written) == set(keys) and all(kept(slot) for slot in written.values())
