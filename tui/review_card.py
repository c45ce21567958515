"""The review checkpoint, laid out: the decision (and why, where the paper's facts made it), how
far the reviewer is to be trusted, the ensemble's scores (mean ± spread, each reviewer's, the last
improvement round's before → after), then the meta-review's summary, strengths, weaknesses and
questions.

The card is built from the review record (``core.review.record.ReviewRecord``, the checkpoint's
details read once); parts an older record lacks are left out, never guessed. The reviewer's
calibration (``core.review.calibration_store``) is looked up once, when the card is built, for the
reviewer that the record names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from labtui.core.errors import LabtuiError
from labtui.core.review.calibration_store import Trust, reviewer_trust
from labtui.core.review.facts import FactSheet
from labtui.core.review.form import SCORE_RANGES
from labtui.core.review.record import ReviewRecord
from labtui.core.review.reviewer import rejection_note

from .review_view import trust_spans

# The lists of the meta-review the card shows, in order; Questions are shown last and muted.
LISTS = ("Strengths", "Weaknesses", "Questions")


@dataclass(frozen=True)
class Score:
    """One row of the card's score table."""

    name: str
    high: int
    mean: float
    spread: float
    by_reviewer: tuple[int, ...]
    before: float | None = None
    after: float | None = None


def score_rows(review: ReviewRecord) -> tuple[Score, ...]:
    """The record's scores in the form's order, a score no code could back marked so, with the
    last improvement round's before and after."""
    last = review.improvements[-1] if review.improvements else None
    rows = []
    for name, (_, high) in SCORE_RANGES.items():
        rows.append(
            Score(
                f"{name} (unverified)" if name in review.unverified else name,
                high,
                review.scores[name].mean,
                review.scores[name].spread,
                tuple(form[name] for form in review.reviews),
                last.before[name] if last else None,
                last.after[name] if last else None,
            )
        )
    return tuple(rows)


def facts_line(facts: FactSheet | None) -> str:
    """The review record's fact sheet (core/review/facts.py) in one line, '' without one."""
    if facts is None:
        return ""
    said = [f"{facts.pages} pages" if facts.pages else "", f"{len(facts.parts)} parts"]
    listed = (("missing", facts.missing), ("placeholders", facts.placeholders),
              ("unwritten", facts.unwritten), ("repeats", facts.repeated))  # fmt: skip
    said += [f"{name}: {'; '.join(items)}" for name, items in listed if items]
    if facts.traced is not None:
        said.append(f"{facts.traced} numbers traced, {facts.untraced} untraced")
    if facts.novelty:
        said.append(f"novelty {facts.novelty}")
    return "facts: " + " · ".join(s for s in said if s)


def _number(value: float) -> str:
    """4.0 → "4.0", 4.33 → "4.33", 4.5 → "4.5": as many decimals as the value has, at most 2."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


# -- rendering --------------------------------------------------------------------------------


def decision_line(review: ReviewRecord) -> Content:
    """The decision in its colour, then the overall score and the panel's size:
    Reject · overall 4.0/10 (threshold 6) · 3 reviewers."""
    style = "bold $text-success" if review.decision == "Accept" else "bold $text-error"
    threshold = f" (threshold {review.threshold:g})" if review.threshold else ""
    facts = [Content.assemble(f"overall {_number(review.overall)}/10", (threshold, "$text-muted"))]
    count = len(review.reviews)
    if count:
        facts.append(Content(f"{count} reviewer{'s' if count > 1 else ''}"))
    # The space after the decision belongs to its span: SVG renderers place bold glyphs loosely.
    return Content.assemble((f"{review.decision} ", style), "· ", Content(" · ").join(facts))


TONES = {"muted": "$text-muted", "warning": "$text-warning", "error": "bold $text-error"}


def trust_lines(trust: Trust) -> Content:
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


def score_table(review: ReviewRecord) -> Content:
    """The scores as aligned columns: name, mean ± spread and range, one column per reviewer
    (when there are several), and the last improvement round's before → after."""
    reviewers = len(review.reviews)
    several = reviewers > 1
    improved = bool(review.improvements)
    header: list[Content] = [Content("score"), Content("mean ± spread" if several else "value")]
    header.append(Content(""))  # the range column ("/4") has no header
    if several:
        header += [Content(f"R{i}") for i in range(1, reviewers + 1)]
    if improved:
        header.append(Content("before → after"))
    rows: list[list[Content]] = []
    for score in score_rows(review):
        # One reviewer: the score is that reviewer's, and a spread of 0 says nothing.
        mean = f"{score.mean:.2f} ± {score.spread:.2f}" if several else f"{score.mean:g}"
        row = [Content(score.name), Content(mean), Content.styled(f"/{score.high}", "$text-muted")]
        if several:
            row += [Content(str(value)) for value in score.by_reviewer]
        if improved:
            row.append(_change(score.before, score.after))
        rows.append(row)
    return _columns([header, *rows])


