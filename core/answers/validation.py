"""Validating a structured answer: the example strings in force go to the field checks
(``core.answers.checks``) in pydantic's validation context, and the errors become one short
sentence that names the field and says why, because a model reads it in the re-ask.
"""

from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ValidationError,
)

from .checks import FreeText, show
from .examples import current_examples

M = TypeVar("M", bound=BaseModel)


class AnswerRefused(ValueError):
    """A refused answer: one readable sentence (``str``), and the field its first problem is in,
    as the sentence names it (``field``), with what the answer held there (``value``; ``given``
    is False when the field was missing), so that a re-ask can quote it."""

    def __init__(self, message: str, field: str = "", value: Any = None, given: bool = False):
        super().__init__(message)
        self.field, self.value, self.given = field, value, given


def validate(model: type[M], data: Any, *, where: str = "") -> M:
    """``data`` as a ``model``; :class:`AnswerRefused` with one readable sentence (prefixed
    ``where: ``)."""
    try:
        return model.model_validate(data, context={"examples": current_examples()})
    except ValidationError as exc:
        message = describe(exc, model)
        field, value, given = _first_refused(exc, data)
        raise AnswerRefused(
            f"{where}: {message}" if where else message, field, value, given
        ) from None


def _first_refused(exc: ValidationError, data: Any) -> tuple[str, Any, bool]:
    """The field of the problem :func:`describe` names first, and the value given there."""
    errors: list[dict[str, Any]] = sorted(
        (dict(e) for e in exc.errors(include_url=False)), key=_is_content_error
    )
    for error in errors:
        loc, ctx = tuple(error["loc"]), error.get("ctx") or {}
        if loc and error["type"] != "missing":
            return _place(loc), error.get("input"), True
        if loc:
            return _place(loc), None, False
        if ctx.get("field"):  # a rule of the whole record about one field
            name = str(ctx["field"])
            given = isinstance(data, dict) and name in data
            return repr(name), data.get(name) if given else None, given
    return "", None, False


_CONTENT_KINDS = ("empty", "placeholder", "example_copy", "too_short", "too_few_items")
_GROUPED_KINDS = {
    "placeholder": ("is a placeholder", "are each a placeholder"),
    "example_copy": ("copies the prompt's example", "each copy the prompt's example"),
    "empty": ("is empty", "are each empty"),
}
MAX_SENTENCES = 3
_LENGTH_KINDS = ("too_short", "too_long", "string_too_long", "too_long_text")


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """The errors as one short sentence a model can act on: shape problems first (a reply
    must have the fields before their content matters), the same fault in several fields said
    once, at most three problems named."""
    errors: list[dict[str, Any]] = sorted(
        (dict(e) for e in exc.errors(include_url=False)), key=_is_content_error
    )
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
    return len(error["loc"]) == 1 and kind not in _GROUPED_KINDS and kind not in _LENGTH_KINDS


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
        if any(isinstance(meta, FreeText) for meta in info.metadata)
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
        case "too_long" if ctx.get("field_type") == "List":
            return f"has too many items: at most {ctx.get('max_length', 0)}"
        case "string_too_long" | "too_long":  # a string's bound checked after its validators
            return f"is too long: at most {ctx.get('max_length', 0):,} characters, in your words"
    return str(error.get("msg", kind)).removeprefix("Value error, ")
