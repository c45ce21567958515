"""The metric names a repository's code writes, read by ``ast`` (the code is never imported or run).

`labtui init` proposes [results] metrics from them when no earlier run left a result file: the
tags of TensorBoard's ``add_scalar``/``add_scalars`` and ``tf.summary.scalar``, the keys of
``wandb.log``/``run.log`` (dict literals, ``dict(...)``, keys put into a dict variable before it
is logged, nested dicts as W&B names them), ``mlflow.log_metric(s)``, Lightning's ``self.log`` and
``self.log_dict``, and the names a ``print`` or ``logging`` format string prints, rendered with
sample numbers and read back by the parser of a run's stdout (core/machine/metric_lines.py), so
the name proposed is the name read back. Each name keeps where it is written, the ``if`` tests and
loops around it (after how many steps is it first written?) and the step the call gives.

The loggers the code configures (a SummaryWriter's folder, Lightning's TensorBoard, W&B or CSV
logger) are read in the same pass: they say where the numbers land. What the sweep and Hydra
configs say, and the choice of one source, are core/onboarding/metric_choice.py's.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..machine.metric_lines import lower_is_better, parse_metrics
from ..source.files import is_test
from ..source.python import (
    PythonModule,
    call_argument,
    is_main_guard,
    keyword_flag,
    module_strings,
    name_of,
    parse_module,
)
from .dict_keys import MAX_NAMES, Pairs, dict_keys
from .printed_metrics import SAMPLE_VALUE, BuiltTexts, is_printer, rendered_lines, shown
from .repo_facts import EntryPoint, RepoSurvey
from .setting_labels import SettingLabels, swept_variable

KINDS = ("tensorboard", "wandb", "mlflow", "lightning", "stdout")
MAX_FILES = 200  # files read when the script and its imports write no metric
_LOGGER_CALLS = {
    "SummaryWriter": "tensorboard",
    "TensorBoardLogger": "tensorboard",
    "WandbLogger": "wandb",
    "CSVLogger": "csv",
    "MLFlowLogger": "mlflow",
}


@dataclass(frozen=True)
class MetricFound:
    """A metric the code writes, as the source will read it back."""

    name: str  # the TensorBoard tag, W&B key, MLflow or Lightning name, or the stdout name
    kind: str  # one of KINDS
    direction: str  # "higher" | "lower"
    reason: str  # one line a researcher reads: where, the call, why this direction
    where: str  # "train.py:88"
    conditions: tuple[str, ...] = ()  # the enclosing if tests and loops, innermost last
    step_expr: str = ""  # the step the call gives ("global_step"), when it gives one
    # add_scalars: the folders TensorBoard writes the tag's series into ("Loss_train", …)
    folders: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoggerFound:
    """A logger the code makes: where its numbers land."""

    kind: str  # tensorboard (SummaryWriter, TensorBoardLogger) | wandb | csv | mlflow
    call: str  # "SummaryWriter", "CSVLogger", …
    folder: str  # the source of its folder argument; "" when the call gives none
    folder_literal: str | None  # that folder when it is a string literal
    name: str  # a Lightning logger's name= ("lightning_logs" when not given)
    where: str


@dataclass(frozen=True)
class CodeMetrics:
    """What ``metrics_in_code`` read: the metrics in reading order (a name written in several
    places appears once per place) and the loggers."""

    found: tuple[MetricFound, ...] = ()
    loggers: tuple[LoggerFound, ...] = ()
    files: tuple[str, ...] = ()  # the files read
    trainer: str = ""  # where a Lightning Trainer is made ("train.py:40"), its logger unsaid

    def of_kind(self, *kinds: str) -> list[MetricFound]:
        return [m for m in self.found if m.kind in kinds]


def metrics_in_code(survey: RepoSurvey, entry: EntryPoint | None) -> CodeMetrics:
    """The metrics the entry script and the repository modules it imports write, and no other
    script's (issue 43: another script's names made a baseline fail for metrics its own script
    never prints); with no entry, those of any Python file but tests."""
    root = Path(survey.root)
    if entry is not None:
        return _read_files(root, _imported_from(survey, entry))
    return _read_files(root, [p for p in survey.python_files.all if not is_test(p)][:MAX_FILES])


def _imported_from(survey: RepoSurvey, entry: EntryPoint) -> list[str]:
    """The script, then what it imports, breadth first, over the survey's import graph."""
    order, frontier = [entry.path], [*entry.imports]
    while frontier:
        path = frontier.pop(0)
        if path not in order and not is_test(path):
            order.append(path)
            frontier += survey.imports.get(path, ())
    return order


