"""Experiments: aider edits the experiment's code (experiment.py, or what ``[experiment] edit``
names) for the chosen idea, the run executes, failures go back
to aider with the error tail for a bounded number of fix attempts. Every edit and every run's
results are commits; each successful run gets a tag and a notebook entry.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..coding.coder import aider_prompt_texts
from ..errors import Aborted, StageFailed
from ..provenance.run_analysis import RunReview, review_run
from ..runs.effect_text import effects_markdown
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..stage_results import ExperimentsResult, IdeasResult
from ..steps.attempts import (
    Attempted,
    HandEdit,
    abandon_run,
    attempt_run,
    code_files,
    failed_run_body,
    run_in_project,
)
from ..steps.baseline import ensure_baseline
from ..steps.lanes import (
    IdeaRuns,
    LaneOutcome,
    comparison_markdown,
    lane_branch,
    lane_ideas,
    mark_fork_point,
    open_lane,
    outcome,
    run_alongside,
)
from ..steps.planning import chosen_idea, propose_plan
from ..workspace.artifacts import NOTES, PlannedRun, load_plan, planned_idea
from ..workspace.notebook import append_analysis, append_run, code_change, own_words, start_notebook
from ..workspace.project import CommitInfo
from ..workspace.run_folder import finished_runs, recorded_means, run_name, run_number


def _next_run_number(root: Path) -> int:
    done = [number for path in finished_runs(root) if (number := run_number(path)) is not None]
    return max(done, default=0) + 1


def run(ctx: StageContext) -> StageOutput:
    idea = chosen_idea(ctx)
    baseline = ensure_baseline(ctx)
    if ctx.config.experiment.strategy != "plan":
        return _search(ctx, idea, baseline)
    max_runs = max(1, ctx.config.limits.max_runs)
    # The approved (or edited) plan decides the runs; a project planned before plans existed
    # gets max_runs runs chosen one at a time.
    planned: list[PlannedRun | None] = list(load_plan(ctx.project.root, max_runs))
    planned = planned or [None] * max_runs
    mark_fork_point(ctx.project)
    runs, stop = IdeaRuns(), threading.Event()
    lanes = _open_lanes(ctx, idea, stop)
    _, ended = run_alongside(
        lambda: run_idea(ctx, idea, planned, baseline, runs),
        {name: partial(_run_lane, *lane, baseline) for name, lane in lanes.items()},
        stop,
    )
    outcomes = {
        name: outcome(lane.project, name, done, ended[name])
        for name, (lane, _, done) in lanes.items()
    }
    last = list(runs.means)[-1]
    result = ExperimentsResult(
        idea=idea.name,
        runs=list(runs.means),
        means=runs.means,
        baseline=baseline,
        abandoned=dict(runs.abandoned),
        parallel={name: o.to_dict() for name, o in outcomes.items()},
    )
    return StageOutput(
        summary=f"{len(runs.means)} run(s) for {idea.name}; last {last}"
        + (f"; {len(runs.abandoned)} abandoned" if runs.abandoned else "")
        + (f"; {len(outcomes)} idea(s) beside it" if outcomes else ""),
        result=result,
        checkpoint_body=_run_body(
            ctx.project.root,
            last,
            runs.last_edit,
            review=runs.last_review,
            beside=_abandoned_body(runs.abandoned)
            + _parallel_body(idea.name, runs, outcomes, baseline),
        ),
        kind="run",
        product=code_files(ctx.project)[0],
    )


def _search(ctx: StageContext, idea: Any, baseline: dict[str, Any]) -> StageOutput:
    """A hill-climb or a tree search instead of the plan's runs (core/search/climb.py,
    core/search/tree.py): it ends with its best code merged into the project."""
    from ..search.climb import run_climb
    from ..search.tree import run_tree

    strategy = ctx.config.experiment.strategy
    if ctx.config.experiment.parallel > 1:
        ctx.say(
            f"[experiment] parallel runs other ideas beside a plan only; the {strategy} "
            "searches the chosen idea"
            + (" with [tree] workers at once" if strategy == "tree" else "")
        )
    outcome = (run_climb if strategy == "climb" else run_tree)(ctx, idea, baseline)
    means = {run: recorded_means(ctx.project.root / run) for run in outcome.runs}
    final = outcome.final
    best = (
        f"best {outcome.target.key} {final.best_value:.6g} (step {final.best_step})"
        if final.best_step
        else "nothing beat the baseline beyond the noise"
    )
    return StageOutput(
        summary=f"{strategy}: {len(outcome.steps)} step(s) for {idea.name}; {best}",
        result=outcome.result(baseline, means),
        checkpoint_body=outcome.summary
        + _diff_block(
            "The best code against the code the search started from",
            CommitInfo(final.commit, "", [], outcome.best_diff) if final.best_step else None,
        ),
        kind="search",
    )


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
    coder = ctx.coder()
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
        change = step.change if step is not None else ""
        outcome = _run_until_decided(ctx, coder, run_id, prompt, index, good, change)
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
    change: str = "",
) -> Attempted:
    """One planned run's attempts; when they all fail, the run is abandoned and (in co-pilot
    mode) the researcher decides: retry with a note, edit the code and run that, skip to
    the next planned run, or abort. ``--auto`` and parallel ideas skip."""
    while True:
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


def _open_lanes(
    ctx: StageContext, chosen: Any, stop: threading.Event
) -> dict[str, tuple[StageContext, Any, IdeaRuns]]:
    """A worktree and a context for each idea to run beside ``chosen`` (none without
    ``[experiment] parallel`` above 1)."""
    from ..workspace.ideas import load_archive

    wanted = max(1, ctx.config.experiment.parallel) - 1
    if not wanted:
        return {}
    ranked = ctx.result(IdeasResult).ideas
    ideas = lane_ideas(load_archive(ctx.project.root), ranked, chosen.name, wanted)
    if len(ideas) < wanted:
        ctx.say(
            f"parallel = {wanted + 1}, but only {len(ideas)} other idea(s) can run beside "
            f"{chosen.name}; ask for more ideas at the ideas checkpoint to fill the lanes"
        )
    lanes = {}
    for idea in ideas:
        lane = ctx.for_lane(open_lane(ctx.project, idea.name), idea.name, stop)
        lane.say(
            f"runs beside {chosen.name} in {lane.project.root} (branch {lane_branch(idea.name)})"
        )
        lanes[idea.name] = (lane, idea, IdeaRuns())
    return lanes


def _run_lane(lane: StageContext, idea: Any, runs: IdeaRuns, baseline: dict[str, Any]) -> None:
    """One parallel idea from plan to last run, without pausing: the researcher judges it at
    the stage's checkpoint, from the comparison table and its branch."""
    max_runs = max(1, lane.config.limits.max_runs)
    planned = load_plan(lane.project.root, max_runs) if _planned_for(lane, idea) else []
    if not planned:
        planned = propose_plan(lane, idea, baseline)
    run_idea(lane, idea, planned, baseline, runs)


