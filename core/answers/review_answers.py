# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""The reviewer's answers as typed records: the NeurIPS review form (``core.review``,
``core.review.reviewer``) and the answer after rereading it."""

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from .checks import Flag, Items, Prose, Score
from .record import Record
from .variants import Is, Need, Variant, Variants

REVIEW_SCORES: dict[str, tuple[int, int]] = {
    "Originality": (1, 4),
    "Quality": (1, 4),
    "Clarity": (1, 4),
    "Significance": (1, 4),
    "Soundness": (1, 4),
    "Presentation": (1, 4),
    "Contribution": (1, 4),
    "Overall": (1, 10),
    "Confidence": (1, 5),
}
_LOW, _HIGH = "1 (low) to 4 (very high)", "1 (poor) to 4 (excellent)"


class ReviewForm(Record):
    """The NeurIPS review form, as The AI Scientist asks for it."""

    model_config = ConfigDict(title="review")
    shape: ClassVar[str] = "one JSON object with every field of the review form"

    summary: Prose(8, "what the paper claims and contributes") = Field(alias="Summary")
    # Strengths and Weaknesses: at least one real point each; a review without them judged nothing.
    strengths: Items(
        "a specific strength (originality, quality, clarity or significance)", min_items=1
    ) = Field(alias="Strengths")
    weaknesses: Items(
        "a specific weakness (originality, quality, clarity or significance)", min_items=1
    ) = Field(alias="Weaknesses")
    originality: Score(*REVIEW_SCORES["Originality"], _LOW) = Field(alias="Originality")
    quality: Score(*REVIEW_SCORES["Quality"], _LOW) = Field(alias="Quality")
    clarity: Score(*REVIEW_SCORES["Clarity"], _LOW) = Field(alias="Clarity")
    significance: Score(*REVIEW_SCORES["Significance"], _LOW) = Field(alias="Significance")
    # Questions may be none: a clear paper can leave a reviewer nothing to ask, and the form does
    # not require one. Limitations need one: every study has limits, and an empty list is in
    # practice the field skipped.
    questions: Items("a question for the authors", min_items=0) = Field(alias="Questions")
    limitations: Items("a limitation the paper does not address", min_items=1) = Field(
        alias="Limitations"
    )
    ethical_concerns: Flag = Field(alias="Ethical Concerns")
    soundness: Score(*REVIEW_SCORES["Soundness"], _HIGH) = Field(alias="Soundness")
    presentation: Score(*REVIEW_SCORES["Presentation"], _HIGH) = Field(alias="Presentation")
    contribution: Score(*REVIEW_SCORES["Contribution"], _HIGH) = Field(alias="Contribution")
    overall: Score(*REVIEW_SCORES["Overall"], "1 very strong reject … 10 award quality") = Field(
        alias="Overall"
    )
    confidence: Score(*REVIEW_SCORES["Confidence"], "1 (guess) to 5 (certain)") = Field(
        alias="Confidence"
    )
    decision: Literal["Accept", "Reject"] = Field(alias="Decision")


class ReviewReflection(Record):
    """A reviewer's answer after rereading: done, or the whole revised form."""

    model_config = ConfigDict(title="review reflection")
    shape: ClassVar[str] = '{"done": true} or {"done": false, "review": {<the whole revised form>}}'

    variants: ClassVar[Variants] = Variants(
        (
            Variant((Is("done", True),)),
            Variant(
                (Is("done", False),),
                (Need("review", '"done": false needs the revised "review" on the whole form'),),
            ),
        )
    )

    done: Flag
    review: ReviewForm | None = None
