"""Structured answers as typed records: one pydantic model per JSON answer labtui asks a model for.

Each model is the one source of an answer's rules. The stages' parse functions validate with it
(ranges and choices are checked, never clamped) and turn it into the records the rest of labtui
uses; ``core.llm`` sends its JSON schema as the request's ``response_format``, so that a server
with schema-constrained decoding (llama.cpp, vLLM, OpenAI, …) produces the shape.

Shape is not content. A small model fills a valid shape with "..." copied from the prompt's
example and in-range scores. The text types here (``Prose``, ``Items``) refuse placeholders,
empty and one-word answers, and copies of the prompt's example text, and the errors are turned into
one short sentence that names the field and says why, because a model reads it in the re-ask.

Copies of the example: ``core.llm.ask_json`` collects the string values of the JSON snippets its
prompt shows (``example_strings``) and puts them in force while the answer is parsed
(``answer_examples``); ``validate`` hands them to the checks in pydantic's validation context.
Only free-text fields are compared: a choice such as "Accept" or "continue" is never a copy.
"""

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

M = TypeVar("M", bound=BaseModel)

# ---------------------------------------------------------------------------------------------
# The prompt's example strings
# ---------------------------------------------------------------------------------------------

_EXAMPLES: ContextVar[frozenset[str]] = ContextVar("labtui_answer_examples", default=frozenset())
# A double-quoted JSON string; matched left to right, so that quotes pair up as JSON pairs them.
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def normalized(text: str) -> str:
    """Text as compared with the example: case, spacing and closing punctuation ignored."""
    return " ".join(text.split()).casefold().strip(" .!?;:,'\"`")


@contextmanager
def answer_examples(strings: Iterable[str]) -> Iterator[None]:
    """While parsing an answer: these strings are the prompt's example, not the model's words."""
    token = _EXAMPLES.set(frozenset(n for n in map(normalized, strings) if n))
    try:
        yield
    finally:
        _EXAMPLES.reset(token)


def example_strings(messages: Iterable[dict[str, Any]], besides: Any = None) -> frozenset[str]:
    """The string values of the JSON-looking snippets in a prompt: its system and user messages
    up to the model's first reply (later turns quote the model's own answers, which it may keep
    when it revises them). ``besides``: data the prompt shows as material, not as an example
    (the reviews an Area Chair reads, the idea archive); its strings may be quoted."""
    found: set[str] = set()
    for message in messages:
        if message.get("role") == "assistant":
            break
        if message.get("role") in ("system", "user"):
            found |= snippet_strings(_content_text(message.get("content")))
    if besides is not None:
        found -= snippet_strings(json.dumps(besides, ensure_ascii=False))
        found -= snippet_strings(json.dumps(besides))
    return frozenset(n for n in map(normalized, found) if n)


def snippet_strings(text: str) -> set[str]:
    """String values inside {...} spans of ``text`` (examples need not be valid JSON: prompts
    write ``"novel" | "unsure"`` or ``<description>``)."""
    strings: set[str] = set()
    for span in _brace_spans(text):
        for match in _QUOTED.finditer(span):
            if span[match.end() :].lstrip().startswith(":"):
                continue  # a key, not a value
            raw = match.group(1)
            try:
                strings.add(json.loads(f'"{raw}"'))
            except ValueError:
                strings.add(raw)
    return strings


def _brace_spans(text: str) -> Iterator[str]:
    """Top-level {...} spans; quotes count only inside braces, where JSON strings are."""
    depth, start, in_string, escaped = 0, 0, False, False
    for index, char in enumerate(text):
        if depth and in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif depth and char == '"':
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                yield text[start : index + 1]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI's list-of-parts form
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# ---------------------------------------------------------------------------------------------
# What is not content
# ---------------------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    "string str text txt todo tbd tba fixme n/a na none null nil undefined placeholder example "
    "sample xxx etc description summary answer value".split()
)
_PLACEHOLDER_PATTERNS = tuple(
    re.compile(pattern)
    for pattern in (
        r"^<[^<>]*>$",  # <a description in angle brackets>
        r"^\[[^\[\]]*\]$",  # [summary]
        r"^\{[^{}]*\}$",  # {summary}
        r"lorem ipsum",
        r"^(?:todo|tbd|fixme)\b",
        r"^(?:insert|write|enter|put|type|fill in)\b.{0,40}\bhere$",
        r"\byour\b.{0,40}\bhere$",  # "your summary here"
        # "summary here", "text goes here", "the description here"
        r"^(?:\w+ )?(?:summary|text|description|title|answer|content|reason|analysis|query|"
        r"point|question|limitation|strength|weakness)s? (?:goes )?here$",
    )
)
_ALNUM = re.compile(r"[^\W_]")
_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*")
SHOWN_CHARS = 60


