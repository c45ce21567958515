"""Whether a metric write is on as the repository stands. nanoGPT logs to W&B only ``if
wandb_log and master_process``, with ``wandb_log = False`` at the top of train.py; a script logs
to TensorBoard only ``if args.tensorboard``, a ``store_true`` switch. Such a write happens in no
run of the command as proposed, so its names are no proposal: the metrics it would have written
come from where the run does write them (its printed lines)."""

from __future__ import annotations

import ast
from pathlib import Path

from ..source.parse import parse_expression
from ..source.python import parse_module
from .metric_names import MetricFound
from .repo_facts import EntryPoint

_LOOPS = ("for ", "async for ", "while ")


def switched_off(metric: MetricFound, root: Path, entry: EntryPoint | None) -> str:
    """The switch that keeps ``metric``'s write off by default ('' when none does): a name in
    one of its ``if`` conditions, joined by ``and``, whose value is False as the script stands
    (a module constant of the file that writes it, or an option's default)."""
    constants = _false_constants(root, metric.where.rpartition(":")[0])
    options = {o.dest.split(".")[-1]: o.default for o in entry.options} if entry else {}
    for condition in metric.conditions:
        if condition.strip().startswith(_LOOPS):
            continue
        try:
            test = parse_expression(condition.strip()).body
        except (SyntaxError, ValueError, RecursionError):
            continue
        for part in _conjuncts(test):
            name = _last_name(part)
            if name and (name in constants or (name in options and options[name] is False)):
                return name
    return ""


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [p for value in test.values for p in _conjuncts(value)]
    return [test]


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _false_constants(root: Path, path: str) -> set[str]:
    """Names assigned False at the top of ``path`` (the last assignment counts)."""
    module = parse_module(root, path) if path else None
    values: dict[str, object] = {}
    for node in module.tree.body if module is not None and module.tree is not None else []:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values[target.id] = node.value.value
    return {name for name, value in values.items() if value is False}
