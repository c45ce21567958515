"""Novelty: the LLM searches arXiv for each top idea and decides novel / not novel / unsure, with
the closest papers and their overlap as evidence. The first novel idea is chosen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..answer_validation import validate
from ..artifacts import IDEAS
from ..errors import StageFailed
from ..ideas import Idea, load_archive, save_archive
from ..paper_record import base_id
from ..records import NOVELTY_DECISIONS, NoveltyStep, example_strings
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage

DECISIONS = NOVELTY_DECISIONS


@dataclass
class NoveltyTurn:
    decision: str
    reason: str
    query: str = ""
    closest: list[dict[str, str]] = field(default_factory=list)


def _parse_turn(data: Any, final: bool) -> NoveltyTurn:
    step = validate(NoveltyStep, data)
    allowed = DECISIONS[1:] if final else DECISIONS
    if step.decision not in allowed:
        raise ValueError(
            f"field 'decision' must be one of {list(allowed)}, got {step.decision!r}: "
            "this is the last round, decide now"
        )
    closest = [{"arxiv_id": c.arxiv_id, "overlap": c.overlap} for c in step.closest]
    return NoveltyTurn(step.decision, step.reason, step.query.strip(), closest)


def _search(ctx: StageContext, literature, query: str) -> tuple[list, str]:
    from ..http_service import LiteratureUnavailable
    from ..paper_record import format_papers

    try:
        papers = literature.search(query, max_results=ctx.config.literature.max_results)
    except LiteratureUnavailable as exc:
        ctx.say(f"arXiv unavailable, novelty judged without it: {exc.message}")
        return [], "The literature search is unavailable right now."
    return papers, format_papers(papers) if papers else "No papers matched this query."


def check_idea(ctx: StageContext, llm, literature, idea: Idea) -> dict[str, Any]:
    rounds = max(1, ctx.config.literature.rounds)
    messages = [
        {"role": "system", "content": ctx.prompt("novelty_system", rounds=rounds)},
        {
            "role": "user",
            "content": ctx.prompt(
                "novelty", idea=json.dumps(idea.to_dict(), indent=1), notes=ctx.notes_block()
            ),
        },
    ]
    seen: dict[str, dict[str, Any]] = {}
    queries: list[str] = []
    for round_no in range(1, rounds + 1):
        final = round_no == rounds
        turn = llm.ask_json(
            messages,
            lambda d, f=final: _parse_turn(d, f),
            schema=NoveltyStep,
            # The format is the system prompt's; the idea in the user message is material (a
            # search for its very title is a fair query).
            examples=example_strings(messages[:1]),
            json_mode=True,
        )
        if turn.decision != "search":
            break
        queries.append(turn.query)
        papers, listing = _search(ctx, literature, turn.query)
        for paper in papers:
            seen[paper.arxiv_id] = {
                "arxiv_id": paper.arxiv_id,
                "title": paper.title,
                "year": paper.year,
            }
        messages += [
            {"role": "assistant", "content": json.dumps(turn.__dict__)},
            {
                "role": "user",
                "content": ctx.prompt(
                    "novelty_results",
                    query=turn.query,
                    results=listing,
                    left=rounds - round_no,
                    final_note="This is your last round: decide now (novel, not_novel or unsure)."
                    if round_no + 1 == rounds
                    else "",
                ),
            },
        ]
    else:  # pragma: no cover - the last round cannot return "search"
        turn = NoveltyTurn("unsure", "no decision")
    return {
        "decision": turn.decision,
        "reason": turn.reason,
        "closest": _evidence(turn.closest, seen),
        "queries": queries,
        "papers_seen": list(seen.values()),
    }


def run(ctx: StageContext) -> StageOutput:
    archive = load_archive(ctx.project.root)
    candidates = _candidates(ctx, archive)
    literature = ctx.literature()
    llm = ctx.llm(role="novelty")
    chosen: Idea | None = None
    for idea in candidates:
        picked = idea.status == "chosen"  # the researcher's pick at the ideas checkpoint
        evidence = check_idea(ctx, llm, literature, idea)
        idea.novelty_evidence = evidence
        idea.status = "chosen" if picked else evidence["decision"]
        ctx.tell("novelty", f"{idea.name}: {evidence['decision']} — {evidence['reason']}")
        if picked or evidence["decision"] == "novel":
            chosen = idea
            break
    if chosen is None:
        chosen = candidates[0]
        ctx.say(
            f"no idea was judged novel; continuing with the best-ranked one, {chosen.name}. "
            "Edit ideas.json at this checkpoint to pick another, or abort to generate new ideas."
        )
    chosen.status = "chosen"
    save_archive(ctx.project.root, archive)
    ctx.commit(
        f"novelty: {chosen.name} chosen ({chosen.novelty_evidence.get('decision')})", [IDEAS]
    )
    return _novelty_output(chosen, [i for i in candidates if i.novelty_evidence])


def _candidates(ctx: StageContext, archive: list[Idea]) -> list[Idea]:
    """This round's ideas in the order the researcher left them (picks first), without rejected
    ones; at most [ideas] novelty_checks of them."""
    by_name = {idea.name: idea for idea in archive}
    names = ctx.result_of("ideas").get("ideas", [])
    candidates = [by_name[n] for n in names if n in by_name and by_name[n].status != "rejected"]
    if not candidates:
        raise StageFailed("no ideas to check", "rerun the ideas stage: labtui run")
    return candidates[: max(1, ctx.config.ideas.novelty_checks)]


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited ideas.json at this checkpoint: the idea marked "chosen" is
    the one the experiments use, whatever the check decided (an override, kept in the file)."""
    archive = load_archive(ctx.project.root)
    picks = [idea for idea in archive if idea.status == "chosen"]
    previous = output.result.get("idea")
    chosen = next((i for i in picks if i.name != previous), None) or next(
        (i for i in picks if i.name == previous), None
    )
    if chosen is None:
        raise StageFailed(
            'after your edit no idea in ideas.json has "status": "chosen"',
            'mark the idea to run with "status": "chosen"',
        )
    for idea in picks:
        if idea is not chosen:  # one choice: an earlier pick goes back to its check's decision
            idea.status = idea.novelty_evidence.get("decision", "proposed")
    save_archive(ctx.project.root, archive)
    if chosen.name != previous:
        ctx.say(f"you chose {chosen.name} instead of {previous}")
    checked = [i for i in archive if i.novelty_evidence or i is chosen]
    return _novelty_output(chosen, checked)