def show(value: Any) -> str:
    """A value as a message quotes it: repr, clipped."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 4] + "…" + text[-3:]


def is_placeholder(text: str) -> bool:
    """Text that stands for content without being any: "...", "TODO", "<summary>", "N/A"."""
    stripped = text.strip()
    if not _ALNUM.search(stripped):
        return True  # "...", "…", "-", "?"
    bare = " ".join(stripped.casefold().split()).strip(" .!?;:,'\"`*_")
    return bare in _PLACEHOLDER_WORDS or any(p.search(bare) for p in _PLACEHOLDER_PATTERNS)


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class TextProblem:
    kind: str  # empty | placeholder | example_copy | too_short
    message: str  # what is wrong and what to write, after "field 'X' "
    value: str  # the offending text as quoted (groups the same fault across fields)


def text_problem(
    text: str,
    *,
    about: str,
    min_words: int = 1,
    min_chars: int = 0,
    examples: frozenset[str] = frozenset(),
    otherwise: str = "",
) -> TextProblem | None:
    """Why ``text`` is not a real answer about ``about``, or None when it is. ``otherwise``:
    the alternative to offer (", or give an empty list")."""
    shown = show(text.strip())
    write = f"write {about} in your own words{otherwise}"
    if not text.strip():
        return TextProblem("empty", f"is empty: write {about}{otherwise}", "''")
    if is_placeholder(text):
        return TextProblem("placeholder", f"is a placeholder ({shown}): {write}", shown)
    if normalized(text) in examples:
        return TextProblem("example_copy", f"copies the prompt's example ({shown}): {write}", shown)
    words = word_count(text)
    if words < min_words:
        return TextProblem(
            "too_short",
            f"has {words} word{'s' if words != 1 else ''} ({shown}); write at least "
            f"{min_words}: {about}",
            shown,
        )
    if len(text.strip()) < min_chars:
        return TextProblem(
            "too_short",
            f"is {len(text.strip())} characters long; write at least {min_chars}: {about}",
            shown,
        )
    return None


def check_text(
    value: Any, field: str, *, about: str, min_words: int = 1, min_chars: int = 0
) -> str:
    """``value`` stripped, or ValueError "field 'x' ..." (for fields whose need depends on
    another field, checked by a parse function rather than the model)."""
    if not isinstance(value, str):
        raise ValueError(f"field {field!r} must be a string: {about}, got {show(value)}")
    problem = text_problem(
        value, about=about, min_words=min_words, min_chars=min_chars, examples=_EXAMPLES.get()
    )
    if problem is not None:
        raise ValueError(f"field {field!r} {problem.message}")
    return value.strip()


# ---------------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------------


def _fail(kind: str, message: str, value: str = "") -> PydanticCustomError:
    # The message is passed as context, not as the template: it may hold JSON braces.
    return PydanticCustomError(kind, "{message}", {"message": message, "value": value})


class _FreeText:
    """Marks a free-text field (Prose or Items): what "every text field" counts."""


FREE_TEXT = _FreeText()


def _must_be_string(value: Any) -> Any:
    if not isinstance(value, str):
        raise _fail("not_string", f"must be a string, got {show(value)}")
    return value


def _checks_content(about: str, min_words: int, min_chars: int, otherwise: str) -> Any:
    def check(value: str, info: ValidationInfo) -> str:
        examples = (info.context or {}).get("examples") or frozenset()
        problem = text_problem(
            value,
            about=about,
            min_words=min_words,
            min_chars=min_chars,
            examples=examples,
            otherwise=otherwise,
        )
        if problem is not None:
            raise _fail(problem.kind, problem.message, problem.value)
        return value.strip()

    return check


def Prose(min_words: int, about: str, *, min_chars: int = 0, otherwise: str = "") -> Any:
    """Free text about ``about`` (also its schema description): no placeholder, no copy of the
    prompt's example, at least ``min_words`` words (and ``min_chars`` characters)."""
    # minLength only in the schema: it steers constrained decoding away from "..." while the
    # validator gives the precise message.
    return Annotated[
        str,
        BeforeValidator(_must_be_string),
        AfterValidator(_checks_content(about, min_words, min_chars, otherwise)),
        Field(
            description=about,
            json_schema_extra={"minLength": max(2, 3 * min_words, min_chars)},
        ),
        FREE_TEXT,
    ]


