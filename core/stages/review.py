"""Review: the compiled paper reviewed by ``[review] ensemble`` reviewers and an Area Chair
(``core.review.reviewer``) into ``review.json``; the mean Overall goes back into the idea archive.
The write-up's gaps the researcher did not waive make the paper a Reject whatever the reviewers
said (``core.review.facts``).

An improvement round (``[review] improvements`` of them before the checkpoint, and one more per
`improve` at it) sends the meta-review to aider with the writer's model, traces the revised
paper's numbers, recompiles it with the compile loop and reviews it again; review.json keeps each
round's scores before and after. A round whose paper does not compile, or that brings numbers no
run produced, is undone: the paper stays as it was.
"""

from __future__ import annotations

import json

from ..checkpoints import IMPROVE
from ..coding.edit_guard import PAPER_ONLY
from ..errors import LabtuiError, StageFailed
from ..pdf.document import page_count
from ..provenance.checks import text_contradiction
from ..provenance.record import load_waivers
from ..review.facts import FactSheet, Reviewed, capped_panel, project_facts
from ..review.record import (
    Improvement,
    ReviewRecord,
    UndoneRound,
    read_review_record,
    save_review_record,
)
from ..review.reviewer import read_paper, rejection_note, review_panel, reviewer_facts
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import (
    IDEAS,
    NOTES,
    PAPER_REVIEW,
    PDF,
    PROVENANCE,
)
from ..workspace.ideas import load_archive, save_archive
from ..workspace.stage_results import ExperimentsResult, ReviewResult
from ..writeup.compile_rounds import compile_paper
from ..writeup.completeness import gap_key, project_gaps
from ..writeup.number_trace import trace_numbers


def run(ctx: StageContext) -> StageOutput:
    earlier = _earlier_review(ctx)
    done, undone = (list(earlier.improvements), list(earlier.undone)) if earlier else ([], [])
    record = _record(ctx, _review(ctx), done, undone)
    owed = ctx.config.review.improvements - record.rounds
    for _ in range(owed):
        record = _improvement_round(ctx, record, note="")
    return _output(record)


def improve(ctx: StageContext, output: StageOutput, note: str) -> StageOutput:
    """The checkpoint's `improve`: one more improvement round, then the checkpoint again."""
    record = ReviewRecord.from_json(output.details, "the review checkpoint's details")
    return _output(_improvement_round(ctx, record, note))


def _earlier_review(ctx: StageContext) -> ReviewRecord | None:
    """The review.json an earlier run left (its improvement rounds count); None when there is
    none, or none that can be read (said: this review writes it anew)."""
    try:
        return read_review_record(ctx.project.root)
    except LabtuiError as exc:
        ctx.say(f"{exc.message}; its improvement rounds are not counted")
        return None


def _review(ctx: StageContext) -> Reviewed:
    """The panel's review of the compiled paper, given the facts code established about it
    first (core/review/facts.py), its scores capped where the facts bound them."""
    root = ctx.project.root
    if _compiled_before_the_last_edit(ctx):
        ctx.say(
            f"{ctx.config.paper.tex} changed after {PDF} was compiled: compiling it again first"
        )
        compile_paper(ctx, f"review: {PDF} of the paper as it stands ({{pages}} pages)")
    paper = read_paper(root / PDF)
    facts = _facts(ctx, paper)
    settings = ctx.config.review
    ctx.say(
        f"reviewing {len(paper):,} characters: {settings.ensemble} reviewer(s), "
        f"{settings.reflections} reflection round(s), {settings.few_shot} example(s)"
    )
    panel = review_panel(
        ctx.llm(role="reviewer"),
        ctx.prompt,
        paper,
        settings,
        notes=f"{facts.text()}\n{ctx.notes_block()}",
        examples_root=root,
        progress=ctx.say,
        check_summary=lambda summary: text_contradiction(root, summary),
    )
    reviewed = capped_panel(panel, facts)
    for change in reviewed.capped:
        ctx.say(change.said)
    if reviewed.panel.rejected_because:
        ctx.say(rejection_note(reviewed.panel.rejected_because))
    return reviewed


