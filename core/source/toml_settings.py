"""The settings a TOML file sets, each with the exact span of its value: ``key = value`` lines
under their ``[table]`` header, by dotted key path (``train.lr``). tomllib reads the values;
the lines are scanned for where each stands, and a value's end is the shortest text after its
``=`` that tomllib reads as that value with only a comment or the line's end after it.

A value inside an inline table (``model = { depth = 4 }``) or an array of tables
(``[[runs]]``) is left to the researcher. config_settings reads YAML and JSON and dispatches by
suffix.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from typing import Any

from .setting_values import Located, SettingError, config_leaf, is_leaf, same_value

_BARE_OR_QUOTED = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""
_KEY = re.compile(rf"[ \t]*({_BARE_OR_QUOTED}(?:[ \t]*\.[ \t]*{_BARE_OR_QUOTED})*)[ \t]*=[ \t]*")
_MOST_LINES = 500  # a value longer than this (a long array) is not looked for further


def toml_located(text: str, file: str) -> list[Located]:
    """Each leaf of the TOML ``text`` (of ``file``) whose ``key = value`` line is found."""
    try:
        leaves = dict(_leaves(tomllib.loads(text), ()))
    except tomllib.TOMLDecodeError as err:
        raise SettingError(f"{file} does not read as TOML ({err}); fix it first") from err
    found: list[Located] = []
    table: tuple[str, ...] | None = ()  # None: inside an array of tables
    pos = 0
    while pos < len(text):
        line_end = _line_end(text, pos)
        header = _header(text[pos:line_end])
        key = _KEY.match(text, pos, line_end) if header is None else None
        if header is not None:
            table = header or None
        elif key and table is not None:
            path = (*table, *_key_path(key.group(1)))
            span = _value_span(text, key.end(), leaves[path]) if path in leaves else None
            if span is not None:
                found.append(config_leaf(file, path, leaves[path], text, span))
                line_end = _line_end(text, span[1])  # a value over several lines: past it
        pos = line_end
    return found


def _leaves(table: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _leaves(value, (*path, key))
        elif is_leaf(value):
            yield (*path, key), value


def _line_end(text: str, pos: int) -> int:
    newline = text.find("\n", pos)
    return len(text) if newline < 0 else newline + 1


def _header(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` header, () for an ``[[array]]`` one, None for another
    line."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    if stripped.startswith("[["):
        return ()
    try:
        return _path_of(tomllib.loads(stripped))
    except tomllib.TOMLDecodeError:
        return None  # a line of a multi-line array that starts with [


def _key_path(key: str) -> tuple[str, ...]:
    """("a", "b.c") of ``a."b.c"``: the key as TOML reads it."""
    try:
        return _path_of(tomllib.loads(f"{key} = 0"))
    except tomllib.TOMLDecodeError:
        return ()


def _path_of(document: dict[str, Any]) -> tuple[str, ...]:
    path: list[str] = []
    while isinstance(document, dict) and len(document) == 1:
        key = next(iter(document))
        path.append(key)
        document = document[key]
    return tuple(path)


def _value_span(text: str, start: int, expected: Any) -> tuple[int, int] | None:
    """Where the value that starts at ``start`` ends: before a ``#`` or at a line's end, the
    first place where what comes before reads as ``expected``."""
    pos = start
    for _ in range(_MOST_LINES):
        line_end = _line_end(text, pos)
        ends = [m.start() for m in re.finditer("#", text[pos:line_end])] + [line_end - pos]
        for end in ends:
            candidate = text[start : pos + end].rstrip(" \t\r\n")
            if _reads_as(candidate, expected):
                return start, start + len(candidate)
        if line_end >= len(text):
            break
        pos = line_end
    return None


def _reads_as(candidate: str, expected: Any) -> bool:
    try:
        return same_value(tomllib.loads(f"v = {candidate}").get("v"), expected)
    except tomllib.TOMLDecodeError:
        return False
