"""Planning runs: which idea was chosen, and the model's plan of runs for it.

The plan stage proposes the plan for the chosen idea; the experiments stage proposes one for each
idea it runs in parallel beside it. The plan itself is ``plan.json`` (``core.artifacts``).
"""

from __future__ import annotations

import json
from typing import Any

from .artifacts import IDEAS, PLAN, PlannedRun, parse_plan, save_plan
from .errors import StageFailed
from .experiment_spec import code_text
from .ideas import Idea, load_archive
from .records import Plan, example_strings
from .stage_context import StageContext


def chosen_idea(ctx: StageContext) -> Idea:
    """The idea the novelty check chose (or, without one, the ideas stage's first)."""
    name = ctx.result_of("novelty").get("idea") or (ctx.result_of("ideas").get("ideas") or [""])[0]
    idea = next((i for i in load_archive(ctx.project.root) if i.name == name), None)
    if idea is None:
        raise StageFailed(f"idea {name!r} not found in {IDEAS}", "rerun: labtui run")
    return idea


def plan_markdown(runs: list[PlannedRun]) -> str:
    return "\n".join(
        f"{n}. **run_{n}**: {run.change}  \n   *measures:* {run.measure}"
        for n, run in enumerate(runs, 1)
    )


def propose_plan(ctx: StageContext, idea: Idea, baseline: dict[str, Any]) -> list[PlannedRun]:
    """The model's plan for ``idea``, written to plan.json and committed."""
    root = ctx.project.root
    max_runs = max(1, ctx.config.limits.max_runs)
    prompt = ctx.prompt(
        "plan",
        title=idea.title,
        experiment=idea.experiment,
        baseline=json.dumps(baseline, indent=1),
        code=code_text(root, ctx.config.experiment),
        max_runs=max_runs,
        notes=ctx.notes_block(),
    )
    runs = ctx.llm(role="planner").ask_json(
        [{"role": "user", "content": prompt}],
        lambda data: parse_plan(data, max_runs),
        schema=Plan,
        # The baseline's numbers and the code are material; the format example is the plan's.
        examples=example_strings([{"role": "user", "content": prompt}], besides=baseline),
    )
    ctx.tell("planner", plan_markdown(runs))
    save_plan(root, idea.name, runs)
    ctx.commit(f"plan: {len(runs)} run(s) for {idea.name}", [PLAN])
    return runs
