"""Literature review (Agent Laboratory's first phase): before any idea, the agent searches arXiv,
reads abstracts or full texts, and curates a list of papers with a one-paragraph summary each,
until ``[literature] papers`` are on it or ``[literature] review_steps`` are spent; then it sums
up what the field knows. The list is ``literature.json``, committed; the researcher approves or
edits it at the checkpoint, and it feeds the ideas (and later the related work and citations).

Each step is one validated JSON action. The prompt carries the state (the list so far, the
papers seen, the last observation), not the whole history, so a long review stays bounded.
Searches and full texts are cached on disk, so a rerun or a resume costs no request; when arXiv
is down the review ends with what it has and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from ..answers.checks import check_text
from ..answers.literature_answers import (
    DONE_ABOUT,
    DONE_SUMMARY_WORDS,
    PAPER_ABOUT,
    PAPER_SUMMARY_CHARS,
    PAPER_SUMMARY_WORDS,
    SEARCH_ABOUT,
    LiteratureStep,
)
from ..answers.validation import validate
from ..errors import UnusableAnswer
from ..literature.combined import Found, search_all
from ..literature.http_service import LiteratureUnavailable
from ..literature.record import base_id
from ..settings.contract import research_brief
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import (
    LITERATURE,
    LiteraturePaper,
    LiteratureReview,
    literature_digest,
    load_literature,
    save_literature,
)
from ..workspace.stage_results import LiteratureResult

ACTIONS = ("search", "read", "add", "done")


@dataclass(frozen=True)
class Action:
    kind: str
    query: str = ""
    arxiv_id: str = ""
    full_text: bool = False
    summary: str = ""


@dataclass
class ReadingList:
    """What the agent has done so far: the papers it was shown and the ones it kept."""

    wanted: int
    seen: dict[str, Found]  # Found.key -> the paper
    curated: dict[str, str]  # Found.key -> the agent's one-paragraph summary

    def lookup(self, paper_id: str) -> Found | None:
        return self.seen.get(base_id(paper_id))

    def meet(self, found: Found) -> Found:
        """Remember a paper shown to the agent; one found by both services keeps arXiv's
        record and gains the citation count."""
        known = self.seen.get(found.key)
        self.seen[found.key] = found if known is None else known.with_citations_of(found)
        return self.seen[found.key]

    @property
    def full(self) -> bool:
        return len(self.curated) >= self.wanted

    @property
    def enough(self) -> bool:
        """As many papers as wanted, or every paper there was to find."""
        return len(self.curated) >= min(self.wanted, len(self.seen))


def parse_action(data: Any, review: ReadingList, *, final: bool) -> Action:
    """One step of the agent, checked against what it has seen; ValueError says what to fix.
    The shape is ``core.answers.literature_answers.LiteratureStep``, whose schema gives each action its fields;
    they are checked here, with the papers shown, in the variants' words."""
    step = validate(LiteratureStep, data)
    kind = step.action
    if final and kind != "done":
        raise ValueError(
            'this is the last step: answer {"action": "done", "summary": <what the literature '
            "says about the task>}"
        )
    if kind == "search":
        if not step.query.strip():
            raise ValueError('"search" needs a "query" string')
        return Action("search", query=check_text(step.query, "query", about=SEARCH_ABOUT))
    if kind == "done":
        return Action("done", summary=_done_summary(step, review, final))
    paper = review.lookup(step.arxiv_id)
    if paper is None:
        raise ValueError(
            f'"arxiv_id" {step.arxiv_id!r} is not among the papers you were shown; '
            "use an id from a search result (an arXiv id or an S2: id), or search first"
        )
    if kind == "read":
        return Action("read", arxiv_id=paper.key, full_text=step.full_text)
    return Action("add", arxiv_id=paper.key, summary=_paper_summary(step, review, paper))


def _paper_summary(step: LiteratureStep, review: ReadingList, paper: Any) -> str:
    if paper.key in review.curated:
        raise ValueError(f"{paper.key} is already on the list; add another paper")
    if len(step.summary.strip()) < PAPER_SUMMARY_CHARS:
        raise ValueError(
            f'"add" needs a "summary": one paragraph (at least {PAPER_SUMMARY_CHARS} characters) '
            "on what the paper did, found, and why it matters for this task"
        )
    return check_text(step.summary, "summary", about=PAPER_ABOUT, min_words=PAPER_SUMMARY_WORDS)


