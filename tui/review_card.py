"""The review checkpoint, laid out: the decision, how far the reviewer is to be trusted, the
ensemble's scores (mean ± spread, each reviewer's, the last improvement round's before → after),
then the meta-review's summary, strengths, weaknesses and questions.

The card reads the checkpoint's ``details`` (the content of review.json) once into a
``ReviewDetails`` and renders that; missing parts are left out, never guessed. The reviewer's
calibration (``core.review.calibration_store``) is looked up once, when the card is built, for the
reviewer that review.json names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from labtui.core.review.calibration_store import find_calibration, trust_line
from labtui.core.review.form import SCORE_RANGES

from .review_view import trust_spans

# The lists of the meta-review the card shows, in order; Questions are shown last and muted.
LISTS = ("Strengths", "Weaknesses", "Questions")


@dataclass(frozen=True)
class Score:
    name: str
    high: int
    mean: float
    spread: float
    by_reviewer: tuple[int | None, ...]
    before: float | None = None
    after: float | None = None


@dataclass(frozen=True)
class ReviewDetails:
    """What the card shows of a review record (``ReviewPanel.to_json`` plus the improvement rounds)."""

    decision: str
    overall: float | None
    threshold: float
    reviewers: int
    scores: tuple[Score, ...]
    summary: str = ""
    lists: dict[str, tuple[str, ...]] = field(default_factory=dict)
    round: int | None = None  # the last improvement round, if any
    commit: str = ""
    pages: int | None = None
    undone: tuple[str, ...] = ()  # the rounds undone, and why
    facts: str = ""  # what code established about the paper before the reviewers read it
    capped: tuple[str, ...] = ()  # the scores those facts capped, and why

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> ReviewDetails:
        reviews = [r for r in details.get("reviews") or [] if isinstance(r, Mapping)]
        meta = details.get("meta_review") or {}
        rounds = [r for r in details.get("improvements") or [] if isinstance(r, Mapping)]
        last = rounds[-1] if rounds else {}
        before, after = last.get("before") or {}, last.get("after") or {}
        scores = []
        unverified = set(details.get("unverified") or ())  # no code could back these
        for name, (_, high) in SCORE_RANGES.items():
            score = (details.get("scores") or {}).get(name)
            if not isinstance(score, Mapping):
                continue
            scores.append(
                Score(
                    f"{name} (unverified)" if name in unverified else name,
                    high,
                    float(score.get("mean", 0.0)),
                    float(score.get("spread", 0.0)),
                    tuple(_int_or_none(review.get(name)) for review in reviews),
                    _float_or_none(before.get(name)),
                    _float_or_none(after.get(name)),
                )
            )
        overall = _float_or_none(details.get("overall"))
        return cls(
            decision=str(details.get("decision") or meta.get("Decision") or "?"),
            overall=overall,
            threshold=_float_or_none(details.get("threshold")) or 0.0,
            reviewers=len(reviews),
            scores=tuple(scores),
            summary=str(meta.get("Summary") or ""),
            lists={name: tuple(str(item) for item in meta.get(name) or ()) for name in LISTS},
            round=int(last["round"]) if "round" in last else None,
            commit=str(last.get("commit") or ""),
            pages=_int_or_none(last.get("pages")),
            undone=tuple(
                f"round {u.get('round')} undone: {u.get('why')}"
                for u in details.get("undone") or []
                if isinstance(u, Mapping)
            ),
            facts=facts_line(details.get("facts")),
            capped=tuple(
                f"{c.get('score')} {c.get('from')} → {c.get('to')}: {c.get('why')}"
                for c in details.get("capped") or []
                if isinstance(c, Mapping)
            ),
        )


def facts_line(facts: Any) -> str:
    """The review record's fact sheet (core/review/facts.py) in one line, '' without one."""
    if not isinstance(facts, Mapping):
        return ""
    said = [f"{facts.get('pages')} pages" if facts.get("pages") else "",
            f"{len(facts.get('parts') or [])} parts"]  # fmt: skip
    for key, name in (("missing", "missing"), ("placeholders", "placeholders"),
                      ("unwritten", "unwritten"), ("repeated", "repeats")):  # fmt: skip
        if facts.get(key):
            said.append(f"{name}: {'; '.join(map(str, facts[key]))}")
    if facts.get("traced") is not None:
        said.append(f"{facts['traced']} numbers traced, {facts.get('untraced')} untraced")
    if facts.get("novelty"):
        said.append(f"novelty {facts['novelty']}")
    return "facts: " + " · ".join(s for s in said if s)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _number(value: float) -> str:
    """4.0 → "4.0", 4.33 → "4.33", 4.5 → "4.5": as many decimals as the value has, at most 2."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# -- rendering --------------------------------------------------------------------------------


def decision_line(review: ReviewDetails) -> Content:
    """The decision in its colour, then the overall score and the panel's size:
    Reject · overall 4.0/10 (threshold 6) · 3 reviewers."""
    style = "bold $text-success" if review.decision == "Accept" else "bold $text-error"
    facts: list[Content] = []
    if review.overall is not None:
        threshold = f" (threshold {review.threshold:g})" if review.threshold else ""
        facts.append(
            Content.assemble(f"overall {_number(review.overall)}/10", (threshold, "$text-muted"))
        )
    if review.reviewers:
        facts.append(Content(f"{review.reviewers} reviewer{'s' if review.reviewers > 1 else ''}"))
    # The space after the decision belongs to its span: SVG renderers place bold glyphs loosely.
    return Content.assemble(
        (f"{review.decision} ", style), "· " if facts else "", Content(" · ").join(facts)
    )


TONES = {"muted": "$text-muted", "warning": "$text-warning", "error": "bold $text-error"}


def trust_of(details: Mapping[str, Any]) -> str:
    """What the registry says of the reviewer review.json names ("" when it names none)."""
    reviewer = details.get("reviewer")
    if not isinstance(reviewer, Mapping):
        return ""
    return trust_line(find_calibration(dict(reviewer)))


def trust_lines(trust: str) -> Content:
    """The trust line in its tones. The way to calibrate (``labtui review --calibrate``) is left
    to the command line and the README: on an 80×24 terminal it would push the Overall score
    out of the card's first screen."""
    return Content.assemble(*((text, TONES[tone]) for text, tone in trust_spans(trust)))


