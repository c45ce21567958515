# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""Structured answers as typed records: one pydantic model per JSON answer labtui asks a model for.

Each model is the one source of an answer's rules. The stages' parse functions validate with it
(ranges and choices are checked, never clamped) and turn it into the records the rest of labtui
uses; ``core.llm.client`` sends its JSON schema as the request's ``response_format``, so that a server
with schema-constrained decoding (llama.cpp, vLLM, OpenAI, …) produces the shape.

The records are built from the field types in ``core.answers.checks`` (``Prose``, ``Items``,
``Score``, …), which refuse placeholders, one-word answers and copies of the prompt's example
(``core.answers.examples``) and say what is wrong in one sentence. ``validate``, ``check_text``,
``example_strings``, ``answer_examples`` and ``is_placeholder`` are re-exported here for the
callers that import them from this module.
"""

import re
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    RootModel,
    create_model,
    model_validator,
)

from .checks import (
    Flag,
    Items,
    Prose,
    Score,
    Slug,
    Text,
    answer_error,
    must_be_list_of,
    needs_items,
    non_empty,
    show,
    states,
)
from .examples import answer_examples as answer_examples
from .examples import example_strings as example_strings
from .variants import Filled, Is, Need, Variant, Variants, check_variants


def _variant_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    variants = getattr(model, "variants", None)
    if isinstance(variants, Variants):
        variants.schema(schema, model)


class Record(BaseModel):
    """A structured answer. ``shape`` is what a reply of the wrong shape is told to answer;
    ``variants``: the shapes it takes when a field needs another (``core.answers.variants``),
    stated in its JSON schema and checked after its fields."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_variant_schema)
    shape: ClassVar[str] = "one JSON object"
    variants: ClassVar[Variants | None] = None

    _check_variants = model_validator(mode="after")(check_variants)


def record_name(model: type[BaseModel]) -> str:
    """How the dialogue names the answer (the model's title): "review", "plan", ..."""
    return str(model.model_config.get("title") or model.__name__)


@cache
def response_format(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI-style ``response_format`` that asks for ``model``'s JSON schema. Not strict:
    OpenAI's strict mode forbids the minLength/pattern hints and optional fields."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": model.__name__,
            "schema": model.model_json_schema(by_alias=True),
            "strict": False,
        },
    }


# ---------------------------------------------------------------------------------------------
# The records
# ---------------------------------------------------------------------------------------------

# -- the review form (core.review, core.review.reviewer) -------------------------------------------------

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


# -- literature review steps (core.stages.literature) ---------------------------------------------


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


# -- the plan (core.stages.plan) ------------------------------------------------------------------

# A plan says what each run is judged by, never what it will give: a value written before anything
# ran reads, at the checkpoint, as a result. A digit may only end a name ("run_0", "fc1", "L2").
# No raw quote or backslash either: in a grammar built from the pattern they would end the JSON
# string early. No (?:…) groups: llama.cpp's converter refuses them, and a server that cannot
# convert a schema drops it silently (measured: tests/bench/schema_probe.py). The converter also
# drops minLength beside a pattern; the validator keeps it.
NO_VALUES = r'^([^0-9"\\]|[A-Za-z_][0-9]+){%d,}$'
_VALUE = re.compile(r"(?<![A-Za-z_0-9])[-+]?[0-9][0-9.,eE%-]*")


@states("pattern")
def _no_values(text: str) -> str:
    # The digits the pattern forbids; its quotes are the grammar's concern, not a value.
    found = _VALUE.search(text)
    if found:
        shown = found.group(0).rstrip(".,")
        raise answer_error(
            "predicts_value",
            f"states a value ({shown!r}) before anything ran: name what is compared, in words, "
            "and leave the numbers to the runs",
            repr(shown),
        )
    return text


def WithoutValues(text: Any, min_chars: int) -> Any:
    """``text`` (a Prose type) that may not state a value: the rule in the validator and, as a
    pattern, in the schema, which also repeats the text's minimum length (beside a pattern
    llama.cpp drops minLength: a one-word "predict" came back, 2 of 2)."""
    pattern = NO_VALUES % min_chars
    return Annotated[
        text, AfterValidator(_no_values), Field(json_schema_extra={"pattern": pattern})
    ]


class MetricExpectation(Record):
    metric: Text = Field(description="a metric the baseline reports")
    expect: Literal["higher", "lower"] = Field(
        description="the direction the change should move it, if the hypothesis holds"
    )


class PlannedRunRecord(Record):
    change: Prose(2, "what this run changes in experiment.py")
    metrics: list[MetricExpectation] = Field(min_length=1, max_length=8)
    measure: WithoutValues(
        Prose(3, "the comparison that answers the question, in words, without values"), 12
    )


class PlannedRunEdit(PlannedRunRecord):
    """A run of plan.json as the researcher may write it: the metrics may be left out and the
    comparison may quote a number (theirs, not a model's prediction)."""

    metrics: list[MetricExpectation] = Field(default_factory=list, max_length=8)
    measure: Prose(2, "the comparison that answers the question")


