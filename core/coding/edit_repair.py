"""A Python file a model returned without its head, completed by code: the module-level
imports, constants and functions of the old file that the new code still uses and no longer
binds are put back. core/coding/edit_guard.py judges an edit; this mends the one failure code can mend
for certain. A pure function of two texts, cheap to import and to test.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..source.parse import parse_code
from ..source.python import is_main_guard


def _parse(text: str) -> ast.Module | None:
    try:
        return parse_code(text)
    except (SyntaxError, ValueError):
        return None


@dataclass(frozen=True)
class Restored:
    """A Python file's new text with the definitions its reply left out put back."""

    text: str
    statements: tuple[str, ...] = ()  # the first line of each statement put back


def restored_definitions(old: str, new: str) -> Restored:
    """``new`` with the module-level statements of ``old`` that bind a name ``new`` still uses
    but no longer binds anywhere (imports, constants, functions) put back, in their old order,
    after ``new``'s docstring and ``__future__`` imports. A small model in aider's whole format
    returns a file without its head (Qwen2.5-Coder-1.5B's experiment.py began at the model's
    functions, 108 lines of imports and constants gone): the run would die of a NameError."""
    old_tree, new_tree = _parse(old), _parse(new)
    if old_tree is None or new_tree is None:
        return Restored(new)
    missing = _unbound(new_tree)
    chosen: list[ast.stmt] = []
    while missing:
        found = [s for s in old_tree.body if s not in chosen and _statement_binds(s) & missing]
        if not found:
            break
        chosen += found
        # what the statements put back use in turn (a constant computed from another)
        bound = set().union(*map(_statement_binds, chosen)) | _bound(new_tree)
        missing = {n for s in found for n in _loaded(s)} - bound - _BUILTINS
    if not chosen:
        return Restored(new)
    lines = old.splitlines()
    chosen.sort(key=lambda s: s.lineno)
    blocks = ["\n".join(lines[_first_line(s) - 1 : s.end_lineno]) for s in chosen]
    shown = [block.splitlines()[0].strip() for block in blocks]
    at = _after_header(new_tree)
    new_lines = new.splitlines(keepends=True)
    head = "".join(new_lines[:at])
    old_head = "\n".join(lines[: _after_header(old_tree)]).strip()
    if not head.strip() and old_head:  # the docstring went with the head (read as __doc__)
        head = old_head + "\n\n"
        shown.insert(0, old_head.splitlines()[0])
    text = head + "\n".join(blocks) + "\n\n" + "".join(new_lines[at:])
    return Restored(text, tuple(shown))


def restored_parts(old: str, new: str) -> Restored:
    """``new`` with what a reply that ran short left out put back: the definitions its code
    still uses (:func:`restored_definitions`) and the script's ``if __name__ == "__main__":``
    block (:func:`restored_entry`)."""
    head = restored_definitions(old, new)
    tail = restored_entry(old, head.text)
    return Restored(tail.text, head.statements + tail.statements)


def restored_entry(old: str, new: str) -> Restored:
    """``new`` with ``old``'s ``if __name__ == "__main__":`` block appended, when ``new`` has
    none and still binds every name the block uses. Qwen2.5-Coder-1.5B returned diffusion_2d's
    446-line experiment.py without its last three lines, twice: the run defined everything,
    called nothing and wrote no results."""
    old_tree, new_tree = _parse(old), _parse(new)
    if old_tree is None or new_tree is None or any(map(is_main_guard, new_tree.body)):
        return Restored(new)
    guard = next((s for s in old_tree.body if is_main_guard(s)), None)
    if guard is None or _loaded(guard) - _bound(new_tree) - _BUILTINS:
        return Restored(new)
    block = "\n".join(old.splitlines()[_first_line(guard) - 1 : guard.end_lineno])
    return Restored(new.rstrip() + "\n\n\n" + block + "\n", (block.splitlines()[0].strip(),))


_BUILTINS = frozenset(dir(__import__("builtins"))) | {"__file__", "__name__", "__doc__"}


def _statement_binds(statement: ast.stmt) -> set[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    return {
        n.id
        for n in ast.walk(statement)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _bound(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere: assigned, a parameter, imported, defined, caught."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _unbound(tree: ast.Module) -> set[str]:
    """Names the code reads that nothing in it binds and Python does not provide."""
    return _loaded(tree) - _bound(tree) - _BUILTINS


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _after_header(tree: ast.Module) -> int:
    """The line index after a module's docstring and ``from __future__`` imports."""
    end = 0
    for index, statement in enumerate(tree.body):
        docstring = (
            index == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
        )
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        if not (docstring or future):
            break
        end = statement.end_lineno or end
    return end
