"""Settings changed by code: a planned run or a search's proposal that sets settings of the
experiment ("HIDDEN_UNITS to 64") is made by labtui itself, exactly and without a token.

The settings are those the experiment's files state (``[experiment] edit``: module-level
constants, argparse defaults, dataclass fields, keys of YAML, JSON and TOML files; read and
rewritten by core/source/setting_edit.py). Each change rewrites that one value and nothing else
of the file, and is committed as ``settings: n_features 64 → 512``. A name the code does not
have, or a value of the wrong type, is a SettingError naming the setting, the file and what the
code has. The 1.5B model spent 214 s and 277 s rewriting a whole file for such a two-line change
and dropped an import on the way; code makes it in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import CONFIG_NAME
from ..source.setting_edit import (
    Editable,
    SettingError,
    check_value,
    command_editables,
    config_editables,
    find_setting,
    python_editables,
    set_command_setting,
    set_config_setting,
    set_python_setting,
)

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
COMMAND = "command"  # Editable.where of a setting given on [experiment] command
COMMAND_KEY = "experiment.command"  # where labtui.toml holds the command


@dataclass(frozen=True)
class SettingChange:
    """One setting a run changed: where, from what, to what."""

    name: str
    where: str  # the file
    old: Any
    new: Any

    def text(self) -> str:
        """``n_features 64 → 512`` (a string quoted, as the code writes it)."""
        return f"{self.name} {_shown(self.old)} → {_shown(self.new)}"


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def project_settings(root: Path, files: list[str], command: str = "") -> list[Editable]:
    """The settings the run's ``command`` gives (``--lr 3e-4``, ``trainer.max_steps=500``: they
    override what the code says), then those the experiment's ``files`` state, file by file in
    their order; a name stated twice is offered once, from the first."""
    found: dict[str, Editable] = {s.name: s for s in command_editables(command)}
    for name in files:
        path = Path(root) / name
        if not path.is_file():
            continue
        for setting in file_settings(path.read_text(encoding="utf-8"), name):
            found.setdefault(setting.name, setting)
    return list(found.values())


def file_settings(text: str, name: str) -> list[Editable]:
    """The settings the text of experiment file ``name`` states ([] for a file of no kind)."""
    if name.endswith(".py"):
        return python_editables(text, name)
    if name.endswith(CONFIG_SUFFIXES):
        return config_editables(text, name)
    return []


def planned_changes(settings: list[Editable], wanted: dict[str, Any]) -> list[SettingChange]:
    """What setting ``wanted`` ({name: value}) changes, each value checked against its
    setting's type and choices (SettingError names the first that fails); a value the setting
    already has is no change."""
    changes = []
    for name, value in wanted.items():
        setting = find_setting(settings, name)
        new = check_value(setting, value)
        if not same_value(setting.value, new):
            changes.append(SettingChange(setting.name, setting.where, setting.value, new))
    return changes


def apply_settings(
    root: Path, files: list[str], wanted: dict[str, Any], command: str = ""
) -> list[SettingChange]:
    """Set ``wanted`` in the project's files (a setting of the ``command`` in labtui.toml's
    ``[experiment] command``): each value rewritten in place and nothing else. Nothing is
    written unless every setting is known and every value fits (SettingError)."""
    changes, texts = changed_texts(root, files, wanted, command)
    for where, text in texts.items():
        (Path(root) / where).write_text(text, encoding="utf-8")
    return changes


def changed_texts(
    root: Path, files: list[str], wanted: dict[str, Any], command: str = ""
) -> tuple[list[SettingChange], dict[str, str]]:
    """What setting ``wanted`` would change, and the files' texts with it ({file: new text}),
    nothing written: what ``apply_settings`` writes, and what a search compares with the code
    its earlier steps ran before it asks for a run."""
    settings = project_settings(root, files, command)
    changes = planned_changes(settings, wanted)
    texts: dict[str, str] = {}
    for change in changes:
        setting = find_setting(settings, change.name)
        if setting.where == COMMAND:
            command = set_command_setting(command, setting, change.new)
            continue
        path = Path(root) / setting.where
        text = texts.get(setting.where, path.read_text(encoding="utf-8"))
        # re-read the setting in the text as changed so far: its span moves with earlier edits
        current = find_setting(file_settings(text, setting.where), setting.name)
        edit = set_python_setting if setting.where.endswith(".py") else set_config_setting
        texts[setting.where] = edit(text, current, change.new)
    if any(change.where == COMMAND for change in changes):
        config = Path(root) / CONFIG_NAME
        text = config.read_text(encoding="utf-8")
        key = find_setting(config_editables(text, CONFIG_NAME), COMMAND_KEY)
        texts[CONFIG_NAME] = set_config_setting(text, key, command)
    return changes, texts


def read_command(root: Path, default: str) -> str:
    """``[experiment] command`` as labtui.toml now has it (``default`` when it states none)."""
    path = Path(root) / CONFIG_NAME
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        value = find_setting(config_editables(text, CONFIG_NAME), COMMAND_KEY).value
    except SettingError:
        return default
    return value if isinstance(value, str) else default


def written_files(changes: list[SettingChange]) -> list[str]:
    """The files the changes rewrote (labtui.toml for a setting of the command)."""
    return sorted({CONFIG_NAME if c.where == COMMAND else c.where for c in changes})


def commit_message(changes: list[SettingChange]) -> str:
    """``settings: n_features 64 → 512, lr 0.01 → 0.1``."""
    return "settings: " + ", ".join(change.text() for change in changes)


def same_value(current: Any, wanted: Any) -> bool:
    """Equal as values: 64 and 64.0 are one number; a tuple and a list of the same items are
    one sequence (JSON has no tuple)."""
    if isinstance(current, tuple | list) and isinstance(wanted, tuple | list):
        return len(current) == len(wanted) and all(
            same_value(a, b) for a, b in zip(current, wanted, strict=True)
        )
    if isinstance(current, bool) or isinstance(wanted, bool):
        return current is wanted
    if isinstance(current, int | float) and isinstance(wanted, int | float):
        return float(current) == float(wanted)
    return bool(current == wanted)


def settings_table(settings: list[Editable]) -> str:
    """The settings as a prompt lists them: one line each, name, type, value and choices."""
    lines = []
    for setting in settings:
        choices = f" (one of {', '.join(map(repr, setting.choices))})" if setting.choices else ""
        lines.append(
            f"- {setting.name}: {setting.type} = {setting.value!r}{choices} [{setting.where}]"
        )
    return "\n".join(lines) or "(none)"


__all__ = [
    "SettingChange",
    "SettingError",
    "apply_settings",
    "changed_texts",
    "commit_message",
    "planned_changes",
    "project_settings",
    "read_command",
    "same_value",
    "settings_table",
    "written_files",
]
