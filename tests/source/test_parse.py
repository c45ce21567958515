"""labtui's parses of Python source run one at a time: CPython 3.11's AST converter keeps its
recursion depth per interpreter, and two threads parsing at once failed a tree search with
"SystemError: AST constructor recursion depth mismatch" (its two workers checking their edits)."""

from __future__ import annotations

import ast
import threading
import time

import pytest

from labtui.core.source import parse as python_ast


def test_parses_never_overlap_whatever_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    inside, most = 0, 0
    count = threading.Lock()
    real_parse = ast.parse

    def slow_parse(source: str, *args: object, **kwargs: object) -> ast.AST:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.002)  # a thread switch in the middle, as the GIL allows any time
        try:
            return real_parse(source, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            with count:
                inside -= 1

    monkeypatch.setattr(python_ast.ast, "parse", slow_parse)
    workers = [
        threading.Thread(
            target=lambda: [python_ast.parse_code("x = (1 + 2) * 3") for _ in range(20)]
        )
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert most == 1


def test_a_module_and_an_expression_parse_as_ast_does() -> None:
    module = python_ast.parse_code("A = 1\n", filename="experiment.py")
    assert isinstance(module, ast.Module) and isinstance(module.body[0], ast.Assign)
    assert isinstance(python_ast.parse_expression("a < b").body, ast.Compare)
    with pytest.raises(SyntaxError) as error:
        python_ast.parse_code("def (", filename="experiment.py")
    assert error.value.filename == "experiment.py"