def _facts(ctx: StageContext, paper: str) -> FactSheet:
    """What code establishes about the project's paper before a model reads it: its open gaps
    (those the researcher waived at the write-up's checkpoint are accepted, not open) reject it
    whatever its reviews say."""
    root = ctx.project.root
    tex = root / ctx.config.paper.tex
    waived = load_waivers(root)
    gaps = [] if ctx.config.paper.sections else project_gaps(root, tex)
    gaps = [gap for gap in gaps if gap_key(gap) not in waived]
    try:
        provenance = json.loads((root / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        provenance = {}
    return project_facts(paper, page_count(root / PDF), root, gaps, provenance)


def _compiled_before_the_last_edit(ctx: StageContext) -> bool:
    """Whether the LaTeX was committed after the PDF last was (an improvement round cut short
    by a crash, say), so that the PDF is not the paper as it stands."""
    git = ctx.project.repo.git
    compiled = git.log("-1", "--format=%H", "--", PDF)
    return bool(compiled and git.diff("--name-only", compiled, "HEAD", "--", ctx.config.paper.tex))


def _record(
    ctx: StageContext,
    reviewed: Reviewed,
    improvements: list[Improvement],
    undone: list[UndoneRound],
) -> ReviewRecord:
    """review.json written and committed with the idea's new Score: the panel's review with the
    facts it was given and the caps they set, the rounds that improved the paper (scores before
    and after) and the rounds undone (why)."""
    root = ctx.project.root
    panel = reviewed.panel
    reviewer = reviewer_facts(ctx.model("review").name, ctx.config.review)
    record = ReviewRecord.of(reviewed, reviewer=reviewer, improvements=improvements, undone=undone)
    save_review_record(root, record)
    idea_name = ctx.result(ExperimentsResult).idea
    archive = load_archive(root)
    for idea in archive:
        if idea.name == idea_name:
            idea.score = panel.overall
            idea.status = "done"
    save_archive(root, archive)
    ctx.commit(f"review: {panel.decision}, overall {panel.overall:.2f}/10", [PAPER_REVIEW, IDEAS])
    return record


def _improvement_round(ctx: StageContext, record: ReviewRecord, note: str) -> ReviewRecord:
    number = record.rounds + 1
    before = ctx.project.head()
    coder = ctx.coder(model_of="writeup")
    meta = record.meta().markdown()
    asks = f"\nThe researcher adds: {note}\n" if note.strip() else ""
    edit = coder.edit(
        [ctx.config.paper.tex],
        ctx.prompt("review_improve", round=number, review=meta, note=asks),
        commit_message=f"review: improvement round {number}",
        read_only=[NOTES],
        policy=PAPER_ONLY,
    )
    if not edit.changed:
        ctx.say(f"improvement round {number} changed nothing ({edit.error}); review unchanged")
        return record
    untraced = trace_numbers(ctx, coder)
    if untraced:
        numbers = ", ".join(w.text for w in untraced)
        return _undo(ctx, record, before, number, f"it brought numbers no run produced: {numbers}")
    try:
        compiled = compile_paper(
            ctx, f"review: {PDF} after improvement round {number} ({{pages}} pages)"
        )
    except StageFailed as exc:
        return _undo(ctx, record, before, number, exc.message)
    reviewed = _review(ctx)
    scores = Improvement(
        round=number,
        before=record.means(),
        after={name: mean for name, (mean, _) in reviewed.panel.scores().items()},
        commit=ctx.project.head()[:8],
        pages=compiled.pages,
    )
    ctx.say(
        f"improvement round {number}: overall {record.overall:.2f} → "
        f"{reviewed.panel.overall:.2f}/10"
    )
    return _record(ctx, reviewed, [*record.improvements, scores], list(record.undone))


def _undo(
    ctx: StageContext, record: ReviewRecord, before: str, number: int, why: str
) -> ReviewRecord:
    """The paper (and its provenance) as they were before the round; the PDF that compiled last
    is still the paper's. review.json says which round was undone and why."""
    git = ctx.project.repo.git
    for path in (ctx.config.paper.tex, PROVENANCE):
        if git.ls_tree("--name-only", before, path):  # (older projects lack provenance.json)
            git.checkout(before, "--", path)
    record = record.with_undone(number, why)
    save_review_record(ctx.project.root, record)
    ctx.commit(
        f"review: undo improvement round {number}: {why}"[:200],
        [ctx.config.paper.tex, PROVENANCE, PAPER_REVIEW],
    )
    ctx.say(f"undid improvement round {number}: {why}")
    return record


def _output(record: ReviewRecord) -> StageOutput:
    rounds = record.improvements
    summary = f"{record.decision}, overall {record.overall:.2f}/10"
    if rounds:
        summary += f" (was {rounds[0].before['Overall']:.2f} before {len(rounds)} round(s))"
    return StageOutput(
        summary=summary,
        result=ReviewResult(
            overall=record.overall,
            decision=record.decision,
            review=PAPER_REVIEW,
            improvements=len(rounds),
        ),
        checkpoint_body=record.markdown()
        + "\n*a accepts · i runs an improvement round (revise, recompile, review again) · "
        "q stops*",
        kind="review",
        details=record.to_json(),
        extra_actions=(IMPROVE,),
    )


STAGE = DeclaredStage("review", run, actions={IMPROVE: improve})
