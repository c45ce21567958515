"""Whether a Python file trains at its top level: a plain script with no main guard and no option
parser (hyperparameters as module constants, then ``for it in range(max_iters): … loss.backward();
optimizer.step(); print(f"step {it}: train loss {loss:.3f}")``) is a script all the same.

Issue 43: such a script was no script to the survey ("0 script(s)", no command) although its
metrics were read. A loop at the module's top level (not inside a function or a class) that
steps an optimizer, calls ``backward()`` or prints a metric line is what makes it one; a module
that only defines things, or loops over files to prepare data, is not. So does a fit called at
the top level (``model.fit(x_train, y_train, epochs=5)``: a Keras tutorial script was "0
script(s)" in the repository bench).
"""

from __future__ import annotations

import ast
import re

from ..machine.metric_lines import parse_metrics
from ..source.python import PythonModule, name_of
from .printed_metrics import SAMPLE_VALUE, is_printer, rendered_lines

# Text a top-level loop has: a ``for`` or ``while`` at the start of a line. Files without one are
# not parsed for it (core/onboarding/repo_scan.py's hint), which keeps a big package's survey fast.
# A fit at the top level trains too: ``model.fit(x, y, epochs=5)`` (Keras), ``trainer.fit(model)``
# (Lightning), ``clf.fit(X, y)`` (scikit-learn), written as a statement or assigned.
TOP_LEVEL_LOOP = re.compile(r"^(for|while|async for)\b|^(\w+\s*=\s*)?\w[\w.]*\.fit\(", re.M)
_STEPS = {"step", "backward"}  # optimizer.step(), loss.backward(): a training step
_FITS = {"fit", "fit_generator"}


def trains_at_top_level(module: PythonModule) -> str:
    """Why ``module`` is a script by its top-level code ("a top-level loop at train.py:12 calls
    optimizer.step()"), or "" when no top-level loop trains or prints a metric."""
    if module.tree is None:
        return ""
    for statement in _top_level_statements(module.tree.body):
        call = statement.value if isinstance(statement, ast.Expr | ast.Assign) else None
        if isinstance(call, ast.Call) and (fitted := _fit_call(call)):
            return f"{module.path}:{statement.lineno} calls {fitted}() at its top level"
    for loop in _top_level_loops(module.tree.body):
        for node in _outside_definitions(loop):
            if isinstance(node, ast.Call) and (what := _training_call(node)):
                return f"a top-level loop at {module.path}:{loop.lineno} {what}"
    return ""


def _fit_call(call: ast.Call) -> str:
    """``model.fit`` for a fit of something with what to fit it on, else ''."""
    name = name_of(call.func)
    fits = "." in name and name.rsplit(".", 1)[-1] in _FITS
    return name if fits and (call.args or call.keywords) else ""


def _top_level_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's own statements, also those under a top-level ``if``, ``with`` or ``try``."""
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, ast.If | ast.With | ast.AsyncWith | ast.Try):
            for block in ("body", "orelse", "finalbody"):
                found += _top_level_statements(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                found += _top_level_statements(handler.body)
    return found


def _top_level_loops(body: list[ast.stmt]) -> list[ast.stmt]:
    """The loops of the module's own code, also those under a top-level ``if``, ``with`` or
    ``try`` (``with torch.no_grad():``, ``if __name__ == "__main__":``)."""
    loops = ast.For | ast.AsyncFor | ast.While
    return [statement for statement in _top_level_statements(body) if isinstance(statement, loops)]


def _outside_definitions(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node`` but those of the functions and classes it defines: their code
    runs only when called."""
    found: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        found += [child, *_outside_definitions(child)]
    return found


def _training_call(call: ast.Call) -> str:
    """What the call does that training does ("calls optimizer.step()", "prints a metric
    line"), or ""."""
    name = name_of(call.func)
    last = name.rsplit(".", 1)[-1]
    if "." in name and last in _STEPS and not call.args:
        return f"calls {name}()"
    if is_printer(name, last) and _prints_a_metric(call, name):
        return "prints a metric line"
    return ""


def _prints_a_metric(call: ast.Call, name: str) -> bool:
    for line, _step in rendered_lines(call, name, lambda _node: None):
        point = parse_metrics(line)
        if point and SAMPLE_VALUE in point.values.values():
            return True
    return False