def _read_files(root: Path, paths: list[str]) -> CodeMetrics:
    found: list[MetricFound] = []
    loggers: list[LoggerFound] = []
    trainer = ""
    for path in paths:
        module = parse_module(root, path)
        if module is None or module.tree is None:
            continue
        reader = _Reader(module)
        reader.visit(module.tree)
        found += reader.found[:MAX_NAMES]
        loggers += reader.loggers
        trainer = trainer or reader.trainer
    return CodeMetrics(tuple(found), tuple(loggers), tuple(paths), trainer)


def direction_by_name(name: str) -> tuple[str, str]:
    """("lower"|"higher", the words a reason ends with)."""
    if lower_is_better(name):
        return "lower", "by its name, lower is better"
    return "higher", "by its name, higher is better"


# -- the reader -----------------------------------------------------------------------------------


@dataclass
class _Scope:
    """What the reader knows inside one function, in reading order: the conditions around the
    node, the literal values loop variables take, the keys put into dict variables so far, the
    lines built before they are printed."""

    function: str = ""
    conditions: list[str] = field(default_factory=list)
    loops: dict[str, list[str]] = field(default_factory=dict)
    dicts: dict[str, Pairs] = field(default_factory=dict)
    texts: BuiltTexts = field(default_factory=BuiltTexts)
    swept: set[str] = field(default_factory=set)  # loop variables over numbers: settings