class Plan(Record):
    model_config = ConfigDict(title="plan")
    shape: ClassVar[str] = (
        '{"runs": [{"change": <what the run changes>, "metrics": [{"metric": <a baseline '
        'metric>, "expect": "higher" | "lower"}], "measure": <the comparison, no values>}, ...]}'
    )

    runs: Annotated[list[PlannedRunRecord], AfterValidator(needs_items(1, "a planned run"))] = (
        Field(json_schema_extra={"minItems": 1})
    )


class PlanEdit(Record):
    """plan.json as the researcher approved or edited it."""

    model_config = ConfigDict(title="plan")
    shape: ClassVar[str] = Plan.shape

    runs: Annotated[list[PlannedRunEdit], AfterValidator(needs_items(1, "a planned run"))] = Field(
        json_schema_extra={"minItems": 1}
    )


def plan_answer(metrics: tuple[str, ...], max_runs: int) -> type[Plan]:
    """The plan a model may give for this baseline: its metrics are the only names, at most
    ``max_runs`` runs (both in the schema, so a constrained server keeps to them)."""
    if not metrics:
        return Plan
    expectation = create_model(
        "MetricExpectation",
        __base__=MetricExpectation,
        metric=(Literal[metrics], Field(description="a metric the baseline reports")),
    )
    run = create_model(
        "PlannedRunRecord",
        __base__=PlannedRunRecord,
        metrics=(list[expectation], Field(min_length=1, max_length=len(metrics))),
    )
    return create_model(
        "Plan",
        __base__=Plan,
        runs=(
            Annotated[list[run], AfterValidator(needs_items(1, "a planned run"))],
            Field(json_schema_extra={"minItems": 1, "maxItems": max_runs}),
        ),
    )


# -- a run's analysis (core.stages.experiments) ---------------------------------------------------


class RunAnalysis(Record):
    """The shape and content of the analysis; whether its claims match the numbers is checked
    elsewhere, by code."""

    model_config = ConfigDict(title="run analysis")
    shape: ClassVar[str] = (
        '{"analysis": <two to five sentences>, "next": "continue" or "finish", "why": <one sentence>}'
    )

    analysis: Prose(6, "what the numbers show against the baseline, for the notebook")
    next: Literal["continue", "finish"]
    why: Prose(3, "why the runs go on or finish, in one sentence")


# -- a search's next change (core.search.climb, core.search.tree) ----------------------------------------

DESCRIPTION_CHARS = 120  # a ledger line's description


@states("maxLength", unstated=("one line: a pattern would make llama.cpp drop minLength",))
def _one_line(value: str) -> str:
    if "\n" in value.strip():
        raise answer_error("not_one_line", "must be one line, for the ledger")
    if len(value.strip()) > DESCRIPTION_CHARS:
        raise answer_error(
            "too_long",
            f"is {len(value.strip())} characters; at most {DESCRIPTION_CHARS}, for the ledger",
        )
    return " ".join(value.split())


class Proposal(Record):
    """One change a hill-climb or a tree search tries next; whether it is new is checked
    against the ledger by the caller."""

    model_config = ConfigDict(title="proposal")
    shape: ClassVar[str] = (
        '{"description": <the change in one line>, "change": <exactly what to change and why>}'
    )

    description: Annotated[
        Prose(3, "the change in one short line, as the ledger lists it"),
        AfterValidator(_one_line),
        Field(json_schema_extra={"maxLength": DESCRIPTION_CHARS}),
    ]
    change: Prose(6, "exactly what to change in the code, and why it should help")


# -- figure descriptions (core.stages.plots) ------------------------------------------------------


class FigureDescriptions(Record):
    model_config = ConfigDict(title="figure descriptions")
    shape: ClassVar[str] = '{"figures": {"<file name>": "<description>", ...}}'

    figures: dict[str, Prose(4, "what the figure plots (axes, curves, runs) and what to see")]


# -- citations (core.writeup.citations) -------------------------------------------------------------------


