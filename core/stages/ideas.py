"""Ideas: the LLM (or a persona panel, ``[ideas] panel``) proposes research ideas, each is refined
in up to ``[ideas] reflections`` rounds ending on a structured done flag, repeats of the archive
are dropped, and the rest are ranked.

Conditioned on the template's prompt.json, its experiment code, the archive so far (seed ideas,
and the review scores finished ideas earned), the literature review's summary and the
researcher's own idea or notes. Output: ``ideas.json``, committed. At the checkpoint the
researcher edits it: ``"status": "chosen"`` picks an idea, ``"rejected"`` drops one, scores
re-rank; revising asks for more ideas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..answers.examples import example_strings
from ..answers.idea_answers import IdeaProposals, IdeaReflection
from ..answers.validation import validate
from ..errors import StageFailed, UnusableAnswer
from ..settings.contract import code_text, research_brief, seed_ideas
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..steps.persona_panel import run_panel
from ..workspace.artifacts import IDEAS
from ..workspace.ideas import (
    Idea,
    idea_of,
    ideas_table,
    load_archive,
    mark_ideas,
    near_duplicate,
    parse_idea_list,
    ranked,
    save_archive,
    similarity,
)
from ..workspace.stage_results import IdeasResult, LiteratureResult


@dataclass
class Reflection:
    done: bool
    idea: Idea


def _parse_reflection(data: Any) -> Reflection:
    answer = validate(IdeaReflection, data)
    return Reflection(done=answer.done, idea=idea_of(answer.idea))


def _template_prompt(ctx: StageContext) -> dict[str, str]:
    """The system prompt and the task: prompt.json's, or labtui.toml's ``[project] task``."""
    brief = research_brief(ctx.project.root, ctx.config)
    return {"system": brief.system, "task_description": brief.task}


def _seed_archive(ctx: StageContext) -> list[Idea]:
    archive = load_archive(ctx.project.root)
    if archive:
        return archive
    seeds = seed_ideas(ctx.project.root)
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
    archive = _seed_archive(ctx)
    count = ctx.config.ideas.count
    template = _template_prompt(ctx)
    material = _material(ctx, template, archive)
    messages = [
        {"role": "system", "content": template["system"]},
        {"role": "user", "content": ctx.prompt("ideas", material=material, count=count)},
    ]
    llm = ctx.llm(role="ideator")
    examples = _format_examples(messages, archive)
    try:
        proposed = _propose(ctx, llm, messages, template, material, examples, archive)
    except UnusableAnswer as exc:
        return _from_the_seeds(ctx, archive, exc.problem, exc)
    proposals = drop_repeats(ctx, archive, proposed)
    answered = [*messages, {"role": "assistant", "content": _as_json(proposals)}]
    # Checked again after reflection: refining can turn an idea into a repeat.
    fresh = drop_repeats(
        ctx, archive, [_reflect(ctx, llm, answered, i, examples) for i in proposals]
    )
    if not fresh:
        return _from_the_seeds(
            ctx,
            archive,
            "all its ideas repeated the archive once refined",
            StageFailed(
                "the model proposed no new ideas: all repeated the archive (see the notices above)",
                "run again and revise with a note asking for different ideas, or use a stronger "
                "model",
            ),
        )
    archive = merge_into_archive(archive, fresh)
    save_archive(ctx.project.root, archive)
    ctx.commit(f"ideas: {len(fresh)} new idea(s): {', '.join(i.name for i in fresh)}", [IDEAS])
    return _ideas_output(ranked(fresh))


def _material(ctx: StageContext, template: dict[str, str], archive: list[Idea]) -> str:
    """Everything the ideas are conditioned on: the task, the code, the archive (with the review
    scores finished ideas earned), the curated literature, the researcher's idea and notes."""
    human = ctx.config.project.idea
    return ctx.prompt(
        "ideas_material",
        task_description=template["task_description"],
        code=code_text(ctx.project.root, ctx.config.experiment),
        archive=json.dumps([i.to_dict() for i in archive], indent=1),
        literature=_literature_block(ctx),
        human_idea=f"\nThe researcher's own idea, to develop first: {human}\n" if human else "",
        notes=ctx.notes_block(),
    )


