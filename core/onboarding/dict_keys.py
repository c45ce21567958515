"""The keys a dict expression in a script holds, read from its syntax (``{"loss": l}``,
``dict(acc=a)``, a dict variable, ``{**other}``): the names a metrics logger is given
(``wandb.log(metrics)``, ``mlflow.log_metrics``), as core/onboarding/metric_names.py reads them."""

from __future__ import annotations

import ast

from ..source.python import name_of
from .printed_metrics import Resolver

MAX_NAMES = 64  # names kept per file: a generated dict of a thousand keys is no proposal
Pairs = list[tuple[str, ast.AST]]


def dict_keys(
    node: ast.AST | None,
    strings: Resolver,
    variables: dict[str, Pairs],
    nested: str,
    prefix: str = "",
) -> Pairs:
    """The (key, value) pairs a dict expression holds (a literal, dict(...), a dict variable,
    {**other}); nested dicts joined by ``nested``, or left out when ``nested`` is ""."""
    pairs: Pairs = []
    if isinstance(node, ast.Name):
        pairs = list(variables.get(node.id, ()))
    elif isinstance(node, ast.Dict):
        for key_node, item in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**other, …}
                pairs += dict_keys(item, strings, variables, nested)
            else:
                pairs += [(k, item) for k in strings(key_node) or ()]
    elif isinstance(node, ast.Call) and name_of(node) == "dict":
        for argument in node.args:
            pairs += dict_keys(argument, strings, variables, nested)
        pairs += [(k.arg, k.value) for k in node.keywords if k.arg]
    out: Pairs = []
    for key, value in pairs:
        inner = isinstance(value, ast.Dict) or name_of(value) == "dict"
        if inner and nested:
            out += dict_keys(value, strings, variables, nested, f"{prefix}{key}{nested}")
        elif not inner:
            out.append((f"{prefix}{key}", value))
    return out[:MAX_NAMES]