def _columns(rows: list[list[Content]]) -> Content:
    """The rows aligned, the first as a header."""
    widths = [max(cells[i].cell_length for cells in rows) for i in range(len(rows[0]))]
    # Names and the range read left to right; numbers line up on the right.
    left = {0, 2}
    gaps = [2] * len(rows[0])
    gaps[2] = 1  # the range sits close to its mean
    lines = []
    for number, cells in enumerate(rows):
        parts = []
        for i, cell in enumerate(cells):
            room = widths[i] - cell.cell_length
            text = cell.pad_right(room) if i in left else cell.pad_left(room)
            parts.append(text if i == 0 else text.pad_left(gaps[i]))
        line = Content("").join(parts).rstrip()
        lines.append(line.stylize("bold $text-muted") if number == 0 else line)
    return Content("\n").join(lines)


def round_note(review: ReviewRecord) -> Content:
    """Where the last improvement round left the paper ("" before the first)."""
    if not review.improvements:
        return Content("")
    last = review.improvements[-1]
    facts = [f"before → after: round {last.round}"]
    facts += [f"commit {last.commit[:8]}"] if last.commit else []
    facts += [f"{last.pages} page{'s' if last.pages != 1 else ''}"] if last.pages else []
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


def review_card(details: Mapping[str, Any]) -> ReviewCard | None:
    """The card for a review checkpoint's ``details`` (the review record); None when they hold
    none (the checkpoint then shows its Markdown body)."""
    try:
        return ReviewCard(ReviewRecord.from_json(details, "the review checkpoint's details"))
    except LabtuiError:
        return None


class ReviewCard(Vertical):
    """The review checkpoint's body: built from the review record."""

    def __init__(self, review: ReviewRecord, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.review = review
        self.trust = reviewer_trust(review.reviewer)

    def compose(self) -> ComposeResult:
        review = self.review
        lines = [decision_line(review)]
        if review.decision_reason:  # why the facts made it a Reject, right under it
            lines.append(Content.styled(rejection_note(review.decision_reason), "$text-error"))
        if self.trust is not None:  # under the decision, before the margin before the scores
            lines.append(trust_lines(self.trust))
        decision = Content("\n").join(lines)
        yield Static(decision, id="review-decision")
        yield Static(score_table(review), id="review-scores")
        if review.facts is not None:
            yield Static(Content(facts_line(review.facts)), id="review-facts")
        for capped in review.capped:
            line = f"capped: {capped.score} {capped.was} → {capped.to}: {capped.why}"
            yield Static(Content(line), classes="review-capped")
        if review.improvements:
            yield Static(round_note(review), id="review-round")
        for undone in review.undone:
            line = f"round {undone.round} undone: {undone.why}"
            yield Static(Content(line), classes="review-undone")
        meta = review.meta_review
        if meta["Summary"]:
            yield Static(Content(meta["Summary"]), id="review-summary")
        for name in LISTS:
            items = meta[name]
            if name == "Questions" and not items:
                continue
            yield Static(Content(name), classes=f"review-heading -{name.lower()}")
            yield Bullets([str(item) for item in items], classes=f"review-list -{name.lower()}")
