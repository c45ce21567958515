"""Records whose fields depend on another field, stated as variants in the JSON schema.

"``search`` needs a ``query``" is a rule a validator can check, but a server that decodes with
the record's JSON schema never sees a validator: it wrote ``{"decision": "search"}`` with no
query three times in a row. One :class:`Variants` declaration holds such a rule once, and gives

- the schema: ``anyOf`` one object per :class:`Variant`, each with its selecting value narrowed
  (``"action": {"enum": ["search"]}``) and its own ``required`` and ``minLength`` — an ``anyOf``
  of a search variant that requires ``query`` and a verdict variant gave a query every time on
  llama-cpp-python 0.3.36, whose grammar ignores the properties beside an ``anyOf``, so each
  variant carries every property it allows;
- the check (:meth:`Variants.check`), run by ``core.answers.record.Record``'s validator after the
  fields' own checks, with the messages a model reads in the re-ask. A record whose caller checks
  the variant's fields itself (with what the model was shown) sets ``checked_by``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationInfo

from .checks import (
    NO_EXAMPLE_COPY,
    NO_PLACEHOLDER,
    WORDS_NOT_CHARS,
    answer_error,
    conditional_text,
    states,
)


@dataclass(frozen=True)
class Is:
    """The variant for ``field`` equal to ``value`` (a choice, or true/false)."""

    field: str
    value: Any

    def holds(self, value: Any) -> bool:
        return type(value) is type(self.value) and value == self.value

    def narrow(self, prop: dict[str, Any]) -> dict[str, Any]:
        return {**_without(prop, "enum", "const", "default"), "enum": [self.value]}


@dataclass(frozen=True)
class Filled:
    """The variant for the list ``field`` holding at least one item (``filled``) or none."""

    field: str
    filled: bool = True

    def holds(self, value: Any) -> bool:
        return bool(value) == self.filled

    def narrow(self, prop: dict[str, Any]) -> dict[str, Any]:
        bound = {"minItems": 1} if self.filled else {"maxItems": 0}
        return {**_without(prop, "minItems", "maxItems", "default"), **bound}


Condition = Is | Filled


@dataclass(frozen=True)
class Need:
    """A field a variant requires. With ``about`` it is text, checked like ``Prose`` (at least
    ``min_words`` words, ``min_chars`` characters); without, it must only be present (an object).
    ``missing``: what the model is told when it is absent or empty."""

    field: str
    missing: str
    about: str = ""
    min_words: int = 1
    min_chars: int = 0

    @property
    def min_length(self) -> int:
        """The schema's minLength: three characters a word, as ``Prose`` states it."""
        return max(2, 3 * self.min_words, self.min_chars)

    def narrow(self, prop: dict[str, Any]) -> dict[str, Any]:
        """The property's schema in a variant that requires it."""
        if self.about:
            return {"type": "string", "minLength": self.min_length, "description": self.about}
        present = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
        narrowed = dict(present[0]) if len(present) == 1 else {"anyOf": present}
        if "description" in prop:
            narrowed["description"] = prop["description"]
        return narrowed

    def check(self, value: Any, info: ValidationInfo) -> Any:
        if not self.about:
            if value is None:
                raise answer_error("missing_field", self.missing, field=self.field)
            return value
        return conditional_text(
            value, self.field, self.about, info, missing=self.missing, min_words=self.min_words
        )


@dataclass(frozen=True)
class Variant:
    """One shape of a record: selected by ``when``, requiring ``needs``; ``may``: the optional
    fields it allows beside them. A field named in any variant's needs or may belongs only to the
    variants that name it; every other field is in all of them."""

    when: tuple[Condition, ...]
    needs: tuple[Need, ...] = ()
    may: tuple[str, ...] = ()

    def holds(self, record: BaseModel) -> bool:
        return all(c.holds(getattr(record, c.field)) for c in self.when)


@dataclass(frozen=True)
class Variants:
    """A record's variants (see the module docstring); ``checked_by``: the function that checks
    the needs itself (then :meth:`check` leaves them to it)."""

    variants: tuple[Variant, ...]
    checked_by: str = ""
    own: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        owned = {n.field for v in self.variants for n in v.needs}
        owned |= {name for v in self.variants for name in v.may}
        object.__setattr__(self, "own", frozenset(owned))

    def check(self, record: BaseModel, info: ValidationInfo) -> None:
        """Refuse the first need of the record's variant that is missing or not content;
        store the cleaned text."""
        if self.checked_by:
            return
        for variant in self.variants:
            if variant.holds(record):
                for need in variant.needs:
                    setattr(record, need.field, need.check(getattr(record, need.field), info))
                return

    def schema(self, schema: dict[str, Any], model: type[BaseModel]) -> None:
        """Turn ``model``'s object schema into an ``anyOf`` of the variants, in place."""
        properties: dict[str, Any] = schema.pop("properties", {})
        required: list[str] = schema.pop("required", [])
        schema.pop("type", None)
        schema["anyOf"] = [
            _variant_schema(v, self.own, properties, required, model) for v in self.variants
        ]


def _variant_schema(
    variant: Variant,
    own: frozenset[str],
    properties: dict[str, Any],
    required: list[str],
    model: type[BaseModel],
) -> dict[str, Any]:
    """One variant's object: every property it allows, in the record's order."""
    names = {_key(name, model, properties): name for name in model.model_fields}
    needs = {n.field: n for n in variant.needs}
    conditions = {c.field: c for c in variant.when}
    out: dict[str, Any] = {}
    wanted: list[str] = []
    for key, prop in properties.items():
        name = names.get(key, key)
        if name in needs:
            out[key] = needs[name].narrow(prop)
        elif name in conditions:
            out[key] = conditions[name].narrow(prop)
        elif name in own and name not in variant.may:
            continue
        else:
            out[key] = copy.deepcopy(prop)
        if key in required or name in needs or name in conditions:
            wanted.append(key)
    return {"type": "object", "properties": out, "required": wanted}


def _key(name: str, model: type[BaseModel], properties: dict[str, Any]) -> str:
    """The field's key in the schema: its alias when the schema is by alias."""
    alias = model.model_fields[name].alias
    return alias if alias and alias in properties else name


def _without(prop: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in prop.items() if k not in keys}


@states(
    "anyOf",
    unstated=(NO_PLACEHOLDER, NO_EXAMPLE_COPY, WORDS_NOT_CHARS),
)
def check_variants(record: BaseModel, info: ValidationInfo) -> BaseModel:
    """The model validator of every record: its variants' needs (see :meth:`Variants.check`)."""
    variants = getattr(type(record), "variants", None)
    if isinstance(variants, Variants):
        variants.check(record, info)
    return record
