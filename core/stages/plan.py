"""Plan: before any code changes, the LLM proposes the runs (what each changes, what it measures),
bounded by [limits] max_runs. The plan is ``plan.json``, committed; the researcher approves or
edits it at the checkpoint, and the experiments stage follows the file.
"""

from __future__ import annotations

from ..artifacts import PLAN, PlannedRun, load_plan, plan_record
from ..baseline import ensure_baseline
from ..errors import StageFailed
from ..planning import chosen_idea, plan_markdown, propose_plan
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage


def run(ctx: StageContext) -> StageOutput:
    idea = chosen_idea(ctx)
    runs = propose_plan(ctx, idea, ensure_baseline(ctx))
    return _plan_output(idea.name, runs)


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited plan.json at the checkpoint: the file is the plan."""
    runs = load_plan(ctx.project.root, max(1, ctx.config.limits.max_runs))
    if not runs:
        raise StageFailed(f"{PLAN} was deleted", "revise at the checkpoint to plan again")
    return _plan_output(output.result.get("idea", ""), runs)


def _plan_output(idea: str, runs: list[PlannedRun]) -> StageOutput:
    return StageOutput(
        summary=f"a plan of {len(runs)} run(s) for {idea}",
        result={"idea": idea, "runs": plan_record(runs)},
        checkpoint_body=plan_markdown(runs),
        kind="plan",
        product=PLAN,
    )


STAGE = DeclaredStage("plan", run, reload=reload)
