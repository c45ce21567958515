# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""Ideas and their novelty as typed records: an idea as the archive keeps it and as a model
proposes it (``core.workspace.ideas``, ``core.stages.ideas``, ``core.steps.persona_panel``), and
each turn of the novelty check (``core.stages.novelty``), whose verdict names the papers shown."""

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    create_model,
)

from .checks import Flag, Prose, Score, Slug, Text, answer_error, non_empty, show, states
from .record import Record

# -- ideas (core.workspace.ideas, core.stages.ideas, core.steps.persona_panel) ----------------------------------

IDEA_SCORE = (1, 10)
STATUSES = (
    "seed",
    "proposed",
    "novel",
    "not_novel",
    "unsure",
    "unchecked",
    "chosen",
    "rejected",
    "done",
)


@states("enum")
def _known_status(value: Any) -> Any:
    if value not in STATUSES:
        raise answer_error("status", f"is {value!r}; use one of {', '.join(STATUSES)}")
    return value


@states("type")
def _review_score(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise answer_error("not_number", "must be a number (the review's Overall)")
    return value


@states("type", "minLength", unstated=("not only spaces: minLength counts them",))
def _optional_text(value: Any) -> Any:
    return None if value is None else non_empty(value)


@states("type", unstated=("null read as {}: a reading of the file, it refuses nothing",))
def _dict_or_empty(value: Any) -> dict[str, Any]:
    return dict(value or {})


class IdeaRecord(Record):
    """An idea as the archive keeps it (seeds, The AI Scientist's records, hand edits): present
    fields, valid scores; its text is a person's, so no content rules."""

    model_config = ConfigDict(title="idea")
    shape: ClassVar[str] = "a JSON object with Name, Title, Experiment and scores"

    name: Slug = Field(alias="Name")
    title: Text = Field(alias="Title")
    hypothesis: Annotated[
        Annotated[str, Field(min_length=1)] | None, BeforeValidator(_optional_text)
    ] = Field(None, alias="Hypothesis")
    experiment: Text = Field(alias="Experiment")
    interestingness: Score(*IDEA_SCORE) = Field(alias="Interestingness")
    feasibility: Score(*IDEA_SCORE) = Field(alias="Feasibility")
    novelty: Score(*IDEA_SCORE) = Field(alias="Novelty")
    status: Annotated[str, BeforeValidator(_known_status)] = Field(
        "proposed", json_schema_extra={"enum": list(STATUSES)}
    )
    score: Annotated[float | int | None, BeforeValidator(_review_score)] = Field(
        None, alias="Score"
    )
    novelty_evidence: Annotated[dict[str, Any], BeforeValidator(_dict_or_empty)] = Field(
        default_factory=dict
    )


class IdeaProposal(Record):
    """A model's new idea: every text field real content, the hypothesis stated. Archive fields
    (status, Score) are not the model's to set and are ignored."""

    model_config = ConfigDict(title="idea")
    shape: ClassVar[str] = (
        "a JSON object with Name, Title, Hypothesis, Experiment, Interestingness, Feasibility "
        "and Novelty"
    )

    name: Slug = Field(alias="Name", description="a lowercase slug naming the idea")
    title: Prose(3, "a title for the paper") = Field(alias="Title")
    hypothesis: Prose(6, "what the experiment should show, and why you expect it") = Field(
        alias="Hypothesis"
    )
    experiment: Prose(6, "what to change in experiment.py and what to measure") = Field(
        alias="Experiment"
    )
    interestingness: Score(*IDEA_SCORE) = Field(alias="Interestingness")
    feasibility: Score(*IDEA_SCORE) = Field(alias="Feasibility")
    novelty: Score(*IDEA_SCORE) = Field(alias="Novelty")


@states("minItems")
def _at_least_one_idea(ideas: list[Any]) -> list[Any]:
    if not ideas:
        raise answer_error("too_few_items", "is empty: propose at least one idea")
    return ideas


class IdeaProposals(Record):
    model_config = ConfigDict(title="ideas")
    shape: ClassVar[str] = '{"ideas": [<idea>, ...]} with at least one idea'

    ideas: Annotated[list[IdeaProposal], AfterValidator(_at_least_one_idea)] = Field(
        json_schema_extra={"minItems": 1}
    )


class IdeaReflection(Record):
    model_config = ConfigDict(title="idea reflection")
    shape: ClassVar[str] = '{"done": true|false, "idea": {<the idea, every field>}}'

    done: Flag
    idea: IdeaProposal


# -- novelty (core.stages.novelty) ----------------------------------------------------------------

# "unchecked" is never a model's answer: labtui records it when no verdict has evidence behind it
# (arXiv unreachable, no search results, no usable answer).
NOVELTY_DECISIONS = ("search", "novel", "not_novel", "unsure")
VERDICTS = ("novel", "not_novel")
MAX_CLOSEST = 5


class ClosestPaper(Record):
    arxiv_id: Text = Field(description="an arXiv id from the search results you were shown")
    overlap: Prose(3, "how this paper overlaps the idea")


# Keywords, not an address: Qwen2.5-Coder-1.5B searched arXiv for
# "arxiv.org/search/abs/?q=label+noise&as_type=pdf&sort=date&rows=20" (recorded in
# tests/recorded/real_model/qwen15_moons_novelty.jsonl). No slash, no raw quote (it would end
# the grammar's string), and the length in the pattern, since llama.cpp drops minLength beside it.
QUERY = r'^[^/"\\]{6,200}$'


@states("pattern")
def _keywords_not_address(query: str) -> str:
    if "/" in query:
        raise answer_error(
            "address",
            f"is an address ({show(query)}): give the search words themselves, e.g. the idea's "
            "key terms",
            show(query),
        )
    return query


class NoveltySearch(Record):
    """One more arXiv search: the query is what the grammar and the check insist on."""

    model_config = ConfigDict(title="novelty search")
    shape: ClassVar[str] = '{"decision": "search", "query": <search string>, "reason": <why>}'

    decision: Literal["search"]
    query: Annotated[
        Prose(2, "a precise arXiv search string: keywords"),
        AfterValidator(_keywords_not_address),
        Field(json_schema_extra={"pattern": QUERY}),
    ]
    reason: Prose(3, "what this search looks for")


class NoveltyVerdict(Record):
    """novel / not_novel: a verdict stands only on papers the model was shown, named."""

    model_config = ConfigDict(title="novelty verdict")
    shape: ClassVar[str] = (
        '{"decision": "novel" | "not_novel", "reason": <why>, "closest": [{"arxiv_id": <id from '
        'the results>, "overlap": <how it overlaps>}, ...]}'
    )

    decision: Literal["novel", "not_novel"]
    reason: Prose(3, "why, in your words, against the papers found")
    closest: list[ClosestPaper] = Field(min_length=1, max_length=MAX_CLOSEST)


class NoveltyUnsure(Record):
    model_config = ConfigDict(title="novelty unsure")
    shape: ClassVar[str] = '{"decision": "unsure", "reason": <why>, "closest": [...]}'

    decision: Literal["unsure"]
    reason: Prose(3, "why the search results do not settle it")
    closest: list[ClosestPaper] = Field(default_factory=list, max_length=MAX_CLOSEST)


NOVELTY_VARIANTS: dict[str, type[Record]] = {
    "search": NoveltySearch,
    "novel": NoveltyVerdict,
    "unsure": NoveltyUnsure,
}


def novelty_step(decisions: tuple[str, ...], shown_ids: tuple[str, ...] = ()) -> type[BaseModel]:
    """The record of one novelty turn: only the variants open now (no verdict before any paper
    was shown, no search in the last round), a verdict's ids limited to the ids shown, so a
    grammar-constrained server can only name papers from the results."""
    variants = list(
        dict.fromkeys(NOVELTY_VARIANTS["novel" if d in VERDICTS else d] for d in decisions)
    )
    if shown_ids:
        variants = [_naming_only(v, shown_ids) for v in variants]
    if len(variants) == 1:
        return variants[0]
    union = Annotated[Union[tuple(variants)], Field(discriminator="decision")]  # noqa: UP007
    return create_model(
        "NoveltyStep",
        __base__=_NoveltyChoice,
        root=(union, ...),
    )


class _NoveltyChoice(RootModel[Any]):
    """A novelty turn that may be one of several variants (pydantic picks by "decision")."""

    model_config = ConfigDict(title="novelty step")
    shape: ClassVar[str] = (
        '{"decision": "search", "query": <search string>, "reason": <why>} or '
        '{"decision": "novel" | "not_novel" | "unsure", "reason": <why>, "closest": [...]}'
    )


def _naming_only(variant: type[Record], shown_ids: tuple[str, ...]) -> type[Record]:
    if "closest" not in variant.model_fields:
        return variant
    paper = create_model(
        "ClosestPaper",
        __base__=ClosestPaper,
        arxiv_id=(Literal[shown_ids], Field(description="an arXiv id from the search results")),
    )
    field = variant.model_fields["closest"]
    return create_model(
        variant.__name__,
        __base__=variant,
        closest=(list[paper], field),
    )


NoveltyStep = novelty_step(NOVELTY_DECISIONS)  # every variant: the shape the schema walk checks
