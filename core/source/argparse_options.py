"""The options a script declares to argparse, read from its ``add_argument`` calls: on the
parser, its argument groups and its subparsers alike.

It lives here, at the bottom, because three layers read it: ``labtui init``'s survey of a
repository (core/onboarding/), the settings a run's script sets (script_settings, for the
paper's Experimental Setup and for tracing its numbers), and what a run changed against the
baseline (core/runs/run_changes.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .python import is_call, literal, literal_text, type_name


@dataclass(frozen=True)
class Option:
    """A command-line option a script declares, or a key of its Hydra config."""

    flags: tuple[str, ...]
    dest: str
    default: Any = None
    type: str = ""
    help: str = ""
    required: bool = False
    action: str = ""
    subcommand: str = ""  # the argparse subparser or click/typer command it belongs to


def option_dest(flags: tuple[str, ...]) -> str:
    """The name argparse gives an option's value: its first long flag (else its first flag)
    without dashes, inner dashes as underscores (``--n-features`` -> ``n_features``)."""
    longs = [f for f in flags if f.startswith("--")] or list(flags)
    return longs[0].lstrip("-").replace("-", "_") if longs else ""


def argparse_options(nodes: list[ast.AST]) -> list[Option]:
    """Every add_argument call among ``nodes`` (a module's nodes, all of them), in source
    order: on the parser, its argument groups and subparsers alike."""
    return [option for _, option in argparse_calls(nodes)]


def argparse_calls(nodes: list[ast.AST]) -> list[tuple[ast.Call, Option]]:
    """Each add_argument call with the option it declares: the call for where it stands and
    what its keywords spell, which an ``Option`` (JSON values, no line) does not keep."""
    calls = [
        n
        for n in nodes
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_argument"
    ]
    subparsers = _subparsers(nodes)
    found = []
    for call in sorted(calls, key=lambda n: (n.lineno, n.col_offset)):
        flags = tuple(v for v in map(literal, call.args) if isinstance(v, str))
        if flags:
            found.append((call, _option(call, flags, subparsers)))
    return found


def _subparsers(nodes: list[ast.AST]) -> dict[str, str]:
    """{variable: subcommand} of ``fit = sub.add_parser("fit")``."""
    return {
        target.id: literal_text(n.value.args[0])
        for n in nodes
        if isinstance(n, ast.Assign) and is_call(n.value, "add_parser") and n.value.args
        for target in n.targets
        if isinstance(target, ast.Name)
    }


def _option(call: ast.Call, flags: tuple[str, ...], subparsers: dict[str, str]) -> Option:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    action = literal_text(kw.get("action"))
    switch = action in ("store_true", "store_false")
    default = literal(kw.get("default"))
    if "default" not in kw and switch:
        default = action == "store_false"
    positional = not flags[0].startswith("-")
    required = bool(literal(kw.get("required"))) or (positional and "nargs" not in kw)
    kind = "bool" if switch else type_name(kw.get("type"))
    dest = literal_text(kw.get("dest")) or option_dest(flags)
    owner = call.func.value if isinstance(call.func, ast.Attribute) else None
    sub = subparsers.get(owner.id, "") if isinstance(owner, ast.Name) else ""
    help_text = literal_text(kw.get("help"))
    return Option(flags, dest, default, kind, help_text, required, action, sub)
