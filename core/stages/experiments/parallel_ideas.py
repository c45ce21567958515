"""Other ideas run beside the chosen one (``[experiment] parallel`` above 1): a lane for each, in
its own worktree, planned and run without pausing; the stage's checkpoint compares their last
runs with the chosen idea's.
"""

from __future__ import annotations

import threading
from typing import Any

from ...stage_context import StageContext
from ...steps.lanes import (
    IdeaRuns,
    LaneOutcome,
    comparison_markdown,
    lane_branch,
    lane_ideas,
    open_lane,
)
from ...steps.planning import propose_plan
from ...workspace.artifacts import load_plan, planned_idea
from ...workspace.ideas import load_archive
from ...workspace.stage_results import IdeasResult
from .idea_runs import run_idea


def lanes_beside(
    ctx: StageContext, chosen: Any, stop: threading.Event
) -> dict[str, tuple[StageContext, Any, IdeaRuns]]:
    """A worktree and a context for each idea to run beside ``chosen`` (none without
    ``[experiment] parallel`` above 1)."""
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


def run_lane(lane: StageContext, idea: Any, runs: IdeaRuns, baseline: dict[str, Any]) -> None:
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


def parallel_body(
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
