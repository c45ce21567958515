"""Review: the compiled PDF's text, read with PyMuPDF, reviewed on the NeurIPS form into a
validated ``review.json``; the score goes back into the idea archive.
"""

from __future__ import annotations

import json

from ..ideas import load_archive, save_archive
from ..review import Review, parse_review
from ..stage_context import StageContext, StageOutput

MAX_PAPER_CHARS = 40_000


def review_pdf_text(ctx: StageContext, paper_text: str) -> Review:
    messages = [
        {"role": "system", "content": ctx.prompt("review_system")},
        {
            "role": "user",
            "content": ctx.prompt(
                "review", paper=paper_text[:MAX_PAPER_CHARS], notes=ctx.notes_block()
            ),
        },
    ]
    return ctx.llm(role="reviewer").ask_json(messages, parse_review, json_mode=True)


def run(ctx: StageContext) -> StageOutput:
    from ..latex import pdf_text

    root = ctx.project.root
    pdf = root / (ctx.result_of("compile").get("pdf") or "paper.pdf")
    review = review_pdf_text(ctx, pdf_text(pdf))
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
