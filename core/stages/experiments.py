"""Experiments: aider edits experiment.py for the chosen idea, the run executes, failures go back
to aider with the error tail for a bounded number of fix attempts. Every edit and every run's
results are commits; each successful run gets a tag and a notebook entry.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import Aborted, StageFailed
from ..events import Event
from ..notebook import append_analysis, append_run, metrics_table, start_notebook
from ..parallel import (
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
from ..project import Project
from ..stage_context import StageContext, StageOutput


def run_baseline(project: Project, emit: Callable[[Event], None]) -> Any:
    """run_0 with the template's code as it is: the reference every later run is compared to."""
    from ..runner import run_experiment

    result = run_experiment(
        project.root,
        "run_0",
        python=project.config.python,
        timeout_s=project.config.limits.run_timeout_s,
        emit=emit,
        stage="experiments",
        commit=project.head(),
        sandbox=project.config.sandbox,
    )
    if result.ok:
        project.commit("baseline: run_0 results", ["run_0"])
    return result


def _baseline_means(root: Path) -> dict[str, Any]:
    from ..runner import read_final_info

    _, means, problem = read_final_info(root / "run_0")
    if problem:
        raise StageFailed(
            f"the baseline is unusable: {problem}",
            "delete run_0/ and run `labtui run` again to redo the baseline",
        )
    return means


def _next_run_number(root: Path) -> int:
    numbers = [int(p.name[4:]) for p in root.glob("run_*") if p.name[4:].isdigit()]
    done = [n for n in numbers if (root / f"run_{n}" / "final_info.json").exists()]
    return max(done, default=0) + 1


def ensure_baseline(ctx: StageContext) -> dict[str, Any]:
    root = ctx.project.root
    if not (root / "run_0" / "final_info.json").exists():
        ctx.say("no baseline yet: running run_0 with the template's code")
        result = run_baseline(ctx.project, ctx.emit)
        if not result.ok:
            raise StageFailed(
                f"the baseline run_0 failed: {result.problem}",
                "fix experiment.py so that `python experiment.py --out_dir=run_0` works",
            )
    return _baseline_means(root)


def _attempt_run(ctx: StageContext, coder, run_id: str, prompt: str, index: int = 0):
    """Edit, run, feed errors back: up to [limits] fix_attempts tries. Returns (result, edit)."""
    from ..runner import run_experiment

    attempts = max(1, ctx.config.limits.fix_attempts)
    for attempt in range(1, attempts + 1):
        ctx.check_stop()
        edit = coder.edit(
            ["experiment.py"],
            prompt,
            commit_message=f"experiments: {run_id} code (attempt {attempt})",
            read_only=["notes.md"],
        )
        if not edit.changed:
            ctx.say(f"{run_id} attempt {attempt}: the edit changed nothing ({edit.error})")
            prompt = ctx.prompt("experiment_noop", error=edit.error or "no file changed")
            continue
        result = run_experiment(
            ctx.project.root,
            run_id,
            python=ctx.config.python,
            timeout_s=ctx.config.limits.run_timeout_s,
            emit=ctx.emit,
            stage=ctx.stage,
            commit=edit.commit.sha if edit.commit else ctx.project.head(),
            index=index,
            total=max(1, ctx.config.limits.max_runs),
            sandbox=ctx.config.sandbox,
            stop=ctx.stop,
        )
        if result.ok:
            return result, edit
        ctx.check_stop()
        ctx.say(f"{run_id} attempt {attempt} failed: {result.problem}")
        prompt = ctx.prompt(
            "experiment_fix",
            run_id=run_id,
            problem=result.problem,
            stderr=result.stderr_tail[-1500:],
        )
    raise StageFailed(
        f"{run_id} did not succeed in {attempts} attempt(s)",
        "read the log pane, then `labtui run` to retry, or raise [limits] fix_attempts",
    )


