"""Python source read by ``ast``, never run: a repository's module parsed once (its size bounded,
its nodes walked once), and the small readers the survey applies to nodes: the dotted name a call
or decorator spells, a literal's value, a type as the source writes it.

core/onboarding/script_options.py and core/onboarding/python_survey.py read scripts with these.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from .files import HEAD_BYTES, file_size, read_text
from .parse import parse_code


@dataclass
class PythonModule:
    """A repository's Python file: its syntax tree (None, with why, when it was not parsed) and
    every node of it."""

    path: str
    tree: ast.Module | None
    text: str
    error: str = ""
    nodes: list[ast.AST] = field(default_factory=list)  # walked once: repositories are big

    def __post_init__(self) -> None:
        self.nodes = list(ast.walk(self.tree)) if self.tree is not None else []


def parse_module(root: Path, rel: str) -> PythonModule | None:
    """The module at ``rel``, its error kept when it does not parse; None when it cannot be read."""
    text = read_text(root, rel)
    if text is None:
        return None
    if file_size(root / rel) > HEAD_BYTES:
        return PythonModule(rel, None, text, f"not parsed: larger than {HEAD_BYTES // 1000} kB")
    try:
        return PythonModule(rel, parse_code(text, filename=rel), text)
    except (SyntaxError, ValueError, RecursionError) as err:
        line = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
        return PythonModule(rel, None, text, f"{type(err).__name__}: {err.args[0]}{line}")


def name_of(node: ast.AST | None) -> str:
    """ "click.option" for click.option(...) or click.option; "" for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def type_name(node: ast.AST | None) -> str:
    """int, click.Path, list[str]: a type as the source spells it."""
    try:
        return name_of(node) or (ast.unparse(node)[:100] if node is not None else "")
    except (ValueError, AttributeError, RecursionError):
        return ""


def literal(node: ast.AST | None) -> Any:
    """The node's value when the AST spells it as a JSON-able literal, else None."""
    try:
        return jsonable(ast.literal_eval(node)) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return None
    return list(value) if isinstance(value, tuple) else value


def literal_text(node: ast.AST | None) -> str:
    """A string literal's first 200 characters; "" for anything else."""
    value = literal(node)
    return value[:200] if isinstance(value, str) else ""


def is_main_guard(node: ast.stmt) -> bool:
    """Whether a statement is ``if __name__ == "__main__":``, a script's entry point."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    return "__name__" in names and any(literal(s) == "__main__" for s in sides)


def decorators_of(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.decorator_list
    return []


def is_call(node: ast.AST | None, *names: str) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and name_of(node).split(".")[-1] in names


def call_argument(node: ast.Call, index: int, *keywords: str) -> ast.AST | None:
    """A call's argument given by one of ``keywords``, else its ``index``-th positional one."""
    for keyword in node.keywords:
        if keyword.arg in keywords:
            return keyword.value
    if index < len(node.args) and not isinstance(node.args[index], ast.Starred):
        return node.args[index]
    return None


def keyword_flag(node: ast.Call, keyword: str, default: bool) -> bool:
    """A call's ``keyword=True/False`` as written, else ``default``."""
    value = next((k.value for k in node.keywords if k.arg == keyword), None)
    given = value.value if isinstance(value, ast.Constant) else None
    return given if isinstance(given, bool) else default


def module_strings(tree: ast.Module | None) -> dict[str, str]:
    """NAME = "text" at the top of the module."""
    return {
        target.id: node.value.value
        for node in (tree.body if tree else ())
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        if isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def undefined_names(code: str) -> set[str]:
    """The names ``code`` uses that nothing defines (pyflakes: not assigned, imported, defined
    or built in); empty when it does not parse. Read, never run."""
    from pyflakes import checker, messages  # noqa: PLC0415 -- only an edit's check needs it

    try:
        tree = parse_code(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    found = checker.Checker(tree, filename="<edit>")
    return {str(m.message_args[0]) for m in found.messages if isinstance(m, messages.UndefinedName)}
