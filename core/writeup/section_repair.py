"""The section writer's facts gathered for any stage, and a placed section asked for again when
LaTeX cannot compile it. The write-up stage gathers the facts to write the paper; the compile
stage, when pdflatex stops inside a section labtui placed, re-asks that section with the error
quoted instead of sending a small model the whole file to fix (Qwen2.5-Coder-1.5B, asked by aider
for a whole-file fix of one ``Missing $ inserted``, never returned a usable file).
"""

from __future__ import annotations

from ..errors import StageFailed
from ..latex.log import LatexMessage
from ..stage_context import StageContext
from ..steps.planning import chosen_idea
from ..workspace.artifacts import has_literature, literature_digest, load_literature
from ..workspace.stage_results import ExperimentsResult, PlotsResult
from .section_facts import PaperFacts, paper_facts
from .section_text import body_span
from .sections import SECTIONS, Revision, Section, rewrite_section

ERROR_CONTEXT_CHARS = 160  # of the line LaTeX stopped at, quoted with its error


def literature_block(ctx: StageContext) -> str:
    """The literature review's papers as the prompt shows them; '' without a review."""
    if not has_literature(ctx.project.root):
        return ""
    return (
        "\nThe literature review found these papers (cite them by the key in brackets, in the "
        f"introduction and related work):\n\n{literature_digest(load_literature(ctx.project.root))}\n"
    )


def gathered_facts(ctx: StageContext, figures: list[str], literature: str) -> PaperFacts:
    """What every section's prompt draws on: the chosen idea, the figures with the plots
    stage's descriptions, the effects and the notebook's computed facts, the literature."""
    try:
        chosen = chosen_idea(ctx)
        # Not the idea's experiment list: what ran is the plan's (the notebook and the effects);
        # a small model shown the list wrote up settings that never ran.
        idea = " ".join(filter(None, [chosen.title + ".", chosen.hypothesis]))
    except StageFailed:  # a project set up from a repository has no ideas archive
        idea = ctx.result(ExperimentsResult).idea or "(see the notebook)"
    descriptions = ctx.result(PlotsResult).descriptions
    described = {
        name: descriptions.get(name) or name.rsplit(".", 1)[0].replace("_", " ") for name in figures
    }
    return paper_facts(ctx.project.root, idea, described, literature)


def section_at_line(tex: str, line: int) -> Section | None:
    """The section whose body holds line ``line`` (1-based) of the paper, or None."""
    for section in SECTIONS:
        span = body_span(tex, section.heading)
        if span is None:
            continue
        first = tex.count("\n", 0, span[0]) + 1
        last = tex.count("\n", 0, span[1]) + 1
        if first <= line <= last:
            return section
    return None


def failing_sections(tex: str, tex_name: str, errors: list[LatexMessage]) -> dict[str, str]:
    """Section name -> what LaTeX said inside it (the first error there, with the line it
    stopped at), for the errors of the paper's own file that lie in a section's body."""
    lines = tex.split("\n")
    found: dict[str, str] = {}
    for error in errors:
        if error.line is None or not error.file.endswith(tex_name):
            continue
        section = section_at_line(tex, error.line)
        if section is None or section.name in found:
            continue
        quoted = (
            lines[error.line - 1].strip()[:ERROR_CONTEXT_CHARS] if error.line <= len(lines) else ""
        )
        found[section.name] = f"{error.message}" + (f" (at “{quoted}”)" if quoted else "")
    return found


def rewrite_failing_sections(ctx: StageContext, errors: list[LatexMessage]) -> list[str]:
    """Each section LaTeX stopped in, asked for again with the error quoted, checked, placed and
    committed; the names of those rewritten (none: the errors lie elsewhere, or no answer
    passed — the caller then tries its other fix)."""
    tex_path = ctx.project.root / ctx.config.paper.tex
    failing = failing_sections(tex_path.read_text(encoding="utf-8"), tex_path.name, errors)
    if not failing:
        return []
    figures = ctx.result(PlotsResult).figures
    facts = gathered_facts(ctx, figures, literature_block(ctx))
    rewritten = []
    # the setup is code's (core/writeup/setup_facts.py): no model rewrites it
    for section in (s for s in SECTIONS if s.name in failing and s.heading != "experimental"):
        ctx.say(
            f"LaTeX cannot compile the {section.name}: {failing[section.name]}; asking for it again"
        )
        request = (
            f"pdflatex cannot compile it: {failing[section.name]}. Write it so that it compiles "
            "(math only between matching $ signs, every brace closed, special characters escaped)"
        )
        if rewrite_section(ctx, section, facts, Revision(request, asker="LaTeX says")):
            rewritten.append(section.name)
    return rewritten
