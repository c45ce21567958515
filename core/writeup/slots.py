"""The model's words around the paper's facts, asked slot by slot and checked sentence by sentence
(``[paper] writer = "slots"``, the small-model profile's writer).

A 1.5B model can write a sentence about a number it is given; it cannot be trusted to copy a
number, a setting or a machine's name into prose. So it is asked only for words: the title, the
problem and why it matters, the idea, the background, one reading of each run's effect, the
limitations and the conclusion, one sentence per paper of the bibliography. Each answer is plain
text that labtui escapes; each sentence is checked as the part it lands in is checked (numbers
traced to the runs, claims held to the effects, time and speed claims too, no promise in a
report, no markup, nothing copied from labtui's prompts, no setup the records do not bear out).
A sentence that fails is dropped, not the slot; a slot left with no sentence is asked again with
the problems quoted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel

from ..answers.validation import validate
from ..errors import UnusableAnswer
from ..prose.check import prose_defects
from ..prose.copied import Shingles, copied_text
from ..prose.defect import sentences_at
from ..provenance.setup_claims import RecordedSetup, setup_defects
from ..runs.effects import BETTER, overall, project_effects
from ..settings.prompts import prompt_path
from ..stage_context import StageContext
from .ledger_appendix import latex_escaped
from .section_text import (
    SectionRules,
    clipped,
    instruction_phrases,
    section_problems,
    title_problems,
)

SLOT_MAX_TOKENS = 700  # a slot answer is a few hundred tokens; a looping model stops in a minute
_COMMANDS = re.compile(r"\\[A-Za-z]+|\$[^$]+\$")
PLAIN_TEXT = "Write plain text: labtui writes the LaTeX; no commands, no math."


@dataclass(frozen=True)
class SlotRules:
    """Where a slot's sentences land, and so what they are checked against."""

    rules: SectionRules
    others: bool = False  # Background or Related Work: only sentences about this work hold a setup
    title: bool = False
    reports: bool = False  # it reports finished work (or feeds the abstract): no promise
    # what code places elsewhere in the paper (the Setup's task, in the README's words): a
    # 1.5B model's Background copied it, and the paper said it twice
    placed: Shingles = frozenset()


@dataclass
class Checked:
    """A slot's sentences that passed, as LaTeX, and those dropped with why."""

    text: str = ""
    dropped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def sentences(self) -> list[str]:
        return [sentence for _, sentence in sentences_at(self.text)]


def sentence_problems(raw: str, where: SlotRules, setup: RecordedSetup) -> list[str]:
    """Why the plain-text sentence ``raw`` cannot stand where ``where`` puts it; []."""
    problems = [
        d.sentence for d in prose_defects(raw, known=where.rules.known, reports=where.reports)
    ]
    if _COMMANDS.search(raw):
        problems.append(f"“{clipped(raw, 60)}” holds LaTeX. {PLAIN_TEXT}")
    latex = latex_escaped(raw)
    if where.title:  # a title claims what the abstract does: held to the runs alike
        problems += title_problems(raw) + section_problems(latex, where.rules)
        return problems + _title_claim(raw, where.rules)
    problems += section_problems(latex, where.rules)
    problems += [d.problem for d in setup_defects(latex, setup, others_part=where.others)]
    return problems + [
        f"“{d.quoted}” repeats what the Experimental Setup already says: say what this part "
        "adds, in words of your own."
        for d in copied_text(raw, where.placed, limit=1)
    ]


# A title's headline claim of a gain: a 1.5B model titled a worse run "Label Smoothing with
# Dropout Prevents Overfitting on Two Moons". In a title it is a claim about these runs; in a
# sentence ("dropout prevents overfitting") it says what a technique is for.
_TITLE_GAIN = re.compile(
    r"\b(?:improv|boost|enhanc|outperform|better|beat|help|prevent\w*\s+overfit|mitigat\w*\s+overfit"
    r"|reduc\w*\s+overfit)\w*",
    re.I,
)


# a negation just before the gain (within three words): "Does Not Prevent", "Fails to Improve"
_DENIED = re.compile(
    r"\b(?:not|n't|no|never|fails?\s+to|failed\s+to|without|nor)(?:\W+\w+){0,2}\W*$", re.I
)
# A sentence that leans on the one before it ("This suggests …"): it goes when that one does.
_ANAPHOR = re.compile(r"\s*(?:this|these|that|those|it|they|such|thus|hence|therefore)\b", re.I)
_QUESTION = re.compile(
    r"\s*(?:does|do|did|is|are|can|could|when|how|what|why|which|will)\b|.*\?\s*$", re.I
)


