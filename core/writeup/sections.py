"""Write-up, section by section, as structured answers: for each section the model answers its
LaTeX body (for the title and abstract, both) as JSON; core/writeup/section_text.py checks it (no
placeholder or preamble, no label, no promise in a report, numbers traced to the runs, claims
checked, \\cite keys from the bibliography) and labtui places it between the section's heading
and the next. A refused text is re-asked with the problem quoted; after the re-asks the section
is flagged, keeps its placeholder, and the paper goes on. This is ``[paper] writer =
"sections"``: a small model that cannot return a whole LaTeX file can return one section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..answers.validation import validate
from ..answers.writeup_answers import SectionText, TitleAbstract
from ..errors import Aborted, UnusableAnswer
from ..latex.bibliography import bib_keys, bib_text_of
from ..provenance.record import run_sources
from ..settings.prompts import prompt_path
from ..stage_context import StageContext
from .ledger_appendix import latex_escaped
from .section_facts import CITING_HEAD, PROMPT_HEADS, PaperFacts, facts_shown
from .section_text import (
    Salvaged,
    SectionRules,
    body_span,
    clipped,
    instruction_phrases,
    placed,
    salvaged,
    section_problems,
    title_of,
    title_problems,
    with_figures,
    with_title,
    without_example_figure,
)
from .section_tidy import tidied


@dataclass(frozen=True)
class Section:
    name: str  # as the prompts and checkpoints say it
    tips: str  # prompts/section_<tips>.md: what the section must contain
    placeholders: tuple[str, ...]  # what it replaces in the template
    heading: str  # where its text is: "abstract" or a word of its \section title


# In the order the paper is written (The AI Scientist's): related work comes after the rest,
# when what it must be compared with is known.
SECTIONS = (
    Section("title and abstract", "abstract", ("TITLE HERE", "ABSTRACT HERE"), "abstract"),
    Section("introduction", "introduction", ("INTRO HERE",), "introduction"),
    Section("background", "background", ("BACKGROUND HERE",), "background"),
    Section("method", "method", ("METHOD HERE",), "method"),
    Section("experimental setup", "setup", ("EXPERIMENTAL SETUP HERE",), "experimental"),
    Section("results", "results", ("RESULTS HERE", "PLEASE FILL IN CAPTION HERE"), "results"),
    Section("conclusion", "conclusion", ("CONCLUSIONS HERE",), "conclusion"),
    Section("related work", "related", ("RELATED WORK HERE",), "related"),
)
# Where the paper reports its own work: numbers there must be the runs'. Background and related
# work describe others' work, whose numbers no run of this project recorded.
_TRACED = {"abstract", "introduction", "method", "experimental", "results", "conclusion"}
_REPORTS = {"abstract", "results", "conclusion"}  # a report, never a promise
_CLAIMS = _REPORTS | {"introduction"}  # what the runs showed, checked against their effects
# The abstract is written after the conclusion, from the sections before it: a small model
# asked for it first wrote the whole paper into it.
_SUMMARY_LAST = ("abstract",)
# Parts that sum up this paper's own work and cite nothing: not shown the bibliography's keys.
# Shown them, the 1.5B model's conclusion pasted that line of the prompt, 3 answers of 3.
_CITES_NOTHING = ("abstract", "conclusion")
# Room for the longest body the validator takes (at_most_chars: 6,000 characters, about 1,500
# tokens; an abstract 1,600) and no more: a small model that loops (Qwen2.5-Coder-1.5B repeated
# a disclaimer in an abstract) stops in a minute or two instead of at 2,048 tokens.
SECTION_MAX_TOKENS = 1600
TITLE_MAX_TOKENS = 600
SECTION_MIN_WORDS = 25  # as the record asks (SectionText), counted again once code tidied it


@dataclass(frozen=True)
class Flagged:
    """A section no answer could be placed for: it keeps its placeholder."""

    name: str
    problem: str


@dataclass(frozen=True)
class Revision:
    """Why a placed section is asked for again, quoted to the model with its previous text."""

    request: str  # the researcher's note, or what LaTeX could not compile
    asker: str = "The researcher read it and asks"


@dataclass
class Written:
    """The sections placed so far: their text, for the later prompts and for a revision."""

    texts: dict[str, str] = field(default_factory=dict)
    flagged: list[Flagged] = field(default_factory=list)


def write_sections(ctx: StageContext, facts: PaperFacts) -> Written:
    """Each section whose placeholder is still in the paper, in order: asked, checked, placed,
    committed and (in co-pilot mode) judged. Returns what was placed and what was flagged."""
    written = Written()
    tex_path = ctx.project.root / ctx.config.paper.tex
    for section in writing_order():
        if not any(p in tex_path.read_text(encoding="utf-8") for p in section.placeholders):
            continue
        if _write(ctx, section, facts, written):
            _judge(ctx, section, facts, written)
    return written


def writing_order() -> list[Section]:
    """SECTIONS as this writer asks for them: the abstract once what it summarises is written."""
    summaries = [s for s in SECTIONS if s.heading in _SUMMARY_LAST]
    rest = [s for s in SECTIONS if s.heading not in _SUMMARY_LAST]
    return rest[:-1] + summaries + rest[-1:]  # related work stays last


@dataclass
class _Asked:
    """What asking for one section gave."""

    answer: TitleAbstract | SectionText | None = None  # one that passed every check
    changes: tuple[str, ...] = ()  # what code set right in it (Tidied.changes)
    refused: list[TitleAbstract | SectionText] = field(default_factory=list)  # tidied
    problem: str = ""  # why no answer passed


def _write(
    ctx: StageContext,
    section: Section,
    facts: PaperFacts,
    written: Written,
    revision: Revision | None = None,
) -> bool:
    """Ask for the section, place it and commit it; False (flagged, or on a revision kept as it
    was) when no answer passed the checks and none could be salvaged."""
    tex_path = ctx.project.root / ctx.config.paper.tex
    rules = section_rules(ctx, section, tex_path.read_text(encoding="utf-8"))
    asked = _ask(ctx, section, rules, facts, written, revision)
    answer = asked.answer or _salvaged(ctx, section, rules, asked)
    if answer is None and revision:
        ctx.say(f"the {section.name} could not be revised ({asked.problem}); it is kept as it was")
        return False
    if answer is None:
        written.flagged.append(Flagged(section.name, asked.problem))
        ctx.say(
            f"the {section.name} was not written: no answer passed the checks "
            f"({asked.problem}); it keeps its placeholder, and the write-up goes on"
        )
        return False
    if asked.changes:
        ctx.say(f"the {section.name}: labtui {'; '.join(asked.changes)}")
    _place(ctx, section, facts, written, answer)
    ctx.commit(
        f"{ctx.stage}: {section.name}" + (", revised" if revision else ""), [ctx.config.paper.tex]
    )
    return True


def _ask(
    ctx: StageContext,
    section: Section,
    rules: SectionRules,
    facts: PaperFacts,
    written: Written,
    revision: Revision | None,
) -> _Asked:
    """The model's answer for the section, tidied by code and checked, re-asked with the
    problem quoted until one passes or the re-asks run out."""
    title = section.heading == "abstract"
    record: type[TitleAbstract] | type[SectionText] = TitleAbstract if title else SectionText
    asked = _Asked()

    def parse(data: object) -> TitleAbstract | SectionText:
        answer: TitleAbstract | SectionText
        if isinstance(answer := validate(record, data), TitleAbstract):
            body = tidied(answer.abstract, section.heading)
            answer = answer.model_copy(update={"abstract": body.body})
            problems = title_problems(answer.title) + section_problems(body.body, rules)
        else:
            body = tidied(answer.latex, section.heading)
            answer = answer.model_copy(update={"latex": body.body})
            problems = section_problems(body.body, rules)
        asked.changes = body.changes
        problems = _too_short(body.body, body.changes, section) + problems
        if problems:  # at most three, so the re-ask stays one short paragraph
            asked.refused.append(answer)
            raise ValueError(" ".join(problems[:3]))
        return answer

    prompt = _prompt(ctx, section, facts, written, record.shape, revision)
    try:
        asked.answer = ctx.llm(role="writer").ask_json(
            [{"role": "user", "content": prompt}],
            parse,
            schema=record,
            max_tokens=TITLE_MAX_TOKENS if title else SECTION_MAX_TOKENS,
        )
    except UnusableAnswer as exc:
        asked.problem = exc.problem
    return asked


def _too_short(body: str, changes: tuple[str, ...], section: Section) -> list[str]:
    """What is left once code took the wrapping off, when that is too little to be the section:
    the 1.5B model's background, a document around another section, was placed empty."""
    words = len(body.split())
    if words >= SECTION_MIN_WORDS:
        return []
    taken = f" after labtui {'; '.join(changes)}" if changes else ""
    return [
        f"Only {words} word(s) of the {section.name} itself are left{taken}: write the "
        f"{section.name}'s own text, at least {SECTION_MIN_WORDS} words."
    ]