def _novelty_output(chosen: Idea, checked: list[Idea]) -> StageOutput:
    others = [i for i in checked if i is not chosen]
    body = _evidence_markdown(chosen)
    if others:
        body += "\n\nAlso checked:\n\n" + "\n".join(
            f"- `{i.name}`: {i.novelty_evidence.get('decision')} — "
            f"{i.novelty_evidence.get('reason', '')}"
            for i in others
        )
    body += (
        '\n\n*e edits ideas.json: mark another idea "status": "chosen" to run it instead '
        "(your override is kept).*"
    )
    return StageOutput(
        summary=f"{chosen.name}: {chosen.novelty_evidence.get('decision', 'not checked')}",
        result={"idea": chosen.name, "evidence": chosen.novelty_evidence},
        checkpoint_body=body,
        kind="novelty",
        product=IDEAS,
    )


def _evidence(closest: list[dict[str, str]], seen: dict[str, dict[str, Any]]) -> list[dict]:
    """The closest papers the model named, kept only if it was really shown them (a cited id
    with or without its version), with the title and year from the search, not from memory."""
    by_base = {base_id(arxiv_id): paper for arxiv_id, paper in seen.items()}
    evidence = []
    for entry in closest:
        paper = by_base.get(base_id(entry["arxiv_id"]))
        if paper is not None:
            evidence.append({**paper, "overlap": str(entry.get("overlap", "")).strip()})
    return evidence


def _evidence_markdown(idea: Idea) -> str:
    evidence = idea.novelty_evidence
    lines = [
        f"**{idea.title}** (`{idea.name}`)",
        "",
        f"Decision: **{evidence.get('decision')}** — {evidence.get('reason')}",
        "",
        "Queries: " + ("; ".join(evidence.get("queries", [])) or "none"),
        "",
        "Closest papers:",
    ]
    for paper in evidence.get("closest", []):
        title = f" *{paper['title']}* ({paper.get('year', '')})" if paper.get("title") else ""
        lines.append(f"- arXiv:{paper.get('arxiv_id')}{title} — {paper.get('overlap', '')}")
    if not evidence.get("closest"):
        lines.append("- none among the papers the searches returned")
    lines.append(f"\nPapers seen: {len(evidence.get('papers_seen', []))}")
    return "\n".join(lines)


STAGE = DeclaredStage("novelty", run, reload=reload)
