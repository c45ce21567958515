"""The runs of one idea: the coder edits the code for each planned run, the run executes, a
failure goes back to the coder with its error for a bounded number of fixes (then the researcher
decides, or the run is abandoned); each finished run goes into the notebook with its computed
effects and the model's review, is committed and tagged, and (with a front end) a checkpoint
asks whether to go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...coding.aider_model import aider_prompt_texts
from ...errors import Aborted, StageFailed
from ...provenance.run_analysis import RunReview, review_run
from ...runs.effect_text import effects_markdown
from ...stage_context import StageContext
from ...steps.attempts import (
    Attempted,
    HandEdit,
    abandon_run,
    attempt_run,
    code_files,
    failed_run_body,
    run_in_project,
)
from ...steps.lanes import IdeaRuns
from ...steps.settings_runs import settings_run
from ...workspace.artifacts import NOTES, PlannedRun
from ...workspace.notebook import (
    append_analysis,
    append_run,
    code_change,
    own_words,
    start_notebook,
)
from ...workspace.run_folder import finished_runs, run_name, run_number
from .run_text import run_body, run_effects


def _next_run_number(root: Path) -> int:
    done = [number for path in finished_runs(root) if (number := run_number(path)) is not None]
    return max(done, default=0) + 1


def run_idea(
    ctx: StageContext,
    idea: Any,
    planned: list[Any],
    baseline: dict[str, Any],
    runs: IdeaRuns,
) -> IdeaRuns:
    """The runs of one idea in ``ctx.project``: edit, run, fix, record, review, and (with a
    front end) a checkpoint between runs. ``runs`` fills as they finish. A run that fails every
    attempt is abandoned (its code reverted, the failure in notes.md) and the next planned run
    follows; only when no planned run succeeds does the stage fail."""
    root = ctx.project.root
    start_notebook(root, idea.title, idea.experiment, baseline)
    ctx.commit("notebook: start notes.md", [NOTES])
    coder = ctx.code_editor()
    first = _next_run_number(root)
    good = GoodCode(ctx.project.head(), "run_0")
    previous = f"The baseline (run_0) results are:\n{json.dumps(baseline, indent=1)}"
    abandoned: dict[str, str] = {}
    for index, step in enumerate(planned, 1):
        ctx.check_stop()
        run_id = run_name(first + index - 1)
        prompt = ctx.prompt(
            "experiment",
            title=idea.title,
            experiment=idea.experiment,
            run_id=run_id,
            planned=_planned_text(step, index, len(planned)),
            previous=previous,
            notes=ctx.notes_block(),
        )
        outcome = _run_until_decided(ctx, coder, run_id, prompt, index, good, step)
        if not outcome.ok:
            abandoned[run_id] = outcome.problem
            continue
        result, edit = outcome.ran()
        runs.last_edit = edit
        runs.means[run_id] = result.means
        review = _record_run(
            ctx, idea, outcome, good, baseline, list(runs.means), len(planned) - index
        )
        good = GoodCode(edit.commit.sha if edit.commit else ctx.project.head(), run_id)
        runs.last_review = review
        previous = f"{run_id} completed. Its results are:\n{json.dumps(result.means, indent=1)}"
        if index < len(planned) and review.next == "finish":
            ctx.say(f"the agent finished the experiments after {run_id}: {review.why}")
            break
        if index < len(planned) and not _continue_after(ctx, run_id, edit, review):
            break
    runs.abandoned.update(abandoned)
    if not runs.means:
        failed = "; ".join(f"{run_id}: {problem}" for run_id, problem in abandoned.items())
        raise StageFailed(
            f"no planned run of {idea.name} succeeded ({failed or 'none was run'})",
            f"notes.md says what was tried; fix {', '.join(code_files(ctx.project))} or revise "
            "the plan, then "
            "`labtui run` again, or raise [limits] fix_attempts",
        )
    return runs


@dataclass(frozen=True)
class GoodCode:
    """The last code that ran to the end, and the run that ran it: where a failed run goes back."""

    commit: str
    run_id: str


def _run_until_decided(
    ctx: StageContext,
    coder: Any,
    run_id: str,
    prompt: str,
    index: int,
    good: GoodCode,
    step: PlannedRun | None = None,
) -> Attempted:
    """One planned run's attempts; when they all fail, the run is abandoned and (in co-pilot
    mode) the researcher decides: retry with a note, edit the code and run that, skip to
    the next planned run, or abort. ``--auto`` and parallel ideas skip. A run that only
    changes settings is made by code, not asked of the coder (a revision note asks the coder)."""
    by_code = step is not None and bool(step.settings)
    while True:
        if by_code and step is not None:
            outcome = settings_run(ctx, run_id, step.settings, index=index)
        else:
            change = step.change if step is not None else ""
            outcome = attempt_run(ctx, coder, run_id, prompt, index=index, change=change)
        if outcome.ok:
            return outcome
        abandon_run(ctx, run_id, outcome, good.commit, good.run_id)
        decision, edited = _decide_after_failure(ctx, run_id, outcome, good)
        if decision.action == "abort":
            raise Aborted(decision.note or f"stopped after {run_id} failed; resumable")
        if edited is not None:
            return _run_researchers_code(ctx, run_id, index, good, edited)
        if decision.action != "revise":
            ctx.say(f"{run_id} skipped after {len(outcome.tried)} failed attempt(s)")
            return outcome
        prompt = (
            ctx.prompt("experiment_fix", run_id=run_id, problem=outcome.problem, stderr="")
            + ctx.notes_block()
        )
        by_code = False


def _decide_after_failure(
    ctx: StageContext, run_id: str, outcome: Attempted, good: GoodCode
) -> tuple[Any, Any]:
    """The researcher's decision about a failed run, and the commit of their edit of
    the code when they made one (an edit that changed nothing asks again)."""
    while True:
        decision = ctx.ask(
            f"experiments: {run_id} failed {len(outcome.tried)} attempt(s)",
            failed_run_body(run_id, outcome, good.run_id, code_files(ctx.project)),
            kind="run",
            product=code_files(ctx.project)[0],
            options=("revise", "edit", "skip", "abort"),
            return_edit=True,
        )
        if decision.action != "edit":
            return decision, None
        edited = ctx.keep_edit(code_files(ctx.project)[0])
        if edited is not None:
            return decision, edited


def _run_researchers_code(
    ctx: StageContext, run_id: str, index: int, good: GoodCode, commit: Any
) -> Attempted:
    """The researcher edited the code at the failed run's checkpoint: run it as this run."""
    result = run_in_project(ctx, run_id, commit.sha, index)
    edit = HandEdit(commit)
    if result.ok:
        return Attempted(result=result, edit=edit)
    outcome = Attempted(edit=edit, problem=result.problem, tried=[f"your code: {result.problem}"])
    abandon_run(ctx, run_id, outcome, good.commit, good.run_id)
    return outcome


