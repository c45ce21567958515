"""Compiling the paper: code checks (citations, figures, duplicates), chktex and latexmk, with
parsed errors sent back to aider for a bounded number of fix rounds. The last PDF that compiled is
never lost. The compile stage runs it, and so does each of the review's improvement rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..coding.edit_guard import PAPER_ONLY
from ..errors import StageFailed
from ..events import CompileResult, LatexUpdated
from ..latex.bibliography import bib_text_of
from ..latex.checks import check_references, referenced_figures
from ..latex.chktex import chktex
from ..latex.compile import compile_latex
from ..latex.log import LatexMessage
from ..stage_context import StageContext
from ..workspace.artifacts import PDF


def _problems(ctx: StageContext, text: str) -> list[str]:
    root = ctx.project.root
    folder = (root / ctx.config.paper.tex).parent
    bib = bib_text_of(text, folder)
    return check_references(text, bib, root, list(dict.fromkeys([root, folder])))


def _emit_outcome(ctx: StageContext, outcome) -> None:
    ctx.emit(
        CompileResult(
            stage=ctx.stage,
            ok=outcome.ok,
            pdf=PDF if outcome.ok else "",
            pages=outcome.pages,
            errors=[m.__dict__ for m in outcome.errors],
            warnings=[m.__dict__ for m in outcome.warnings],
        )
    )


def _describe(outcome, problems: list[str], lint: list) -> str:
    lines = [f"- line {m.line}: {m.message}" for m in outcome.errors]
    lines += [f"- {p}" for p in problems]
    lines += [f"- chktex line {m.line}: {m.message}" for m in lint[:10]]
    if outcome.timed_out:
        lines.append("- the compile timed out (an infinite loop in a macro?)")
    if not lines and not outcome.ok:
        lines.append("- compile failed; log tail:\n" + outcome.log_tail[-1500:])
    return "\n".join(lines)


def _over_the_page_limit(ctx: StageContext, outcome) -> list[str]:
    limit = ctx.config.limits.page_limit
    if not (limit and outcome.ok and outcome.pages > limit):
        return []
    return [
        f"the paper has {outcome.pages} pages, more than [limits] page_limit = {limit}: "
        "shorten it (tighter prose, fewer or smaller figures), keeping every result"
    ]


def _show_the_paper(ctx: StageContext) -> None:
    tex_path = ctx.project.root / ctx.config.paper.tex
    text = tex_path.read_text(encoding="utf-8")
    figures = referenced_figures(text, tex_path.parent)
    ctx.emit(LatexUpdated(stage=ctx.stage, path=ctx.config.paper.tex, text=text, figures=figures))


@dataclass(frozen=True)
class Compiled:
    pages: int
    warnings: int
    problems: list[str]  # what is still wrong although it compiles (over the page limit, say)


def compile_paper(
    ctx: StageContext,
    commit_message: str,
    rewrite: Callable[[StageContext, list[LatexMessage]], list[str]] | None = None,
) -> Compiled:
    """Compile the paper, sending parsed errors and problems back to aider for up to
    ``[limits] latex_fix_rounds``; commits the PDF. A round first offers the errors to
    ``rewrite`` (the sections they lie in, asked for again); aider fixes the round when it
    rewrote nothing. StageFailed when it never compiles (the last PDF that did is kept). The
    review's improvement rounds use it too."""
    root = ctx.project.root
    tex_path = root / ctx.config.paper.tex
    coder = None
    rounds = max(0, ctx.config.limits.latex_fix_rounds)
    for round_no in range(rounds + 1):
        text = tex_path.read_text(encoding="utf-8")
        problems = _problems(ctx, text)
        lint = chktex(tex_path)
        outcome = compile_latex(tex_path, root / PDF, timeout_s=ctx.config.limits.latex_timeout_s)
        _emit_outcome(ctx, outcome)
        problems += _over_the_page_limit(ctx, outcome)
        if outcome.ok and not problems:
            break
        if round_no == rounds:
            break
        rewritten = rewrite(ctx, outcome.errors) if rewrite and not outcome.ok else []
        if rewritten:
            ctx.say(f"rewritten to compile (round {round_no + 1}/{rounds}): {', '.join(rewritten)}")
            _show_the_paper(ctx)
            continue
        coder = coder or ctx.coder(model_of="compile")  # the writer's model
        report = _describe(outcome, problems, lint)
        ctx.say(f"LaTeX problems, asking for a fix (round {round_no + 1}/{rounds}):\n{report}")
        coder.edit(
            [ctx.config.paper.tex],
            ctx.prompt("latex_fix", problems=report),
            commit_message=f"{ctx.stage}: fix LaTeX",
            policy=PAPER_ONLY,
        )
        _show_the_paper(ctx)
    if not outcome.ok:
        first = outcome.errors[0].message if outcome.errors else "see the log"
        raise StageFailed(
            f"the paper does not compile after {rounds} fix round(s): {first}",
            f"fix {ctx.config.paper.tex} by hand (the errors are in the LaTeX pane), then `labtui run`",
        )
    if problems:
        ctx.say("the paper compiles but still has problems: " + "; ".join(problems))
    ctx.commit(commit_message.format(pages=outcome.pages), [PDF, ctx.config.paper.tex])
    return Compiled(outcome.pages, len(outcome.warnings), problems)
