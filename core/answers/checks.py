"""What a structured answer's fields must hold.

Shape is not content. A small model fills a valid shape with "..." copied from the prompt's
example and in-range scores. This module holds the checks the records in ``core.answers.schemas`` are
built from:

- what is not content: placeholders (:func:`is_placeholder`), empty and too-short text, copies of
  the prompt's example (``core.answers.examples``); :func:`text_problem` says which, as a
  :class:`TextProblem`, and :func:`check_text` for a field a parse function checks itself;
- the field types: free text (:func:`Prose`, :func:`Items`) with those checks, and the rest
  (:func:`Score`, ``Flag``, ``Slug``, ``Text``) refused rather than cast; only free text is compared
  with the example, since a choice such as "Accept" or "continue" is never a copy;
- validating an answer and saying what is wrong with it is ``core.answers.validation``.

Every validator here carries a :class:`SchemaRule` (:func:`states`): the JSON-schema keywords that
say its rule to a server that decodes with the schema, and what no schema can say, with why.
tests/answers/test_answer_schema.py walks every record and fails on a validator without one, or on a
keyword its field's schema lacks: a grammar-constrained server must not be able to write an
answer labtui refuses.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
)
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from .examples import current_examples, normalized

# ---------------------------------------------------------------------------------------------
# What the schema says of a rule
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaRule:
    """How a validator's rule reaches the JSON schema. ``keywords``: what the field's schema
    states it with ("enum", "minLength", ...); ``unstated``: what it checks that no schema can
    say, each as "the rule: why not"."""

    keywords: tuple[str, ...] = ()
    unstated: tuple[str, ...] = ()


F = TypeVar("F", bound=Callable[..., Any])

# The content checks of free text, which no grammar can state.
NO_PLACEHOLDER = "no placeholder text ('...', 'TODO', '<summary>'): a content judgement"
NO_EXAMPLE_COPY = "not a copy of the prompt's example: the example strings are per prompt"
WORDS_NOT_CHARS = "at least N words: minLength counts characters (3 a word), not words"


def states(*keywords: str, unstated: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Marks a validator with its :class:`SchemaRule`."""

    def mark(check: F) -> F:
        check.schema_rule = SchemaRule(keywords, unstated)  # type: ignore[attr-defined]
        return check

    return mark


def schema_rule(check: Any) -> SchemaRule | None:
    """The rule ``check`` was marked with, or None."""
    rule = getattr(check, "schema_rule", None)
    return rule if isinstance(rule, SchemaRule) else None


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
        value, about=about, min_words=min_words, min_chars=min_chars, examples=current_examples()
    )
    if problem is not None:
        raise ValueError(f"field {field!r} {problem.message}")
    return value.strip()


# ---------------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------------


def answer_error(
    kind: str, message: str, value: str = "", *, field: str = ""
) -> PydanticCustomError:
    """A validation error :func:`describe` says as ``message`` ("must be ..."); ``value``: the
    offending text as quoted, which groups the same fault across fields; ``field``: the field
    an error of the whole record is about (a re-ask quotes it)."""
    # The message is passed as context, not as the template: it may hold JSON braces.
    context = {"message": message, "value": value, **({"field": field} if field else {})}
    return PydanticCustomError(kind, "{message}", context)


class FreeText:
    """Marks a free-text field (Prose or Items): what "every text field" counts."""


FREE_TEXT = FreeText()


@states("type")
def _must_be_string(value: Any) -> Any:
    if not isinstance(value, str):
        raise answer_error("not_string", f"must be a string, got {show(value)}")
    return value


def _checks_content(about: str, min_words: int, min_chars: int, otherwise: str) -> Any:
    @states("minLength", unstated=(NO_PLACEHOLDER, NO_EXAMPLE_COPY, WORDS_NOT_CHARS))
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
            raise answer_error(problem.kind, problem.message, problem.value)
        return trimmed(value)

    return check