def _done_summary(step: LiteratureStep, review: ReadingList, final: bool) -> str:
    if not final and not review.enough:
        raise ValueError(
            f"the list has {len(review.curated)} of {review.wanted} papers: add more "
            "(search for other aspects if needed) before you are done"
        )
    if not step.summary.strip():
        raise ValueError('"done" needs a "summary" of what the literature says about the task')
    unfound = papers_not_found(step.summary, list(review.seen.values()))
    if unfound:
        shown = "; ".join(f"{f.title} ({f.key})" for f in review.seen.values()) or "none"
        raise ValueError(
            f"the summary names {', '.join(unfound)}, which no search found (the papers found: "
            f"{shown}): sum up only what those papers say, or say that the searches found "
            "nothing on this task"
        )
    return check_text(step.summary, "summary", about=DONE_ABOUT, min_words=DONE_SUMMARY_WORDS)


# A paper named in prose: a quoted title of three words or more, an author's "et al.", an arXiv id.
_QUOTED_TITLE = re.compile(r"[\"“'‘]([A-Z][^\"”’\n]{10,200}?)[\"”'’](?!\w)")
_ET_AL = re.compile(r"\b([A-Z][A-Za-z'\-]+)\s+et\s+al\b")
_ARXIV_ID = re.compile(r"\b\d{4}\.\d{4,5}\b")


def papers_not_found(text: str, found: list[Found]) -> list[str]:
    """The papers ``text`` names (by quoted title, by "Surname et al." or by arXiv id) that are
    none of ``found``. Qwen2.5-Coder-1.5B, after searches that found nothing, summed up the
    field with "'Denoising Diffusion Probabilistic Models: Sampling, Inference and Training' by
    Alquran et al." and two more papers that no search had shown."""
    titles = [_plain(f.title) for f in found]
    authors = " ".join(" ".join(f.authors) for f in found).lower()
    keys = " ".join(f.key for f in found)
    named = []
    for match in _QUOTED_TITLE.finditer(text):
        title = _plain(match.group(1))
        if len(title.split()) >= 3 and not any(_same_title(title, t) for t in titles):
            named.append(f"“{match.group(1)}”")
    named += [
        f"{m.group(1)} et al." for m in _ET_AL.finditer(text) if m.group(1).lower() not in authors
    ]
    named += [f"arXiv:{m.group(0)}" for m in _ARXIV_ID.finditer(text) if m.group(0) not in keys]
    return list(dict.fromkeys(named))


def _same_title(named: str, found: str) -> bool:
    """Whether a quoted title is (part of) a found one, allowing a small slip; a found title
    inside a longer invented one ("Denoising Diffusion Probabilistic Models: Sampling,
    Inference and Training") is not it."""
    return named in found or SequenceMatcher(None, named, found).ratio() >= 0.9


