"""Compile: the paper compiled (``core.writeup.compile_rounds``: code checks, chktex, latexmk, fix rounds);
the checkpoint shows its pages and what is still wrong.
"""

from __future__ import annotations

from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import PDF
from ..workspace.stage_results import CompileResult
from ..writeup.compile_rounds import compile_paper
from ..writeup.section_repair import rewrite_failing_sections


def run(ctx: StageContext) -> StageOutput:
    # A section labtui placed is asked for again when LaTeX stops inside it; aider fixes the rest.
    rewrite = rewrite_failing_sections if ctx.config.paper.writer == "sections" else None
    paper = compile_paper(ctx, f"compile: {PDF} ({{pages}} pages)", rewrite)
    return StageOutput(
        summary=f"{PDF}: {paper.pages} page(s), {paper.warnings} warning(s)",
        result=CompileResult(pdf=PDF, pages=paper.pages, problems=paper.problems),
        checkpoint_body=f"`{PDF}` compiled: {paper.pages} page(s)."
        + (
            "\n\nOpen problems:\n" + "\n".join(f"- {p}" for p in paper.problems)
            if paper.problems
            else ""
        ),
        kind="paper",
        product=ctx.config.paper.tex,
    )


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """The researcher edited the LaTeX at the checkpoint: compile the edited paper."""
    return run(ctx)


STAGE = DeclaredStage("compile", run, reload=reload)
