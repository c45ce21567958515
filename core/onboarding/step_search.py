"""The first step at which a metric write's conditions hold: ``step % 500 == 0 and step > 0``
read as arithmetic over the loop counter and the names' values, never run as code.

core/onboarding/run_length.py resolves the names (options' defaults, module constants) and asks
``first_true``; only numbers, + - * / // %, comparisons and and/or/not are valued here, anything
else (a call, a subscript) is ``Unreadable``. Every step up to _EVERY_STEP_UP_TO is tried, then
the steps around the numbers the condition names and their multiples, up to SEARCH_LIMIT.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from typing import Any, TypeGuard

from ..source.python import name_of

SEARCH_LIMIT = 10**7  # the furthest step a first write is looked for
_EVERY_STEP_UP_TO = 2000  # below it every step is tried; beyond, the multiples the condition names


class Unreadable(Exception):
    """The condition holds something this reading cannot value (a call, a subscript, …)."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def first_true(
    parts: list[ast.expr], values: dict[str, float | None], counters: list[str], first: int = 0
) -> int | None:
    """The first value from ``first`` on of the loop counters (``counters``, the names bound
    to it) at which every part holds, the other names at ``values``; None when none does
    within SEARCH_LIMIT or a name has no numeric value (a length of None: no end known).
    Unreadable when a part holds what this reading cannot value."""
    if any(v is None for v in values.values()):
        for part in parts:  # still unreadable is unreadable, whatever the values
            _evaluate(part, dict.fromkeys([*values, *counters], 0), probe=True)
        return None
    known: dict[str, float] = {k: v for k, v in values.items() if v is not None}
    for step in (s for s in _candidates(parts, known) if s >= first):
        scope = {**known, **dict.fromkeys(counters, step)}
        if all(_holds(part, scope) for part in parts):
            return step
    return None


def _holds(part: ast.expr, scope: dict[str, float]) -> bool:
    try:
        return bool(_evaluate(part, scope))
    except (ZeroDivisionError, OverflowError, ValueError):
        return False  # a modulo by an interval of 0: the script would not write here either


def _candidates(parts: list[ast.expr], values: dict[str, float]) -> Iterator[int]:
    """Every step to _EVERY_STEP_UP_TO, then around the numbers the condition names and their
    multiples: where a ``%``, ``==`` or ``>`` first holds."""
    yield from range(_EVERY_STEP_UP_TO + 1)
    literals = [n.value for p in parts for n in ast.walk(p) if isinstance(n, ast.Constant)]
    numbers = {abs(int(v)) for v in [*literals, *values.values()] if _finite(v)}
    later: set[int] = set()
    for base in (n for n in numbers if 2 <= n <= SEARCH_LIMIT):
        for times in range(1, min(SEARCH_LIMIT // base, 2000) + 1):
            later.update(times * base + d for d in (-2, -1, 0, 1, 2))
    yield from sorted(n for n in later if _EVERY_STEP_UP_TO < n <= SEARCH_LIMIT)


def _finite(value: Any) -> TypeGuard[int | float]:
    return _number(value) and math.isfinite(value)


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _evaluate(node: ast.AST, scope: dict[str, float], probe: bool = False) -> Any:
    """An arithmetic condition's value: numbers, names in ``scope``, + - * / // %, comparisons,
    and/or/not. Anything else is Unreadable. ``probe`` checks readability only."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):  # bool is an int
        return node.value
    if isinstance(node, ast.Name | ast.Attribute) and name_of(node) in scope:
        return scope[name_of(node)]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, scope, probe), _evaluate(node.right, scope, probe)
        return 0 if probe else _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
        value = _evaluate(node.operand, scope, probe)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, scope, probe) for v in node.values)
        if probe:
            return all(True for _ in values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        sides = [_evaluate(s, scope, probe) for s in [node.left, *node.comparators]]
        pairs = zip(node.ops, sides, sides[1:], strict=False)
        return probe or all(_COMPARE[type(op)](a, b) for op, a, b in pairs)
    raise Unreadable(ast.unparse(node)[:80])