def run(ctx: StageContext) -> StageOutput:
    from .plan import chosen_idea, load_plan

    idea = chosen_idea(ctx)
    baseline = ensure_baseline(ctx)
    max_runs = max(1, ctx.config.limits.max_runs)
    # The approved (or edited) plan decides the runs; a project planned before plans existed
    # gets max_runs runs chosen one at a time.
    planned = load_plan(ctx.project.root, max_runs) or [None] * max_runs
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
    result: dict[str, Any] = {
        "idea": idea.name,
        "runs": list(runs.means),
        "means": runs.means,
        "baseline": baseline,
    }
    if outcomes:
        result["parallel"] = {name: o.to_dict() for name, o in outcomes.items()}
    return StageOutput(
        summary=f"{len(runs.means)} run(s) for {idea.name}; last {last}"
        + (f"; {len(outcomes)} idea(s) beside it" if outcomes else ""),
        result=result,
        checkpoint_body=_run_body(
            last,
            runs.means[last],
            baseline,
            runs.last_edit,
            beside=_parallel_body(idea.name, runs, outcomes, baseline),
        ),
        kind="run",
        product="experiment.py",
    )


def run_idea(
    ctx: StageContext,
    idea: Any,
    planned: list[Any],
    baseline: dict[str, Any],
    runs: IdeaRuns,
) -> IdeaRuns:
    """The runs of one idea in ``ctx.project``: edit, run, fix, record, review, and (with a
    front end) a checkpoint between runs. ``runs`` fills as they finish."""
    root = ctx.project.root
    start_notebook(root, idea.title, idea.experiment, baseline)
    ctx.commit("notebook: start notes.md", ["notes.md"])
    coder = ctx.coder()
    first = _next_run_number(root)
    previous = f"The baseline (run_0) results are:\n{json.dumps(baseline, indent=1)}"
    for index, step in enumerate(planned, 1):
        ctx.check_stop()
        run_id = f"run_{first + index - 1}"
        prompt = ctx.prompt(
            "experiment",
            title=idea.title,
            experiment=idea.experiment,
            run_id=run_id,
            planned=_planned_text(step, index, len(planned)),
            previous=previous,
            notes=ctx.notes_block(),
        )
        result, edit = _attempt_run(ctx, coder, run_id, prompt, index=index)
        runs.last_edit = edit
        runs.means[run_id] = result.means
        review = _record_run(
            ctx, idea, result, edit, baseline, list(runs.means), len(planned) - index
        )
        previous = f"{run_id} completed. Its results are:\n{json.dumps(result.means, indent=1)}"
        if index < len(planned) and review.next == "finish":
            ctx.say(f"the agent finished the experiments after {run_id}: {review.why}")
            break
        if index < len(planned) and not _continue_after(ctx, run_id, result.means, baseline, edit):
            break
    return runs


def _open_lanes(
    ctx: StageContext, chosen: Any, stop: threading.Event
) -> dict[str, tuple[StageContext, Any, IdeaRuns]]:
    """A worktree and a context for each idea to run beside ``chosen`` (none without
    ``[experiment] parallel`` above 1)."""
    from ..ideas import load_archive

    wanted = max(1, ctx.config.experiment.parallel) - 1
    if not wanted:
        return {}
    ranked = ctx.result_of("ideas").get("ideas") or []
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
    from .plan import load_plan, propose_plan

    max_runs = max(1, lane.config.limits.max_runs)
    planned = load_plan(lane.project.root, max_runs) if _planned_for(lane, idea) else []
    if not planned:
        planned = propose_plan(lane, idea, baseline)
    run_idea(lane, idea, planned, baseline, runs)


