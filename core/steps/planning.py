"""Planning runs: which idea was chosen, and the model's plan of runs for it.

The plan stage proposes the plan for the chosen idea; the experiments stage proposes one for each
idea it runs in parallel beside it. The plan itself is ``plan.json`` (``core.workspace.artifacts``).
"""

from __future__ import annotations

import json
from typing import Any

from ..answers.examples import example_strings
from ..answers.experiment_answers import plan_answer
from ..answers.setting_answers import offered
from ..errors import StageFailed, UnusableAnswer
from ..runs.setting_changes import project_settings, settings_table
from ..settings.contract import code_text
from ..stage_context import StageContext
from ..workspace.artifacts import IDEAS, PLAN, PlannedRun, parse_plan, save_plan
from ..workspace.ideas import Idea, load_archive
from ..workspace.stage_results import IdeasResult, NoveltyResult
from .attempts import code_files, code_now
from .plan_checks import checked_plan, with_worded_settings


def chosen_idea(ctx: StageContext) -> Idea:
    """The idea the novelty check chose (or, without one, the ideas stage's first)."""
    name = ctx.result(NoveltyResult).idea or (ctx.result(IdeasResult).ideas or [""])[0]
    idea = next((i for i in load_archive(ctx.project.root) if i.name == name), None)
    if idea is None:
        raise StageFailed(f"idea {name!r} not found in {IDEAS}", "rerun: labtui run")
    return idea


def plan_markdown(runs: list[PlannedRun]) -> str:
    return "\n".join(
        f"{n}. **run_{n}**: {run.change}  \n   *judged by:* {_expectations(run)}  \n"
        f"   *compares:* {run.measure}"
        for n, run in enumerate(runs, 1)
    )


def _expectations(run: PlannedRun) -> str:
    """'test_accuracy (expected higher), loss (expected lower)': directions, never values."""
    return (
        ", ".join(f"{metric} (expected {way})" for metric, way in run.expect.items())
        or "the baseline's metrics"
    )


def baseline_metrics(baseline: dict[str, Any]) -> tuple[str, ...]:
    """The metric names the baseline reports, over its datasets: what a plan may name."""
    names = (name for means in baseline.values() if isinstance(means, dict) for name in means)
    return tuple(sorted(set(names)))


def propose_plan(ctx: StageContext, idea: Idea, baseline: dict[str, Any]) -> list[PlannedRun]:
    """The model's plan for ``idea``, written to plan.json and committed. A model that gives no
    usable plan leaves the idea's own experiment as the one run (said; the researcher sees it
    at the checkpoint)."""
    root = ctx.project.root
    max_runs = max(1, ctx.config.limits.max_runs)
    metrics = baseline_metrics(baseline)
    files = code_files(ctx.project)
    code = code_now(ctx.project, files)
    settings = offered(project_settings(root, files, ctx.config.experiment.command))
    prompt = ctx.prompt(
        "plan",
        title=idea.title,
        experiment=idea.experiment,
        baseline=json.dumps(baseline, indent=1),
        metrics=", ".join(metrics) or "the metrics the baseline reports",
        code=code_text(root, ctx.config.experiment),
        max_runs=max_runs,
        settings=settings_table(settings),
        notes=ctx.notes_block(),
    )

    def parse(data: Any) -> list[PlannedRun]:
        runs = parse_plan(data, max_runs, metrics, settings=tuple(settings))
        return checked_plan(with_worded_settings(runs, settings), code, settings, idea.hypothesis)

    try:
        runs = ctx.llm(role="planner").ask_json(
            [{"role": "user", "content": prompt}],
            parse,
            schema=plan_answer(metrics, max_runs, tuple(settings)),
            # The baseline's numbers and the code are material; the format example is the plan's.
            examples=example_strings([{"role": "user", "content": prompt}], besides=baseline),
        )
    except UnusableAnswer as exc:
        if ctx.config.search is not None:
            raise  # a search goes on without directions (core/stages/plan.py)
        runs = [idea_as_plan(idea)]
        ctx.say(
            f"no usable plan ({exc.problem}); the plan is the idea's own experiment as one run: "
            "edit plan.json at the checkpoint to split it"
        )
    ctx.tell("planner", plan_markdown(runs))
    save_plan(root, idea.name, runs)
    ctx.commit(f"plan: {len(runs)} run(s) for {idea.name}", [PLAN])
    return runs


def idea_as_plan(idea: Idea) -> PlannedRun:
    """The safe plan when the model gives none: the experiment the idea itself describes, judged
    by every metric against the baseline."""
    return PlannedRun(
        change=idea.experiment,
        measure="every metric of this run against the baseline run_0, as the idea describes",
    )