def _title_claim(title: str, rules: SectionRules) -> list[str]:
    """A title that claims a gain no run showed (no run better than the baseline); a title that
    asks ("Does a Wider Layer Help …") claims nothing."""
    gain = _TITLE_GAIN.search(title)
    if gain is None or rules.root is None or _QUESTION.match(title):
        return []
    if _DENIED.search(title[: gain.start()]):  # "… Does Not Prevent Overfitting": no gain claimed
        return []
    verdicts = {
        r: overall([e for e in found if e.primary] or found)
        for r, found in project_effects(rules.root).items()
    }
    if not verdicts or any(v.verdict == BETTER for v in verdicts.values()):
        return []
    said = "; ".join(v.text for v in verdicts.values())
    return [f"The title claims a gain (“{gain.group(0)}”), but no run did better: {said}."]


def checked(raw: str, where: SlotRules, setup: RecordedSetup) -> Checked:
    """The sentences of ``raw`` that pass, escaped to LaTeX, and those dropped."""
    if where.title:
        problems = sentence_problems(raw.strip(), where, setup)
        return Checked("", [(raw, problems[0])]) if problems else Checked(latex_escaped(raw))
    kept, dropped = [], []
    last_dropped = False
    for _, sentence in sentences_at(" ".join(raw.split())):
        problems = sentence_problems(sentence, where, setup)
        if not problems and last_dropped and _ANAPHOR.match(sentence):
            problems = [
                f"“{clipped(sentence, 60)}” refers to the sentence before it, which was left out."
            ]
        last_dropped = bool(problems)
        if problems:
            dropped.append((sentence, problems[0]))
        else:
            kept.append(latex_escaped(sentence))
    return Checked(" ".join(kept), dropped)


def ask_slots(
    ctx: StageContext,
    prompt: str,
    record: type[BaseModel],
    slots: Mapping[str, SlotRules],
    setup: RecordedSetup,
    **values: Any,
) -> dict[str, Checked] | None:
    """The record's answer to the prompt ``prompt``, each of its ``slots`` (fields) checked
    where it lands."""
    instructions = _instructions(ctx, prompt)
    slots = {name: _with(where, instructions) for name, where in slots.items()}
    return ask_checked(
        ctx,
        prompt,
        record,
        lambda answer: {
            name: checked(getattr(answer, name), where, setup) for name, where in slots.items()
        },
        **values,
    )


def _instructions(ctx: StageContext, prompt: str) -> tuple[str, ...]:
    return instruction_phrases(prompt_path(prompt, ctx.project.root).read_text(encoding="utf-8"))


def _with(where: SlotRules, instructions: tuple[str, ...]) -> SlotRules:
    return replace(where, rules=replace(where.rules, instructions=instructions))


def ask_checked(
    ctx: StageContext,
    prompt: str,
    record: type[BaseModel],
    check: Callable[[Any], dict[str, Checked]],
    **values: Any,
) -> dict[str, Checked] | None:
    """The answer to ``prompt`` as ``record``, its slots checked by ``check``; asked again
    while a slot keeps no sentence (the problems quoted); after the re-asks, what the last
    answer kept, or None when no answer was usable."""

    def parse(data: Any, strict: bool = True) -> dict[str, Checked]:
        found = check(validate(record, data))
        empty = [name for name, c in found.items() if not c.text and c.dropped]
        if strict and empty:
            raise ValueError(" ".join(f"{n}: {found[n].dropped[0][1]}" for n in empty[:3]))
        return found

    text = ctx.prompt(prompt, shape=getattr(record, "shape", ""), notes=ctx.notes_block(), **values)
    try:
        found = ctx.llm(role="writer").ask_json(
            [{"role": "user", "content": text}],
            parse,
            schema=record,
            max_tokens=SLOT_MAX_TOKENS,
            fallback=lambda data: parse(data, strict=False),
        )
    except UnusableAnswer as exc:
        what = prompt.removeprefix("slots_")
        ctx.say(f"no usable {what} answer ({exc.problem}); labtui writes the facts alone there")
        return None
    _say_dropped(ctx, found)
    return found


def _say_dropped(ctx: StageContext, found: dict[str, Checked]) -> None:
    for name, slot in found.items():
        for sentence, problem in slot.dropped[:3]:
            ctx.say(
                f"the {name}: labtui left out “{clipped(sentence, 90)}” ({clipped(problem, 140)})"
            )
