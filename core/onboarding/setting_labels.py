"""Printed lines that state a setting, not a measure: ``print("Depth: {}".format(depth))`` in a
sweep over depths, ``print(f"lr: {LR}")`` once at the start, ``print("batch size", args.batch_size)``.

Issue 43: a hyperparameter label (``Depth: {}``) was proposed as a metric, "higher is better".
core/onboarding/metric_names.py renders a print's placeholders with a sample number and keeps the
names that read it back; ``SettingLabels.blanked`` first marks each placeholder that is a setting
(``SettingValue``, rendered as a plain number, not the sample), so its name is not taken for a
metric. A setting is:

- a module constant assigned once (``DEPTH = 3``; not ``best_loss = 1e9`` updated later);
- an option's value (``args.depth``, ``config.lr``, ``cfg.model.depth``, ``self.hparams.lr``);
- the variable of a loop over numbers (``for depth in range(1, 10)``, ``for lr in [0.1, 0.01]``),
  unless it is named like a step or an epoch, which the metric lines count by.
"""

from __future__ import annotations

import ast
import copy
import re
from collections import Counter

from ..source.python import name_of
from ..source.script_settings import module_constants
from .printed_metrics import SettingValue

_OPTIONS = re.compile(
    r"(self\.)?(args|opt|opts|options|config|cfg|conf|hparams|hp|params|flags|FLAGS|settings)"
    r"(\.\w+)+"
)
_STEP_LIKE = re.compile(r"(^|_)(global_step|steps?|epochs?|iters?|iterations?|it|idx|i|j|k|n)$")


class SettingLabels:
    """What in one module's prints is a setting; the loop variables over numbers are given by
    the reader, which knows the loops around a call."""

    def __init__(self, tree: ast.Module | None) -> None:
        stored = Counter(
            n.id
            for n in (ast.walk(tree) if tree is not None else ())
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        )
        # numbers only: a text constant names what is printed (f"{SPLIT} loss"), as a run prints it
        self.constants = {c.name for c in module_constants(tree) if stored[c.name] == 1}

    def blanked(self, call: ast.Call, swept: set[str]) -> ast.Call:
        """A copy of ``call`` for rendering, each setting in its arguments a ``SettingValue``
        (the call itself when none is)."""
        blank = _Blank(self.constants | swept)
        args = [blank.visit(copy.deepcopy(a)) for a in call.args]
        keywords = [blank.visit(copy.deepcopy(k)) for k in call.keywords]
        if not blank.changed:
            return call
        return ast.copy_location(ast.Call(call.func, args, keywords), call)


def swept_variable(loop: ast.For | ast.AsyncFor) -> str:
    """The variable of a loop over numbers that is no step count: ``depth`` of ``for depth in
    range(1, 10)``; "" for any other loop."""
    target = loop.target.id if isinstance(loop.target, ast.Name) else ""
    if not target or _STEP_LIKE.search(target.lower()):
        return ""
    if isinstance(loop.iter, ast.Call) and name_of(loop.iter.func) == "range":
        return target
    if isinstance(loop.iter, ast.List | ast.Tuple | ast.Set) and loop.iter.elts:
        numbers = all(_is_number(e) for e in loop.iter.elts)
        return target if numbers else ""
    return ""


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    )


class _Blank(ast.NodeTransformer):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.changed = False

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self._blank(node) if node.id in self.names else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if _OPTIONS.fullmatch(name_of(node)):
            return self._blank(node)
        return self.generic_visit(node)

    def _blank(self, node: ast.expr) -> ast.AST:
        self.changed = True
        return ast.copy_location(SettingValue(None), node)
