"""The reviewer, with or without a project: a paper's text reviewed on the NeurIPS form by any
litellm model (chosen independently of the writer's), validated by ``core.review``.

Each of ``[review] ensemble`` reviewers sees ``few_shot`` example papers with their reviews, writes
a review and reconsiders it for up to ``reflections`` rounds, each ending on a structured "done"
flag; with two or more reviewers an Area Chair writes the meta-review. The scores are reported as
the reviewers' mean and spread, and the decision is the mean Overall against ``threshold``.

``labtui review PAPER.pdf`` uses it without a project; the review stage uses it on the compiled
paper. The PDF is read as Markdown-ish text (``core.pdf.markdown``); an unreadable, encrypted,
scanned-only or empty PDF is a clear error.

Every review, the Area Chair's too, must be about the paper reviewed: a Strength, Weakness or
Summary that names nothing the paper contains is asked again like any other refused answer
(``core.review.grounding``), and what each point named is kept with the review.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..answers.examples import example_strings
from ..answers.review_answers import ReviewForm, ReviewReflection
from ..answers.validation import validate
from ..errors import ConfigError, LabtuiError, LLMError, UnusableAnswer
from ..events import Event, Notice
from ..llm.budget import Ledger
from ..llm.client import LLM
from ..llm.litellm_setup import check_model
from ..pdf.markdown import paper_markdown
from ..settings.config import ModelSpec
from ..settings.sections import LLMSection, ReviewSection
from .form import (
    SCORE_RANGES,
    PaperReview,
    grounded,
    grounded_without_strays,
    parse_review,
    review_of,
)
from .grounding import PaperIndex, grounding_json

MAX_PAPER_CHARS = 40_000  # ~10k tokens: a conference paper without its appendix
MAX_EXAMPLE_CHARS = 12_000  # an example paper in the prompt: enough to show what was judged

Prompt = Callable[..., str]


def read_paper(pdf: Path) -> str:
    """The paper as Markdown-ish text; LabtuiError saying why when there is none to review."""
    if not Path(pdf).is_file():
        raise LabtuiError(f"PDF not found: {pdf}", "check the path to the paper")
    return paper_markdown(Path(pdf))


# -- few-shot examples ----------------------------------------------------------------------------


def builtin_examples() -> Path:
    return Path(str(resources.files("labtui.prompts"))) / "review_examples"


def load_examples(folder: Path, count: int) -> list[tuple[str, PaperReview]]:
    """The first ``count`` example papers in ``folder`` (by name) with their reviews: each a
    ``<name>.md`` paper text beside a ``<name>.json`` review that passes the form's checks."""
    if count == 0:
        return []
    if not folder.is_dir():
        raise ConfigError(
            f"[review] examples: {folder} is not a folder",
            'name a folder of <name>.md + <name>.json pairs, or write examples = ""',
        )
    papers = sorted(folder.glob("*.md"))
    papers = [p for p in papers if p.name != "README.md"]
    if len(papers) < count:
        raise ConfigError(
            f"[review] few_shot = {count}, but {folder} holds {len(papers)} example paper(s)",
            f"write few_shot = {len(papers)}, or add <name>.md + <name>.json pairs there",
        )
    return [_example(paper) for paper in papers[:count]]


