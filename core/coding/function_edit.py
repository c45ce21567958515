"""An edit sized to the change: one definition of a Python file replaced by a new one.

A small model asked for a whole 446-line file spends 12–15 minutes writing it and drops what it
does not copy (an import, the ``if __name__ == "__main__":`` block). Asked for the one function
the change is in, it writes tens of lines. labtui finds that definition by its name in the
syntax tree (a top-level function or class, or ``Class.method``) and replaces exactly its lines
(decorators included); everything else of the file stays byte for byte. The new code must parse,
define the named function first (helpers it needs may follow it), and leave a file that parses.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from ..source.python import undefined_names


class FunctionEditError(ValueError):
    """Why a definition cannot replace the named one; the sentence is quoted to the model."""


@dataclass(frozen=True)
class Definition:
    """One definition a change may replace: its name as an answer gives it, its lines."""

    name: str  # "train", "MLP", "MLP.forward"
    first: int  # 1-based, its first decorator's line
    last: int  # 1-based, inclusive
    indent: str  # of its ``def``/``class`` line


def definitions(code: str) -> list[Definition]:
    """The top-level functions and classes of ``code`` and the methods of its classes, in
    source order; [] when it does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    lines = code.splitlines()
    found: list[Definition] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append(_definition(node, node.name, lines))
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.append(_definition(inner, f"{node.name}.{inner.name}", lines))
    return found


def _definition(node: ast.stmt, name: str, lines: list[str]) -> Definition:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    line = lines[node.lineno - 1]
    indent = line[: len(line) - len(line.lstrip())]
    return Definition(name, first, node.end_lineno or node.lineno, indent)


def replace_definition(code: str, name: str, new: str) -> str:
    """``code`` with the definition ``name`` replaced by ``new`` (re-indented to its place);
    FunctionEditError says why not: no such definition, new code that does not parse or does
    not define ``name`` first, or a file that would not parse."""
    known = {d.name: d for d in definitions(code)}
    old = known.get(name)
    if old is None:
        listed = ", ".join(known) or "none"
        raise FunctionEditError(f"the code has no function or class {name!r}; it has: {listed}")
    body = _checked(new, name.rpartition(".")[2])
    placed = textwrap.indent(body, old.indent) if old.indent else body
    lines = code.splitlines(keepends=True)
    ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    placed = ending.join(placed.splitlines()) + ending
    result = "".join([*lines[: old.first - 1], placed, *lines[old.last :]])
    try:
        # compiled, not only parsed: ast.parse takes a `break` outside its loop, which the
        # 1.5B model's re-indented train had (moons, issue 42)
        compile(result, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise FunctionEditError(
            f"with the new {name} the file does not compile (line {exc.lineno}: {exc.msg}); "
            "keep the function's indentation as it was"
        ) from None
    _check_kept_flow(name, "".join(lines[old.first - 1 : old.last]), body)
    _check_names(name, code, result)
    return result


# Statements that decide where a function goes next: one dropped changes what it does beyond
# the change asked for. The 1.5B model, asked to add input noise to moons' train, dropped the
# `break` that ends training at the budget's deadline.
_FLOW = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _check_kept_flow(name: str, old: str, new: str) -> None:
    before, after = _flow(textwrap.dedent(old)), _flow(new)
    dropped = [kind for kind, count in before.items() if after.get(kind, 0) < count]
    if dropped:
        said = " and ".join(f"a {kind} statement" for kind in dropped)
        raise FunctionEditError(
            f"the new {name} drops {said} that the change does not ask for; keep the rest of "
            "the function as it is and make only the change"
        )


def _flow(code: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, _FLOW):
            kind = type(node).__name__.lower()
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def _check_names(name: str, old: str, new: str) -> None:
    """Names the new code uses that nothing defines (pyflakes), which the old code did not
    have: a call of a helper the reply never wrote is a NameError at run time."""
    introduced = sorted(undefined_names(new) - undefined_names(old))
    if introduced:
        raise FunctionEditError(
            f"the new {name} uses {', '.join(introduced)}, which the code does not define: "
            "write it inside the function, or use what the code has"
        )


def _checked(new: str, short: str) -> str:
    """The new definition, dedented, when it parses and its first statement defines ``short``."""
    body = textwrap.dedent(_without_fence(new)).strip("\n")
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        raise FunctionEditError(
            f"the new code does not parse (line {exc.lineno}: {exc.msg}); give the whole "
            f"definition of {short}, from its def line to its last line"
        ) from None
    first = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ),
        None,
    )
    if first is None or first.name != short:
        given = f"defines {first.name!r}" if first is not None else "defines nothing"
        raise FunctionEditError(
            f"the new code {given}; it must be the whole new definition of {short!r} "
            f"(starting with its def line)"
        )
    return body


def _without_fence(text: str) -> str:
    """A model that wraps its code in a Markdown fence inside the JSON string: the fence off."""
    lines = text.strip("\n").splitlines()
    if len(lines) >= 2 and lines[0].lstrip().startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text
