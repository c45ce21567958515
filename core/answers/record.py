"""Structured answers as typed records: the base every JSON answer labtui asks a model for builds on.

Each record (one module per stage or domain: ``review_answers``, ``idea_answers``,
``literature_answers``, ``experiment_answers``, ``writeup_answers``, ``setup_answer``; listed in
``core.answers.schemas``) is the one source of an answer's rules. The stages' parse functions
validate with it (ranges and choices are checked, never clamped) and turn it into the records the
rest of labtui uses; ``core.llm.client`` sends its JSON schema as the request's ``response_format``,
so that a server with schema-constrained decoding (llama.cpp, vLLM, OpenAI, …) produces the shape.

The records are built from the field types in ``core.answers.checks`` (``Prose``, ``Items``,
``Score``, …), which refuse placeholders, one-word answers and copies of the prompt's example
(``core.answers.examples``) and say what is wrong in one sentence.
"""

from functools import cache
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from .variants import Variants, check_variants


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
