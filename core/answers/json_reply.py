"""Reading JSON out of a model's reply, and what to say when it could not be used.

Small local models wrap JSON in prose, code fences or ``<think>`` blocks; :func:`extract_json`
finds the value without repairing it, so that a broken answer's ValueError names the problem and
:func:`reask_prompt` can hand that problem back to the model (``LLM.ask_json`` in core/llm/client.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .json_text import balanced_end

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)


def extract_json(text: str, strict: bool = True) -> Any:
    """The JSON value in a model's reply.

    Order: the last ```json block that parses, then the last fenced block that parses, then the
    first balanced {...} or [...] in the text. Broken JSON (e.g. trailing commas) is not repaired:
    the ValueError names the problem so the model can be asked to fix it itself. ``strict=False``
    takes raw line breaks and tabs inside strings (json.loads' own option): a section's LaTeX
    is many lines, and a small model writes them as they are.
    """
    text = _strip_reasoning(text or "")
    fenced = _FENCE.findall(text)
    for wanted in ("json", None):
        for language, body in reversed(fenced):
            if wanted is not None and language.lower() != wanted:
                continue
            try:
                return json.loads(body, strict=strict)
            except json.JSONDecodeError:
                continue
    stripped = text.strip()
    if stripped:
        try:
            return json.loads(stripped, strict=strict)
        except json.JSONDecodeError:
            pass
    return _scan_balanced(text, strict)


QUOTED_CHARS = 120
# Each re-ask samples hotter (and with another seed): the same request at the same temperature
# got the same refused answer three times in a row from a small model.
REASK_TEMPERATURE_STEP = 0.3
REASK_TEMPERATURE_CAP = 1.2


def reask_prompt(problem: str, refused: Any = None) -> str:
    """The re-ask after an unusable answer: the exact problem; the refused field and what the
    answer held there, where the error says (``refused``: an ``AnswerRefused``, or any
    exception); JSON only this time."""
    field = getattr(refused, "field", "")
    if not field:
        quoted = ""
    elif getattr(refused, "given", False):
        value = json.dumps(getattr(refused, "value", None), ensure_ascii=False, default=str)
        if len(value) > QUOTED_CHARS:
            value = value[: QUOTED_CHARS - 4] + "…" + value[-3:]
        quoted = f"The refused field: {field}, where you wrote {value}; do not give it again.\n"
    else:
        quoted = f"The refused field: {field}, which your reply lacked.\n"
    return (
        f"Your previous reply could not be used: {problem}\n{quoted}"
        "Reply again with the corrected JSON only: no prose, no explanation, no code fence."
    )


def reask_temperature(base: float, attempt: int) -> float:
    """The temperature of re-ask ``attempt`` (1, 2, ...): hotter each time, up to the cap, never
    cooler than ``base``."""
    hotter = min(REASK_TEMPERATURE_CAP, base + REASK_TEMPERATURE_STEP * attempt)
    return round(max(base, hotter), 2)


def same_answer(first: str, second: str) -> bool:
    """The same reply but for whitespace: a model repeating itself."""
    return " ".join(first.split()) == " ".join(second.split())


def _strip_reasoning(text: str) -> str:
    """Drop <think>…</think> blocks, and everything before a lone </think> (its opening tag was
    part of the prompt template of some reasoning models)."""
    text = _THINK_BLOCK.sub("", text)
    close = text.lower().rfind("</think>")
    if close != -1:
        text = text[close + len("</think>") :]
    open_ = text.lower().find("<think>")
    if open_ != -1:  # unclosed: the model ran out of tokens while thinking
        text = text[:open_]
    return text


def _is_structured(value: Any) -> bool:
    """An object, or a list of objects/lists: what callers ask for (not a citation like [1])."""
    if isinstance(value, dict):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict | list) for item in value)
    )


def _scan_balanced(text: str, strict: bool = True) -> Any:
    """First balanced {...}/[...] that parses, preferring structured values over e.g. [1].

    Raises ValueError naming the parse problem of the first broken object, if there was one.
    """
    first: tuple[Any] | None = None
    problem = ""
    index = 0
    while index < len(text):
        starts = [pos for pos in (text.find("{", index), text.find("[", index)) if pos != -1]
        if not starts:
            break
        start = min(starts)
        end = balanced_end(text, start)
        if end is None:
            index = start + 1
            continue
        try:
            value = json.loads(text[start:end], strict=strict)
        except json.JSONDecodeError as exc:
            if not problem and text[start] == "{":
                problem = (
                    f"the JSON does not parse ({exc.msg} at line {exc.lineno} col {exc.colno})"
                )
            # Skip the broken candidate whole: an inner object of broken JSON (one idea out of
            # a list with a trailing comma) would be a silently wrong answer.
            index = end
            continue
        if _is_structured(value):
            return value
        first = first or (value,)
        index = end
    if first is not None:
        return first[0]
    raise ValueError("no JSON object found in the reply" + (f"; {problem}" if problem else ""))