def _salvaged(
    ctx: StageContext, section: Section, rules: SectionRules, asked: _Asked
) -> TitleAbstract | SectionText | None:
    """Of the refused answers, the one that keeps the most words without the sentences that
    failed the checks, when what is left passes them and is still a section
    (section_text.salvaged): one false number must not cost a section its every true sentence.
    Every answer counts, not only the last: asked again about one sentence, a small model
    answered only that paragraph. Said, with the sentences left out."""
    best: tuple[TitleAbstract | SectionText, Salvaged] | None = None
    for answer in asked.refused:
        if isinstance(answer, TitleAbstract) and title_problems(answer.title):
            continue
        body = answer.abstract if isinstance(answer, TitleAbstract) else answer.latex
        kept = salvaged(body, rules)
        if kept is not None and (best is None or len(kept.body) > len(best[1].body)):
            best = (answer, kept)
    if best is None:
        return None
    answer, kept = best
    shown = " / ".join(f"“{clipped(sentence, 100)}”" for sentence in kept.dropped[:3])
    ctx.say(
        f"the {section.name}: no answer passed the checks ({asked.problem}); labtui placed the "
        f"longest without the {len(kept.dropped)} sentence(s) that failed them: {shown}"
    )
    field_name = "abstract" if isinstance(answer, TitleAbstract) else "latex"
    return answer.model_copy(update={field_name: kept.body})


