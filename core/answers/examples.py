"""The prompt's example strings: what a model copies instead of answering.

A small model asked for JSON often hands back the prompt's own example ("<summary>", "a short
title") in a valid shape. ``core.llm.client.ask_json`` collects the string values of the JSON snippets
its prompt shows (:func:`example_strings`) and puts them in force while the answer is parsed
(:func:`answer_examples`); :func:`current_examples` is what the checks in
``core.answers.checks`` compare free text with. Strings are compared :func:`normalized`: case,
spacing and closing punctuation ignored.
"""

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .json_text import balanced_end

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


def current_examples() -> frozenset[str]:
    """The normalized example strings in force (empty outside :func:`answer_examples`)."""
    return _EXAMPLES.get()


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
    index = text.find("{")
    while index != -1:
        end = balanced_end(text, index)
        if end is None:  # unbalanced from here: try the next brace
            index = text.find("{", index + 1)
            continue
        yield text[index:end]
        index = text.find("{", end)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI's list-of-parts form
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
