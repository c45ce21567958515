"""The NeurIPS review form as a validated record. Out-of-range or missing fields, and text that is
no review (placeholders such as "...", one-word points, copies of the prompt's example), are errors
that the LLM layer re-asks about; nothing is clamped. The rules are ``core.answers.review_answers.ReviewForm``;
:func:`grounded` adds that the review is about the paper it reviews (``core.review.grounding``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..answers.review_answers import REVIEW_SCORES, ReviewForm
from ..answers.validation import validate
from .grounding import PaperIndex, PointGrounding, ground_review, without_ungrounded_points

SCORE_RANGES: dict[str, tuple[int, int]] = REVIEW_SCORES
LIST_FIELDS = ("Strengths", "Weaknesses", "Questions", "Limitations")
DECISIONS = ("Accept", "Reject")


@dataclass(frozen=True)
class PaperReview:
    """A review on the form (``fields``, as the form names them) and, once checked against the
    paper it reviews, what each of its points names of that paper (``grounding``)."""

    fields: dict[str, Any]
    grounding: tuple[PointGrounding, ...] = ()
    left_out: tuple[str, ...] = ()  # points about nothing in the paper, each with why

    @property
    def overall(self) -> int:
        return int(self.fields["Overall"])

    @property
    def decision(self) -> str:
        return str(self.fields["Decision"])

    def markdown(self) -> str:
        scores = " · ".join(f"{k} {self.fields[k]}" for k in SCORE_RANGES)
        parts = [f"**{self.decision}** — {scores}", "", self.fields["Summary"], ""]
        for name in LIST_FIELDS:
            parts.append(f"**{name}**")
            parts += [f"- {item}" for item in self.fields[name] or ["(none)"]]
            parts.append("")
        return "\n".join(parts)


def parse_review(data: Any) -> PaperReview:
    """The form's fields, in the form's order; ValueError names the field and what to write."""
    return review_of(validate(ReviewForm, data))


def grounded(review: PaperReview, paper: PaperIndex) -> PaperReview:
    """The review with what its points name of ``paper``; ValueError quoting each Strength or
    Weakness (or the Summary) that names too little of it (``core.review.grounding``)."""
    return replace(review, grounding=ground_review(review.fields, paper))


def grounded_without_strays(review: PaperReview, paper: PaperIndex) -> PaperReview:
    """:func:`grounded` once the Strengths and Weaknesses that name too little of ``paper``
    are left out (where each list keeps one that names enough), the last resort after the
    re-asks; ValueError as :func:`grounded` when that is not enough."""
    fields, left_out = without_ungrounded_points(review.fields, paper)
    return replace(grounded(replace(review, fields=fields), paper), left_out=left_out)


def review_of(form: ReviewForm) -> PaperReview:
    fields = form.model_dump(by_alias=True)
    keep = ("Summary", *LIST_FIELDS, *SCORE_RANGES, "Ethical Concerns", "Decision")
    return PaperReview({k: fields[k] for k in keep})
