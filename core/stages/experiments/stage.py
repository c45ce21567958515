"""Experiments: the chosen idea's planned runs (``idea_runs``), with other ideas run beside it
(``parallel_ideas``), or a hill-climb or a tree search instead (``[experiment] strategy``). Every
edit and every run's results are commits; each successful run gets a tag and a notebook entry.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from ...search.climb import run_climb
from ...search.tree import run_tree
from ...stage_context import StageContext, StageOutput
from ...stage_protocol import DeclaredStage
from ...steps.attempts import code_files
from ...steps.baseline import ensure_baseline
from ...steps.lanes import IdeaRuns, mark_fork_point, outcome, run_alongside
from ...steps.planning import chosen_idea
from ...workspace.artifacts import PlannedRun, load_plan
from ...workspace.project import CommitInfo
from ...workspace.run_folder import recorded_means
from ...workspace.stage_results import ExperimentsResult
from .idea_runs import run_idea
from .parallel_ideas import lanes_beside, parallel_body, run_lane
from .run_text import abandoned_body, diff_block, run_body


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
    lanes = lanes_beside(ctx, idea, stop)
    _, ended = run_alongside(
        lambda: run_idea(ctx, idea, planned, baseline, runs),
        {name: partial(run_lane, *lane, baseline) for name, lane in lanes.items()},
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
        checkpoint_body=run_body(
            ctx.project.root,
            last,
            runs.last_edit,
            review=runs.last_review,
            beside=abandoned_body(runs.abandoned)
            + parallel_body(idea.name, runs, outcomes, baseline),
        ),
        kind="run",
        product=code_files(ctx.project)[0],
    )


def _search(ctx: StageContext, idea: Any, baseline: dict[str, Any]) -> StageOutput:
    """A hill-climb or a tree search instead of the plan's runs (core/search/climb.py,
    core/search/tree.py): it ends with its best code merged into the project."""
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
        + diff_block(
            "The best code against the code the search started from",
            CommitInfo(final.commit, "", [], outcome.best_diff) if final.best_step else None,
        ),
        kind="search",
    )


def _resumes_in_place(config: Any) -> bool:
    """A search's ledger says which steps are done: a killed search goes on from there."""
    return config.experiment.strategy != "plan"


STAGE = DeclaredStage("experiments", run, resumes=_resumes_in_place)
