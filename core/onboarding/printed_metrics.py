"""The metrics a print or logging call prints, read from its format string without running it.

``rendered_lines`` renders the text of ``print(f"step {step} loss: {loss:.3f}")``,
``logger.info("Validation accuracy: %.2f", acc)``, ``"{} loss {}".format(…)`` or
``print("loss", loss)`` with a sample number for each placeholder (SAMPLE_STEP for one named like
a step or epoch), one line per value of a loop variable over literals. A line the function built
before the call (``msg = "… Test Loss {:.6f}".format(…)``, ``msg += f"…"``, then
``logger.info(msg)``) is rendered from what was built: ``BuiltTexts`` keeps it by name.
core/onboarding/metric_names.py
runs the lines through the parser of a run's stdout (core/machine/metric_lines.py), so the names it
proposes are the names a run's log is read back by.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable, Iterator

SAMPLE_VALUE = 0.375  # what a value placeholder renders as: not a number code would print as is
SAMPLE_STEP = 100  # what a placeholder named like a step renders as
SAMPLE_SETTING = 7  # what a setting's placeholder renders as: never SAMPLE_VALUE, never a step
# a placeholder named like a path, a name or a device holds text, not a number
_TEXT_LIKE = re.compile(r"(path|dir|file|filename|name|device|dtype|type|mode|url|split)$")
SHOWN = 200  # characters of source kept in a reason or a condition
MAX_LINES = 32  # renderings of one call (a text over two literal loops gives their product)
_STEP_LIKE = re.compile(r"(^|_)(global_step|steps?|epochs?|iters?|iterations?|it|batch_idx|i)$")
_PERCENT = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[diouxXeEfFgGcrsa%]")
_BRACES = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")

Resolver = Callable[[ast.AST | None], "list[str] | None"]  # the strings an expression can be
Piece = tuple[str, str]  # a text, and the source of the step placeholder it holds ("" if none)


class SettingValue(ast.Constant):
    """A placeholder that holds a setting, not a measure (core/onboarding/setting_labels.py):
    rendered as SAMPLE_SETTING, a number no metric is read from."""


def is_printer(name: str, last: str) -> bool:
    return (
        name in ("print", "tqdm.write", "sys.stdout.write")
        or name.endswith(".print")
        or ("." in name and last in ("info", "debug", "warning", "warn", "error", "log"))
    )


def rendered_lines(node: ast.Call, name: str, strings: Resolver) -> Iterator[Piece]:
    """The lines a print or logging call prints, each placeholder a sample number (a step-like
    one SAMPLE_STEP), with the source of the step placeholder; one line per value of a loop
    variable over literals that the text names."""
    args: list[ast.expr] = list(node.args)
    if name.endswith("log") and args and not _is_text(args[0]):
        args = args[1:]  # logger.log(level, message, …)
    if not args or not _is_text(args[0]):
        return
    if name == "print" or name.endswith(".print"):
        pieces = [_pieces(argument, strings) for argument in args]
    elif len(args) > 1 and isinstance(args[0], ast.Constant):  # logger.info("loss %.3f", x)
        pieces = [[_percent_text(str(args[0].value), args[1:])]]
    else:
        pieces = [_pieces(args[0], strings)]
    for choice in itertools.islice(itertools.product(*pieces), MAX_LINES):
        step = next((source for _text, source in choice if source), "")
        for line in " ".join(text for text, _source in choice).splitlines():
            yield line, step


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) or _is_text(node.right)  # "loss " + str(x), msg + f"…"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        node = node.left
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value if node.func.attr == "format" else node
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _pieces(node: ast.AST, strings: Resolver) -> list[Piece]:
    """The texts one printed argument renders as (several when it names a literal loop)."""
    if isinstance(node, ast.Constant):
        return [(str(node.value), "")]
    if isinstance(node, ast.JoinedStr):
        parts: list[list[Piece]] = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                known = strings(value.value)  # a loop variable over literal strings
                parts.append([(k, "") for k in known] if known else [_sample(value.value)])
            else:
                parts.append(_pieces(value, strings))
        return [
            ("".join(text for text, _ in choice), next((s for _, s in choice if s), ""))
            for choice in itertools.islice(itertools.product(*parts), MAX_LINES)
        ]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_text(node):
        halves = itertools.product(_pieces(node.left, strings), _pieces(node.right, strings))
        return [(a + b, sa or sb) for (a, sa), (b, sb) in itertools.islice(halves, MAX_LINES)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left):
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        return [_percent_text(str(getattr(node.left, "value", "")), args)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        template = node.func.value
        if node.func.attr == "format" and isinstance(template, ast.Constant):
            return [_format_text(str(template.value), node)]
    return [_sample(node)]


class BuiltTexts:
    """The lines one function builds before it prints them, by the name that holds each:
    ``msg = "… Test Loss {:.6f}".format(epoch, loss)`` (or an f-string, a ``%`` format, a sum of
    them, ``msg += …``), then ``logger.info(msg)``. Read in the function's order, the last
    assignment standing; a name given anything else is forgotten, so ``msg = compute()`` after a
    format is no line. Kept per function: a name in another function is another variable."""

    def __init__(self) -> None:
        self._held: dict[str, ast.expr] = {}

    def assigned(self, target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.expr) and _is_text(value):
                self._held[target.id] = value
            else:
                self._held.pop(target.id, None)

    def extended(self, node: ast.AugAssign) -> None:
        """``msg += f"…"``: the text so far and the new part, one line as Python joins them."""
        name = node.target.id if isinstance(node.target, ast.Name) else ""
        held = self._held.pop(name, None)  # msg *= 2, msg %= x: no longer a line known
        if held is not None and isinstance(node.op, ast.Add):
            self._held[name] = ast.BinOp(held, ast.Add(), node.value)

    def resolved(self, call: ast.Call) -> ast.Call:
        """The call with each argument that names a built line replaced by what built it."""
        args = [self._held.get(a.id, a) if isinstance(a, ast.Name) else a for a in call.args]
        if all(new is old for new, old in zip(args, call.args, strict=True)):
            return call
        return ast.copy_location(ast.Call(call.func, args, call.keywords), call)


def _sample(node: ast.AST | None) -> Piece:
    """A placeholder's sample text, and its source when it names the step."""
    if isinstance(node, SettingValue):
        return str(SAMPLE_SETTING), ""
    text = shown(node)
    last = re.split(r"[.\[(]", text.rstrip("])"))[-1] if text else ""
    if _STEP_LIKE.search(last.lower()):
        return str(SAMPLE_STEP), text
    if _TEXT_LIKE.search(last.lower()):
        return "text", ""  # nanoGPT's "(inside {meta_path})" names no metric "inside"
    return str(SAMPLE_VALUE), ""


