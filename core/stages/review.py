"""Review: the compiled PDF's text, read with PyMuPDF, reviewed on the NeurIPS form into a
validated ``review.json``; the score goes back into the idea archive.
"""

from __future__ import annotations

import json

from ..ideas import load_archive, save_archive
from ..reviewer import read_paper, review_text
from ..stage_context import StageContext, StageOutput


def run(ctx: StageContext) -> StageOutput:
    root = ctx.project.root
    pdf = root / (ctx.result_of("compile").get("pdf") or "paper.pdf")
    paper = read_paper(pdf)
    review = review_text(ctx.llm(role="reviewer"), ctx.prompt, paper, ctx.notes_block())
    (root / "review.json").write_text(json.dumps(review.fields, indent=2) + "\n", encoding="utf-8")
    idea_name = ctx.result_of("experiments").get("idea")
    archive = load_archive(root)
    for idea in archive:
        if idea.name == idea_name:
            idea.score = review.overall
            idea.status = "done"
    save_archive(root, archive)
    ctx.commit(
        f"review: {review.decision}, overall {review.overall}/10", ["review.json", "ideas.json"]
    )
    return StageOutput(
        summary=f"{review.decision}, overall {review.overall}/10",
        result={"overall": review.overall, "decision": review.decision, "review": "review.json"},
        checkpoint_body=review.markdown(),
        kind="review",
        product="review.json",
    )
