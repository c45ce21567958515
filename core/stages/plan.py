"""Plan: before any code changes, the LLM proposes the runs (what each changes, what it measures),
bounded by [limits] max_runs. The plan is ``plan.json``, committed; the researcher approves or
edits it at the checkpoint, and the experiments stage follows the file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import StageFailed
from ..ideas import Idea, load_archive
from ..records import Plan, example_strings, validate
from ..stage_context import StageContext, StageOutput

PLAN = "plan.json"


@dataclass(frozen=True)
class PlannedRun:
    change: str  # what the run changes in experiment.py
    measure: str  # what it measures, against the baseline


def parse_plan(data: Any, max_runs: int) -> list[PlannedRun]:
    """Validated runs from the model's (or the researcher's) JSON; ValueError says what is wrong."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if isinstance(runs, list) and len(runs) > max_runs:  # said first: it changes the whole plan
        raise ValueError(f"the plan has {len(runs)} runs; at most {max_runs} are allowed")
    plan = validate(Plan, data)
    return [PlannedRun(run.change, run.measure) for run in plan.runs]


def load_plan(root: Path, max_runs: int) -> list[PlannedRun]:
    """The plan on disk (as approved or edited); [] when there is none."""
    path = Path(root) / PLAN
    if not path.exists():
        return []
    try:
        return parse_plan(json.loads(path.read_text(encoding="utf-8")), max_runs)
    except (ValueError, json.JSONDecodeError) as error:
        raise StageFailed(
            f"{PLAN} is not a valid plan: {error}",
            f'fix {PLAN} ({{"runs": [{{"change": <what>, "measure": <what>}}]}}, at most '
            f"{max_runs} runs) or delete it to plan again",
        ) from None


def plan_markdown(runs: list[PlannedRun]) -> str:
    return "\n".join(
        f"{n}. **run_{n}**: {run.change}  \n   *measures:* {run.measure}"
        for n, run in enumerate(runs, 1)
    )


def chosen_idea(ctx: StageContext) -> Idea:
    name = ctx.result_of("novelty").get("idea") or (ctx.result_of("ideas").get("ideas") or [""])[0]
    idea = next((i for i in load_archive(ctx.project.root) if i.name == name), None)
    if idea is None:
        raise StageFailed(f"idea {name!r} not found in ideas.json", "rerun: labtui run")
    return idea


def run(ctx: StageContext) -> StageOutput:
    from .experiments import ensure_baseline

    idea = chosen_idea(ctx)
    runs = propose_plan(ctx, idea, ensure_baseline(ctx))
    return _plan_output(idea.name, runs)


def propose_plan(ctx: StageContext, idea: Idea, baseline: dict[str, Any]) -> list[PlannedRun]:
    """The model's plan for ``idea``, written to plan.json and committed."""
    root = ctx.project.root
    max_runs = max(1, ctx.config.limits.max_runs)
    prompt = ctx.prompt(
        "plan",
        title=idea.title,
        experiment=idea.experiment,
        baseline=json.dumps(baseline, indent=1),
        code=(root / "experiment.py").read_text(encoding="utf-8"),
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
    (root / PLAN).write_text(
        json.dumps({"idea": idea.name, "runs": [asdict(r) for r in runs]}, indent=1) + "\n",
        encoding="utf-8",
    )
    ctx.commit(f"plan: {len(runs)} run(s) for {idea.name}", [PLAN])
    return runs


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited plan.json at the checkpoint: the file is the plan."""
    runs = load_plan(ctx.project.root, max(1, ctx.config.limits.max_runs))
    if not runs:
        raise StageFailed(f"{PLAN} was deleted", "revise at the checkpoint to plan again")
    return _plan_output(output.result.get("idea", ""), runs)


def _plan_output(idea: str, runs: list[PlannedRun]) -> StageOutput:
    return StageOutput(
        summary=f"a plan of {len(runs)} run(s) for {idea}",
        result={"idea": idea, "runs": [asdict(r) for r in runs]},
        checkpoint_body=plan_markdown(runs),
        kind="plan",
        product=PLAN,
    )
