"""The settings labtui changes by itself, as records: one ``Editable`` per value a script, a
config file or a command line sets; a new value checked against the old one's type and choices
(``check_value``); a setting found by the name a plan gives it (``find_setting``); and the one
edit that replaces a value's span and nothing else, read back to prove it (``edit_located``).

A plan that says "set HIDDEN_UNITS to 64" is applied by code, not by a model, so the diff is the
value and nothing more. The readers of each syntax are setting_edit (Python), config_settings
and toml_settings (YAML, JSON, TOML) and command_settings (a command line); how a value is
written is setting_text.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

SettingType = Literal["int", "float", "str", "bool", "list", "tuple", "dict", "none"]
SettingKind = Literal["constant", "option", "field", "config", "command"]


@dataclass(frozen=True)
class Editable:
    """One setting labtui can change by itself."""

    # as a plan names it: "HIDDEN_UNITS" (a constant), "lr" (an argparse dest), "Config.lr" (a
    # dataclass field), "trainer.max_steps" (a config file's key path, or a Hydra override on the
    # command), "--lr" (an option on the command)
    name: str
    value: Any  # the current value, a Python literal
    type: SettingType
    where: str  # the file it is set in ("experiment.py", "conf/config.yaml") or "command"
    kind: SettingKind
    # argparse's choices=..., else the alternatives the value's comment states ("tanh" or "relu")
    choices: tuple[Any, ...] = ()
    line: int = 0


class SettingError(ValueError):
    """A setting that cannot be changed as asked; the message names the setting, where it is set
    and what to give instead."""


@dataclass(frozen=True)
class Located:
    """A setting and the span of its value in the text it was read from: ``text[start:end]`` is
    ``literal``, the value as written there."""

    setting: Editable
    start: int
    end: int
    literal: str


_TYPES: dict[type, SettingType] = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    type(None): "none",
    list: "list",
    tuple: "tuple",
    dict: "dict",
}
_SCALARS = frozenset({"bool", "int", "float", "str", "none"})


def setting_type(value: Any) -> SettingType:
    """The type of a plain value (``is_plain``): a bool is a bool, not an int."""
    return _TYPES[type(value)]


def is_plain(value: Any) -> bool:
    """Plain data a setting may hold: a finite number, a string, a bool, None, or a list, tuple
    or dict of them (infinity is written as code, ``math.inf``, and no literal replaces it)."""
    kind = _TYPES.get(type(value))
    if kind in ("list", "tuple"):
        return all(is_plain(item) for item in value)
    if kind == "dict":
        return all(_TYPES.get(type(k)) in _SCALARS and is_plain(v) for k, v in value.items())
    if kind == "float":
        return math.isfinite(value)
    return kind is not None


def is_scalar(value: Any) -> bool:
    return _TYPES.get(type(value)) in _SCALARS


def same_value(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (``1 == 1.0 == True`` is no same value)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(v, b[k]) for k, v in a.items())
    return bool(a == b)


def config_leaf(
    file: str, path: tuple[str, ...], value: Any, text: str, span: tuple[int, int]
) -> Located:
    """The config setting at key ``path`` whose value stands at ``text[span[0]:span[1]]``."""
    start, end = span
    line = text.count("\n", 0, start) + 1
    setting = Editable(".".join(path), value, setting_type(value), file, "config", (), line)
    return Located(setting, start, end, text[start:end])


def is_leaf(value: Any) -> bool:
    """A scalar or a list of scalars, plain (no date, no infinity)."""
    items = value if isinstance(value, list) else [value]
    return is_plain(value) and all(is_scalar(item) for item in items)


# -- a new value checked --------------------------------------------------------------------

_NOT_ONE: Any = object()  # a value that is not of the type asked (None may be a value)
_ARTICLES: dict[SettingType, str] = {
    "int": "an int",
    "float": "a float",
    "str": "a string",
    "bool": "a bool (True or False)",
    "list": "a list",
    "tuple": "a tuple",
    "dict": "a dict",
    "none": "a literal",
}
_PLURALS: dict[SettingType, str] = {"int": "ints", "float": "floats", "str": "strings"}


def check_value(setting: Editable, value: Any) -> Any:
    """``value`` as the setting's type holds it (64.0 for an int is 64, 1 for a float is 1.0, a
    list for a tuple is a tuple), else SettingError; a value outside the setting's choices is
    refused too."""
    checked = _coerced(setting.type, value)
    element = _element_type(setting.value)
    if checked is not _NOT_ONE and element and isinstance(checked, list | tuple):
        items = [_coerced(element, item) for item in checked]
        checked = _NOT_ONE if _NOT_ONE in items else type(checked)(items)
    if checked is _NOT_ONE:
        kind = _ARTICLES[setting.type] + (f" of {_PLURALS[element]}" if element else "")
        raise SettingError(
            f"{subject(setting)} is {kind} (now {setting.value!r}); {value!r} is not one"
        )
    if setting.choices and not any(same_value(checked, c) for c in setting.choices):
        these = "neither" if len(setting.choices) == 2 else "none of them"
        raise SettingError(
            f"{subject(setting)} takes {_alternatives(setting.choices)}; {value!r} is {these}"
        )
    return checked


def subject(setting: Editable) -> str:
    """ "HIDDEN_UNITS in experiment.py", "--lr on the command": a setting as a message names it."""
    place = "on the command" if setting.kind == "command" else f"in {setting.where}"
    return f"{setting.name} {place}"


def _coerced(kind: SettingType, value: Any) -> Any:
    given = _TYPES.get(type(value))
    if kind == "int" and given == "float" and float(value).is_integer():
        return int(value)  # "64.0 units" from a plan's arithmetic is 64
    if kind == "float" and given in ("int", "float") and math.isfinite(value):
        return float(value)
    if kind in ("list", "tuple") and given in ("list", "tuple") and is_plain(value):
        return list(value) if kind == "list" else tuple(value)  # JSON has no tuple to give
    if kind == "none" and is_plain(value):
        return value  # None now: any literal may take its place
    return value if given == kind and is_plain(value) else _NOT_ONE


def _element_type(value: Any) -> SettingType | None:
    """The one type every element of a list or tuple has now (a number, a string), else None."""
    if not isinstance(value, list | tuple) or not value:
        return None
    kinds = {setting_type(item) for item in value}
    kind = kinds.pop() if len(kinds) == 1 else None
    return kind if kind in _PLURALS else None


def _alternatives(choices: tuple[Any, ...]) -> str:
    quoted = [repr(choice) for choice in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


# -- a setting found by name ----------------------------------------------------------------


def find_setting(settings: Sequence[Editable], name: str) -> Editable:
    """The setting ``name`` names: its exact name, else the same name without dashes or a Hydra
    ``+`` ("--lr" finds the option lr, "lr" finds "--lr" on the command), else the one that
    differs only in case. SettingError, listing the settings, when none or several match."""
    tests: list[Callable[[Editable], bool]] = [
        lambda s: s.name == name,
        lambda s: _bare(s.name) == _bare(name),
        lambda s: _bare(s.name).casefold() == _bare(name).casefold(),
    ]
    for test in tests:
        found = [s for s in settings if test(s)]
        if len(found) == 1:
            return found[0]
        if found:
            lines = ", ".join(f"{s.name} ({_place(s)})" for s in found)
            raise SettingError(f"{name!r} names several settings: {lines}; name one exactly")
    raise SettingError(_unknown(settings, name))


def _bare(name: str) -> str:
    return name.lstrip("-+").replace("-", "_")


def _place(setting: Editable) -> str:
    return "the command" if setting.kind == "command" else f"{setting.where}:{setting.line}"


def _unknown(settings: Sequence[Editable], name: str) -> str:
    places = sorted({"the command" if s.kind == "command" else s.where for s in settings})
    where = places[0] if len(places) == 1 else "the experiment"
    if not settings:
        return f"{where} has no setting {name!r}: it sets no value labtui can change by itself"
    close = difflib.get_close_matches(name, [s.name for s in settings], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    listed = ", ".join(f"{s.name} ({s.type}, {_short(s.value)})" for s in settings)
    return f"{where} has no setting {name!r}{hint}; its settings are: {listed}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the edit -------------------------------------------------------------------------------


def edit_located(
    text: str,
    located: list[Located],
    setting: Editable,
    value: Any,
    write: Callable[[Any, str], str],
    reread: Callable[[str], list[Located]],
    read_back: Callable[[str], Any] | None = None,
) -> str:
    """``text`` with the span of ``setting``'s value, and nothing else, replaced by ``value`` as
    ``write`` spells it in the old literal's style. The new text is read again (``reread``): the
    setting must hold the new value (``read_back`` of what was written, where the syntax types
    it by its own reading) and every other setting its old one, else SettingError."""
    target = _current(located, setting)
    checked = check_value(target.setting, value)
    try:
        new_literal = write(checked, target.literal)
    except SettingError as err:
        raise SettingError(f"{subject(target.setting)}: {err}") from err
    new_text = text[: target.start] + new_literal + text[target.end :]
    expected = read_back(new_literal) if read_back is not None else checked
    try:
        after = reread(new_text)
    except SettingError as err:
        raise SettingError(
            f"{subject(setting)} cannot be set to {value!r}: the edited text would not read "
            f"({err}); it is left as it was"
        ) from err
    _check_only_one_changed(located, after, target, expected, new_literal)
    return new_text


def _current(located: list[Located], setting: Editable) -> Located:
    """The setting as the text sets it now; SettingError when it is gone or holds another value
    than the one it was read with (the text changed since)."""
    same = [
        item
        for item in located
        if item.setting.name == setting.name and item.setting.kind == setting.kind
    ]
    if not same:
        raise SettingError(_unknown([item.setting for item in located], setting.name))
    target = next((item for item in same if item.setting.line == setting.line), same[-1])
    if not same_value(target.setting.value, setting.value):
        raise SettingError(
            f"{subject(setting)} is {target.setting.value!r} now, not {setting.value!r} as it "
            "was read: read its settings again"
        )
    return target


def _keyed(located: list[Located]) -> list[tuple[tuple[str, str, int], Any]]:
    """((kind, name, n), value) in order: the n-th setting of that kind and name (two
    subcommands may both have an --lr) keeps its key when an edit moves its line."""
    seen: dict[tuple[str, str], int] = {}
    keyed: list[tuple[tuple[str, str, int], Any]] = []
    for item in located:
        pair = (item.setting.kind, item.setting.name)
        seen[pair] = seen.get(pair, -1) + 1
        keyed.append(((*pair, seen[pair]), item.setting.value))
    return keyed


def _check_only_one_changed(
    before: list[Located], after: list[Located], target: Located, expected: Any, written: str
) -> None:
    old, new = dict(_keyed(before)), dict(_keyed(after))
    key = _keyed(before)[next(i for i, item in enumerate(before) if item is target)][0]
    if key not in new or not same_value(new[key], expected):
        raise SettingError(
            f"{subject(target.setting)} written as {written!r} would not read back as "
            f"{expected!r}; it is left as it was"
        )
    changed = sorted(
        k[1]
        for k in old.keys() | new.keys()
        if k != key and not (k in old and k in new and same_value(old[k], new[k]))
    )
    if changed:
        raise SettingError(
            f"{subject(target.setting)} written as {written!r} would change {', '.join(changed)} "
            "too; it is left as it was"
        )