def _must_be_list_of(what: str) -> Any:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise _fail("not_list", f"must be a list of {what}, got {show(value)}")
        return value

    return check


def _needs_items(min_items: int, about: str) -> Any:
    def check(items: list[str]) -> list[str]:
        if len(items) < min_items:
            raise _fail(
                "too_few_items",
                f"has {len(items)} item{'s' if len(items) != 1 else ''}; give at least "
                f"{min_items}: {about}",
            )
        return items

    return check


def Items(about: str, *, min_items: int, item_words: int = 2) -> Any:
    """A list of points, each ``about`` and at least ``item_words`` words long (a one-word
    point says nothing), at least ``min_items`` of them."""
    otherwise = "" if min_items else ", or give an empty list when there is none"
    extra: dict[str, Any] = {"minItems": min_items} if min_items else {}
    return Annotated[
        list[Prose(item_words, about, otherwise=otherwise)],
        BeforeValidator(_must_be_list_of("strings")),
        AfterValidator(_needs_items(min_items, about)),
        Field(description=f"a list: each item {about}", json_schema_extra=extra or None),
        FREE_TEXT,
    ]


def Score(low: int, high: int, about: str = "") -> Any:
    """An integer from ``low`` to ``high``: a string "4", 4.0 or true is refused, never cast."""

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail("not_integer", f"must be an integer from {low} to {high}, got {value!r}")
        if not low <= value <= high:
            raise _fail("out_of_range", f"must be from {low} to {high}, got {value}")
        return value

    # The range goes into the schema as such; the validator above enforces it with its message.
    schema = {"minimum": low, "maximum": high}
    return Annotated[
        int, BeforeValidator(check), Field(description=about or None, json_schema_extra=schema)
    ]


def _must_be_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise _fail("not_bool", f"must be true or false, got {value!r}")
    return value


Flag = Annotated[bool, BeforeValidator(_must_be_bool)]

SLUG = r"^[a-z0-9][a-z0-9_]{0,63}$"
_SLUG = re.compile(SLUG)


def _checks_slug(value: str, info: ValidationInfo) -> str:
    name = value.strip()
    if not name:
        raise _fail("empty", "must be a non-empty string, got ''")
    if not _SLUG.match(name):
        raise _fail(
            "not_slug",
            f"must be a lowercase slug (letters, digits, underscores), got {name!r}",
        )
    if normalized(name) in ((info.context or {}).get("examples") or ()):
        raise _fail(
            "example_copy",
            f"copies the prompt's example ({name!r}): name the idea with a slug of its own",
            repr(name),
        )
    return name


Slug = Annotated[
    str,
    BeforeValidator(_must_be_string),
    AfterValidator(_checks_slug),
    Field(json_schema_extra={"pattern": SLUG}),
]


