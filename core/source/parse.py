"""Python source parsed one thread at a time (every ``ast.parse`` of labtui's goes through here).

CPython 3.11 (3.11.7 here) keeps the AST converter's recursion depth per interpreter, not per
thread (python/cpython gh-106905): two threads parsing at once, as a tree search's workers do
when they check their edits, can fail with "SystemError: AST constructor recursion depth
mismatch". A parse takes milliseconds, so the lock costs nothing that matters. It sits below
settings (labtui.toml's templates are checked with it), so it imports nothing of labtui.
"""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse_code(source: str, filename: str = "<unknown>") -> ast.Module:
    with _ONE_AT_A_TIME:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.Expression:
    with _ONE_AT_A_TIME:
        return ast.parse(source, mode="eval")