def _record_run(
    ctx: StageContext,
    idea: Any,
    outcome: Attempted,
    before: GoodCode,
    baseline: dict[str, Any],
    done: list[str],
    remaining: int,
) -> RunReview:
    """A finished run into the notebook (numbers and the code change computed, the coder's own
    words beside them, the analysis checked against the numbers), a commit and a tag; the
    model's review of it, which may end the runs."""
    root, (result, edit) = ctx.project.root, outcome.ran()
    run_id = result.run_id
    found = run_effects(root, run_id)
    explanation = own_words(edit.explanation, [*outcome.sent, *aider_prompt_texts()])
    append_run(
        root,
        run_id,
        what_changed=explanation,
        computed=_code_changes(ctx, before.commit) + f" (against {before.run_id}'s code)",
        results=effects_markdown(found),
        commit=edit.commit.sha if edit.commit else ctx.project.head(),
        wall_s=result.wall_s,
    )
    review = review_run(ctx, idea.title, run_id, explanation, found, done=done, remaining=remaining)
    append_analysis(root, run_id, review.notebook_text(), f"{review.next}: {review.why}")
    ctx.commit(f"experiments: {run_id} results for {idea.name}", [run_id, NOTES])
    ctx.project.tag(f"labtui/{idea.name}/{run_id}", f"{run_id} of {idea.name}")
    return review


def _code_changes(ctx: StageContext, since: str) -> str:
    """What changed in the experiment's code since commit ``since``, computed file by file."""
    changes = []
    for name in code_files(ctx.project):
        old = ctx.project.file_at(since, name) or ""
        new = (ctx.project.root / name).read_text(encoding="utf-8")
        if old != new:
            changes.append(code_change(old, new, name))
    return "; ".join(changes) or "no change to the code"


def _continue_after(ctx: StageContext, run_id: str, edit: Any, review: Any) -> bool:
    """The checkpoint between runs: approve goes on, a revision note reaches the next run's
    prompt, an edit of the code is kept for the next run, skip stops the runs here (the
    stage's own checkpoint follows), abort stops safely. The last run is judged by the stage's
    checkpoint, so it is not asked twice."""
    decision = ctx.ask(
        f"experiments: {run_id} done — continue with the next run?",
        run_body(ctx.project.root, run_id, edit, review=review)
        + "\n\n*s stops the runs here; r gives the next run a note; e edits the code.*",
        kind="run",
        product=code_files(ctx.project)[0],
    )
    if decision.action == "abort":
        raise Aborted(decision.note or "stopped between runs; the project is resumable")
    if decision.action == "skip":
        ctx.say(f"runs stopped after {run_id} by the researcher")
        return False
    return True


def _planned_text(step: Any, index: int, total: int) -> str:
    if step is None:
        return ""
    return (
        f"\nThis is run {index} of {total} in the approved plan. It changes: {step.change}\n"
        f"It measures: {step.measure}\n"
    )
