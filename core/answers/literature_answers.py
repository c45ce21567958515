# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""The librarian's answer as a typed record: one action of the literature review
(``core.stages.literature``): search, read, add a paper, or done."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from .checks import states
from .record import Record
from .variants import Is, Need, Variant, Variants

# What each action needs, as the schema states it; parse_action checks it in these words.
SEARCH_ABOUT = "a few precise search keywords"
PAPER_ID_ABOUT = "an id from the results you were shown"
PAPER_ABOUT = "one paragraph on what the paper did, found, and why it matters for this task"
PAPER_SUMMARY_CHARS = 80  # "one paragraph": a title restated is not a summary
PAPER_SUMMARY_WORDS = 12
DONE_ABOUT = "what the literature says about the task: what is known, what is open"
DONE_SUMMARY_WORDS = 6


@states(unstated=("anything but true reads the abstract: a reading, it refuses nothing",))
def _only_true(value: Any) -> bool:
    return value is True


class LiteratureStep(Record):
    """One action of the librarian, one variant per action; whether its id was shown, and
    whether the list is full enough to be done, ``parse_action`` checks."""

    model_config = ConfigDict(title="literature step")
    shape: ClassVar[str] = (
        'one JSON action: {"action": "search" | "read" | "add" | "done", ...} with the fields '
        "that action needs"
    )
    variants: ClassVar[Variants] = Variants(
        (
            Variant(
                (Is("action", "search"),),
                (Need("query", '"search" needs a "query" string', SEARCH_ABOUT),),
            ),
            Variant(
                (Is("action", "read"),),
                (Need("arxiv_id", '"read" needs an "arxiv_id"', PAPER_ID_ABOUT),),
                may=("full_text",),
            ),
            Variant(
                (Is("action", "add"),),
                (
                    Need("arxiv_id", '"add" needs an "arxiv_id"', PAPER_ID_ABOUT),
                    Need(
                        "summary",
                        '"add" needs a "summary"',
                        PAPER_ABOUT,
                        min_words=PAPER_SUMMARY_WORDS,
                        min_chars=PAPER_SUMMARY_CHARS,
                    ),
                ),
            ),
            Variant(
                (Is("action", "done"),),
                (
                    Need(
                        "summary",
                        '"done" needs a "summary"',
                        DONE_ABOUT,
                        min_words=DONE_SUMMARY_WORDS,
                    ),
                ),
            ),
        ),
        checked_by="core.stages.literature.parse_action",
    )

    action: Literal["search", "read", "add", "done"]
    query: str = Field("", description="search: a few precise keywords")
    arxiv_id: str = Field("", description="read, add: an id from the results you were shown")
    # Only a JSON true asks for the full text; anything else reads the abstract.
    full_text: Annotated[bool, BeforeValidator(_only_true)] = False
    summary: str = Field(
        "", description="add: one paragraph on the paper; done: what the literature says"
    )
