"""How a new value of a setting is written: in the syntax of the text it goes into (Python, YAML,
JSON, TOML, a shell word) and in the style of the literal it replaces, so the diff shows the
value and not a change of habit. The old literal's quote character stays ('x' stays 'x'), a
float written 1e-3 stays in scientific notation (1e-3 -> 5e-4) and one written 0.001 takes
Python's shortest form (``repr``), a list laid out one item per line stays laid out so.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .setting_values import SettingError

Syntax = Literal["python", "yaml", "json", "toml", "command"]

_QUOTE = re.compile(r"""['"]""")
_SCIENTIFIC = re.compile(r"\d(\.\d*)?([eE])([-+]?)\d")


@dataclass(frozen=True)
class _Style:
    """What the old literal shows of its writer's habits."""

    quote: str  # the first quote character in it, "" where it has none (a YAML plain scalar)
    scientific: bool  # a float in it is written with an exponent
    dot: bool  # ... with a dot in its mantissa (1.0e-3)
    plus: bool  # ... with a sign before a positive exponent (1e+5)
    big_e: bool  # ... with a capital E
    underscores: bool  # 1_000_000
    capitals: bool  # True/False rather than true/false (a command's word)

    @staticmethod
    def of(like: str) -> _Style:
        quote = _QUOTE.search(like)
        number = _SCIENTIFIC.search(like)
        return _Style(
            quote=quote.group() if quote else "",
            scientific=number is not None,
            dot=number is not None and number.group(1) is not None,
            plus=number is not None and number.group(3) == "+",
            big_e=number is not None and number.group(2) == "E",
            underscores=re.search(r"\d_\d", like) is not None,
            capitals=like in ("True", "False"),
        )


def literal_text(value: Any, like: str = "", syntax: Syntax = "python") -> str:
    """``value`` written in ``syntax`` in the style of ``like``, the literal it replaces."""
    style = _Style.of(like)
    write = _WRITERS[syntax]
    if isinstance(value, list | tuple | dict) and "\n" in like.strip():
        return _laid_out(value, like, lambda item: write(item, style), syntax)
    return write(value, style)


# -- numbers --------------------------------------------------------------------------------


def _int_text(value: int, style: _Style) -> str:
    return f"{value:_}" if style.underscores else str(value)


def _float_text(value: float, style: _Style) -> str:
    if not style.scientific:
        return repr(value)
    mantissa, exponent = _shortest_scientific(value)
    if style.dot and "." not in mantissa:
        mantissa += ".0"
    sign = "+" if style.plus and exponent >= 0 else ""
    return f"{mantissa}{'E' if style.big_e else 'e'}{sign}{exponent}"


def _shortest_scientific(value: float) -> tuple[str, int]:
    """("5", -4) for 0.0005: the fewest digits that read back as ``value``."""
    for digits in range(17):
        text = f"{value:.{digits}e}"
        if float(text) == value:
            break
    mantissa, exponent = text.split("e")
    return mantissa, int(exponent)


# -- Python ---------------------------------------------------------------------------------


def _python(value: Any, style: _Style) -> str:
    if isinstance(value, str):
        return _python_string(value, style.quote or '"')
    if isinstance(value, list):
        return "[" + ", ".join(_python(item, style) for item in value) + "]"
    if isinstance(value, tuple):
        items = [_python(item, style) for item in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        pairs = (f"{_python(k, style)}: {_python(v, style)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return _number(value, style) or repr(value)  # True, False, None


def _number(value: Any, style: _Style) -> str:
    """An int or a float as ``style`` writes it; "" for anything else (a bool is no number)."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return _int_text(value, style)
    return _float_text(value, style) if isinstance(value, float) else ""


def _python_string(value: str, quote: str) -> str:
    body = "".join(_python_character(c, quote) for c in value)
    return f"{quote}{body}{quote}"


def _python_character(c: str, quote: str) -> str:
    if c in ("\\", quote):
        return "\\" + c
    return c if c.isprintable() else repr(c)[1:-1]  # \n, \t, \x00 as Python escapes them


# -- YAML, JSON, TOML -----------------------------------------------------------------------

# words YAML 1.1 (PyYAML) reads as a bool or null when they stand unquoted
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null", "y", "n"})
_YAML_PLAIN = re.compile(r"[A-Za-z_][\w./-]*(?: [\w./-]+)*")


def _yaml(value: Any, style: _Style) -> str:
    if isinstance(value, str):
        return _yaml_string(value, style.quote)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_yaml(item, style) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_yaml(k, style)}: {_yaml(v, style)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, float) and "e" in repr(value) and not style.scientific:
        # repr's 1e-05 is a string to PyYAML, which wants a dot and a sign: 1.0e-05
        return _float_text(value, _Style("", True, True, True, False, False, False))
    return _number(value, style) or ("null" if value is None else str(value).lower())


def _yaml_string(value: str, quote: str) -> str:
    if quote == "'" and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    plain = _YAML_PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS
    if quote == "" and plain:
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


def _json(value: Any, style: _Style) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_json(item, style) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{json.dumps(str(k))}: {_json(v, style)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return _number(value, style) or json.dumps(value, ensure_ascii=False)


def _toml(value: Any, style: _Style) -> str:
    if value is None:
        raise SettingError("TOML has no null; give a value of the setting's type")
    if isinstance(value, str):
        if style.quote == "'" and "'" not in value and value.isprintable():
            return f"'{value}'"  # a literal string: no escapes
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic one
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item, style) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_toml_key(str(k))} = {_toml(v, style)}" for k, v in value.items())
        return "{ " + ", ".join(pairs) + " }"
    return _number(value, style) or str(value).lower()


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


# -- a shell word ---------------------------------------------------------------------------

_SHELL_PLAIN = re.compile(r"[\w@%+=:,./-]+")


def _command(value: Any, style: _Style) -> str:
    if isinstance(value, bool):
        return str(value) if style.capitals else str(value).lower()
    text = _number(value, style) or str(value)
    if _SHELL_PLAIN.fullmatch(text):
        return text
    if style.quote == '"' and not re.search(r'["$`\\!]', text):
        return f'"{text}"'
    return shlex.quote(text)


# -- a list laid out one item per line ------------------------------------------------------


def _laid_out(value: Any, like: str, write: Callable[[Any], str], syntax: Syntax) -> str:
    """A list, tuple or dict that spanned several lines, written one item per line with the
    old items' indent and a trailing comma (none in JSON, which allows none)."""
    newline = "\r\n" if "\r\n" in like else "\n"
    lines = like.splitlines()
    inner = _indent(lines[1]) if len(lines) > 2 else _indent(lines[-1]) + "    "
    outer = _indent(lines[-1])
    if isinstance(value, dict):
        colon = " = " if syntax == "toml" else ": "
        key = json.dumps if syntax == "json" else write
        items = [f"{key(k)}{colon}{write(v)}" for k, v in value.items()]
        ends = ("{", "}")
    else:
        items = [write(item) for item in value]
        ends = ("(", ")") if isinstance(value, tuple) and syntax == "python" else ("[", "]")
    last = "" if syntax == "json" else ","
    body = [f"{inner}{item}{',' if i < len(items) - 1 else last}" for i, item in enumerate(items)]
    return newline.join([ends[0], *body, f"{outer}{ends[1]}"])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


_WRITERS: dict[Syntax, Callable[[Any, _Style], str]] = {
    "python": _python,
    "yaml": _yaml,
    "json": _json,
    "toml": _toml,
    "command": _command,
}