def _planned_for(lane: StageContext, idea: Any) -> bool:
    """Whether the lane's plan.json is this idea's own (and not the chosen idea's, inherited)."""
    from .plan import PLAN

    try:
        data = json.loads((lane.project.root / PLAN).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and data.get("idea") == idea.name


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


def _record_run(
    ctx: StageContext,
    idea: Any,
    result: Any,
    edit: Any,
    baseline: dict[str, Any],
    done: list[str],
    remaining: int,
) -> RunReview:
    """A finished run into the notebook (numbers by code, analysis by the model), a commit and
    a tag; the model's review of it, which may end the runs."""
    root, run_id = ctx.project.root, result.run_id
    append_run(
        root,
        run_id,
        what_changed=edit.explanation,
        means=result.means,
        baseline=baseline,
        commit=edit.commit.sha,
        wall_s=result.wall_s,
    )
    review = review_run(
        ctx, idea.title, run_id, edit.explanation, result.means, baseline,
        done=done, remaining=remaining,
    )  # fmt: skip
    append_analysis(root, run_id, review.analysis, f"{review.next}: {review.why}")
    ctx.commit(f"experiments: {run_id} results for {idea.name}", [run_id, "notes.md"])
    ctx.project.tag(f"labtui/{idea.name}/{run_id}", f"{run_id} of {idea.name}")
    return review


@dataclass(frozen=True)
class RunReview:
    analysis: str  # for the notebook: what the numbers show
    next: str  # continue | finish
    why: str


def parse_run_review(data: Any) -> RunReview:
    if not isinstance(data, dict):
        raise ValueError('answer {"analysis": "...", "next": "continue" or "finish", "why": "..."}')
    analysis, nxt, why = data.get("analysis"), data.get("next"), data.get("why")
    if not isinstance(analysis, str) or not analysis.strip():
        raise ValueError('"analysis" must be a non-empty string')
    if nxt not in ("continue", "finish"):
        raise ValueError(f'"next" must be "continue" or "finish", not {nxt!r}')
    if not isinstance(why, str) or not why.strip():
        raise ValueError('"why" must be a non-empty string')
    return RunReview(analysis.strip(), nxt, why.strip())


def review_run(
    ctx: StageContext,
    title: str,
    run_id: str,
    what_changed: str,
    means: dict[str, Any],
    baseline: dict[str, Any],
    *,
    done: list[str],
    remaining: int,
) -> RunReview:
    """The results go back to the model: an analysis for the notebook, and go on or finish."""
    prompt = ctx.prompt(
        "experiment_review",
        run_id=run_id,
        title=title,
        what_changed=what_changed.strip() or "(no description)",
        results=metrics_table(means, baseline),
        done=", ".join(done) or "none",
        remaining=remaining,
    )
    review = ctx.llm(role="experimenter").ask_json(
        [{"role": "user", "content": prompt}], parse_run_review
    )
    ctx.tell("experimenter", f"{review.analysis}\n\n**{review.next}**: {review.why}")
    return review


def _run_body(
    run_id: str, means: dict[str, Any], baseline: dict[str, Any], edit: Any, beside: str = ""
) -> str:
    """What the researcher judges about a run: its numbers against the baseline (and against
    the ideas run ``beside`` it), then its code."""
    return (
        f"Results of {run_id} against the baseline:\n\n"
        + metrics_table(means, baseline)
        + beside
        + _diff_block(f"The code of {run_id}", edit.commit)
    )


def _continue_after(
    ctx: StageContext, run_id: str, means: dict[str, Any], baseline: dict[str, Any], edit: Any
) -> bool:
    """The checkpoint between runs: approve goes on, a revision note reaches the next run's
    prompt, an edit of experiment.py is kept for the next run, skip stops the runs here (the
    stage's own checkpoint follows), abort stops safely. The last run is judged by the stage's
    checkpoint, so it is not asked twice."""
    decision = ctx.ask(
        f"experiments: {run_id} done — continue with the next run?",
        _run_body(run_id, means, baseline, edit)
        + "\n\n*s stops the runs here; r gives the next run a note; e edits experiment.py.*",
        kind="run",
        product="experiment.py",
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
