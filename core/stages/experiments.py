"""Experiments: aider edits experiment.py for the chosen idea, the run executes, failures go back
to aider with the error tail for a bounded number of fix attempts. Every edit and every run's
results are commits; each successful run gets a tag and a notebook entry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Aborted, StageFailed
from ..events import Event
from ..notebook import append_analysis, append_run, metrics_table, start_notebook
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
        )
        if result.ok:
            return result, edit
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

    root = ctx.project.root
    idea = chosen_idea(ctx)
    baseline = ensure_baseline(ctx)
    max_runs = max(1, ctx.config.limits.max_runs)
    # The approved (or edited) plan decides the runs; a project planned before plans existed
    # gets max_runs runs chosen one at a time.
    planned = load_plan(root, max_runs) or [None] * max_runs
    start_notebook(root, idea.title, idea.experiment, baseline)
    ctx.commit("notebook: start notes.md", ["notes.md"])
    coder = ctx.coder()
    first = _next_run_number(root)
    runs: dict[str, dict[str, Any]] = {}
    previous = f"The baseline (run_0) results are:\n{json.dumps(baseline, indent=1)}"
    for index, step in enumerate(planned, 1):
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
        last_edit = edit
        runs[run_id] = result.means
        review = _record_run(ctx, idea, result, edit, baseline, list(runs), len(planned) - index)
        previous = f"{run_id} completed. Its results are:\n{json.dumps(result.means, indent=1)}"
        if index < len(planned) and review.next == "finish":
            ctx.say(f"the agent finished the experiments after {run_id}: {review.why}")
            break
        if index < len(planned) and not _continue_after(ctx, run_id, result.means, baseline, edit):
            break
    last = list(runs)[-1]
    return StageOutput(
        summary=f"{len(runs)} run(s) for {idea.name}; last {last}",
        result={"idea": idea.name, "runs": list(runs), "means": runs, "baseline": baseline},
        checkpoint_body=_run_body(last, runs[last], baseline, last_edit),
        kind="run",
        product="experiment.py",
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


def _run_body(run_id: str, means: dict[str, Any], baseline: dict[str, Any], edit: Any) -> str:
    """What the researcher judges about a run: its numbers against the baseline, and its code."""
    return (
        f"Results of {run_id} against the baseline:\n\n"
        + metrics_table(means, baseline)
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
