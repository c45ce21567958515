"""review.json as one typed record, read and written here only.

A review record is the panel's review (the decision, the mean Overall against the threshold or,
where code's facts reject the paper, Reject and the reason why, each score's mean and spread, the meta-review and each review on the form, what each point named of the
paper and the points left out), the facts the reviewers were given first and the scores they
capped (``core.review.facts``), who reviewed (``reviewer_facts``: what finds the reviewer's
calibration) and the improvement rounds done and undone. The review stage writes it, the review
checkpoint carries it as its details, and ``labtui review --json`` prints it.

Each part added since the first ensemble review (the decision's reason, grounding, left out,
facts, capped, unverified, reviewer) is optional, so that older files read as they were; a file that is not a review record
is a :class:`LabtuiError` naming the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, field_serializer

from ..errors import LabtuiError
from ..workspace.artifacts import PAPER_REVIEW
from .calibration_store import write_json
from .facts import CappedScore, FactSheet, Reviewed
from .form import LIST_FIELDS, SCORE_RANGES, PaperReview
from .reviewer import rejection_note

Item = TypeVar("Item")
# The fields every review on the form has (core.answers.review_answers.ReviewForm's names).
FORM_FIELDS = ("Summary", *LIST_FIELDS, *SCORE_RANGES, "Ethical Concerns", "Decision")


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True)


def _whole_form(fields: dict[str, Any]) -> dict[str, Any]:
    """A saved review as written: every field of the form, scores as whole numbers. It is not
    checked again as a model's answer (a review kept from an older labtui stays readable)."""
    missing = [name for name in FORM_FIELDS if name not in fields]
    if missing:
        raise ValueError(f"the review form lacks {', '.join(missing)}")
    scores = [name for name in SCORE_RANGES if type(fields[name]) is not int]
    if scores:
        raise ValueError(f"scores that are not whole numbers: {', '.join(scores)}")
    lists = [name for name in LIST_FIELDS if not isinstance(fields[name], list)]
    if lists:
        raise ValueError(f"fields that are not lists: {', '.join(lists)}")
    return fields


def _every_score(scores: dict[str, Item]) -> dict[str, Item]:
    missing = [name for name in SCORE_RANGES if name not in scores]
    if missing:
        raise ValueError(f"no value for {', '.join(missing)}")
    return scores


SavedForm = Annotated[dict[str, Any], AfterValidator(_whole_form)]
Means = Annotated[dict[str, float], AfterValidator(_every_score)]  # each score's mean


class Spread(_Part):
    """A score across the reviewers: their mean and its standard deviation."""

    mean: float
    spread: float


class PointTerms(_Part):
    """What one point of a review named of the paper (``core.review.grounding.PointGrounding``)."""

    field: str
    item: int
    terms: list[str]


class PerReview(_Part, Generic[Item]):
    """One thing for the meta-review and one for each review, in the reviews' order."""

    meta_review: Item
    reviews: list[Item]


class Improvement(_Part):
    """An improvement round that stood: each score's mean before and after, where it left the
    paper (its commit and pages)."""

    round: int
    before: Means
    after: Means
    commit: str = ""
    pages: int | None = None


class UndoneRound(_Part):
    """An improvement round undone, and why (the paper stayed as it was)."""

    round: int
    why: str