def _literature_block(ctx: StageContext) -> str:
    summary = ctx.result(LiteratureResult).summary
    return f"\nWhat the literature review found:\n\n{summary}\n" if summary else ""


def _propose(
    ctx: StageContext,
    llm,
    messages: list[dict],
    template: dict[str, str],
    material: str,
    examples: frozenset[str],
    archive: list[Idea],
) -> list[Idea]:
    """New ideas from one model call (asked again when every idea repeats the archive), or
    from a persona panel's discussion ([ideas] panel)."""
    count = ctx.config.ideas.count
    panel = ctx.config.ideas.panel
    if panel:
        result = run_panel(
            ctx,
            topic=template["task_description"],
            context=material,
            members=panel,
            turns=ctx.config.ideas.panel_turns,
            count=count,
        )
        return result.ideas
    threshold = ctx.config.ideas.duplicate_threshold

    def parse(data: Any) -> list[Idea]:
        return not_all_repeats(
            parse_idea_list(data, expected=count, proposal=True), archive, threshold
        )

    return llm.ask_json(
        messages,
        parse,
        schema=IdeaProposals,
        examples=examples,
        json_mode=True,
    )


def _format_examples(messages: list[dict], archive: list[Idea]) -> frozenset[str]:
    """The prompt's example strings without the archive's: an idea of an earlier, unchecked
    attempt may be proposed again word for word (the revision replaces it)."""
    return example_strings(messages, besides=[i.to_dict() for i in archive])


def _as_json(ideas: list[Idea]) -> str:
    return json.dumps({"ideas": [i.to_dict() for i in ideas]}, indent=1)


def _from_the_seeds(
    ctx: StageContext, archive: list[Idea], why: str, error: Exception
) -> StageOutput:
    """The model gave no usable idea: the template's seed ideas not yet run are the ideas, so a
    weak model's project goes on (the researcher sees it at the checkpoint and can revise);
    ``error`` where there are none."""
    seeds = [idea for idea in archive if idea.status == "seed"]
    if not seeds:
        raise error
    ctx.say(
        f"the model gave no usable idea ({why}); going on with the template's "
        f"{len(seeds)} seed idea(s)"
    )
    save_archive(ctx.project.root, archive)
    ctx.commit("ideas: the template's seed ideas (the model gave no usable idea)", [IDEAS])
    return _ideas_output(ranked(seeds))


def _ideas_output(order: list[Idea]) -> StageOutput:
    hypotheses = "\n".join(f"- **{i.name}**: {i.hypothesis}" for i in order if i.hypothesis)
    return StageOutput(
        summary=f"{len(order)} idea(s) proposed; best: {order[0].name}",
        result=IdeasResult(ideas=[i.name for i in order]),
        checkpoint_body="Ideas, ranked (I = interestingness, F = feasibility, N = novelty):\n\n"
        + ideas_table(order)
        + (f"\n\nHypotheses:\n\n{hypotheses}" if hypotheses else "")
        + '\n\n*e edits ideas.json: set "status": "chosen" to pick an idea, "rejected" '
        "to drop one, change scores to re-rank. r asks for more ideas.*",
        kind="ideas",
        product=IDEAS,
        subjects=[i.name for i in order],
        # what a picker shows of each idea, so that no front end reads ideas.json
        details={"ideas": [i.to_dict() for i in order]},
    )


def apply_picks(ctx: StageContext, picks: Mapping[str, str]) -> None:
    """The researcher's picks (chosen, rejected) written to ideas.json, which the pipeline then
    commits as their edit and asks about again."""
    mark_ideas(ctx.project.root, dict(picks))


