"""The settings a planned run names ("Change BETA_SCHEDULE to 'linear'"), and whether an edit
set them.

A plan's step says in words what its run changes. Where it names a module-level constant of the
experiment code and the value it takes, code can tell before the run costs minutes whether the
run changes anything and whether the edit did it: Qwen2.5-Coder-1.5B returned diffusion_2d's ``experiment.py`` with only its comment
rules and the ``--out_dir`` default changed, wrote "This change will ensure that the
BETA_SCHEDULE is set to 'linear'" — which it already was: the plan had asked to set it to the
value the baseline has. A plan whose run changes nothing is refused, and an edit that leaves a
named setting at another value is sent back with the setting named, never run.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..source.script_settings import script_settings

# A value as a plan writes it: a quoted string, a number, a constant, or a bare word (a string
# when the setting holds one: "BETA_SCHEDULE to linear").
_VALUE = (
    r"'[^'\n]*'|\"[^\"\n]*\"|[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]*\d)"
    r"|True\b|False\b|None\b|[A-Za-z_][\w-]*"
)
_SETTING = re.compile(
    rf"`?\b(?P<name>[A-Z][A-Z0-9_]{{2,}})\b`?(?:\s+from\s+`?[^\s`]+`?)?\s*(?:\bto\b|=|->|→)\s*"
    rf"`?(?P<value>{_VALUE})`?"
)


@dataclass(frozen=True)
class PlannedSetting:
    """One constant a planned change sets, and the value it sets it to."""

    name: str
    written: str  # the value as the plan wrote it: "'linear'", "1e-3", "linear"

    def value(self, current: Any) -> Any:
        """The value in Python, given the constant's ``current`` value (a bare word is a string
        where the constant holds one); None when the words say no value code can compare."""
        try:
            return ast.literal_eval(self.written)
        except (ValueError, SyntaxError):
            return self.written if isinstance(current, str) else None


def planned_settings(change: str) -> list[PlannedSetting]:
    """The constants a plan's change sets, in the order it names them."""
    return [PlannedSetting(m.group("name"), m.group("value")) for m in _SETTING.finditer(change)]


def module_constants(code: str) -> dict[str, Any]:
    """{name: literal value} of the module-level constants of ``code`` (the last assignment
    wins; core/source/script_settings.py reads them); {} when it does not parse."""
    return {s.name: s.value for s in script_settings(code) if s.kind == "constant"}


def planned_change_problems(
    change: str, before: dict[str, str | None], after: dict[str, str | None]
) -> list[str]:
    """Why an edit from ``before`` to ``after`` does not make the planned ``change``: settings
    it names left at other values, or every setting it names left as it was; [] when code
    cannot tell otherwise."""
    unmade = unmade_settings(change, after)
    untouched = untouched_settings(change, before, after)
    return unmade or ([untouched] if untouched else [])


_NAMED = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")


def untouched_settings(
    change: str, before: dict[str, str | None], after: dict[str, str | None]
) -> str:
    """When the planned ``change`` names module-level constants of the code (with or without
    values) and the edit left every one of them as it was: a sentence saying so; '' otherwise.
    The 1.5B model, asked to "Modify the BETA_START and BETA_END values", changed comments and
    the --out_dir default, and the run repeated the baseline."""
    old, new = _constants_of(before), _constants_of(after)
    named = [name for name in dict.fromkeys(_NAMED.findall(change)) if name in old]
    if not named or any(new.get(name, _GONE) != old[name] for name in named):
        return ""
    held = ", ".join(f"{name} = {old[name]!r}" for name in named)
    return (
        f"the edit left {held} as it was, and the plan changes {'them' if len(named) > 1 else 'it'}"
    )


_GONE = object()


def _constants_of(code: dict[str, str | None]) -> dict[str, Any]:
    return {
        name: value
        for file, text in code.items()
        if text is not None and file.endswith(".py")
        for name, value in module_constants(text).items()
    }


def unmade_settings(change: str, code: dict[str, str | None]) -> list[str]:
    """For each setting the planned ``change`` names that a Python file of ``code`` ({file:
    text}) defines with another value: a sentence saying so ("experiment.py still sets
    BETA_SCHEDULE = 'cosine'; the planned change sets it to 'linear'")."""
    return [
        f"{file} still sets {name} = {current!r}; the planned change sets it to {wanted!r}"
        for file, name, current, wanted in _compared(change, code)
        if not _same(current, wanted)
    ]


def changes_nothing(change: str, code: dict[str, str | None]) -> str:
    """When every setting the planned ``change`` names already has the value it sets in
    ``code`` (the baseline's), a sentence saying so; '' otherwise (or when it names none). The
    1.5B model planned "Change BETA_SCHEDULE to 'linear'" for diffusion_2d, whose schedule is
    linear, to compare with "the baseline (a cosine schedule)"."""
    compared = list(_compared(change, code))
    if not compared or not all(_same(current, wanted) for *_, current, wanted in compared):
        return ""
    held = ", ".join(f"{name} = {current!r}" for _, name, current, _ in compared)
    files = ", ".join(sorted({file for file, *_ in compared}))
    return f"{files} already sets {held}: the run would repeat the baseline"


def _compared(change: str, code: dict[str, str | None]) -> Iterator[tuple[str, str, Any, Any]]:
    """(file, setting, its value in the file, the value the change gives it) for each setting
    the change names that a Python file of ``code`` defines, where the words give a value."""
    files = {
        name: module_constants(text)
        for name, text in code.items()
        if text is not None and name.endswith(".py")
    }
    for setting in planned_settings(change):
        for file, constants in files.items():
            if setting.name in constants:
                current = constants[setting.name]
                wanted = setting.value(current)
                if wanted is not None:
                    yield file, setting.name, current, wanted


def _same(current: Any, wanted: Any) -> bool:
    numbers = (int, float)
    if isinstance(current, numbers) and isinstance(wanted, numbers):
        return math.isclose(float(current), float(wanted), rel_tol=1e-9, abs_tol=1e-12)
    return bool(current == wanted)