class ReviewRecord(_Part):
    """The content of review.json (see the module's docstring); :meth:`to_json` writes it as
    it was read, without the parts it lacked."""

    decision: str
    decision_reason: str = ""  # why the facts made it Reject ('' where the reviews decided)
    overall: float
    threshold: float = 0.0
    scores: Annotated[dict[str, Spread], AfterValidator(_every_score)]
    meta_review: SavedForm
    reviews: list[SavedForm]
    grounding: PerReview[list[PointTerms]] | None = None
    left_out: PerReview[list[str]] | None = None
    facts: FactSheet | None = None
    capped: list[CappedScore] = []
    unverified: list[str] = []  # scores no code could back
    reviewer: dict[str, Any] | None = None
    improvements: list[Improvement] = []
    undone: list[UndoneRound] = []

    @classmethod
    def of(
        cls,
        reviewed: Reviewed,
        *,
        reviewer: dict[str, Any] | None = None,
        improvements: list[Improvement] | None = None,
        undone: list[UndoneRound] | None = None,
    ) -> ReviewRecord:
        """The record of a review just made (``reviewer``: ``reviewer_facts``'s); the rounds are
        kept only where given (``labtui review`` has none)."""
        rounds = {"improvements": improvements, "undone": undone}
        return cls.model_validate(
            {
                **reviewed.panel.to_json(),
                "facts": reviewed.facts,
                "capped": reviewed.capped,
                "unverified": reviewed.facts.unverified,
                **({"reviewer": reviewer} if reviewer is not None else {}),
                **{key: value for key, value in rounds.items() if value is not None},
            }
        )

    @classmethod
    def from_json(cls, data: Any, source: str) -> ReviewRecord:
        """The record in ``data`` (review.json's content, or a review checkpoint's details);
        LabtuiError naming ``source`` and the first field that is not as a review record has it."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise LabtuiError(
                f"{source} is not a review record: {_first_problem(exc)}",
                f"fix {source}, or review the paper again to write it anew",
            ) from None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)

    @field_serializer("facts")
    def _facts_with_their_caps(self, facts: FactSheet | None) -> dict[str, Any] | None:
        return None if facts is None else facts.to_json()

    @property
    def rounds(self) -> int:
        """The improvement rounds run so far, undone ones too."""
        return len(self.improvements) + len(self.undone)

    def means(self) -> dict[str, float]:
        """Each score's mean, in the form's order."""
        return {name: self.scores[name].mean for name in SCORE_RANGES}

    def meta(self) -> PaperReview:
        return PaperReview(self.meta_review)

    def with_undone(self, number: int, why: str) -> ReviewRecord:
        return self.model_copy(
            update={"undone": [*self.undone, UndoneRound(round=number, why=why)]}
        )

    def markdown(self) -> str:
        """The record as Markdown: decision (and why, where the facts decided it), scores with
        their spread, the meta-review's summary, strengths and weaknesses, and the rounds
        undone."""
        count = len(self.reviews)
        threshold = f" (Accept from {self.threshold:g})" if self.threshold else ""
        lines = [
            f"**{self.decision}** · overall {self.overall:.2f}/10{threshold} · "
            f"{count} reviewer{'s' if count > 1 else ''}",
            *([f"*{rejection_note(self.decision_reason)}*"] if self.decision_reason else []),
            "",
            *self._score_table(),
            "",
            self.meta_review["Summary"],
            "",
        ]
        for name in ("Strengths", "Weaknesses", "Questions"):
            items = self.meta_review[name] or ["(none)"]
            lines += [f"**{name}**", *(f"- {item}" for item in items), ""]
        for undone in self.undone:
            lines.append(f"*Improvement round {undone.round} was undone: {undone.why}*")
        return "\n".join(lines).rstrip() + "\n"

    def _score_table(self) -> list[str]:
        last = self.improvements[-1] if self.improvements else None
        reviewers = self.reviews if len(self.reviews) > 1 else []
        header = ["Score", "mean ± spread", *(f"R{i}" for i in range(1, len(reviewers) + 1))]
        if last is not None:
            header.append(f"round {last.round}: before → after")
        rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for name, (_, high) in SCORE_RANGES.items():
            score = self.scores[name]
            row = [name, f"{score.mean:.2f} ± {score.spread:.2f} /{high}"]
            row += [str(review[name]) for review in reviewers]
            if last is not None:
                row.append(f"{last.before[name]:.2f} → {last.after[name]:.2f}")
            rows.append("| " + " | ".join(row) + " |")
        return rows


def _first_problem(exc: ValidationError) -> str:
    """The first field pydantic refused, as a path (``improvements.0.round``), and why."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the record"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"


# -- the file ---------------------------------------------------------------------------------


def save_review_record(root: Path, record: ReviewRecord) -> Path:
    """Write the project's review.json, whole or not at all."""
    path = Path(root) / PAPER_REVIEW
    write_json(path, record.to_json())
    return path


def read_review_record(root: Path) -> ReviewRecord | None:
    """The project's review.json; None when there is none; LabtuiError when it cannot be read as
    one (naming the file and the field)."""
    path = Path(root) / PAPER_REVIEW
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LabtuiError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabtuiError(
            f"{path} is not JSON: {exc.msg} (line {exc.lineno})",
            "fix it, or delete it to review the paper anew",
        ) from None
    return ReviewRecord.from_json(data, str(path))