def _non_empty(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise _fail("empty", f"must be a non-empty string, got {value!r}")
    return value.strip()


# Text a person may write in a file labtui keeps (an archived idea): present, no content rules.
Text = Annotated[str, BeforeValidator(_non_empty)]


# ---------------------------------------------------------------------------------------------
# Validation and its one-sentence errors
# ---------------------------------------------------------------------------------------------


class Record(BaseModel):
    """A structured answer. ``shape`` is what a reply of the wrong shape is told to answer."""

    model_config = ConfigDict(extra="ignore")
    shape: ClassVar[str] = "one JSON object"


def validate(model: type[M], data: Any, *, where: str = "") -> M:
    """``data`` as a ``model``; ValueError with one readable sentence (prefixed ``where: ``)."""
    try:
        return model.model_validate(data, context={"examples": _EXAMPLES.get()})
    except ValidationError as exc:
        message = describe(exc, model)
        raise ValueError(f"{where}: {message}" if where else message) from None


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


_CONTENT_KINDS = ("empty", "placeholder", "example_copy", "too_short", "too_few_items")
_GROUPED_KINDS = {
    "placeholder": ("is a placeholder", "are each a placeholder"),
    "example_copy": ("copies the prompt's example", "each copy the prompt's example"),
    "empty": ("is empty", "are each empty"),
}
MAX_SENTENCES = 3


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """The errors as one short sentence a model can act on: shape problems first (a reply
    must have the fields before their content matters), the same fault in several fields said
    once, at most three problems named."""
    errors = sorted(exc.errors(include_url=False), key=_is_content_error)
    sentences = _grouped(errors, model) + [
        _sentence(e, model)
        for e in errors
        if not (e["type"] in _GROUPED_KINDS and _group_size(e, errors) > 1)
    ]
    sentences = list(dict.fromkeys(sentences))
    shown = "; ".join(sentences[:MAX_SENTENCES])
    more = len(sentences) - MAX_SENTENCES
    if more > 0:
        shown += f" (and {more} more problem{'s' if more > 1 else ''})"
    if any(_is_field_shape_error(e) for e in errors):
        shown += f"; answer {model.shape}"  # type: ignore[attr-defined]
    return shown


def _is_content_error(error: dict[str, Any]) -> bool:
    return error["type"].removesuffix("_conditional") in _CONTENT_KINDS


def _is_field_shape_error(error: dict[str, Any]) -> bool:
    """A top-level field missing or of the wrong type: worth restating the whole shape."""
    kind = error["type"].removesuffix("_conditional")
    return len(error["loc"]) == 1 and kind not in _GROUPED_KINDS and kind != "too_short"


def _group_key(error: dict[str, Any]) -> tuple[str, str]:
    return error["type"], str((error.get("ctx") or {}).get("value", ""))


def _group_size(error: dict[str, Any], errors: list[dict[str, Any]]) -> int:
    return sum(1 for e in errors if _group_key(e) == _group_key(error))


def _grouped(errors: list[dict[str, Any]], model: type[BaseModel]) -> list[str]:
    """One sentence per fault shared by several fields ("..." everywhere)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for error in errors:
        if error["type"] in _GROUPED_KINDS:
            groups.setdefault(_group_key(error), []).append(error)
    sentences = []
    for (kind, value), members in groups.items():
        if len(members) < 2:
            continue
        single, plural = _GROUPED_KINDS[kind]
        quoted = f" ({value})" if kind != "empty" else ""
        top = {m["loc"][0] for m in members if m["loc"] and isinstance(m["loc"][0], str)}
        text_fields = _free_text_fields(model)
        if len(text_fields) > 1 and set(text_fields) <= top:
            sentences.append(
                f"every text field ({', '.join(text_fields)}) {single}{quoted}: "
                "write the real content in your own words"
            )
            continue
        places = ", ".join(_place(m["loc"]) for m in members)
        sentences.append(f"fields {places} {plural}{quoted}: write real content in your own words")
    return sentences


def _free_text_fields(model: type[BaseModel]) -> list[str]:
    return [
        info.alias or name
        for name, info in model.model_fields.items()
        if any(isinstance(meta, _FreeText) for meta in info.metadata)
    ]


def _place(loc: tuple[Any, ...]) -> str:
    """('ideas', 0, 'Title') -> "ideas[0]: 'Title'"; ('Strengths', 1) -> "'Strengths' item 2"."""
    names = [i for i, part in enumerate(loc) if isinstance(part, str)]
    if not names:
        return f"item {loc[-1] + 1}" if loc else "the reply"
    last = names[-1]
    prefix = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[:last]).lstrip(".")
    items = "".join(f" item {p + 1}" for p in loc[last + 1 :] if isinstance(p, int))
    return f"{prefix + ': ' if prefix else ''}{loc[last]!r}{items}"


def _sentence(error: dict[str, Any], model: type[BaseModel]) -> str:
    loc = tuple(error["loc"])
    message = _message(error)
    if not loc:
        if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
            return f"the reply must be {model.shape}"  # type: ignore[attr-defined]
        return message
    place = _place(loc)
    head, _, field = place.rpartition(": ")
    return f"{head + ': ' if head else ''}field {field} {message}"


def _message(error: dict[str, Any]) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if "message" in ctx:
        return str(ctx["message"])
    match kind:
        case "missing":
            return "is missing"
        case "string_type":
            return f"must be a string, got {show(value)}"
        case "list_type":
            return f"must be a list, got {show(value)}"
        case "model_type" | "model_attributes_type" | "dict_type":
            return f"must be a JSON object, got {show(value)}"
        case "literal_error" | "enum":
            return f"must be {ctx.get('expected', 'one of the allowed values')}, got {show(value)}"
        case "bool_type" | "bool_parsing":
            return f"must be true or false, got {show(value)}"
        case "int_type" | "int_parsing" | "int_from_float":
            return f"must be an integer, got {show(value)}"
        case "too_short":
            return f"needs at least {ctx.get('min_length', 1)} item(s)"
    return str(error.get("msg", kind)).removeprefix("Value error, ")


# ---------------------------------------------------------------------------------------------
# The records
# ---------------------------------------------------------------------------------------------

# -- the review form (core.review, core.reviewer) -------------------------------------------------

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

    done: Flag
    review: ReviewForm | None = None

    @model_validator(mode="after")
    def _revised_unless_done(self) -> "ReviewReflection":
        if not self.done and self.review is None:
            raise _fail(
                "needs_review", '"done": false needs the revised "review" on the whole form'
            )
        return self


# -- ideas (core.ideas, core.stages.ideas, core.panel) --------------------------------------------

IDEA_SCORE = (1, 10)
STATUSES = ("seed", "proposed", "novel", "not_novel", "unsure", "chosen", "rejected", "done")


def _known_status(value: Any) -> Any:
    if value not in STATUSES:
        raise _fail("status", f"is {value!r}; use one of {', '.join(STATUSES)}")
    return value


def _review_score(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise _fail("not_number", "must be a number (the review's Overall)")
    return value


def _optional_text(value: Any) -> Any:
    return None if value is None else _non_empty(value)


class IdeaRecord(Record):
    """An idea as the archive keeps it (seeds, The AI Scientist's records, hand edits): present
    fields, valid scores; its text is a person's, so no content rules."""

    model_config = ConfigDict(title="idea")
    shape: ClassVar[str] = "a JSON object with Name, Title, Experiment and scores"

    name: Slug = Field(alias="Name")
    title: Text = Field(alias="Title")
    hypothesis: Annotated[str | None, BeforeValidator(_optional_text)] = Field(
        None, alias="Hypothesis"
    )
    experiment: Text = Field(alias="Experiment")
    interestingness: Score(*IDEA_SCORE) = Field(alias="Interestingness")
    feasibility: Score(*IDEA_SCORE) = Field(alias="Feasibility")
    novelty: Score(*IDEA_SCORE) = Field(alias="Novelty")
    status: Annotated[str, BeforeValidator(_known_status)] = "proposed"
    score: Annotated[float | int | None, BeforeValidator(_review_score)] = Field(
        None, alias="Score"
    )
    novelty_evidence: Annotated[dict[str, Any], BeforeValidator(lambda v: dict(v or {}))] = Field(
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


def _at_least_one_idea(ideas: list[Any]) -> list[Any]:
    if not ideas:
        raise _fail("too_few_items", "is empty: propose at least one idea")
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

NOVELTY_DECISIONS = ("search", "novel", "not_novel", "unsure")


class ClosestPaper(Record):
    arxiv_id: Text = Field(description="an arXiv id from the search results you were shown")
    overlap: Prose(2, "how this paper overlaps the idea") = ""


class NoveltyStep(Record):
    model_config = ConfigDict(title="novelty step")
    shape: ClassVar[str] = (
        '{"decision": "search", "query": <search string>, "reason": <why>} or '
        '{"decision": "novel" | "not_novel" | "unsure", "reason": <why>, "closest": [...]}'
    )

    decision: Literal["search", "novel", "not_novel", "unsure"]
    reason: Prose(3, "the reason for this search or decision")
    query: str = Field("", description="with decision search: the arXiv search string")
    closest: Annotated[list[ClosestPaper], BeforeValidator(lambda v: [] if v is None else v)] = (
        Field(default_factory=list)
    )

    @model_validator(mode="after")
    def _query_when_searching(self, info: ValidationInfo) -> "NoveltyStep":
        if self.decision == "search":
            self.query = _conditional_text(
                self.query,
                "query",
                "a search string",
                info,
                missing='with "decision": "search", field "query" must be a search string',
            )
        return self


def _conditional_text(
    value: Any, field: str, about: str, info: ValidationInfo, *, missing: str, min_words: int = 1
) -> str:
    """A field another field makes necessary, checked like Prose; ``missing``: the message when
    it is absent or empty."""
    if not isinstance(value, str) or not value.strip():
        raise _fail("missing_text", missing)
    examples = (info.context or {}).get("examples") or frozenset()
    problem = text_problem(value, about=about, min_words=min_words, examples=examples)
    if problem is not None:
        raise _fail(problem.kind + "_conditional", f"field {field!r} {problem.message}")
    return value.strip()


# -- literature review steps (core.stages.literature) ---------------------------------------------


class LiteratureStep(Record):
    """One action of the librarian; which fields it needs depends on the action and on what the
    agent was shown, so ``parse_action`` checks those."""

    model_config = ConfigDict(title="literature step")
    shape: ClassVar[str] = (
        'one JSON action: {"action": "search" | "read" | "add" | "done", ...} with the fields '
        "that action needs"
    )

    action: Literal["search", "read", "add", "done"]
    query: str = Field("", description="search: a few precise keywords")
    arxiv_id: str = Field("", description="read, add: an id from the results you were shown")
    # Only a JSON true asks for the full text; anything else reads the abstract.
    full_text: Annotated[bool, BeforeValidator(lambda v: v is True)] = False
    summary: str = Field(
        "", description="add: one paragraph on the paper; done: what the literature says"
    )


# -- the plan (core.stages.plan) ------------------------------------------------------------------


class PlannedRunRecord(Record):
    change: Prose(2, "what this run changes in experiment.py")
    measure: Prose(2, "what it measures and the comparison that answers the question")


class Plan(Record):
    model_config = ConfigDict(title="plan")
    shape: ClassVar[str] = (
        '{"runs": [{"change": <what the run changes>, "measure": <what it measures>}, ...]}'
    )

    runs: Annotated[list[PlannedRunRecord], AfterValidator(_needs_items(1, "a planned run"))] = (
        Field(json_schema_extra={"minItems": 1})
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


# -- figure descriptions (core.stages.plots) ------------------------------------------------------


class FigureDescriptions(Record):
    model_config = ConfigDict(title="figure descriptions")
    shape: ClassVar[str] = '{"figures": {"<file name>": "<description>", ...}}'

    figures: dict[str, Prose(4, "what the figure plots (axes, curves, runs) and what to see")]


# -- citations (core.citations) -------------------------------------------------------------------


def _index(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail("not_integer", f"must be a result's number (an integer), got {value!r}")
    return value


class CitationProposal(Record):
    model_config = ConfigDict(title="citation proposal")
    shape: ClassVar[str] = (
        '{"done": true|false, "where": <the section and sentence>, "query": <arXiv search>}'
    )

    done: Flag
    where: str = Field("", description="unless done: the section and sentence needing a citation")
    query: str = Field("", description="unless done: a short arXiv search query")

    @model_validator(mode="after")
    def _where_and_query_unless_done(self, info: ValidationInfo) -> "CitationProposal":
        if not self.done:
            self.where = _conditional_text(
                self.where,
                "where",
                "the section and sentence that needs a citation",
                info,
                missing='"where" must name the section and sentence that needs a citation',
                min_words=2,
            )
            self.query = _conditional_text(
                self.query,
                "query",
                "a search query for arXiv",
                info,
                missing='"query" must be a search query for arXiv',
            )
        return self


class CitationSelection(Record):
    model_config = ConfigDict(title="citation selection")
    shape: ClassVar[str] = '{"chosen": [<result numbers>], "how": <where and how>} ([] for none)'

    # An empty choice is legitimate: none of the results may support the place.
    chosen: Annotated[
        list[Annotated[int, BeforeValidator(_index)]], BeforeValidator(_must_be_list_of("numbers"))
    ]
    how: str = Field("", description="with papers chosen: where and how to cite them")

    @model_validator(mode="after")
    def _how_when_chosen(self, info: ValidationInfo) -> "CitationSelection":
        if self.chosen:
            self.how = _conditional_text(
                self.how,
                "how",
                "where and how to cite the chosen papers",
                info,
                missing='"how" must say where and how to cite the chosen papers',
                min_words=2,
            )
        return self


RECORDS: tuple[type[Record], ...] = (
    ReviewForm,
    ReviewReflection,
    IdeaRecord,
    IdeaProposal,
    IdeaProposals,
    IdeaReflection,
    NoveltyStep,
    LiteratureStep,
    Plan,
    RunAnalysis,
    FigureDescriptions,
    CitationProposal,
    CitationSelection,
)
