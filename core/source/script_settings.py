"""The settings a script sets, read from its code by name and value: the constants of its module
level (``n_features = 64``, ``EPOCHS: int = 200``, ``SCHEDULE = "cosine"``) and the defaults of
its argparse options (``--lr``, ``default=3e-4``).

They are facts the code states, so the paper's Experimental Setup is written from them and a
number the paper quotes from them traces to the run (core/runs/script_constants.py); what a run
changed against the baseline compares them (core/runs/run_changes.py); ``labtui init`` reads the
numeric constants (``module_constants``) to tell how long a run trains. Nothing here runs the
script: a value counts only where the source spells it as a literal.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .argparse_options import argparse_calls
from .parse import parse_code
from .python import is_call, literal, name_of

SettingKind = Literal["constant", "option"]


@dataclass(frozen=True)
class Setting:
    """One setting of a script: a module-level constant (``name`` as the code spells it) or an
    argparse option's default (``name`` its dest, ``flag`` its long flag)."""

    name: str
    value: Any  # a literal: int, float, str, bool, None, or a tuple, list or dict of them
    kind: SettingKind
    line: int  # where the value is given: the last assignment, or the add_argument call
    flag: str = ""


@dataclass(frozen=True)
class Constant:
    """A number a script sets at its top level (``max_iters = 5000``): no command-line option
    changes it, but a condition (``it % eval_interval == 0``) may read it."""

    name: str
    value: int | float
    line: int


def script_settings(code: str) -> list[Setting]:
    """The module-level constants of ``code`` (each as its last top-level assignment leaves it,
    in the order they first appear), then its argparse options' defaults in source order; []
    when the code does not parse. An option without a default (or ``default=None``) sets
    nothing and is left out."""
    tree = _parsed(code)
    if tree is None:
        return []
    return [*_constants(tree), *_option_defaults(list(ast.walk(tree)))]


def module_constants(tree: ast.Module | None) -> list[Constant]:
    """``max_iters = 5000``, ``EVAL_EVERY: int = 500``, ``epochs = float("inf")`` at the module's
    top level: the numbers among its constants (a switch is no count)."""
    return [
        Constant(s.name, s.value, s.line)
        for s in (_constants(tree) if tree is not None else [])
        if is_number(s.value)
    ]


def is_number(value: Any) -> bool:
    """An int or a float; a bool is no number (``True`` is no count of 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def without_setting_values(code: str) -> str | None:
    """``code``'s syntax tree with the value of every setting blanked, as text (comments and
    layout left out too): two versions of a script with the same text here differ only in
    their settings' values, so what a run changed is said as settings and not again as code.
    None when it does not parse."""
    tree = _parsed(code)
    if tree is None:
        return None
    blank = ast.Constant(value=...)
    for statement in tree.body:
        if (
            isinstance(statement, ast.Assign | ast.AnnAssign)
            and _value(statement.value) is not _NO_VALUE
        ):
            statement.value = blank
    for call, _ in argparse_calls(list(ast.walk(tree))):
        for keyword in call.keywords:
            if keyword.arg == "default" and _value(keyword.value) is not _NO_VALUE:
                keyword.value = blank
    return ast.dump(tree)


def _parsed(code: str) -> ast.Module | None:
    try:
        return parse_code(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# -- module-level constants -----------------------------------------------------------------


def _constants(tree: ast.Module) -> list[Setting]:
    """A name keeps the place of its first assignment and the value of its last; a last
    assignment that is no literal (``n = compute()``, ``n += 1``) leaves no value to state."""
    found: dict[str, Setting | None] = {}
    for name, statement, node in _bindings(tree):
        value = _value(node) if node is not None else _NO_VALUE
        found[name] = (
            None if value is _NO_VALUE else Setting(name, value, "constant", statement.lineno)
        )
    return [setting for setting in found.values() if setting is not None]


def _bindings(tree: ast.Module) -> Iterator[tuple[str, ast.stmt, ast.expr | None]]:
    """(name, statement, value) for each name a top-level assignment binds; the value is None
    where the statement gives the name no value of its own (``a, b = pair``, ``n += 1``)."""
    for statement in tree.body:
        targets: list[ast.expr]
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        elif isinstance(statement, ast.AugAssign):
            targets, value = [statement.target], None
        else:
            continue
        for target in targets:
            own = value if isinstance(target, ast.Name) else None
            for name in _names(target):
                if not (name.startswith("__") and name.endswith("__")):  # __version__, __all__
                    yield name, statement, own


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for item in target.elts for name in _names(item)]
    return []  # obj.attr = …, table[key] = …: no name of the module's is set


# -- values ---------------------------------------------------------------------------------

_NO_VALUE: Any = object()  # not a literal (None is a value a setting may hold)
_SCALARS = (bool, int, float, str, type(None))


def _value(node: ast.AST | None) -> Any:
    """The literal ``node`` spells, else _NO_VALUE: infinity as code writes it (``math.inf``,
    ``float("inf")``), else what ``ast.literal_eval`` gives when it is plain data (a set, bytes
    or a complex number is no setting a paper states)."""
    if name_of(node) == "math.inf" or (
        is_call(node, "float") and [literal(a) for a in node.args] in (["inf"], ["Infinity"])
    ):
        return math.inf
    try:
        value = ast.literal_eval(node) if node is not None else _NO_VALUE
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE
    return value if _plain(value) else _NO_VALUE


def _plain(value: Any) -> bool:
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, tuple | list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, _SCALARS) and _plain(v) for k, v in value.items())
    return False


# -- argparse defaults ----------------------------------------------------------------------


def _option_defaults(nodes: list[ast.AST]) -> list[Setting]:
    found = []
    for call, option in argparse_calls(nodes):
        given = next((k.value for k in call.keywords if k.arg == "default"), None)
        # read as the constants are (a tuple stays one); a switch's implicit default is the
        # reader's (store_true: False)
        value = _value(given) if given is not None else option.default
        if value is None or value is _NO_VALUE:
            continue
        dashed = [f for f in option.flags if f.startswith("--")] or [
            f for f in option.flags if f.startswith("-")
        ]
        found.append(
            Setting(option.dest, value, "option", call.lineno, dashed[0] if dashed else "")
        )
    return found
