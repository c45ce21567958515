"""The paper as code and model write it together (``[paper] writer = "slots"``): every fact placed
by code from the project's records — the table of runs and one sentence of findings per run
(core/writeup/results_table.py), the whole Experimental Setup (core/writeup/setup_facts.py), what
each run changed (core/runs/run_changes.py), the figures with their captions, the citations —
and the model's checked words around them (core/writeup/slots.py): the title, the problem, the
idea, the background, a reading of each run, the limitations, the conclusion, a sentence per
paper. Where a slot has no usable answer, the part holds the facts alone; no part keeps a
template placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..answers.writeup_answers import PaperClosing, PaperFrame, RunReading, related_answer
from ..latex.bibliography import bib_text_of, bib_titles
from ..prose.copied import shingles
from ..provenance.setup_claims import RecordedSetup, recorded_setup
from ..runs.effect_text import describe
from ..runs.effects import overall, several_datasets
from ..runs.run_changes import RunChanges, run_changes
from ..stage_context import StageContext
from ..workspace.stage_results import ExperimentsResult
from .paper_layout import PaperWords, compose, with_facts
from .project_texts import project_shingles
from .results_table import RunResults, project_results
from .section_facts import PaperFacts
from .section_text import SectionRules
from .sections import SECTIONS, section_rules
from .setup_facts import task_words
from .slots import Checked, SlotRules, ask_checked, ask_slots, checked

MAX_RELATED = 6  # papers a related-work answer covers: the prompt stays short


@dataclass
class _Context:
    """What the slots are asked with, gathered once."""

    facts: PaperFacts
    results: list[RunResults]
    changes: dict[str, RunChanges]
    setup: RecordedSetup
    rules: dict[str, SectionRules] = field(default_factory=dict)


def write_slot_paper(ctx: StageContext, facts: PaperFacts) -> list[str]:
    """Ask the slots, compose the paper from them and the records, place every part and commit;
    the parts written with the facts alone (no usable words)."""
    root = ctx.project.root
    tex_path = root / ctx.config.paper.tex
    results = project_results(root)
    base = results[0].run if results else "run_0"
    gathered = _Context(
        facts,
        results,
        {r.run: run_changes(root, root / r.run, root / base) for r in results[1:]},
        recorded_setup(root),
    )
    tex = tex_path.read_text(encoding="utf-8")
    known = project_shingles(root)
    gathered.rules = {s.heading: replace(section_rules(ctx, s, tex), known=known) for s in SECTIONS}
    titles = dict(list(bib_titles(bib_text_of(tex, tex_path.parent)).items())[:MAX_RELATED])
    words = PaperWords(
        frame=_frame(ctx, gathered),
        readings={r.run: _reading(ctx, gathered, r) for r in results[1:]},
        closing=_closing(ctx, gathered),
        related=_related(ctx, gathered, titles),
        titles=titles,
    )
    search = ctx.result(ExperimentsResult).search
    composed = compose(root, tex, words, facts, results, gathered.changes, search)
    tex_path.write_text(composed.tex, encoding="utf-8")
    ctx.commit(
        f"{ctx.stage}: the paper from the runs' records, with the model's checked words",
        [ctx.config.paper.tex],
    )
    if composed.facts_only:
        ctx.say(
            f"written with labtui's facts alone (no usable words): {', '.join(composed.facts_only)}"
        )
    return composed.facts_only


def _slot(
    gathered: _Context, heading: str, *, reports: bool = False, others: bool = False
) -> SlotRules:
    return SlotRules(gathered.rules[heading], others=others, reports=reports)


def _frame(ctx: StageContext, gathered: _Context) -> dict[str, Checked] | None:
    changes = "\n".join(f"- {run}: {c.summary()}" for run, c in gathered.changes.items())
    task = task_words(ctx.project.root)
    placed = shingles([task])  # the Setup's task paragraph: said there, not again
    return ask_slots(
        ctx,
        "slots_frame",
        PaperFrame,
        {
            "title": SlotRules(gathered.rules["abstract"], title=True),
            "problem": replace(_slot(gathered, "introduction", reports=True), placed=placed),
            "idea": replace(_slot(gathered, "method", reports=True), placed=placed),
            "background": replace(_slot(gathered, "background", others=True), placed=placed),
        },
        gathered.setup,
        idea=gathered.facts.idea,
        changes=changes or "- only the baseline ran",
        task=task or "(not described)",
    )


def _reading(ctx: StageContext, gathered: _Context, result: RunResults) -> Checked | None:
    change = gathered.changes.get(result.run)
    several = several_datasets(result.effects)
    answer = ask_slots(
        ctx,
        "slots_reading",
        RunReading,
        {"reading": _slot(gathered, "results", reports=True)},
        gathered.setup,
        idea=gathered.facts.idea,
        run=result.run,
        change=change.summary() if change else "(not recorded)",
        verdict=overall(result.primary).text,
        effects="\n".join(f"- {describe(e, several)}" for e in result.effects),
    )
    return answer.get("reading") if answer else None


def _closing(ctx: StageContext, gathered: _Context) -> dict[str, Checked] | None:
    findings = [f"- {overall(list(r.primary)).text}" for r in gathered.results[1:]]
    return ask_slots(
        ctx,
        "slots_closing",
        PaperClosing,
        {
            "limitations": _slot(gathered, "conclusion", reports=True),
            "conclusion": _slot(gathered, "conclusion", reports=True),
        },
        gathered.setup,
        idea=gathered.facts.idea,
        findings="\n".join(findings) or "- only the baseline ran; nothing was compared",
    )


def _related(ctx: StageContext, gathered: _Context, titles: dict[str, str]) -> dict[str, Checked]:
    """One checked sentence for each paper of ``titles`` (the bibliography's), by key."""
    if not titles:
        return {}
    where = _slot(gathered, "related", others=True)
    record = related_answer(tuple(titles))

    def check(answer: object) -> dict[str, Checked]:
        found: dict[str, Checked] = {}
        for item in getattr(answer, "sentences", []):
            if item.key in titles and item.key not in found:
                found[item.key] = checked(item.sentence, where, gathered.setup)
        return found

    papers = "\n".join(f"- {key}: {title or '(untitled)'}" for key, title in titles.items())
    answer = ask_checked(
        ctx, "slots_related", record, check, idea=gathered.facts.idea, papers=papers
    )
    return answer or {}


def place_facts(ctx: StageContext) -> None:
    """The facts code writes, placed beside a model's whole sections (``[paper] writer =
    "sections"``): the Experimental Setup, the table of runs, what each run changed; committed
    when they changed the paper."""
    root = ctx.project.root
    tex_path = root / ctx.config.paper.tex
    results = project_results(root)
    base = results[0].run if results else "run_0"
    changes = {r.run: run_changes(root, root / r.run, root / base) for r in results[1:]}
    tex = tex_path.read_text(encoding="utf-8")
    placed = with_facts(root, tex, results, changes)
    if placed != tex:
        tex_path.write_text(placed, encoding="utf-8")
        ctx.commit(f"{ctx.stage}: the facts from the runs' records", [ctx.config.paper.tex])