def _plain(title: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", title.lower()))


# -- the stage ----------------------------------------------------------------------------------


def run(ctx: StageContext) -> StageOutput:
    settings = ctx.config.literature
    review = ReadingList(wanted=max(1, settings.papers), seen={}, curated={})
    tools = _Tools(ctx)
    topic = _topic(ctx)
    llm = ctx.llm(role="librarian")
    observation = "Nothing yet: start with a search."
    steps = max(2, settings.review_steps)
    summary = ""
    for step in range(1, steps + 1):
        final = step == steps or review.full
        try:
            prompt = _step_prompt(ctx, topic, review, observation, step, steps, final)
            action = _next_action(ctx, llm, review, prompt, final)
        except UnusableAnswer as exc:
            # The review is a preparation, not a result: a model that cannot go on ends it
            # with the papers kept so far, and the project goes on to the ideas.
            ctx.say(
                f"the literature review ends early with {len(review.curated)} paper(s): "
                f"{exc.message}"
            )
            break
        if action.kind == "done":
            summary = action.summary
            break
        observation = tools.carry_out(action, review)
    if tools.unavailable and not review.curated:
        ctx.say(
            "⚠ the literature review found nothing: arXiv was unavailable. Ideas go on without it."
        )
    write_reading_list(ctx.project.root, topic, summary, review)
    ctx.commit(f"literature: {len(review.curated)} paper(s) reviewed", [LITERATURE])
    return _review_output(load_literature(ctx.project.root))


def _next_action(
    ctx: StageContext, llm: Any, review: ReadingList, prompt: str, final: bool
) -> Action:
    """The agent's next step for the step's ``prompt``, checked against what it has seen."""
    return llm.ask_json(
        [
            {"role": "system", "content": ctx.prompt("literature_system")},
            {"role": "user", "content": prompt},
        ],
        lambda data, f=final: parse_action(data, review, final=f),
        schema=LiteratureStep,
    )


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited literature.json: the file is the review."""
    return _review_output(load_literature(ctx.project.root))


class _Tools:
    """What the agent's actions do: search (cached, rate limited), read, add."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.literature = ctx.literature()
        self.unavailable = False

    def carry_out(self, action: Action, review: ReadingList) -> str:
        if action.kind == "search":
            return self.search(action.query, review)
        paper = review.seen[action.arxiv_id]
        if action.kind == "read":
            return self.read(paper, action.full_text)
        review.curated[paper.key] = action.summary
        self.ctx.tell("librarian", f"added **{paper.title}** ({paper.year}): {action.summary}")
        return f"Added {paper.key} to the list ({len(review.curated)} of {review.wanted})."

    def search(self, query: str, review: ReadingList) -> str:
        """arXiv's results, and Semantic Scholar's (with citation counts) when there is a key;
        one service down is said, and the other still answers."""
        found, down = search_all(self.ctx, query)
        self.unavailable = self.unavailable or bool(down)
        if down and not found:
            return (
                f"The search is unavailable right now ({'; '.join(down)}). Work with what you have."
            )
        shown = [review.meet(paper) for paper in found]
        listing = "\n\n".join(p.listing(i) for i, p in enumerate(shown)) or "No papers found."
        return f"Results for {query!r}:\n\n{listing}"

    def read(self, paper: Found, full_text: bool) -> str:
        if not full_text or paper.arxiv is None:
            why = "" if not full_text else " (only arXiv papers have a full text here)"
            return f"Abstract of {paper.key} ({paper.title}){why}:\n\n{paper.abstract}"
        try:
            text = self.literature.full_text(
                paper.arxiv, self.ctx.config.literature.full_text_chars
            )
        except LiteratureUnavailable as exc:
            self.ctx.say(f"full text of {paper.key} unavailable: {exc.message}")
            return (
                f"The full text is unavailable ({exc.message}); the abstract:\n\n{paper.abstract}"
            )
        return f"Full text of {paper.key} ({paper.title}):\n\n{text}"


def _topic(ctx: StageContext) -> str:
    task = research_brief(ctx.project.root, ctx.config).task
    human = ctx.config.project.idea
    return task + (f"\n\nThe researcher's own idea: {human}" if human else "")


def _step_prompt(
    ctx: StageContext,
    topic: str,
    review: ReadingList,
    observation: str,
    step: int,
    steps: int,
    final: bool,
) -> str:
    return ctx.prompt(
        "literature_step",
        topic=topic,
        wanted=review.wanted,
        curated=_curated_block(review),
        seen=", ".join(f"{i} ({p.title[:60]})" for i, p in review.seen.items()) or "none",
        observation=observation,
        step=step,
        steps=steps,
        final='This is your last step: answer {"action": "done", "summary": <what the '
        "literature says about the task>}."
        if final
        else "",
        notes=ctx.notes_block(),
    )


def _curated_block(review: ReadingList) -> str:
    if not review.curated:
        return "(empty)"
    return "\n".join(
        f"- {i} {review.seen[i].title}: {summary}" for i, summary in review.curated.items()
    )


# -- literature.json ----------------------------------------------------------------------------


def write_reading_list(root: Path, topic: str, summary: str, review: ReadingList) -> Path:
    papers: list[LiteraturePaper] = []
    for key, paper_summary in review.curated.items():
        paper = review.seen[key]
        papers.append(
            {
                "id": key,
                "arxiv_id": paper.arxiv.base_id if paper.arxiv is not None else "",
                "title": paper.title,
                "authors": paper.authors,
                "year": paper.year,
                "url": paper.url,
                "citations": paper.citations,
                "summary": paper_summary,
                "bibtex_key": paper.bibtex_key,
                "bibtex": paper.bibtex,
            }
        )
    return save_literature(root, topic, summary, papers)


def _review_output(review: LiteratureReview) -> StageOutput:
    papers = review.get("papers", [])
    body = (
        (review.get("summary") or "*(no summary)*")
        + "\n\n"
        + "\n".join(
            f"- **{p['title']}** ({p.get('year', '')}, {p.get('id', '?')}): {p['summary']}"
            for p in papers
        )
    )
    body += "\n\n*e edits literature.json (remove a paper, fix a summary); r asks for more.*"
    return StageOutput(
        summary=f"{len(papers)} paper(s) reviewed",
        result=LiteratureResult(
            summary=literature_digest(review), papers=[p.get("id") for p in papers]
        ),
        checkpoint_body=body,
        kind="literature",
        product=LITERATURE,
    )


STAGE = DeclaredStage("literature", run, reload=reload)