def _place(
    ctx: StageContext,
    section: Section,
    facts: PaperFacts,
    written: Written,
    answer: TitleAbstract | SectionText,
) -> None:
    """Put the answer's text into the paper: between the section's heading and the next, in
    place of its placeholder (or of its earlier text, on a revision)."""
    tex_path = ctx.project.root / ctx.config.paper.tex
    tex = tex_path.read_text(encoding="utf-8")
    old = written.texts.get(section.name, "")
    if isinstance(answer, TitleAbstract):
        tex = with_title(tex, latex_escaped(answer.title))
        body = answer.abstract
        tex = placed(tex, "abstract", body, old, "ABSTRACT HERE")
    else:
        body = answer.latex
        if section.heading == "results":
            body, tex = _with_the_figures(ctx, tex, body, facts)
        tex = placed(tex, section.heading, body, old, section.placeholders[0])
    tex_path.write_text(tex, encoding="utf-8")
    written.texts[section.name] = body.strip()


def _with_the_figures(ctx: StageContext, tex: str, body: str, facts: PaperFacts) -> tuple[str, str]:
    """The Results' body with every figure of the plots stage in it (the template's example
    figure goes: its caption is a placeholder), and the paper without the example figure."""
    span = body_span(tex, "results")
    if span is not None:
        tex = tex[: span[0]] + without_example_figure(tex[span[0] : span[1]]) + tex[span[1] :]
    paper_dir = (ctx.project.root / ctx.config.paper.tex).parent
    body, added = with_figures(body, facts.figures, paper_dir)
    if added:
        ctx.say(
            f"the results did not include {', '.join(added)}: labtui added each as a figure "
            "with its description as the caption"
        )
    return body, tex


