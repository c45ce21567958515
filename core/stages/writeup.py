"""Write-up: aider fills latex/template.tex from the lab notebook, the runs and the figures.
Placeholders left behind are caught and sent back once.
"""

from __future__ import annotations

import re

from ..errors import StageFailed
from ..events import LatexUpdated
from ..stage_context import StageContext, StageOutput

TEX = "latex/template.tex"
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z ]{2,40} HERE\b")


def placeholders_left(text: str) -> list[str]:
    return sorted(set(_PLACEHOLDER.findall(text)))


def _bib_keys(ctx: StageContext, text: str) -> list[str]:
    from ..latex import bib_keys, bib_text_of

    return sorted(bib_keys(bib_text_of(text, ctx.project.root / "latex")))


def _cite_the_literature(ctx: StageContext, tex_path) -> str:
    """The literature review's papers join the bibliography (labtui writes their BibTeX, the
    model never does) and the prompt, for the related work; '' without a review."""
    from ..latex import add_bib_entries
    from .literature import REVIEW, digest, load_review

    if not (ctx.project.root / REVIEW).is_file():
        return ""
    review = load_review(ctx.project.root)
    entries = {
        p["bibtex_key"]: p["bibtex"]
        for p in review["papers"]
        if p.get("bibtex_key") and p.get("bibtex")
    }
    added = add_bib_entries(tex_path, entries)
    if added:
        ctx.commit(f"writeup: cite the literature review's papers ({', '.join(added)})", [TEX])
    return (
        "\nThe literature review found these papers (cite them by the key in brackets, in the "
        f"introduction and related work):\n\n{digest(review)}\n"
    )


def run(ctx: StageContext) -> StageOutput:
    root = ctx.project.root
    tex_path = root / TEX
    figures = ctx.result_of("plots").get("figures") or sorted(p.name for p in root.glob("*.png"))
    experiments = ctx.result_of("experiments")
    reviewed = _cite_the_literature(ctx, tex_path)
    coder = ctx.coder()
    prompt = ctx.prompt(
        "writeup",
        title=experiments.get("idea", ""),
        runs=", ".join(experiments.get("runs", [])),
        figures=", ".join(figures) or "none",
        bibkeys=", ".join(_bib_keys(ctx, tex_path.read_text(encoding="utf-8"))) or "none",
        literature=reviewed,
        notes=ctx.notes_block(),
    )
    edit = coder.edit(
        [TEX], prompt, commit_message="writeup: fill the paper", read_only=["notes.md"]
    )
    if not edit.changed:
        raise StageFailed(f"the write-up edit changed nothing: {edit.error}", "labtui run to retry")
    left = placeholders_left(tex_path.read_text(encoding="utf-8"))
    if left:
        coder.edit(
            [TEX],
            ctx.prompt("writeup_placeholders", placeholders=", ".join(left)),
            commit_message="writeup: replace leftover placeholders",
            read_only=["notes.md"],
        )
        left = placeholders_left(tex_path.read_text(encoding="utf-8"))
        if left:
            ctx.say(f"placeholders still in the paper: {', '.join(left)}")
    text = tex_path.read_text(encoding="utf-8")
    from ..latex import referenced_figures

    figures = referenced_figures(text, tex_path.parent)  # as TeX resolves them in latex/
    ctx.emit(LatexUpdated(stage=ctx.stage, path=TEX, text=text, figures=figures))
    return StageOutput(
        summary=f"paper drafted ({len(text.splitlines())} lines)",
        result={"tex": TEX, "placeholders_left": left},
        checkpoint_body=f"The draft `{TEX}` ({len(text.splitlines())} lines). "
        + (f"Placeholders left: {', '.join(left)}" if left else "No placeholders left."),
        kind="section",
        product=TEX,
    )
