"""JSON inside text: where the bracket that opens a JSON value closes, respecting JSON strings
(a "}" inside a string closes nothing). Used to cut JSON out of a model's prose and the format
examples out of a prompt.
"""

from __future__ import annotations

_CLOSERS = {"{": "}", "[": "]"}


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes text[start], respecting JSON strings."""
    stack: list[str] = []
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "]}":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
    return None
