"""Novelty: the LLM searches arXiv for each top idea and decides novel / not novel / unsure, with
the closest papers and their overlap as evidence. The first novel idea is chosen.

A verdict needs evidence, so the rules are in each turn's record (``core.answers.idea_answers.novelty_step``):
the first turn is a search, a verdict names papers from the results the model was shown (their
ids are the schema's only choices), the last turn decides. Where no verdict has evidence behind
it (arXiv unreachable, no search returned a paper, no usable answer) the idea is recorded as
**unchecked** (never as novel), and the stage goes on with it: that is a safe choice, said in
the checkpoint and in the paper's provenance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..answers.examples import example_strings
from ..answers.idea_answers import NOVELTY_DECISIONS, VERDICTS, novelty_step
from ..answers.validation import validate
from ..errors import StageFailed, UnusableAnswer
from ..literature.http_service import LiteratureUnavailable
from ..literature.record import base_id, format_papers
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import IDEAS
from ..workspace.ideas import Idea, load_archive, save_archive
from ..workspace.stage_results import IdeasResult, NoveltyResult

DECISIONS = NOVELTY_DECISIONS
UNCHECKED = "unchecked"
MIN_ROUNDS = 2  # one search, then a decision on what it found


@dataclass
class NoveltyTurn:
    decision: str
    reason: str
    query: str = ""
    closest: list[dict[str, str]] = field(default_factory=list)


def open_decisions(round_no: int, rounds: int, papers_shown: bool) -> tuple[str, ...]:
    """What the model may answer in this round: a search first; a verdict only once papers
    were shown; no search in the last round. () : nothing is left to decide on."""
    if round_no == 1:
        return ("search",)
    verdicts = (*VERDICTS, "unsure") if papers_shown else ("unsure",)
    if round_no == rounds:
        return verdicts if papers_shown else ()
    return ("search", *verdicts)


def _parse_turn(data: Any, record: type[BaseModel]) -> NoveltyTurn:
    answer: Any = validate(record, data)
    step = getattr(answer, "root", answer)  # a choice of variants holds the one given
    closest = [{"arxiv_id": c.arxiv_id, "overlap": c.overlap} for c in getattr(step, "closest", [])]
    return NoveltyTurn(step.decision, step.reason, getattr(step, "query", "").strip(), closest)


def check_idea(ctx: StageContext, llm, literature, idea: Idea) -> dict[str, Any]:
    """The novelty evidence of ``idea``: decision, reason, closest papers, queries, papers seen."""
    rounds = max(MIN_ROUNDS, ctx.config.literature.rounds)
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

    def outcome(decision: str, reason: str, closest: list[dict[str, str]] | None = None) -> dict:
        return {
            "decision": decision,
            "reason": reason,
            "closest": _evidence(closest or [], seen),
            "queries": queries,
            "papers_seen": list(seen.values()),
        }

    for round_no in range(1, rounds + 1):
        decisions = open_decisions(round_no, rounds, bool(seen))
        if not decisions:
            why = f"arXiv returned no paper for the {len(queries)} search(es) made"
            ctx.say(f"the novelty of {idea.name} is unchecked: {why}")
            return outcome(UNCHECKED, why)
        record = novelty_step(decisions, tuple(seen))
        try:
            turn = llm.ask_json(
                messages,
                lambda d, r=record: _parse_turn(d, r),
                schema=record,
                # The format is the system prompt's; the idea in the user message is material
                # (a search for its very title is a fair query).
                examples=example_strings(messages[:1]),
                json_mode=True,
            )
        except UnusableAnswer as exc:
            ctx.say(f"novelty of {idea.name} is unchecked: no usable answer ({exc.problem})")
            return outcome(UNCHECKED, f"the model gave no usable answer: {exc.problem}")
        if turn.decision != "search":
            return outcome(turn.decision, turn.reason, turn.closest)
        queries.append(turn.query)
        try:
            papers = literature.search(turn.query, max_results=ctx.config.literature.max_results)
        except LiteratureUnavailable as exc:
            ctx.say(f"arXiv unavailable: the novelty of {idea.name} is unchecked ({exc.message})")
            return outcome(UNCHECKED, f"arXiv was unreachable: {exc.message}")
        for paper in papers:
            seen[paper.arxiv_id] = {
                "arxiv_id": paper.arxiv_id,
                "title": paper.title,
                "year": paper.year,
            }
        messages += _results_turn(ctx, turn, papers, rounds - round_no)
    raise AssertionError("the last round has no search")  # pragma: no cover


def _results_turn(ctx: StageContext, turn: NoveltyTurn, papers: list, left: int) -> list[dict]:
    """The model's search and what it returned, as the next two messages."""
    return [
        {"role": "assistant", "content": json.dumps(turn.__dict__)},
        {
            "role": "user",
            "content": ctx.prompt(
                "novelty_results",
                query=turn.query,
                results=format_papers(papers) if papers else "No papers matched this query.",
                left=left,
                final_note="This is your last round: decide now (novel, not_novel or unsure), "
                "naming the closest papers by the arXiv ids above."
                if left == 1
                else "",
            ),
        },
    ]


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
    names = ctx.result(IdeasResult).ideas
    candidates = [by_name[n] for n in names if n in by_name and by_name[n].status != "rejected"]
    if not candidates:
        raise StageFailed("no ideas to check", "rerun the ideas stage: labtui run")
    return candidates[: max(1, ctx.config.ideas.novelty_checks)]


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited ideas.json at this checkpoint: the idea marked "chosen" is
    the one the experiments use, whatever the check decided (an override, kept in the file)."""
    archive = load_archive(ctx.project.root)
    picks = [idea for idea in archive if idea.status == "chosen"]
    previous = output.result_as(NoveltyResult).idea
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
        result=NoveltyResult(idea=chosen.name, evidence=chosen.novelty_evidence),
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
    if evidence.get("decision") == UNCHECKED:
        lines[2] = (
            f"Decision: **unchecked** (not judged novel) — {evidence.get('reason')}. The paper's "
            "provenance records the idea's novelty as unchecked."
        )
    for paper in evidence.get("closest", []):
        title = f" *{paper['title']}* ({paper.get('year', '')})" if paper.get("title") else ""
        lines.append(f"- arXiv:{paper.get('arxiv_id')}{title} — {paper.get('overlap', '')}")
    if not evidence.get("closest"):
        lines.append("- none among the papers the searches returned")
    lines.append(f"\nPapers seen: {len(evidence.get('papers_seen', []))}")
    return "\n".join(lines)


STAGE = DeclaredStage("novelty", run, reload=reload)