def drop_repeats(ctx: StageContext, archive: list[Idea], ideas: list[Idea]) -> list[Idea]:
    """The ideas that are really new: one that repeats (or nearly repeats) a seed, a judged or
    finished idea, or an earlier idea of this batch is dropped, and the researcher told which.
    Still-unchecked ideas of an earlier attempt are not competition: a revision replaces them."""
    threshold = ctx.config.ideas.duplicate_threshold
    settled = [idea for idea in archive if idea.status != "proposed"]
    fresh: list[Idea] = []
    for idea in ideas:
        twin = near_duplicate(idea, settled + fresh, threshold)
        if twin is None:
            fresh.append(idea)
            continue
        how = "repeats" if twin.name == idea.name else "nearly repeats"
        ctx.say(
            f"dropped {idea.name}: it {how} {twin.name} ({twin.status}, similarity "
            f"{similarity(idea, twin):.2f} ≥ [ideas] duplicate_threshold {threshold:g})"
        )
    return fresh


def not_all_repeats(ideas: list[Idea], archive: list[Idea], threshold: float) -> list[Idea]:
    """``ideas``, unless every one repeats a settled idea of ``archive``: ValueError naming
    each twin, for a re-ask (Qwen2.5-Coder-1.5B proposed the moons template's seed idea word
    for word, and the stage ended with no idea)."""
    settled = [idea for idea in archive if idea.status != "proposed"]
    twins = [(idea, near_duplicate(idea, settled, threshold)) for idea in ideas]
    if not ideas or any(twin is None for _idea, twin in twins):
        return ideas
    said = "; ".join(
        f"{idea.name} repeats {twin.name} ({twin.status}, similarity {similarity(idea, twin):.2f})"
        for idea, twin in twins
        if twin is not None
    )
    raise ValueError(
        f"every idea repeats one of the archive ({said}): propose ideas that are not in it"
    )


def merge_into_archive(archive: list[Idea], fresh: list[Idea]) -> list[Idea]:
    """New ideas join the archive; one with the name of an unchecked idea replaces it."""
    by_name = {idea.name: i for i, idea in enumerate(archive)}
    for idea in fresh:
        if idea.name in by_name:
            archive[by_name[idea.name]] = idea
        else:
            archive.append(idea)
    return archive


def _reflect(
    ctx: StageContext, llm, answered: list[dict], idea: Idea, examples: frozenset[str]
) -> Idea:
    """Up to [ideas] reflections rounds on one idea, until the model sets "done" (a structured
    flag, not a phrase in the text)."""
    rounds = ctx.config.ideas.reflections
    conversation = list(answered)
    for round_no in range(1, rounds + 1):
        conversation.append(
            {
                "role": "user",
                "content": ctx.prompt(
                    "ideas_reflect",
                    round=round_no,
                    rounds=rounds,
                    idea=json.dumps(idea.to_dict(), indent=1),
                ),
            }
        )
        reflection = llm.ask_json(
            conversation,
            _parse_reflection,
            schema=IdeaReflection,
            examples=examples,
            json_mode=True,
        )
        conversation.append(
            {
                "role": "assistant",
                "content": json.dumps({"done": reflection.done, "idea": reflection.idea.to_dict()}),
            }
        )
        idea = reflection.idea
        if reflection.done:
            ctx.say(f"{idea.name}: refined in {round_no} round(s) of {rounds}")
            break
    return idea


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited ideas.json at the checkpoint: what the file now says is the
    round's ideas — rejected ones dropped, the picked (``chosen``) ones first, then by score.
    An idea the researcher adds by hand (or an older one) joins the round when marked chosen."""
    archive = load_archive(ctx.project.root)
    round_names = set(output.result_as(IdeasResult).ideas)
    kept = [
        idea
        for idea in archive
        if idea.status != "rejected" and (idea.name in round_names or idea.status == "chosen")
    ]
    if not kept:
        raise StageFailed(
            "after your edit, no idea of this round is left in ideas.json (all rejected or gone)",
            "revise at the checkpoint to ask for new ideas, or restore ideas.json with git",
        )
    return _ideas_output(picked_first(kept))


def picked_first(ideas: list[Idea]) -> list[Idea]:
    """The researcher's picks (status "chosen") lead, each group in rank order."""
    order = ranked(ideas)
    return [i for i in order if i.status == "chosen"] + [i for i in order if i.status != "chosen"]


STAGE = DeclaredStage("ideas", run, reload=reload, picks=apply_picks)