def _planned_for(lane: StageContext, idea: Any) -> bool:
    """Whether the lane's plan.json is this idea's own (and not the chosen idea's, inherited)."""
    return planned_idea(lane.project.root) == idea.name


def _abandoned_body(abandoned: dict[str, str]) -> str:
    if not abandoned:
        return ""
    lines = "\n".join(f"- `{run_id}`: {problem}" for run_id, problem in abandoned.items())
    return f"\n\nAbandoned after every fix attempt (see notes.md):\n\n{lines}"


def _parallel_body(
    chosen: str, runs: IdeaRuns, outcomes: dict[str, LaneOutcome], baseline: dict[str, Any]
) -> str:
    if not outcomes:
        return ""
    finals = {f"**{chosen}** (this project)": runs.means[list(runs.means)[-1]]}
    lines = []
    for name, lane in outcomes.items():
        if lane.runs:
            finals[f"{name} ({list(lane.runs)[-1]})"] = lane.runs[list(lane.runs)[-1]]
        state = lane.status + (f": {lane.problem}" if lane.problem else "")
        lines.append(f"- `{name}`: {len(lane.runs)} run(s), {state} — branch `{lane.branch}`")
    return (
        "\n\nIdeas run in parallel (last run of each):\n\n"
        + comparison_markdown(baseline, finals)
        + "\n\n"
        + "\n".join(lines)
    )


def run_effects(root: Path, run_id: str) -> list[Any]:
    """The run's effects against the baseline, computed (core.runs.effects)."""
    from ..runs.effects import effects_of_runs, metric_directions

    return effects_of_runs(root / run_id, root / "run_0", metric_directions(root))


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


def _run_body(root: Path, run_id: str, edit: Any, beside: str = "", review: Any = None) -> str:
    """What the researcher judges about a run: its effects against the baseline, computed,
    what the checks kept out of its analysis (and the ideas run ``beside`` it), then its code."""
    withheld = (
        "\n\n**Withheld from the notebook:**\n\n" + "\n".join(f"- {w}" for w in review.withheld)
        if review is not None and review.withheld
        else ""
    )
    return (
        f"Results of {run_id} against the baseline:\n\n"
        + effects_markdown(run_effects(root, run_id))
        + withheld
        + beside
        + _diff_block(f"The code of {run_id}", edit.commit)
    )


def _continue_after(ctx: StageContext, run_id: str, edit: Any, review: Any) -> bool:
    """The checkpoint between runs: approve goes on, a revision note reaches the next run's
    prompt, an edit of the code is kept for the next run, skip stops the runs here (the
    stage's own checkpoint follows), abort stops safely. The last run is judged by the stage's
    checkpoint, so it is not asked twice."""
    decision = ctx.ask(
        f"experiments: {run_id} done — continue with the next run?",
        _run_body(ctx.project.root, run_id, edit, review=review)
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


SHOWN_DIFF_LINES = 60


def _diff_block(heading: str, commit: Any) -> str:
    """The run's code change as a fenced diff (clipped: the whole diff is in git)."""
    if commit is None or not commit.diff.strip():
        return ""
    lines = commit.diff.rstrip().splitlines()
    more = len(lines) - SHOWN_DIFF_LINES
    shown = "\n".join(lines[:SHOWN_DIFF_LINES]) + (f"\n… {more} more lines" if more > 0 else "")
    return f"\n\n{heading} (commit `{commit.sha[:8]}`):\n\n```diff\n{shown}\n```\n"


def _resumes_in_place(config: Any) -> bool:
    """A search's ledger says which steps are done: a killed search goes on from there."""
    return config.experiment.strategy != "plan"


STAGE = DeclaredStage("experiments", run, resumes=_resumes_in_place)