@states("type")
def _index(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise answer_error("not_integer", f"must be a result's number (an integer), got {value!r}")
    return value


class CitationProposal(Record):
    model_config = ConfigDict(title="citation proposal")
    shape: ClassVar[str] = (
        '{"done": true|false, "where": <the section and sentence>, "query": <arXiv search>}'
    )

    variants: ClassVar[Variants] = Variants(
        (
            Variant((Is("done", True),)),
            Variant(
                (Is("done", False),),
                (
                    Need(
                        "where",
                        '"where" must name the section and sentence that needs a citation',
                        "the section and sentence that needs a citation",
                        min_words=2,
                    ),
                    Need(
                        "query",
                        '"query" must be a search query for arXiv',
                        "a search query for arXiv",
                    ),
                ),
            ),
        )
    )

    done: Flag
    where: str = Field("", description="unless done: the section and sentence needing a citation")
    query: str = Field("", description="unless done: a short arXiv search query")


class CitationSelection(Record):
    model_config = ConfigDict(title="citation selection")
    shape: ClassVar[str] = '{"chosen": [<result numbers>], "how": <where and how>} ([] for none)'
    variants: ClassVar[Variants] = Variants(
        (
            Variant((Filled("chosen", False),)),
            Variant(
                (Filled("chosen"),),
                (
                    Need(
                        "how",
                        '"how" must say where and how to cite the chosen papers',
                        "where and how to cite the chosen papers",
                        min_words=2,
                    ),
                ),
            ),
        )
    )

    # An empty choice is legitimate: none of the results may support the place.
    chosen: Annotated[
        list[Annotated[int, BeforeValidator(_index)]], BeforeValidator(must_be_list_of("numbers"))
    ]
    how: str = Field("", description="with papers chosen: where and how to cite them")


# -- a section of the paper (core.writeup.sections) -------------------------------------------------


# Qwen2.5-Coder-1.5B wrote its abstract as a copy of the whole prompt (the notebook's tables,
# "[...]" and all) until the 2,048-token cap cut the JSON off: a section's length is bounded.
TITLE_CHARS, ABSTRACT_CHARS, SECTION_CHARS = 200, 1600, 6000


def at_most_chars(limit: int) -> Any:
    """A text of at most ``limit`` characters, checked here and not in the schema."""

    @states(
        unstated=(
            "at most N characters: llama.cpp's converter nests one grammar rule per character "
            "of a maxLength, and maxLength 1,600 made its server fail to parse the grammar and "
            "die (measured with Qwen2.5-Coder-1.5B, llama-cpp-python 0.3.36)",
        )
    )
    def check(text: str) -> str:
        if len(text) > limit:
            raise answer_error(
                "too_long_text",
                f"is {len(text):,} characters long; at most {limit:,}: write it shorter, in "
                "your own words, without copying the prompt",
            )
        return text

    return check


class SectionText(Record):
    """One section's body in LaTeX; what it may hold (no preamble, traced numbers, known
    \\cite keys) is checked against the paper and the runs by core/writeup/section_text.py."""

    model_config = ConfigDict(title="section text")
    shape: ClassVar[str] = (
        '{"latex": <the section\'s text in LaTeX, without its \\section heading>}'
    )

    latex: Annotated[
        Prose(25, "the section's text in LaTeX, without its \\section heading", min_chars=120),
        AfterValidator(at_most_chars(SECTION_CHARS)),
    ]


class TitleAbstract(Record):
    model_config = ConfigDict(title="title and abstract")
    shape: ClassVar[str] = '{"title": <the paper\'s title>, "abstract": <the abstract in LaTeX>}'

    title: Annotated[
        Prose(3, "the paper's title, on one line"), AfterValidator(at_most_chars(TITLE_CHARS))
    ]
    abstract: Annotated[
        Prose(40, "the abstract in LaTeX: the problem, what was done, the main result"),
        AfterValidator(at_most_chars(ABSTRACT_CHARS)),
    ]


RECORDS: tuple[type[BaseModel], ...] = (
    ReviewForm,
    ReviewReflection,
    IdeaRecord,
    IdeaProposal,
    IdeaProposals,
    IdeaReflection,
    NoveltyStep,
    LiteratureStep,
    Plan,
    PlanEdit,
    RunAnalysis,
    FigureDescriptions,
    CitationProposal,
    CitationSelection,
    SectionText,
    TitleAbstract,
)


# -- a repository's set-up (core.onboarding.setup_proposal, `labtui init`) -----------------------------------


RESULT_SOURCES = ("final_info", "json", "csv", "stdout", "tensorboard", "wandb")


class SetupAnswer(Record):
    """How to run a researcher's repository, as a model reads it from the survey. Only the shape
    is checked here: every value is checked against what the survey found (files, options,
    metrics) by core/onboarding/setup_proposal.py, one by one, so one bad value costs only itself."""

    model_config = ConfigDict(title="set-up")
    shape: ClassVar[str] = (
        '{"command": <one run, with {python} and {out_dir}>, "smoke_command": <or "">, '
        '"results_source": <final_info|json|csv|stdout|tensorboard|wandb>, "results_path": '
        '<or "">, "metrics": {<name>: "higher" or "lower"}, "edit": [<files>], "protect": '
        '[<files>], "paper_tex": <or "">, "paper_sections": [<titles>], "task": <the research, '
        'in two to five sentences>, "why": {<field>: <the fact it rests on>}}'
    )

    command: str = ""
    smoke_command: str = ""
    # The choices go into the schema (core.onboarding.setup_proposal checks them against the survey).
    results_source: str = Field("", json_schema_extra={"enum": list(RESULT_SOURCES)})
    results_path: str = ""
    metrics: dict[str, Annotated[str, Field(json_schema_extra={"enum": ["higher", "lower"]})]] = (
        Field(default_factory=dict)
    )
    edit: list[str] = Field(default_factory=list)
    protect: list[str] = Field(default_factory=list)
    paper_tex: str = ""
    paper_sections: list[str] = Field(default_factory=list)
    task: str = ""
    why: dict[str, str] = Field(default_factory=dict)
