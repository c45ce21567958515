"""Ideas: the LLM proposes research ideas from the template, refines them, and they are ranked.

Conditioned on the template's prompt.json, its experiment code, the archive so far (seed ideas
included) and the researcher's own idea or notes. Output: ``ideas.json``, committed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import StageFailed
from ..ideas import Idea, ideas_table, load_archive, parse_idea_list, ranked, save_archive
from ..stage_context import StageContext, StageOutput


@dataclass
class Reflection:
    done: bool
    ideas: list[Idea]


def _parse_reflection(data: Any) -> Reflection:
    if not isinstance(data, dict) or not isinstance(data.get("done"), bool):
        raise ValueError(
            'the reply must be {"done": true|false, "ideas": [ ... ]} with a boolean "done"'
        )
    return Reflection(done=data["done"], ideas=parse_idea_list(data))


def _template_prompt(ctx: StageContext) -> dict[str, str]:
    return json.loads((ctx.project.root / "prompt.json").read_text(encoding="utf-8"))


def _seed_archive(ctx: StageContext) -> list[Idea]:
    archive = load_archive(ctx.project.root)
    if archive:
        return archive
    seeds = json.loads((ctx.project.root / "seed_ideas.json").read_text(encoding="utf-8"))
    if not seeds:
        return []
    # Seed ideas may come without scores: neutral ones keep them rankable.
    neutral = {"Interestingness": 5, "Feasibility": 5, "Novelty": 5}
    try:
        ideas = parse_idea_list([{**neutral, **seed} for seed in seeds])
    except ValueError as exc:
        raise StageFailed(
            f"seed_ideas.json: {exc}", "fix that seed idea in seed_ideas.json, or remove it"
        ) from None
    for idea in ideas:
        idea.status = "seed"
    return ideas


def run(ctx: StageContext) -> StageOutput:
    template = _template_prompt(ctx)
    archive = _seed_archive(ctx)
    count = ctx.config.ideas.count
    human = ctx.config.project.idea
    llm = ctx.llm(role="ideator")
    messages = [
        {"role": "system", "content": template["system"]},
        {
            "role": "user",
            "content": ctx.prompt(
                "ideas",
                task_description=template["task_description"],
                code=(ctx.project.root / "experiment.py").read_text(encoding="utf-8"),
                archive=json.dumps([i.to_dict() for i in archive], indent=1),
                count=count,
                human_idea=(
                    f"\nThe researcher's own idea, to develop first: {human}\n" if human else ""
                ),
                notes=ctx.notes_block(),
            ),
        },
    ]
    ideas = llm.ask_json(messages, lambda d: parse_idea_list(d, expected=count), json_mode=True)
    ideas = _reflect(ctx, llm, messages, ideas)
    archive, fresh = merge_into_archive(ctx, archive, ideas)
    if not fresh:
        raise StageFailed(
            "the model proposed no new ideas: all were already in the archive ("
            + ", ".join(i.name for i in ideas)
            + ")",
            "run again and revise with a note asking for different ideas, or use a stronger model",
        )
    save_archive(ctx.project.root, archive)
    ctx.commit(
        f"ideas: {len(fresh)} new idea(s): {', '.join(i.name for i in fresh)}", ["ideas.json"]
    )
    return _ideas_output(ranked(fresh))


def _ideas_output(order: list[Idea]) -> StageOutput:
    return StageOutput(
        summary=f"{len(order)} idea(s) proposed; best: {order[0].name}",
        result={"ideas": [i.name for i in order]},
        checkpoint_body="Ideas, ranked (I = interestingness, F = feasibility, N = novelty):\n\n"
        + ideas_table(order),
        kind="ideas",
        product="ideas.json",
    )


def merge_into_archive(
    ctx: StageContext, archive: list[Idea], ideas: list[Idea]
) -> tuple[list[Idea], list[Idea]]:
    """Add new ideas; a revised attempt replaces the still-unchecked ideas of the same name, and
    repeats of seed or already-judged ideas are dropped."""
    by_name = {idea.name: i for i, idea in enumerate(archive)}
    fresh: list[Idea] = []
    for idea in ideas:
        position = by_name.get(idea.name)
        if position is None:
            archive.append(idea)
        elif archive[position].status == "proposed":
            archive[position] = idea
        else:
            ctx.say(f"dropped {idea.name}: already in the archive as {archive[position].status}")
            continue
        fresh.append(idea)
    return archive, fresh


def _reflect(ctx: StageContext, llm, messages: list[dict], ideas: list[Idea]) -> list[Idea]:
    """K reflection rounds with an explicit structured done flag (no magic strings)."""
    rounds = ctx.config.ideas.reflections
    for round_no in range(1, rounds + 1):
        messages = [
            *messages,
            {"role": "assistant", "content": json.dumps({"ideas": [i.to_dict() for i in ideas]})},
            {"role": "user", "content": ctx.prompt("ideas_reflect", round=round_no, rounds=rounds)},
        ]
        reflection = llm.ask_json(messages, _parse_reflection, json_mode=True)
        ideas = reflection.ideas
        if reflection.done:
            break
    return ideas


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited ideas.json at the checkpoint: rank what the file now says."""
    by_name = {idea.name: idea for idea in load_archive(ctx.project.root)}
    kept = [by_name[name] for name in output.result.get("ideas", []) if name in by_name]
    if not kept:
        raise StageFailed(
            "after your edit, none of this round's ideas is left in ideas.json",
            "revise at the checkpoint to ask for new ideas, or restore ideas.json with git",
        )
    return _ideas_output(ranked(kept))
