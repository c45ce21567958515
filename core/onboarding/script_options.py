"""The options a script declares, read from its code: argparse's add_argument calls
(core/source/argparse_options.py, which the settings of a run's script read too), click's and
typer's decorated commands, and the keys of a Hydra script's YAML config. The numbers it sets at
its top level (``max_iters = 5000``) are core/source/script_settings.py's ``module_constants``.

``OPTION_READERS`` holds the reader for each kind of script; a Hydra script's config is found by
``hydra_config`` and read by ``hydra_options``. core/onboarding/python_survey.py tells a script's kind and
calls them.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from ..source.argparse_options import Option, argparse_options, option_dest
from ..source.files import normal_path, read_text
from ..source.python import (
    PythonModule,
    decorators_of,
    is_call,
    jsonable,
    literal,
    literal_text,
    name_of,
    type_name,
)
from .repo_facts import HydraConfig


def _command_name(node: ast.AST, group_only: bool) -> str:
    """The subcommand a function is (@cli.command() or @app.command("fit")), "" for none."""
    for deco in decorators_of(node):
        name = name_of(deco)
        if name.endswith(".command") and not (group_only and name == "click.command"):
            given = literal_text(deco.args[0]) if isinstance(deco, ast.Call) and deco.args else ""
            return given or getattr(node, "name", "").replace("_", "-")
    return ""


def _click_options(nodes: list[ast.AST]) -> list[Option]:
    options = []
    for node in nodes:
        sub = _command_name(node, group_only=True)
        for deco in decorators_of(node):  # top-down, the order of click's --help
            name = name_of(deco).split(".")[-1]
            if not isinstance(deco, ast.Call) or name not in ("option", "argument"):
                continue
            decls = [v for v in map(literal, deco.args) if isinstance(v, str)]
            names = [d for d in decls if not d.startswith("-")]
            flags = tuple(p for d in decls if d.startswith("-") for p in d.split("/") if p)
            if name == "argument":
                flags = tuple(names[:1])
            kw = {k.arg: k.value for k in deco.keywords if k.arg}
            switch = bool(literal(kw.get("is_flag"))) or any("/" in d for d in decls)
            default = literal(kw.get("default")) if "default" in kw else (False if switch else None)
            required = bool(literal(kw.get("required"))) or (
                name == "argument" and "default" not in kw
            )
            dest = (names[0] if names else option_dest(flags)).replace("-", "_")
            kind = "bool" if switch else type_name(kw.get("type"))
            action = "store_true" if switch else ""
            help_text = literal_text(kw.get("help"))
            options.append(Option(flags, dest, default, kind, help_text, required, action, sub))
    return options


def _typer_options(nodes: list[ast.AST]) -> list[Option]:
    """The parameters of typer's commands: each function decorated @app.command() or given to
    typer.run(), its parameters becoming --dashed-names unless Option() names flags."""
    run = {name_of(n.args[0]) for n in nodes if is_call(n, "run") and n.args}
    commands = [n for n in nodes if _command_name(n, group_only=False)]
    options = []
    for node in nodes:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        callback = any(name_of(d).endswith(".callback") for d in decorators_of(node))
        if node in commands or callback or node.name in run:
            # an app of one command runs it without naming it
            sub = _command_name(node, group_only=False) if len(commands) > 1 else ""
            options += [replace(o, subcommand=sub) for o in _typer_parameters(node)]
    return options


def _typer_parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Option]:
    a = func.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    missing = len(a.posonlyargs) + len(a.args) - len(a.defaults)
    defaults: list[ast.expr | None] = [*([None] * missing), *a.defaults, *a.kw_defaults]
    options = []
    for param, default in zip(params, defaults, strict=False):
        annotation, info = param.annotation, default
        if isinstance(annotation, ast.Subscript) and name_of(annotation.value).endswith(
            "Annotated"
        ):
            parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
            info = next((p for p in parts[1:] if is_call(p, "Option", "Argument")), default)
            annotation = parts[0] if parts else annotation
        call = info if isinstance(info, ast.Call) and is_call(info, "Option", "Argument") else None
        decls = [v for v in map(literal, call.args) if isinstance(v, str)] if call else []
        flags = tuple(d for d in decls if d.startswith("-"))
        value = literal(default) if call is not default else _typer_default(call)
        kind = type_name(annotation)
        dashed = param.arg.replace("_", "-")
        if (call is not None and is_call(call, "Argument")) or (call is None and default is None):
            flags = (param.arg,)
        elif not flags:
            flags = (f"--{dashed}", f"--no-{dashed}") if kind == "bool" else (f"--{dashed}",)
        help_node = (
            next((k.value for k in call.keywords if k.arg == "help"), None) if call else None
        )
        required = flags == (param.arg,) and value is None
        action = "store_true" if kind == "bool" else ""
        options.append(
            Option(flags, param.arg, value, kind, literal_text(help_node), required, action)
        )
    return [o for o in options if o.dest not in ("self", "ctx")]


def _typer_default(call: ast.Call | None) -> Any:
    """typer.Option(default, *flags): a first argument that is no flag is the default."""
    first = call.args[0] if call is not None and call.args else None
    return None if first is None or literal_text(first).startswith("-") else literal(first)


# -- Hydra ----------------------------------------------------------------------------------


def hydra_config(root: Path, module: PythonModule) -> HydraConfig | None:
    for node in module.nodes:
        for deco in decorators_of(node):
            if isinstance(deco, ast.Call) and name_of(deco) in ("hydra.main", "main"):
                kw = {k.arg: literal(k.value) for k in deco.keywords if k.arg}
                args = [literal(a) for a in deco.args] + [None, None]
                path, name = kw.get("config_path", args[0]), kw.get("config_name", args[1])
                return _hydra_facts(root, module.path, path, name)
    return None


def _hydra_facts(root: Path, script: str, config_path: Any, config_name: Any) -> HydraConfig:
    """The config Hydra loads: config_path is relative to the script's folder."""
    path = config_path if isinstance(config_path, str) else ""
    name = config_name if isinstance(config_name, str) else ""
    folder = normal_path(PurePosixPath(script).parent / path)
    for candidate in (name, f"{name}.yaml", f"{name}.yml") if name else ():
        rel = f"{folder}/{candidate}" if folder else candidate
        data = _yaml(root, rel)
        if isinstance(data, dict):
            return HydraConfig(path, name, rel, tuple(_config_keys(data)))
    return HydraConfig(path, name)


def _yaml(root: Path, rel: str) -> Any:
    text = read_text(root, rel)
    try:
        return yaml.safe_load(text) if text is not None else None
    except yaml.YAMLError:
        return None


def _config_keys(data: dict[Any, Any]) -> list[str]:
    """Top-level keys and those one level down ("defaults", Hydra's own list, left out)."""
    keys = []
    for key, value in data.items():
        if key != "defaults":
            keys.append(str(key))
            keys += [f"{key}.{k}" for k in value] if isinstance(value, dict) else []
    return keys


def hydra_options(root: Path, hydra: HydraConfig) -> list[Option]:
    data = _yaml(root, hydra.config_file) if hydra.config_file else None
    options = []
    for key in hydra.keys:
        value: Any = data
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, dict | list):
            kind = type(value).__name__ if value is not None else ""
            options.append(Option((key,), key, jsonable(value), kind))
    return options


OPTION_READERS = {"argparse": argparse_options, "click": _click_options, "typer": _typer_options}
