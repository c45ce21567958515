"""Walks a record and its JSON schema side by side: every rule a validator checks must be stated
by the schema a constrained server decodes with, or listed as one no schema can state.

Each validator of labtui's records carries a ``SchemaRule`` (``core.answers.checks.states``): the
keywords that state it at its field, and what it checks beyond them, with why. The walk finds
every validator — a field type's ``BeforeValidator``/``AfterValidator`` at any depth (list
items, dict values, optional values, nested models, union variants), every ``field_validator``
and ``model_validator`` — and reports one without a rule, a keyword the field's schema lacks, an
unstated rule without its reason, and a record's ``variants`` its schema does not carry.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from labtui.core.answers.checks import schema_rule
from labtui.core.answers.variants import Filled, Is, Variants

Node = dict[str, Any]
_VALIDATOR_KINDS = ("BeforeValidator", "AfterValidator", "PlainValidator", "WrapValidator")


@dataclass
class Walk:
    """What a walk found: ``problems`` (none when every rule is stated) and ``rules`` checked,
    so a test can see that it did not pass by finding nothing."""

    root: Node
    problems: list[str] = field(default_factory=list)
    rules: int = 0
    seen: set[tuple[type, int]] = field(default_factory=set)

    def resolve(self, node: Node) -> Node:
        while "$ref" in node:
            node = self.root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        return node


def unstated_rules(model: type[BaseModel]) -> Walk:
    """Walk ``model`` against ``model.model_json_schema(by_alias=True)``."""
    schema = model.model_json_schema(by_alias=True)
    walk = Walk(schema)
    _model(walk, model, schema, model.__name__)
    return walk


def _model(walk: Walk, model: type[BaseModel], node: Node, where: str) -> None:
    node = walk.resolve(node)
    if (model, id(node)) in walk.seen:
        return
    walk.seen.add((model, id(node)))
    decorators = model.__pydantic_decorators__
    for name, decorator in decorators.model_validators.items():
        _model_rule(walk, model, node, decorator.func, f"{where}.{name}")
    for name, decorator in decorators.field_validators.items():
        for field_name in decorator.info.fields:
            places = _properties(walk, model, node, field_name)
            _rule(walk, decorator.func, places, f"{where}.{field_name} ({name})")
    for name, info in model.model_fields.items():
        places = _properties(walk, model, node, name)
        _type(walk, info.annotation, list(info.metadata), places, f"{where}.{name}")


def _properties(walk: Walk, model: type[BaseModel], node: Node, name: str) -> list[Node]:
    """Every schema node of field ``name``: its property, in each variant that has it."""
    if name == "root" and "root" in model.model_fields and "properties" not in node:
        return [node]  # a RootModel: the record's schema is the field's
    info = model.model_fields[name]
    key = info.alias or name
    objects = [node, *(walk.resolve(b) for b in node.get("anyOf", []))]
    return [o["properties"][key] for o in objects if key in o.get("properties", {})]


def _type(walk: Walk, tp: Any, metadata: list[Any], nodes: list[Node], where: str) -> None:
    for meta in metadata:
        if type(meta).__name__ in _VALIDATOR_KINDS:
            _rule(walk, meta.func, nodes, where)
        elif get_origin(meta) is Annotated:
            walk.problems.append(
                f"{where}: {meta} is a type among the field's metadata, which pydantic ignores: "
                "its validators never run and its schema is lost; put its metadata in the "
                "field's Annotated[...] itself"
            )
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        _type(walk, args[0], list(args[1:]), nodes, where)
    elif origin in (Union, types.UnionType):
        for node in nodes:
            branches = node.get("anyOf") or node.get("oneOf")
            if branches is None:  # a union pydantic said as one schema
                branches = [node] * len(args)
            real = [a for a in args if a is not type(None)]
            if len(branches) == len(real):
                args_with_schema = list(zip(real, branches, strict=True))
            else:
                args_with_schema = list(zip(args, branches, strict=True))
            for arg, branch in args_with_schema:
                _type(walk, arg, [], [walk.resolve(branch)], where)
    elif origin in (list, tuple, set, frozenset):
        items = [walk.resolve(n["items"]) for n in nodes if "items" in n]
        if args:
            _type(walk, args[0], [], items, f"{where}[]")
    elif origin is dict:
        values = [
            walk.resolve(n["additionalProperties"])
            for n in nodes
            if isinstance(n.get("additionalProperties"), dict)
        ]
        _type(walk, args[1], [], values, f"{where}{{}}")
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        for node in nodes:
            _model(walk, tp, node, tp.__name__)
    elif origin is Literal or tp in (str, int, float, bool, Any, type(None), typing.Any):
        return  # pydantic states a Literal's enum and a plain type itself


def _rule(walk: Walk, check: Any, nodes: list[Node], where: str) -> None:
    walk.rules += 1
    rule = schema_rule(check)
    name = getattr(check, "__qualname__", repr(check))
    if rule is None:
        walk.problems.append(
            f"{where}: validator {name} does not say how the schema states its rule: mark it "
            "with core.answers.checks.states(<keywords>, unstated=(<rule: why not>,))"
        )
        return
    if not rule.keywords and not rule.unstated:
        walk.problems.append(f"{where}: validator {name} states nothing and lists nothing")
    for reason in rule.unstated:
        if ": " not in reason:
            walk.problems.append(f"{where}: {name}'s unstated rule {reason!r} has no why")
    if not nodes:
        walk.problems.append(f"{where}: validator {name} has no field in the schema")
    for node in nodes:
        for keyword in rule.keywords:
            if not _says(walk, node, keyword):
                walk.problems.append(
                    f"{where}: validator {name} checks what {keyword!r} would state, but the "
                    f"schema there is {node}"
                )


def _says(walk: Walk, node: Node, keyword: str) -> bool:
    node = walk.resolve(node)
    if keyword in node:
        return True
    branches = node.get("anyOf") or node.get("oneOf") or []
    return bool(branches) and any(_says(walk, b, keyword) for b in branches)


def _model_rule(walk: Walk, model: type[BaseModel], node: Node, check: Any, where: str) -> None:
    """A validator of the whole record: its keywords at the record's schema; "anyOf" means the
    record's variants, each checked for its narrowed choice and its needs."""
    rule = schema_rule(check)
    variants = getattr(model, "variants", None)
    if rule is not None and "anyOf" in rule.keywords and not isinstance(variants, Variants):
        return  # the variants' check on a record that has none: it checks nothing
    _rule(walk, check, [node], where)
    if rule is not None and isinstance(variants, Variants):
        _variants(walk, model, node, variants, where)


