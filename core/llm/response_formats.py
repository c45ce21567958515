"""Structured output: what each model at each server accepts as ``response_format``, best first,
remembered per model and server for the rest of the process (core/llm/client.py asks with it).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..answers.record import response_format
from ..settings.config import ModelSpec

if TYPE_CHECKING:
    from pydantic import BaseModel

# Structured output, best first: the record's JSON schema (constrained decoding on llama.cpp,
# vLLM, OpenAI, ...), any JSON object, or no response_format (extraction + re-ask). What a model
# rejected is remembered for the rest of the process, per model and server, so each rejection
# costs one quick HTTP 400 and not one per call.
# json_object_schema is llama.cpp's own form ({"type": "json_object", "schema": ...}): servers
# built on it (llama-cpp-python) refuse OpenAI's json_schema but constrain their grammar to this.
STRUCTURED_MODES = ("json_schema", "json_object_schema", "json_object", "none")
_structured_lock = threading.Lock()
_structured_mode: dict[tuple[str, str], str] = {}


def structured_mode(spec: ModelSpec) -> str:
    """The best structured-output mode not yet rejected by this model at this server."""
    with _structured_lock:
        return _structured_mode.get((spec.name, spec.api_base), STRUCTURED_MODES[0])


def step_down(spec: ModelSpec, rejected: str) -> str:
    """Remember that ``rejected`` failed for this model; the mode to try next."""
    fallback = STRUCTURED_MODES[STRUCTURED_MODES.index(rejected) + 1]
    with _structured_lock:
        key = (spec.name, spec.api_base)
        current = _structured_mode.get(key, STRUCTURED_MODES[0])
        if STRUCTURED_MODES.index(fallback) > STRUCTURED_MODES.index(current):
            _structured_mode[key] = fallback
    return fallback


def forget_structured_modes() -> None:
    """Forget what models rejected (tests start each server afresh)."""
    with _structured_lock:
        _structured_mode.clear()


def response_format_for(mode: str, schema: type[BaseModel] | None) -> dict[str, Any]:
    """The ``response_format`` of a request in ``mode`` for the record ``schema`` (the modes
    with a schema are tried only for a call that has one)."""
    if mode == "json_schema" and schema is not None:
        return response_format(schema)
    if mode == "json_object_schema" and schema is not None:
        return {"type": "json_object", "schema": schema.model_json_schema(by_alias=True)}
    return {"type": "json_object"}