def section_rules(ctx: StageContext, section: Section, tex: str) -> SectionRules:
    """What a text placed in ``section`` is checked against: its bibliography, its figures,
    whether it reports, the runs that trace its numbers and claims, the prompt it must not copy."""
    root = ctx.project.root
    paper_dir = (root / ctx.config.paper.tex).parent
    traced = section.heading in _TRACED
    return SectionRules(
        name=section.name,
        bib_text=bib_text_of(tex, paper_dir),
        paper_dir=paper_dir,
        graphics_dirs=(root,),
        figures=section.heading == "results",
        reports=section.heading in _REPORTS,
        root=root if traced else None,
        sources=run_sources(root) if traced else [],
        claims=section.heading in _CLAIMS,
        instructions=instruction_phrases(
            prompt_path("writeup_section_text", root).read_text(encoding="utf-8"),
            ctx.prompt(f"section_{section.tips}"),
            *PROMPT_HEADS,
        ),
    )


def _prompt(
    ctx: StageContext,
    section: Section,
    facts: PaperFacts,
    written: Written,
    shape: str,
    revision: Revision | None,
) -> str:
    tex = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    paper_dir = (ctx.project.root / ctx.config.paper.tex).parent
    keys = ", ".join(sorted(bib_keys(bib_text_of(tex, paper_dir)))) or "none"
    citing = f"{CITING_HEAD} {keys}\n" if section.heading not in _CITES_NOTHING else ""
    # Their names, not their openings: shown the openings, Qwen2.5-Coder-1.5B began four
    # sections with the same sentences and answered the abstract with a whole paper in Markdown.
    before = [name for name in written.texts if name != section.name]
    asked_again = ""
    if revision:
        previous = written.texts.get(section.name, "")
        asked_again = (
            f"\nYour previous text:\n{previous}\n\n{revision.asker}: {revision.request}\n"
            "Write the revised text.\n"
        )
    return ctx.prompt(
        "writeup_section_text",
        section=section.name,
        tips=ctx.prompt(f"section_{section.tips}").strip(),
        idea=facts.idea,
        facts=facts_shown(section.heading, facts),
        citing=citing,
        written=", ".join(before) or "none yet",
        revision=asked_again,
        notes=ctx.notes_block(),
        shape=shape,
    )


def rewrite_section(
    ctx: StageContext, section: Section, facts: PaperFacts, revision: Revision
) -> bool:
    """Ask again for a section the paper already has (its current text quoted), check, place
    and commit the answer; False when none passed (the section is kept as it was)."""
    text = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    span = body_span(text, section.heading)
    current = text[span[0] : span[1]].strip() if span else ""
    return _write(ctx, section, facts, Written(texts={section.name: current}), revision)


def _judge(ctx: StageContext, section: Section, facts: PaperFacts, written: Written) -> None:
    """The co-pilot's checkpoint on a placed section: approve, revise with a note (that section
    asked again with it), edit it (kept by ctx.ask), or abort."""
    judge_section(ctx, section, lambda note: _write(ctx, section, facts, written, Revision(note)))


def judge_section(ctx: StageContext, section: Section, revise: Callable[[str], object]) -> None:
    """Ask the researcher about a written section until approved: ``revise`` rewrites it with
    the researcher's note; an edit is kept by ctx.ask; abort stops the stage resumably."""
    while True:
        decision = ctx.ask(
            f"writeup: {section.name} written",
            section_shown(ctx, section),
            kind="section",
            product=ctx.config.paper.tex,
        )
        if decision.action == "abort":
            raise Aborted(decision.note or "stopped during the write-up; the project is resumable")
        if decision.action != "revise":
            return
        revise(decision.note or "revise it")


def section_shown(ctx: StageContext, section: Section) -> str:
    """The section as the paper now has it, for its checkpoint."""
    text = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    span = body_span(text, section.heading)
    shown = text[span[0] : span[1]].strip() if span else "(section not found)"
    if section.heading == "abstract":
        shown = f"\\title{{{title_of(text)}}}\n{shown}"
    return f"The {section.name} as written:\n\n```latex\n{shown[:3000]}\n```"
