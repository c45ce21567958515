"""The settings a config file sets, read and edited exactly: the leaves of a YAML (a Hydra
config), JSON or TOML file by their dotted key path (``trainer.max_steps``), each a literal
whose span in the text is known, so an edit replaces that value and keeps the comments, the
quotes and the layout around it.

A leaf is a scalar or a list of scalars written in one piece (a YAML flow sequence ``[64, 64]``,
a JSON or TOML array). YAML's block lists, anchors and aliases, tags, block scalars, Hydra's
``${...}`` interpolations and ``???`` (a value still missing) are left to the researcher. TOML is
read in toml_settings; the edit itself is setting_values' ``edit_located``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from .setting_text import Syntax, literal_text
from .setting_values import (
    Editable,
    Located,
    SettingError,
    config_leaf,
    edit_located,
    is_leaf,
)
from .toml_settings import toml_located

if TYPE_CHECKING:
    import yaml


def config_editables(text: str, file: str) -> list[Editable]:
    """The leaves of a YAML, JSON or TOML file (by ``file``'s suffix) with literal values, by
    dotted key path; SettingError for a file of another kind or one that does not read."""
    return [located.setting for located in config_located(text, file)]


def set_config_setting(text: str, setting: Editable, value: Any) -> str:
    """``text`` (of ``setting.where``) with that one value replaced by ``value``, written in
    the file's syntax and the old value's style."""
    syntax, read = _reader(setting.where)
    return edit_located(
        text,
        read(text, setting.where),
        setting,
        value,
        write=lambda new, like: literal_text(new, like, syntax),
        reread=lambda new_text: read(new_text, setting.where),
    )


def config_located(text: str, file: str) -> list[Located]:
    _, read = _reader(file)
    return read(text, file)


def _reader(file: str) -> tuple[Syntax, Callable[[str, str], list[Located]]]:
    suffix = PurePath(file).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml", _yaml_located
    if suffix == ".json":
        return "json", _json_located
    if suffix == ".toml":
        return "toml", toml_located
    raise SettingError(
        f"{file} is not a YAML, JSON or TOML file: labtui edits the settings of those, of Python "
        "scripts and of the command; change it by hand"
    )


# -- YAML -----------------------------------------------------------------------------------

_STR_TAG = "tag:yaml.org,2002:str"
# a float as YAML 1.2 and OmegaConf read it: PyYAML (YAML 1.1) takes 1e-3 for a string
_FLOAT = re.compile(r"[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][-+]?\d+")


def _yaml_located(text: str, file: str) -> list[Located]:
    import yaml  # noqa: PLC0415 -- PyYAML is read only when a config file is edited: start-up

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SettingError(f"{file} does not read as YAML{where}: {problem}; fix it first") from err
    shared = _shared(root)
    found: dict[str, Located] = {}  # a key given twice: the last is in force
    for path, node in _yaml_leaves(root, ()):
        value = _yaml_value(node, text) if id(node) not in shared else None
        if value is not None and is_leaf(value):
            found[".".join(path)] = config_leaf(
                file, path, value, text, (node.start_mark.index, node.end_mark.index)
            )
    return list(found.values())


def _yaml_leaves(
    node: yaml.Node | None, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], yaml.Node]]:
    import yaml  # noqa: PLC0415 -- see _yaml_located

    if not isinstance(node, yaml.MappingNode):
        return
    for key, value in node.value:
        if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR_TAG) or key.value == "<<":
            continue  # a merge key, or a key that is no name
        if isinstance(value, yaml.MappingNode):
            yield from _yaml_leaves(value, (*path, key.value))
        else:
            yield (*path, key.value), value


def _yaml_value(node: yaml.Node, text: str) -> Any:
    """The literal a scalar or a flow sequence of scalars spells in place; None for anything
    else: a block list, an anchor, a tag, a block scalar, an empty value, ``${...}``."""
    import yaml  # noqa: PLC0415 -- see _yaml_located

    start, end = node.start_mark.index, node.end_mark.index
    if start == end or text[start] in "&!*":
        return None
    if isinstance(node, yaml.SequenceNode) and node.flow_style:
        items = [_yaml_scalar(item) for item in node.value]
        return None if None in items else items
    return _yaml_scalar(node)


def _yaml_scalar(node: yaml.Node) -> Any:
    import yaml  # noqa: PLC0415 -- see _yaml_located

    if not isinstance(node, yaml.ScalarNode) or node.style not in (None, "'", '"'):
        return None
    value = yaml.constructor.SafeConstructor().construct_object(node)
    if not isinstance(value, str):
        return value
    if node.tag == _STR_TAG and node.style is None and _FLOAT.fullmatch(value):
        return float(value.replace("_", ""))
    return None if "${" in value or value == "???" else value


def _shared(root: yaml.Node | None) -> set[int]:
    """The nodes an alias repeats: an edit in one place would change another."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            shared.add(id(node))
            continue
        seen.add(id(node))
        if isinstance(node.value, list):
            for item in node.value:
                stack.extend(item if isinstance(item, tuple) else [item])
    return shared


# -- JSON -----------------------------------------------------------------------------------

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_JsonLeaf = tuple[tuple[str, ...], Any, tuple[int, int]]  # key path, value, span


def _json_located(text: str, file: str) -> list[Located]:
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        raise SettingError(f"{file} does not read as JSON ({err}); fix it first") from err
    leaves: list[_JsonLeaf] = []
    _json_walk(text, _skip(text, 0), (), leaves)
    # a key given twice: the last is in force, as json.loads reads it
    found = {
        ".".join(path): config_leaf(file, path, value, text, span) for path, value, span in leaves
    }
    return list(found.values())


def _json_walk(text: str, pos: int, path: tuple[str, ...], leaves: list[_JsonLeaf]) -> int:
    """Reads the value at ``pos`` (an object key by key, anything else whole), adds each leaf
    with its span to ``leaves``, and returns where the value ends."""
    if text[pos] != "{":
        value, end = _DECODER.raw_decode(text, pos)
        if path and is_leaf(value):
            leaves.append((path, value, (pos, end)))
        return end
    pos = _skip(text, pos + 1)
    while text[pos] != "}":
        key, pos = _DECODER.raw_decode(text, pos)  # a key is a JSON string
        pos = _json_walk(text, _skip(text, _skip(text, pos) + 1), (*path, key), leaves)
        pos = _skip(text, pos)
        pos = _skip(text, pos + 1) if text[pos] == "," else pos
    return pos + 1


def _skip(text: str, pos: int) -> int:
    """Past the white space at ``pos``."""
    space = _SPACE.match(text, pos)
    return space.end() if space else pos
