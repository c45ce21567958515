"""An edit sized to the change: one definition of a Python file replaced by a new one.

A small model asked for a whole 446-line file spends 12–15 minutes writing it and drops what it
does not copy (an import, the ``if __name__ == "__main__":`` block). Asked for the one function
the change is in, it writes tens of lines. labtui finds that definition by its name in the
syntax tree (a top-level function or class, or ``Class.method``) and replaces exactly its lines
(decorators included); everything else of the file stays byte for byte. The new code must parse,
define the named function first (helpers it needs may follow it), and leave a file that parses.

A small model sometimes answers with only the statements around the change, from one statement
of the function that stays to another: such an anchored snippet replaces the lines between those
two, when each is in the function once and every statement between them is kept.
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from dataclasses import dataclass, replace

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
    """``code`` with the definition ``name`` replaced by ``new`` (re-indented to its place), or,
    when ``new`` defines nothing, with the statements of ``name`` between ``new``'s first and
    last statement replaced by those of ``new`` (an anchored snippet); FunctionEditError says
    why not: no such definition, new code that does not parse, does not define ``name`` first or
    does not fit as a snippet, or a file that would not compile or loses what the change does not
    ask for."""
    known = {d.name: d for d in definitions(code)}
    old = known.get(name)
    if old is None:
        listed = ", ".join(known) or "none"
        raise FunctionEditError(f"the code has no function or class {name!r}; it has: {listed}")
    short = name.rpartition(".")[2]
    body, tree = _parsed(new, short)
    lines = code.splitlines(keepends=True)
    ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    snippet = _first_definition(tree) is None and not _is_empty(tree)
    if snippet:
        # A small model asked for a whole definition sometimes answers with the statements around
        # the change (Qwen2.5-Coder-1.5B: "loss.backward(); clip...; optimizer.step();"), and
        # repeats it when asked again: placed by its first and last statement instead.
        first, last, placed = _snippet_region(code, old, short, body, tree)
    else:
        _check_defines(tree, short)
        first, last = old.first, old.last
        placed = textwrap.indent(body, old.indent) if old.indent else body
    # a snippet that only repeats two adjacent statements places no line
    placed = ending.join(placed.splitlines()) + ending if placed else ""
    result = "".join([*lines[: first - 1], placed, *lines[last:]])
    try:
        # compiled, not only parsed: ast.parse takes a `break` outside its loop, which the
        # 1.5B model's re-indented train had (moons, issue 42)
        compile(result, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise FunctionEditError(
            f"with the new {name} the file does not compile (line {exc.lineno}: {exc.msg}); "
            "keep the function's indentation as it was"
        ) from None
    # the whole definition before and after: a snippet's lines are only part of it
    grown = placed.count(ending) - (last - first + 1)
    after = _node_of(result, replace(old, last=old.last + grown)) if snippet else tree
    _check_kept_flow(name, _node_of(code, old), after)
    _check_names(name, code, result)
    return result


# An anchored snippet: statements of the named definition, from one that stays to another that
# stays, with the change between them. The two ends are found by their syntax trees (ast.dump
# leaves out positions), so spacing and a trailing `;` do not matter.


def _snippet_region(
    code: str, old: Definition, short: str, body: str, tree: ast.Module
) -> tuple[int, int, str]:
    """The lines of ``short`` (1-based, inclusive; none when last < first) between the snippet's
    two ends, and the snippet's statements between its ends placed there, one a line group, at
    the ends' indentation. The ends keep their lines as they are: the same statements, and a
    comment after one or its layout over lines stays byte for byte."""
    snippet = tree.body
    if len(snippet) < 2:
        raise FunctionEditError(
            _refusal(short, "the new code defines nothing, and one statement is too few to place")
        )
    block, i, j = _anchors(_node_of(code, old), snippet, short, body)
    ends = f"{_shown(body, snippet[0])} and {_shown(body, snippet[-1])}"
    _check_kept_between(code, block[i + 1 : j], snippet[1:-1], short, ends)
    _check_own_lines(block, i, j, short)
    line = code.splitlines()[_start(block[i])[0] - 1]
    indent = line[: len(line) - len(line.lstrip())]
    first = (block[i].end_lineno or 0) + 1
    return first, _start(block[j])[0] - 1, textwrap.indent(_between_ends(body, snippet), indent)


def _refusal(short: str, why: str, then: str = "") -> str:
    return (
        f"{why}; give the whole new definition of {short}, or the statements to change with the "
        f"existing statement before and after them{then}"
    )


def _node_of(code: str, old: Definition) -> ast.stmt:
    """The syntax tree of the definition ``old`` (it was found in ``code``, so it is there)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if _start(node)[0] == old.first and node.end_lineno == old.last:
                return node
    raise AssertionError(f"no definition at lines {old.first}-{old.last}")


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """Every statement list inside ``node``: bodies, else branches, handlers, finally blocks."""
    found = []
    for inner in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(inner, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                found.append(value)
    return found


def _anchors(
    definition: ast.stmt, snippet: list[ast.stmt], short: str, body: str
) -> tuple[list[ast.stmt], int, int]:
    """The statement list of ``definition`` and the indices in it of the snippet's first and last
    statement, each found exactly once in the whole definition, in one list, first before last."""
    blocks = _blocks(definition)
    places: dict[str, list[tuple[int, int]]] = {}
    for b, block in enumerate(blocks):
        for k, stmt in enumerate(block):
            places.setdefault(ast.dump(stmt), []).append((b, k))
    ends = {"first": snippet[0], "last": snippet[-1]}
    problems = []
    for which, stmt in ends.items():
        count = len(places.get(ast.dump(stmt), []))
        if count != 1:
            where = f"is in {short} {count} times" if count else f"is not a statement of {short}"
            problems.append(f"the {which}, {_shown(body, stmt)}, {where}")
    if problems:
        raise FunctionEditError(
            _refusal(
                short,
                f"the new code defines nothing, and as statements to change its first and last "
                f"statements must each be a statement of {short}, once: {' and '.join(problems)}",
            )
        )
    (b_first, i), (b_last, j) = places[ast.dump(snippet[0])][0], places[ast.dump(snippet[-1])][0]
    first, last = _shown(body, snippet[0]), _shown(body, snippet[-1])
    if (b_first, i) == (b_last, j):
        why = f"the new code's first and last statements are one statement of {short}, {first}"
    elif b_first != b_last:
        why = f"the new code's first statement {first} and last {last} are in different "
        why += f"blocks of {short}"
    elif j < i:
        why = f"the new code's last statement {last} comes before its first {first} in {short}"
    else:
        return blocks[b_first], i, j
    raise FunctionEditError(_refusal(short, why))


def _check_kept_between(
    code: str, between: list[ast.stmt], given: list[ast.stmt], short: str, ends: str
) -> None:
    """Each statement between the two ends is in the snippet too: a small model that leaves one
    out would otherwise lose it without a word."""
    left = Counter(ast.dump(stmt) for stmt in given)
    dropped = []
    for stmt in between:
        if left[ast.dump(stmt)] > 0:
            left[ast.dump(stmt)] -= 1
        else:
            dropped.append(_shown(code, stmt))
    if dropped:
        raise FunctionEditError(
            _refusal(
                short,
                f"the new code leaves out {', '.join(dropped)}, which {short} has between {ends}",
                ", keeping every statement between them",
            )
        )


def _check_own_lines(block: list[ast.stmt], i: int, j: int, short: str) -> None:
    """The lines between the ends are replaced whole: refused where an end shares a line with a
    statement between them (``loss.backward(); optimizer.step()`` on one line)."""
    if block[i].end_lineno == _start(block[i + 1])[0] or (
        block[j - 1].end_lineno == _start(block[j])[0]
    ):
        raise FunctionEditError(
            f"the statements to change share a line with others of {short}; give the whole new "
            f"definition of {short}"
        )


def _between_ends(body: str, snippet: list[ast.stmt]) -> str:
    """The snippet's statements between its ends, one a line group (``a(); b(); c();`` gives
    ``b()``); a statement alone on its lines keeps them whole (a comment after it, its
    decorators), and the blank and comment lines between statements stay."""
    lines = body.splitlines()
    groups: list[str] = []
    previous_end = snippet[0].end_lineno or 0
    for stmt in snippet[1:-1]:
        start, col = _start(stmt)
        groups.extend(lines[previous_end : start - 1])
        end = stmt.end_lineno or start
        rest = lines[end - 1].encode()[stmt.end_col_offset or 0 :].decode().strip()
        alone = not lines[start - 1].encode()[:col].strip() and rest[:1] in ("", "#")
        if alone:
            groups.extend(lines[start - 1 : end])
        else:
            groups.append(ast.get_source_segment(body, stmt) or "")
        previous_end = end
    groups.extend(lines[previous_end : _start(snippet[-1])[0] - 1])
    return "\n".join(groups)


def _start(stmt: ast.stmt) -> tuple[int, int]:
    """Where a statement begins: its first decorator's line (at the def's column) or its own."""
    decorators = getattr(stmt, "decorator_list", [])
    return (min([stmt.lineno, *(d.lineno for d in decorators)]), stmt.col_offset)


def _shown(source: str, stmt: ast.stmt) -> str:
    """A statement as a refusal names it: its first line, in backquotes."""
    text = (ast.get_source_segment(source, stmt) or "").splitlines()[0:1]
    first = text[0] if text else type(stmt).__name__
    return f"`{first[:60]}`"


# Statements that decide where a function goes next: one dropped changes what it does beyond
# the change asked for. The 1.5B model, asked to add input noise to moons' train, dropped the
# `break` that ends training at the budget's deadline.
_FLOW = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _check_kept_flow(name: str, old: ast.AST, new: ast.AST) -> None:
    before, after = _flow(old), _flow(new)
    dropped = [kind for kind, count in before.items() if after.get(kind, 0) < count]
    if dropped:
        said = " and ".join(f"a {kind} statement" for kind in dropped)
        raise FunctionEditError(
            f"the new {name} drops {said} that the change does not ask for; keep the rest of "
            "the function as it is and make only the change"
        )


def _flow(tree: ast.AST) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
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


def _parsed(new: str, short: str) -> tuple[str, ast.Module]:
    """The new code, fence off and dedented, and its syntax tree, when it parses."""
    body = textwrap.dedent(_without_fence(new)).strip("\n")
    try:
        return body, ast.parse(body)
    except SyntaxError as exc:
        raise FunctionEditError(
            f"the new code does not parse (line {exc.lineno}: {exc.msg}); give the whole "
            f"definition of {short}, from its def line to its last line"
        ) from None


def _first_definition(
    tree: ast.Module,
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    return next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ),
        None,
    )


def _is_empty(tree: ast.Module) -> bool:
    """Nothing but comments: refused as defining nothing, not read as statements."""
    return not tree.body


def _check_defines(tree: ast.Module, short: str) -> None:
    """The new code's first definition is ``short``."""
    first = _first_definition(tree)
    if first is None or first.name != short:
        given = f"defines {first.name!r}" if first is not None else "defines nothing"
        raise FunctionEditError(
            f"the new code {given}; it must be the whole new definition of {short!r} "
            f"(starting with its def line)"
        )


def _without_fence(text: str) -> str:
    """A model that wraps its code in a Markdown fence inside the JSON string: the fence off."""
    lines = text.strip("\n").splitlines()
    if len(lines) >= 2 and lines[0].lstrip().startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text