def _percent_text(template: str, args: list[ast.expr]) -> Piece:
    """ "loss %.3f" % loss, logger.info("loss %.3f", loss): each %-field a sample."""
    samples = iter([_sample(argument) for argument in args])
    steps: list[str] = []

    def fill(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        text, source = next(samples, (str(SAMPLE_VALUE), ""))
        steps.append(source)
        return text

    return _PERCENT.sub(fill, template), next((s for s in steps if s), "")


def _format_text(template: str, call: ast.Call) -> Piece:
    """ "{} loss {:.3f}".format(step, loss): each field a sample."""
    named = {k.arg: k.value for k in call.keywords if k.arg}
    positions = iter(range(len(call.args)))
    steps: list[str] = []

    def fill(match: re.Match[str]) -> str:
        if match.group(1) is None:  # {{ or }}
            return match.group(0)[0]
        field_name = re.split(r"[!:.\[]", match.group(1))[0]
        index = int(field_name) if field_name.isdigit() else None
        if not field_name:
            index = next(positions, None)
        argument = call.args[index] if index is not None and index < len(call.args) else None
        text, source = _sample(named.get(field_name) if field_name and index is None else argument)
        steps.append(source)
        return text

    return _BRACES.sub(fill, template), next((s for s in steps if s), "")


def shown(node: ast.AST | None, width: int = SHOWN) -> str:
    try:
        text = ast.unparse(node) if node is not None else ""
    except (ValueError, AttributeError, RecursionError):
        return ""
    return text if len(text) <= width else text[: width - 1] + "…"