def _example(paper: Path) -> tuple[str, PaperReview]:
    review_path = paper.with_suffix(".json")
    fix = f"write its review on the NeurIPS form to {review_path.name}, or remove {paper.name}"
    if not review_path.is_file():
        raise ConfigError(f"{paper}: example paper without a review ({review_path.name})", fix)
    try:
        review = parse_review(json.loads(review_path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, ValueError) as exc:
        raise ConfigError(f"{review_path}: not a valid review: {exc}", fix) from None
    return paper.read_text(encoding="utf-8")[:MAX_EXAMPLE_CHARS], review


def examples_block(examples: list[tuple[str, PaperReview]]) -> str:
    """The examples as the prompt shows them: each paper, then the review it was given."""
    if not examples:
        return ""
    parts = [f"Here {_are(len(examples))} of papers and the reviews they were given:\n"]
    for number, (paper, review) in enumerate(examples, 1):
        parts.append(
            f"Example {number}:\n<paper>\n{paper.strip()}\n</paper>\n"
            f"Its review:\n```json\n{json.dumps(review.fields, indent=1)}\n```\n"
        )
    return "\n".join(parts) + "\nNow the paper you review.\n"


def _are(count: int) -> str:
    return "is an example" if count == 1 else f"are {count} examples"


# -- one reviewer ---------------------------------------------------------------------------------


def parse_grounded(paper: PaperIndex) -> Callable[[Any], PaperReview]:
    """A review on the form whose points are about ``paper`` (ValueError saying which is not)."""

    def parse(data: Any) -> PaperReview:
        return grounded(parse_review(data), paper)

    return parse


def parse_without_strays(paper: PaperIndex) -> Callable[[Any], PaperReview]:
    """The last resort after the re-asks: a review whose stray points about nothing in ``paper``
    are left out (:func:`grounded_without_strays`)."""

    def parse(data: Any) -> PaperReview:
        return grounded_without_strays(parse_review(data), paper)

    return parse


def _say_left_out(llm: LLM, review: PaperReview, who: str = "review") -> PaperReview:
    if review.left_out:
        llm.emit(
            Notice(
                stage=llm.stage,
                text=f"the {who} stands without {len(review.left_out)} point(s) that stayed "
                f"about nothing in the paper after every re-ask: {'; '.join(review.left_out)}",
            )
        )
    return review


def parse_reflection(
    previous: PaperReview, paper: PaperIndex | None = None
) -> Callable[[Any], tuple[bool, PaperReview]]:
    """A reflection's answer: ``{"done": true}`` keeps the review (or takes the one given);
    ``{"done": false, "review": {...}}`` replaces it and asks again. A revised review is held
    to ``paper`` as the first was."""

    def parse(data: Any) -> tuple[bool, PaperReview]:
        answer = validate(ReviewReflection, data)
        if answer.review is None:
            return True, previous
        review = review_of(answer.review)
        return answer.done, review if paper is None else grounded(review, paper)

    return parse


def no_usable_review(exc: UnusableAnswer, who: str = "reviewer") -> LLMError:
    """The error that replaces a review without content: it is never shown as a review."""
    return LLMError(
        f"the {who} model {exc.model} gave no usable review after {exc.attempts} attempt"
        f"{'s' if exc.attempts > 1 else ''} ({exc.problem})",
        "use a stronger reviewer model (`labtui review --model`, or [models] review in "
        "labtui.toml); a review without real content is never shown",
    )


def review_text(
    llm: LLM,
    prompt: Prompt,
    paper: str,
    *,
    notes: str = "",
    examples: str = "",
    reflections: int = 0,
    temperature: float | None = None,
    paper_chars: int = MAX_PAPER_CHARS,
    index: PaperIndex | None = None,
) -> PaperReview:
    """One reviewer's review of ``paper`` (its first ``paper_chars`` characters; invalid fields,
    and points about nothing in what it read, are asked again), reconsidered for up to
    ``reflections`` rounds or until the reviewer says it is done. ``index``: that text indexed
    (``review_panel`` indexes it once for all its reviewers)."""
    read = paper[: paper_chars or None]
    index = index or PaperIndex(read)
    messages = [
        {"role": "system", "content": prompt("review_system")},
        {
            "role": "user",
            "content": prompt("review", paper=read, notes=notes, examples=examples),
        },
    ]
    try:
        review = llm.ask_json(
            messages,
            parse_grounded(index),
            schema=ReviewForm,
            json_mode=True,
            temperature=temperature,
            fallback=parse_without_strays(index),
        )
    except UnusableAnswer as exc:
        raise no_usable_review(exc) from None
    _say_left_out(llm, review)
    for round_no in range(1, reflections + 1):
        messages += [
            {"role": "assistant", "content": json.dumps(review.fields)},
            {
                "role": "user",
                "content": prompt("review_reflect", round=round_no, rounds=reflections),
            },
        ]
        try:
            done, review = llm.ask_json(
                messages,
                parse_reflection(review, index),
                schema=ReviewReflection,
                json_mode=True,
                temperature=temperature,
            )
        except UnusableAnswer as exc:
            # The review before this round passed every check: it stands, and is said to.
            llm.emit(
                Notice(
                    stage=llm.stage,
                    text=f"reflection round {round_no} gave no usable answer ({exc.problem}); "
                    "the review stands as written before it",
                )
            )
            break
        if done:
            break
    return review


def standalone_llm(model: str, budget_usd: float, emit: Callable[[Event], None]) -> LLM:
    """A reviewer model outside any project: ``model`` (or $LABTUI_MODEL), $LABTUI_API_BASE
    for a local server, its key in $LABTUI_API_KEY or the provider's usual variable."""
    name = model or os.environ.get("LABTUI_MODEL", "")
    if not name:
        raise ConfigError(
            "no reviewer model given",
            "pass --model (any litellm model string, e.g. openai/gpt-4o) or set LABTUI_MODEL",
        )
    spec = ModelSpec(name=name, api_base=os.environ.get("LABTUI_API_BASE", ""))
    problems = check_model(spec)
    if problems:
        raise ConfigError(problems[0], "see `labtui doctor` for what the model needs")
    return LLM(spec, LLMSection(), Ledger(budget_usd, emit), emit, "review", role="reviewer")


# -- an ensemble and its Area Chair ---------------------------------------------------------------


@dataclass(frozen=True)
class ReviewPanel:
    """Reviews of one paper: each reviewer's, the Area Chair's meta-review of them, and the
    decision: the reviewers' mean Overall against the threshold (the AC's when it is 0), or
    Reject where code's facts about the paper reject it (``core.review.facts.capped_panel``)."""

    reviews: list[PaperReview]
    meta: PaperReview
    threshold: float = 0.0
    rejected_because: str = ""  # why the facts reject the paper ('' when they leave it open)

    def scores(self) -> dict[str, tuple[float, float]]:
        """Each score as the ensemble's mean and spread (standard deviation, 0 for one)."""
        return {
            name: _mean_and_spread([r.fields[name] for r in self.reviews]) for name in SCORE_RANGES
        }

    @property
    def overall(self) -> float:
        return self.scores()["Overall"][0]

    @property
    def decision(self) -> str:
        if self.rejected_because:
            return "Reject"
        if not self.threshold:
            return self.meta.decision
        return "Accept" if self.overall >= self.threshold else "Reject"

    def to_json(self) -> dict[str, Any]:
        """The record review.json keeps; ``grounding``: what each point of the meta-review and
        of each review named of the paper (the evidence that they are about it)."""
        return {
            "decision": self.decision,
            "decision_reason": self.rejected_because,
            "overall": self.overall,
            "threshold": self.threshold,
            "scores": {name: {"mean": m, "spread": s} for name, (m, s) in self.scores().items()},
            "meta_review": self.meta.fields,
            "reviews": [r.fields for r in self.reviews],
            "grounding": {
                "meta_review": grounding_json(self.meta.grounding),
                "reviews": [grounding_json(r.grounding) for r in self.reviews],
            },
            # points that stayed about nothing in the paper after the re-asks, each with why
            "left_out": {
                "meta_review": list(self.meta.left_out),
                "reviews": [list(r.left_out) for r in self.reviews],
            },
        }


def rejection_note(reason: str) -> str:
    """A decision the facts made, as every front end says it under the decision."""
    return f"Reject whatever the reviews say: {reason}"


def _mean_and_spread(values: list[int]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return round(mean, 2), round(spread, 2)


def review_panel(
    llm: LLM,
    prompt: Prompt,
    paper: str,
    settings: ReviewSection,
    *,
    notes: str = "",
    examples_root: Path | None = None,
    progress: Callable[[str], None] = lambda text: None,
    check_summary: Callable[[str], str] | None = None,
) -> ReviewPanel:
    """``settings.ensemble`` independent reviews (sampled at ``settings.temperature`` when there
    are several) and the Area Chair's meta-review of them (the review itself when there is one).
    ``examples_root``: where a relative ``[review] examples`` folder is found (the project);
    ``check_summary``: what a summary may not say of the paper's runs (a problem, or '')."""
    if settings.ensemble < 1:
        raise ConfigError(
            f"an ensemble of {settings.ensemble} reviewers reviews nothing", "use 1 or more"
        )
    folder = Path(settings.examples) if settings.examples else builtin_examples()
    if examples_root is not None and not folder.is_absolute():
        folder = examples_root / folder
    shots = examples_block(load_examples(folder, settings.few_shot))
    several = settings.ensemble > 1
    index = PaperIndex(paper[: settings.paper_chars or None], check_summary)  # once, for all

    def review(number: int) -> PaperReview:
        written = review_text(
            llm.speaking_as(f"reviewer {number}") if several else llm,
            prompt,
            paper,
            notes=notes,
            examples=shots,
            reflections=settings.reflections,
            temperature=settings.temperature if several else None,
            paper_chars=settings.paper_chars,
            index=index,
        )
        if several:
            progress(f"reviewer {number} of {settings.ensemble}: Overall {written.overall}")
        return written

    numbers = range(1, settings.ensemble + 1)
    if several:
        progress(f"{settings.ensemble} reviewers at work, each on its own")
    # The reviewers are independent: they work at once, so E of them take the time of one.
    with ThreadPoolExecutor(max_workers=settings.ensemble) as pool:
        reviews = list(pool.map(review, numbers))
    if not several:
        return ReviewPanel(reviews, reviews[0], settings.threshold)
    progress(f"the Area Chair reads the {settings.ensemble} reviews")
    chair = llm.speaking_as("area chair")
    return ReviewPanel(reviews, meta_review(chair, prompt, reviews, index), settings.threshold)


def meta_review(
    llm: LLM, prompt: Prompt, reviews: list[PaperReview], paper: PaperIndex | None = None
) -> PaperReview:
    """The Area Chair's review of ``reviews``; held to ``paper`` (the text the reviewers read)
    when given: it has not read the paper, but the reviews it weighs name what the paper holds."""
    listing = "\n\n".join(
        f"Review {i}:\n{json.dumps(r.fields, indent=1)}" for i, r in enumerate(reviews, 1)
    )
    messages = [
        {"role": "system", "content": prompt("review_system")},
        {"role": "user", "content": prompt("review_meta", count=len(reviews), reviews=listing)},
    ]
    # The reviews are the Area Chair's material, not an example: quoting a reviewer's point is
    # allowed; copying the form's example is not.
    try:
        review = llm.ask_json(
            messages,
            parse_review if paper is None else parse_grounded(paper),
            schema=ReviewForm,
            examples=example_strings(messages, besides=[r.fields for r in reviews]),
            json_mode=True,
            fallback=None if paper is None else parse_without_strays(paper),
        )
    except UnusableAnswer as exc:
        raise no_usable_review(exc, "Area Chair") from None
    return _say_left_out(llm, review, "meta-review")


def reviewer_facts(model: str, settings: ReviewSection) -> dict[str, Any]:
    """Who reviewed and how, saved beside the review so that it can be run again alike."""
    return {"model": model, **settings.model_dump()}