def _variants(walk: Walk, model: type[BaseModel], node: Node, variants: Variants, where: str):
    branches = [walk.resolve(b) for b in node.get("anyOf", [])]
    if len(branches) != len(variants.variants):
        walk.problems.append(
            f"{where}: {len(variants.variants)} variants but {len(branches)} in the schema"
        )
        return
    for variant, branch in zip(variants.variants, branches, strict=True):
        props, required = branch.get("properties", {}), branch.get("required", [])

        def key(name: str) -> str:
            return model.model_fields[name].alias or name

        for condition in variant.when:
            prop = props.get(key(condition.field), {})
            wanted = (
                {"enum": [condition.value]}
                if isinstance(condition, Is)
                else {"minItems": 1}
                if isinstance(condition, Filled) and condition.filled
                else {"maxItems": 0}
            )
            if any(prop.get(k) != v for k, v in wanted.items()):
                walk.problems.append(f"{where}: variant {condition} is not {wanted} in {branch}")
        for need in variant.needs:
            prop = props.get(key(need.field), {})
            if key(need.field) not in required:
                walk.problems.append(f"{where}: {variant.when} does not require {need.field!r}")
            if need.about and prop.get("minLength") != need.min_length:
                walk.problems.append(
                    f"{where}: {need.field!r} needs minLength {need.min_length}, has {prop}"
                )
        allowed = {n.field for n in variant.needs} | set(variant.may)
        for name in variants.own - allowed:
            if key(name) in props:
                walk.problems.append(f"{where}: a variant of {variant.when} allows {name!r}")
