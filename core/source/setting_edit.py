"""Exact edits of an experiment's settings, made by code: a plan's "set HIDDEN_UNITS to 64"
rewrites the source span of that one value and leaves every other character as it was
(comments, layout, quotes, line endings), so the diff is the change and nothing else.

This module reads and edits a Python script's settings: its module-level constants (the last
assignment, the one in force), the defaults of its argparse options (by dest) and the defaults
of its dataclass and pydantic fields ("TrainConfig.lr"). config_settings and toml_settings do
the same for YAML, JSON and TOML files, command_settings for a command line; this module is
where all of it is imported from.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .argparse_options import argparse_calls
from .command_settings import command_editables, set_command_setting
from .config_settings import config_editables, set_config_setting
from .parse import parse_code
from .python import call_argument, is_call, name_of
from .setting_text import literal_text
from .setting_values import (
    Editable,
    Located,
    SettingError,
    SettingKind,
    SettingType,
    check_value,
    edit_located,
    find_setting,
    is_plain,
    is_scalar,
    setting_type,
)

__all__ = [
    "Editable",
    "SettingError",
    "SettingType",
    "check_value",
    "command_editables",
    "config_editables",
    "find_setting",
    "literal_text",
    "python_editables",
    "set_command_setting",
    "set_config_setting",
    "set_python_setting",
]


def python_editables(code: str, file: str) -> list[Editable]:
    """The settings ``code`` (the text of ``file``) spells as literals: its module-level
    constants, then its argparse defaults, then its dataclass fields. SettingError when the code
    does not parse."""
    return [located.setting for located in python_located(code, file)]


def set_python_setting(code: str, setting: Editable, value: Any) -> str:
    """``code`` with ``setting``'s value, and nothing else, replaced by ``value`` (checked
    against its type and choices); SettingError when it cannot be, or the result would not
    parse."""
    return edit_located(
        code,
        python_located(code, setting.where),
        setting,
        value,
        write=lambda new, like: literal_text(new, like, "python"),
        reread=lambda new_code: python_located(new_code, setting.where),
    )


def python_located(code: str, file: str) -> list[Located]:
    source = _Source.of(code, file)
    tree = source.tree()
    return [
        *_constants(tree, source),
        *_option_defaults(tree, source),
        *_fields(tree.body, source, ""),
    ]


# -- where a value stands in the text -------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """A script's text with where each of its lines starts, and its comments by line."""

    code: str
    file: str
    line_starts: tuple[int, ...]
    comments: dict[int, str]

    @staticmethod
    def of(code: str, file: str) -> _Source:
        # Python ends a line at \r\n, \r or \n (and \f or \u2028 end none)
        ends = (match.end() for match in re.finditer(r"\r\n|\r|\n", code))
        return _Source(code, file, (0, *ends), _comments(code))

    def tree(self) -> ast.Module:
        try:
            return parse_code(self.code, filename=self.file)
        except (SyntaxError, ValueError) as err:
            line = f" (line {err.lineno})" if isinstance(err, SyntaxError) and err.lineno else ""
            raise SettingError(
                f"{self.file} does not parse{line}: {err}; fix it before its settings are changed"
            ) from err

    def offset(self, line: int, column: int) -> int:
        """Where ast's (line, column) is in the text: ast counts columns in UTF-8 bytes."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.code)
        prefix = self.code[start:end].encode("utf-8")[:column]
        return start + len(prefix.decode("utf-8"))

    def located(
        self, name: str, kind: SettingKind, node: ast.expr, declared: str, given: Any = None
    ) -> Located | None:
        """The setting whose value ``node`` spells; None when it spells no plain literal
        (``float("inf")``, ``compute()``). ``declared`` is the type the code declares (an
        annotation, argparse's type=), ``given`` argparse's choices=."""
        value = _literal(node)
        if value is _NO_VALUE:
            return None
        start = self.offset(node.lineno, node.col_offset)
        end = self.offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
        choices = _choices(given, value, self.comments.get(node.end_lineno or node.lineno, ""))
        kind_of = _refined(setting_type(value), declared)
        setting = Editable(name, value, kind_of, self.file, kind, choices, node.lineno)
        return Located(setting, start, end, self.code[start:end])


def _comments(code: str) -> dict[int, str]:
    lines = io.StringIO(code, newline=None).readline  # universal newlines: ast's line numbers
    try:
        tokens = list(tokenize.generate_tokens(lines))
    except (tokenize.TokenError, SyntaxError):
        return {}
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


# -- values ---------------------------------------------------------------------------------

_NO_VALUE: Any = object()  # no literal (None is a value a setting may hold)
_DECLARED = frozenset({"int", "float", "str", "bool"})
_QUOTED = r"""(?:"[^"\n]*"|'[^'\n]*')"""
# "tanh" or "relu" | 'a', 'b' or 'c' | "x" | "y"
_ALTERNATIVES = re.compile(rf"{_QUOTED}(?:\s*(?:,\s*or|,|or|\|)\s*{_QUOTED})+")


def _literal(node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE
    return value if is_plain(value) else _NO_VALUE  # 1e999 is infinity: no literal replaces it


def _refined(found: SettingType, declared: str) -> SettingType:
    """The type the code declares where the literal says less: ``lr: float = 1`` is a float,
    ``default=None, type=int`` an int."""
    if declared not in _DECLARED or (found != "none" and (found, declared) != ("int", "float")):
        return found
    return declared  # type: ignore[return-value]


def _choices(given: Any, value: Any, comment: str) -> tuple[Any, ...]:
    """argparse's choices=, else the quoted alternatives the value's comment names when the
    value is one of them (``ACTIVATION = "tanh"  # "tanh" or "relu"``)."""
    if isinstance(given, list | tuple) and all(is_scalar(choice) for choice in given):
        return tuple(given)
    stated = _ALTERNATIVES.search(comment)
    words = tuple(q[1:-1] for q in re.findall(_QUOTED, stated.group())) if stated else ()
    return words if isinstance(value, str) and value in words else ()


def _declared_type(annotation: ast.expr | None) -> str:
    """ "float" of ``float``, ``float | None`` and ``Optional[float]``; "" for anything else."""
    if isinstance(annotation, ast.BinOp):
        return _declared_type(annotation.left)
    if isinstance(annotation, ast.Subscript) and name_of(annotation.value).endswith("Optional"):
        return _declared_type(annotation.slice)
    return annotation.id if isinstance(annotation, ast.Name) else ""


# -- constants ------------------------------------------------------------------------------


def _constants(tree: ast.Module, source: _Source) -> list[Located]:
    """A name keeps the place of its first assignment and the value of its last, the one in
    force; a last assignment that is no literal (``n = compute()``, ``n += 1``) leaves nothing
    to edit."""
    found: dict[str, Located | None] = {}
    for statement in tree.body:
        for name, value, declared in _bindings(statement):
            if not (name.startswith("__") and name.endswith("__")):  # __version__, __all__
                found[name] = (
                    source.located(name, "constant", value, declared) if value is not None else None
                )
    return [located for located in found.values() if located is not None]


def _bindings(statement: ast.stmt) -> Iterator[tuple[str, ast.expr | None, str]]:
    """(name, value, declared type) for each name a top-level statement binds; the value is
    None where the name gets no value of its own (``a, b = pair``, ``n += 1``) or shares it
    (``a = b = 0``: one edit would set both)."""
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        if isinstance(statement.target, ast.Name):
            yield statement.target.id, statement.value, _declared_type(statement.annotation)
        return
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        yield statement.target.id, None, ""
    if not isinstance(statement, ast.Assign):
        return
    alone = len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
    for target in statement.targets:
        for name in _names(target):
            yield name, statement.value if alone else None, ""


def _names(target: ast.expr) -> list[str]:
    """The names an assignment's target binds: ``a``, ``a, *rest``; none for ``obj.attr`` or
    ``table[key]``, which read their names and set no name of the module's."""
    return [
        n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    ]


# -- argparse defaults ----------------------------------------------------------------------


def _option_defaults(tree: ast.Module, source: _Source) -> Iterator[Located]:
    """Each option whose add_argument call spells ``default=`` as a literal, named by its dest;
    an option without one is set on the command only."""
    for call, option in argparse_calls(list(ast.walk(tree))):
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if "default" not in keywords:
            continue
        declared = "bool" if option.action in ("store_true", "store_false") else option.type
        choices = _literal(keywords["choices"]) if "choices" in keywords else None
        located = source.located(option.dest, "option", keywords["default"], declared, choices)
        if located is not None:
            yield located


# -- dataclass and pydantic fields ----------------------------------------------------------


def _fields(body: list[ast.stmt], source: _Source, prefix: str) -> Iterator[Located]:
    """The fields of each @dataclass (or pydantic model) with a literal default, as
    "Class.field": ``lr: float = 3e-4``, ``field(default=3e-4)``, ``Field(3e-4, gt=0)``."""
    for node in body:
        if not isinstance(node, ast.ClassDef):
            continue
        name = f"{prefix}{node.name}"
        if _holds_settings(node):
            for statement in node.body:
                located = _field(statement, source, name)
                if located is not None:
                    yield located
        yield from _fields(node.body, source, f"{name}.")


def _holds_settings(node: ast.ClassDef) -> bool:
    decorators = {name_of(d).split(".")[-1] for d in node.decorator_list}
    bases = {name_of(b).split(".")[-1] for b in node.bases}
    return "dataclass" in decorators or bool(bases & {"BaseModel", "BaseSettings"})


def _field(statement: ast.stmt, source: _Source, owner: str) -> Located | None:
    if not (
        isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.value is not None
        and "ClassVar" not in ast.unparse(statement.annotation)
    ):
        return None
    default: ast.AST | None = statement.value
    if is_call(statement.value, "field"):
        default = call_argument(statement.value, 99, "default")  # keywords only
    elif is_call(statement.value, "Field"):
        default = call_argument(statement.value, 0, "default")
    if not isinstance(default, ast.expr):
        return None  # default_factory=…: no literal
    name = f"{owner}.{statement.target.id}"
    return source.located(name, "field", default, _declared_type(statement.annotation))
