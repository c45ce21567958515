"""Plan: before any code changes, the LLM proposes the runs (what each changes, what it measures),
bounded by [limits] max_runs. The plan is ``plan.json``, committed; the researcher approves or
edits it at the checkpoint, and the experiments stage follows the file. A project started from
a topic alone first gets its code, written for the chosen idea (core/steps/scaffold.py), and the
checkpoint shows what was written.
"""

from __future__ import annotations

from ..errors import StageFailed, UnusableAnswer
from ..settings.config import Config
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..steps.baseline import ensure_baseline
from ..steps.planning import chosen_idea, plan_markdown, propose_plan
from ..steps.scaffold import Written, scaffold, written_markdown
from ..workspace.artifacts import PLAN, PlannedRun, load_plan, plan_record
from ..workspace.stage_results import PlanResult


def run(ctx: StageContext) -> StageOutput:
    idea = chosen_idea(ctx)
    written = scaffold(ctx, idea)
    baseline = ensure_baseline(ctx)
    try:
        runs = propose_plan(ctx, idea, baseline)
    except UnusableAnswer as exc:
        if ctx.config.search is None:
            raise
        # Under a search the plan's runs are only directions: the search goes on without them.
        ctx.say(
            f"no usable plan ({exc.problem}); the {ctx.config.experiment.strategy} proposes "
            "its changes without directions"
        )
        runs = []
    return _plan_output(idea.name, runs, written, ctx.config)


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited plan.json at the checkpoint: the file is the plan."""
    runs = load_plan(ctx.project.root, max(1, ctx.config.limits.max_runs))
    if not runs:
        raise StageFailed(f"{PLAN} was deleted", "revise at the checkpoint to plan again")
    return _plan_output(
        output.result_as(PlanResult).idea, runs, scaffold(ctx, chosen_idea(ctx)), ctx.config
    )


def _plan_output(
    idea: str, runs: list[PlannedRun], written: list[Written], config: Config
) -> StageOutput:
    result = PlanResult(
        idea=idea, runs=plan_record(runs), written={w.name: w.commit for w in written}
    )
    return StageOutput(
        summary=f"a plan of {len(runs)} run(s) for {idea}"
        if runs
        else f"no plan for {idea}: the search proposes its own changes",
        result=result,
        checkpoint_body=written_markdown(written) + plan_markdown(runs) + _search_note(config),
        kind="plan",
        product=PLAN,
    )


def _search_note(config: Config) -> str:
    """Under a search strategy the plan's runs are directions, not the runs: said so."""
    search = config.search
    if search is None:
        return ""
    what = "a hill-climb" if config.experiment.strategy == "climb" else "a tree search"
    steps = "attempts" if config.experiment.strategy == "climb" else "nodes"
    return (
        f"\n\n*[experiment] strategy = {config.experiment.strategy}: the experiments are {what} "
        f"of up to {search.limit} {steps} at {search.run_budget_s:g} s a run; these runs are "
        "directions its proposals start from.*"
    )


STAGE = DeclaredStage("plan", run, reload=reload)