def _change(before: float | None, after: float | None) -> Content:
    if before is None or after is None:
        return Content("–")
    mark: str | tuple[str, str] = " "
    if after > before:
        mark = ("↑", "bold $text-success")
    elif after < before:
        mark = ("↓", "bold $text-error")
    return Content.assemble(f"{before:.2f} → {after:.2f} ", mark)


def score_table(review: ReviewDetails) -> Content:
    """The scores as aligned columns: name, mean ± spread and range, one column per reviewer
    (when there are several), and the last improvement round's before → after."""
    several = review.reviewers > 1
    improved = review.round is not None
    header: list[Content] = [Content("score"), Content("mean ± spread" if several else "value")]
    header.append(Content(""))  # the range column ("/4") has no header
    if several:
        header += [Content(f"R{i}") for i in range(1, review.reviewers + 1)]
    if improved:
        header.append(Content("before → after"))
    rows: list[list[Content]] = []
    for score in review.scores:
        # One reviewer: the score is that reviewer's, and a spread of 0 says nothing.
        mean = f"{score.mean:.2f} ± {score.spread:.2f}" if several else f"{score.mean:g}"
        row = [Content(score.name), Content(mean), Content.styled(f"/{score.high}", "$text-muted")]
        if several:
            row += [Content("–" if v is None else str(v)) for v in score.by_reviewer]
        if improved:
            row.append(_change(score.before, score.after))
        rows.append(row)
    widths = [max(cells[i].cell_length for cells in [header, *rows]) for i in range(len(header))]
    # Names and the range read left to right; numbers line up on the right.
    left = {0, 2}
    gaps = [2] * len(header)
    gaps[2] = 1  # the range sits close to its mean
    lines = []
    for number, cells in enumerate([header, *rows]):
        parts = []
        for i, cell in enumerate(cells):
            room = widths[i] - cell.cell_length
            text = cell.pad_right(room) if i in left else cell.pad_left(room)
            parts.append(text if i == 0 else text.pad_left(gaps[i]))
        line = Content("").join(parts).rstrip()
        lines.append(line.stylize("bold $text-muted") if number == 0 else line)
    return Content("\n").join(lines)


def round_note(review: ReviewDetails) -> Content:
    """Where the last improvement round left the paper."""
    if review.round is None:
        return Content("")
    facts = [f"before → after: round {review.round}"]
    facts += [f"commit {review.commit[:8]}"] if review.commit else []
    facts += [f"{review.pages} page{'s' if review.pages != 1 else ''}"] if review.pages else []
    return Content(" · ".join(facts))


class Bullets(Vertical):
    """A list whose items wrap under their own text, not under the bullet."""

    def __init__(self, items: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items = items

    def compose(self) -> ComposeResult:
        for item in self.items or ["(none)"]:
            with Horizontal(classes="review-item"):
                yield Static("•", classes="review-bullet")
                yield Static(Content(item), classes="review-item-text")


class ReviewCard(Vertical):
    """The review checkpoint's body: built from the request's ``details``."""

    def __init__(self, details: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.review = ReviewDetails.from_details(details)
        self.trust = trust_of(details)

    def compose(self) -> ComposeResult:
        review = self.review
        decision = decision_line(review)
        if self.trust:  # right under the decision, before the margin that sets the scores apart
            decision = Content("\n").join([decision, trust_lines(self.trust)])
        yield Static(decision, id="review-decision")
        yield Static(score_table(review), id="review-scores")
        if review.facts:
            yield Static(Content(review.facts), id="review-facts")
        for capped in review.capped:
            yield Static(Content(f"capped: {capped}"), classes="review-capped")
        if review.round is not None:
            yield Static(round_note(review), id="review-round")
        for undone in review.undone:
            yield Static(Content(undone), classes="review-undone")
        if review.summary:
            yield Static(Content(review.summary), id="review-summary")
        for name in LISTS:
            items = review.lists.get(name, ())
            if name == "Questions" and not items:
                continue
            yield Static(Content(name), classes=f"review-heading -{name.lower()}")
            yield Bullets(items, classes=f"review-list -{name.lower()}")