class _Reader(ast.NodeVisitor):
    def __init__(self, module: PythonModule) -> None:
        self.path = module.path
        self.wandb = "wandb" in module.text
        self.lightning = bool(re.search(r"\blightning\b|pytorch_lightning", module.text))
        self.constants = module_strings(module.tree)
        self.labels = SettingLabels(module.tree)
        self.scope = _Scope()
        self.found: list[MetricFound] = []
        self.loggers: list[LoggerFound] = []
        self.trainer = ""

    # -- where a node is ------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.scope = self.scope, _Scope(node.name)
        self.generic_visit(node)
        self.scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        test = "" if is_main_guard(node) else shown(node.test)  # true whenever the script runs
        self._under(test, node.body)
        self._under(f"not ({test})" if test else "", node.orelse)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._under(f"while {shown(node.test)}", node.body)
        self._under("", node.orelse)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        values = self._literal_strings(node.iter)
        target = node.target.id if isinstance(node.target, ast.Name) else ""
        loops = self.scope.loops
        before = loops.get(target)
        if target:  # a loop variable over anything else hides an outer one of the same name
            loops[target] = values or []
        swept = swept_variable(node)
        self.scope.swept.update([swept] if swept else [])
        self._under(f"for {shown(node.target)} in {shown(node.iter)}", node.body)
        self.scope.swept.discard(swept)
        if target:
            loops.pop(target)
            if before is not None:
                loops[target] = before
        self._under("", node.orelse)

    visit_AsyncFor = visit_For

    def _under(self, condition: str, body: list[ast.stmt]) -> None:
        if condition:
            self.scope.conditions.append(condition)
        for statement in body:
            self.visit(statement)
        if condition:
            self.scope.conditions.pop()

    # -- dict and text variables ----------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self._assigned(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self._assigned(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        self.scope.texts.extended(node)

    def _assigned(self, target: ast.AST, value: ast.AST) -> None:
        """m = {...} / dict(...) starts m's keys; m["k"] = v adds one; msg = f"…" is a line."""
        self.scope.texts.assigned(target, value)
        dicts = self.scope.dicts
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Dict) or name_of(value) == "dict":
                dicts[target.id] = self._keys(value, ".")
            else:
                dicts.pop(target.id, None)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            keys = self._strings(target.slice) or ()
            dicts.setdefault(target.value.id, []).extend((k, value) for k in keys)

    # -- the calls ------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        name = name_of(node.func)
        last = name.rsplit(".", 1)[-1]
        if last in _LOGGER_CALLS:
            self._logger(node, name, _LOGGER_CALLS[last])
        elif last == "Trainer" and not self.trainer:
            self.trainer = self._where(node)
        elif last in ("add_scalar", "add_scalars") or name == "tf.summary.scalar":
            self._tensorboard(node, name, last)
        elif name in ("mlflow.log_metric", "mlflow.log_metrics"):
            self._mlflow(node, name)
        elif name in ("self.log", "self.log_dict") and self.lightning:
            self._lightning(node, name)
        elif last == "log" and self._logs_to_wandb(node, name):
            self._dict_call(node, name, "wandb")
        elif last == "update" and isinstance(node.func, ast.Attribute):
            self._updated(node)
        elif is_printer(name, last):
            self._printed(node, name)

    def _updated(self, node: ast.Call) -> None:
        owner = node.func.value if isinstance(node.func, ast.Attribute) else None
        if isinstance(owner, ast.Name) and owner.id in self.scope.dicts:
            keys = self.scope.dicts[owner.id]
            for argument in node.args:
                keys += self._keys(argument, ".")
            keys += [(k.arg, k.value) for k in node.keywords if k.arg]

    def _tensorboard(self, node: ast.Call, name: str, last: str) -> None:
        several = last == "add_scalars"
        tag = call_argument(node, 0, "main_tag" if several else "tag", "name")
        step = call_argument(node, 2, "global_step", "step")
        for value in self._strings(tag) or ():
            call = f'{name}("{value}", …)'
            folders: tuple[str, ...] = ()
            if several:
                # TensorBoard writes each key's series under the tag main_tag itself, in a
                # folder of its own (main_tag_key): one name, several series
                keys = self._keys(call_argument(node, 1, "tag_scalar_dict"), "")
                folders = tuple(f"{value.replace('/', '_')}_{k}" for k, _ in keys)
                shown_folders = ", ".join(f"{f}/" for f in folders[:4])
                call = f'{name}("{value}", {{…}}), each key as tag "{value}" in {shown_folders}'
            self._add(value, "tensorboard", node, call, step, folders)

    def _mlflow(self, node: ast.Call, name: str) -> None:
        if name.endswith("log_metrics"):
            self._dict_call(node, name, "mlflow")
            return
        step = call_argument(node, 2, "step")
        for key in self._strings(call_argument(node, 0, "key")) or ():
            self._add(key, "mlflow", node, f'{name}("{key}", …)', step)

    def _lightning(self, node: ast.Call, name: str) -> None:
        if name == "self.log_dict":
            self._dict_call(node, name, "lightning")
            return
        # the hook decides the defaults; with on_step and on_epoch both on, Lightning logs
        # name_step and name_epoch instead of name
        training = self.scope.function == "training_step"
        both = keyword_flag(node, "on_step", training) and keyword_flag(
            node, "on_epoch", not training
        )
        for key in self._strings(call_argument(node, 0, "name")) or ():
            logged = f"{key}_epoch" if both else key
            self._add(logged, "lightning", node, f'{name}("{key}", …)', None)

    def _logs_to_wandb(self, node: ast.Call, name: str) -> bool:
        """wandb.log, run.log, wandb.run.log, self.logger.experiment.log with a dict: not
        math.log(x) or logger.log(level, message)."""
        if name.endswith("experiment.log") or name in ("wandb.log", "wandb.run.log"):
            return True
        first = call_argument(node, 0, "data")
        is_dict = isinstance(first, ast.Dict) or name_of(first) == "dict"
        is_dict |= isinstance(first, ast.Name) and first.id in self.scope.dicts
        return self.wandb and is_dict

    def _dict_call(self, node: ast.Call, name: str, kind: str) -> None:
        data = call_argument(node, 0, "data", "metrics", "dictionary")
        step = call_argument(node, 1, "step") if kind != "lightning" else None
        what = shown(data, 40) if isinstance(data, ast.Name) else "{…}"
        # W&B names a nested dict's keys "outer.inner"; the others take flat dicts only
        for key, _value in self._keys(data, "." if kind == "wandb" else ""):
            self._add(key, kind, node, f'{name}({what}) with "{key}"', step)

    def _logger(self, node: ast.Call, name: str, kind: str) -> None:
        writer = name.endswith("SummaryWriter")
        folder = call_argument(node, 0, "log_dir" if writer else "save_dir", "logdir")
        literal = self._strings(folder) if folder is not None else None
        label = None if writer else self._strings(call_argument(node, 1, "name"))
        self.loggers.append(
            LoggerFound(
                kind=kind,
                call=name.rsplit(".", 1)[-1],
                folder=shown(folder) if folder is not None else "",
                folder_literal=literal[0] if literal and len(literal) == 1 else None,
                name=label[0] if label else "lightning_logs",
                where=self._where(node),
            )
        )

    def _printed(self, node: ast.Call, name: str) -> None:
        node = self.scope.texts.resolved(node)
        rendered = self.labels.blanked(node, self.scope.swept)  # the reason shows the code
        seen: set[str] = set()
        for line, step in rendered_lines(rendered, name, self._strings):
            point = parse_metrics(line)
            for metric, value in point.values.items() if point else ():
                if value == SAMPLE_VALUE and metric not in seen:  # a placeholder's number
                    seen.add(metric)
                    self._add(metric, "stdout", node, shown(node, 80), step)

    # -- names ----------------------------------------------------------------------------------

    def _add(
        self,
        name: str,
        kind: str,
        node: ast.AST,
        call: str,
        step: ast.AST | str | None,
        folders: tuple[str, ...] = (),
    ) -> None:
        where = self._where(node)
        direction, why = direction_by_name(name)
        self.found.append(
            MetricFound(
                name=name,
                kind=kind,
                direction=direction,
                reason=f"{where} {call}; {why}",
                where=where,
                conditions=tuple(self.scope.conditions),
                step_expr=step if isinstance(step, str) else shown(step) if step else "",
                folders=folders,
            )
        )

    def _where(self, node: ast.AST) -> str:
        return f"{self.path}:{getattr(node, 'lineno', 0)}"

    def _keys(self, node: ast.AST | None, nested: str) -> Pairs:
        return dict_keys(node, self._strings, self.scope.dicts, nested)

    def _strings(self, node: ast.AST | None) -> list[str] | None:
        """Every string the expression can be: a literal, a module constant, an f-string over
        loop variables that take literal values, a sum of those; None when unknown."""
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            if node.id in self.scope.loops:
                return self.scope.loops[node.id] or None
            constant = self.constants.get(node.id)
            return [constant] if constant is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._strings(node.left), self._strings(node.right)
            if left is None or right is None:
                return None
            return [a + b for a, b in itertools.product(left, right)]
        if isinstance(node, ast.JoinedStr):
            parts: list[list[str]] = []
            for value in node.values:
                part = self._strings(
                    value.value if isinstance(value, ast.FormattedValue) else value
                )
                if part is None:
                    return None
                parts.append(part)
            return ["".join(p) for p in itertools.product(*parts)]
        return None

    def _literal_strings(self, node: ast.AST | None) -> list[str] | None:
        if isinstance(node, ast.List | ast.Tuple | ast.Set) and node.elts:
            values = [self._strings(e) for e in node.elts]
            if all(v is not None and len(v) == 1 for v in values):
                return [v[0] for v in values if v]
        return None
