"""Whether a Python file trains at its top level: a plain script with no main guard and no option
parser (hyperparameters as module constants, then ``for it in range(max_iters): … loss.backward();
optimizer.step(); print(f"step {it}: train loss {loss:.3f}")``) is a script all the same.

Issue 43: such a script was no script to the survey ("0 script(s)", no command) although its
metrics were read. A loop at the module's top level (not inside a function or a class) that
steps an optimizer, calls ``backward()`` or prints a metric line is what makes it one; a module
that only defines things, or loops over files to prepare data, is not.
"""

from __future__ import annotations

import ast
import re

from ..machine.metric_lines import parse_metrics
from ..source.python import PythonModule, name_of
from .printed_metrics import SAMPLE_VALUE, is_printer, rendered_lines

# Text a top-level loop has: a ``for`` or ``while`` at the start of a line. Files without one are
# not parsed for it (core/onboarding/repo_scan.py's hint), which keeps a big package's survey fast.
TOP_LEVEL_LOOP = re.compile(r"^(for|while|async for)\b", re.M)
_STEPS = {"step", "backward"}  # optimizer.step(), loss.backward(): a training step


def trains_at_top_level(module: PythonModule) -> str:
    """Why ``module`` is a script by its top-level code ("a top-level loop at train.py:12 calls
    optimizer.step()"), or "" when no top-level loop trains or prints a metric."""
    if module.tree is None:
        return ""
    for loop in _top_level_loops(module.tree.body):
        for node in _outside_definitions(loop):
            if isinstance(node, ast.Call) and (what := _training_call(node)):
                return f"a top-level loop at {module.path}:{loop.lineno} {what}"
    return ""


def _top_level_loops(body: list[ast.stmt]) -> list[ast.stmt]:
    """The loops of the module's own code, also those under a top-level ``if``, ``with`` or
    ``try`` (``with torch.no_grad():``, ``if __name__ == "__main__":``)."""
    found: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.For | ast.AsyncFor | ast.While):
            found.append(statement)
        elif isinstance(statement, ast.If | ast.With | ast.AsyncWith | ast.Try):
            for block in ("body", "orelse", "finalbody"):
                found += _top_level_loops(getattr(statement, block, []))
            for handler in getattr(statement, "handlers", []):
                found += _top_level_loops(handler.body)
    return found


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