def trimmed(text: str) -> str:
    """``text`` without the whitespace around it, except a tab, form feed or carriage return
    just before its first letter: a LaTeX command whose backslash JSON read as that character
    ("\\textbf" written with one backslash: a tab and "extbf"), which the section tidy puts back.
    Stripped, the 1.5B model's related work began with "extbf{Introduction}" in the PDF."""
    start = len(text) - len(text.lstrip())
    if start and text[start - 1] in "\t\f\r" and text[start].isalpha():
        start -= 1
    return text[start:].rstrip()


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


def must_be_list_of(what: str) -> Any:
    @states("type")
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise answer_error("not_list", f"must be a list of {what}, got {show(value)}")
        return value

    return check


def needs_items(min_items: int, about: str) -> Any:
    @states("minItems")
    def check(items: list[str]) -> list[str]:
        if len(items) < min_items:
            raise answer_error(
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
    return Annotated[
        list[Prose(item_words, about, otherwise=otherwise)],  # type: ignore[misc]
        BeforeValidator(must_be_list_of("strings")),
        AfterValidator(needs_items(min_items, about)),
        Field(description=f"a list: each item {about}", json_schema_extra={"minItems": min_items}),
        FREE_TEXT,
    ]


def Score(low: int, high: int, about: str = "") -> Any:
    """An integer from ``low`` to ``high``: a string "4", 4.0 or true is refused, never cast."""

    @states("type", "enum")
    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise answer_error(
                "not_integer", f"must be an integer from {low} to {high}, got {value!r}"
            )
        if not low <= value <= high:
            raise answer_error("out_of_range", f"must be from {low} to {high}, got {value}")
        return value

    # The range goes out as an enum: llama.cpp's grammar ignores minimum/maximum (asked for 1-4,
    # a model that thought 5 was deserved wrote 5, 3 of 3) but holds an enum. minimum/maximum
    # stay for servers that read them.
    schema: JsonDict = {"enum": list(range(low, high + 1)), "minimum": low, "maximum": high}
    return Annotated[
        int, BeforeValidator(check), Field(description=about or None, json_schema_extra=schema)
    ]


@states("type")
def _must_be_bool(value: Any) -> Any:
    if not isinstance(value, bool):
        raise answer_error("not_bool", f"must be true or false, got {value!r}")
    return value


Flag = Annotated[bool, BeforeValidator(_must_be_bool)]

SLUG = r"^[a-z0-9][a-z0-9_]{0,63}$"
_SLUG = re.compile(SLUG)


@states("pattern", unstated=(NO_EXAMPLE_COPY,))
def _checks_slug(value: str, info: ValidationInfo) -> str:
    name = value.strip()
    if not name:
        raise answer_error("empty", "must be a non-empty string, got ''")
    if not _SLUG.match(name):
        raise answer_error(
            "not_slug",
            f"must be a lowercase slug (letters, digits, underscores), got {name!r}",
        )
    if normalized(name) in ((info.context or {}).get("examples") or ()):
        raise answer_error(
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


@states("type", "minLength", unstated=("not only spaces: minLength counts them",))
def non_empty(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise answer_error("empty", f"must be a non-empty string, got {value!r}")
    return value.strip()


# Text a person may write in a file labtui keeps (an archived idea): present, no content rules.
Text = Annotated[str, BeforeValidator(non_empty), Field(min_length=1)]


def conditional_text(
    value: Any, field: str, about: str, info: ValidationInfo, *, missing: str, min_words: int = 1
) -> str:
    """A field another field makes necessary, checked like Prose; ``missing``: the message when
    it is absent or empty."""
    if not isinstance(value, str) or not value.strip():
        raise answer_error("missing_text", missing, field=field)
    examples = (info.context or {}).get("examples") or frozenset()
    problem = text_problem(value, about=about, min_words=min_words, examples=examples)
    if problem is not None:
        raise answer_error(
            problem.kind + "_conditional", f"field {field!r} {problem.message}", field=field
        )
    return value.strip()
