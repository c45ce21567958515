"""Prompt texts live in prompts/, one Markdown file per stage step; a project may override any
of them with a file of the same name in its own ``prompts/`` folder.

Placeholders use ``$name`` (string.Template) because prompts quote LaTeX, JSON and Python, whose
braces would fight str.format.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from ..errors import LabtuiError


def prompt_path(name: str, project_root: Path | None = None) -> Path:
    if project_root is not None:
        override = Path(project_root) / "prompts" / f"{name}.md"
        if override.is_file():
            return override
    return Path(str(resources.files("labtui.prompts"))) / f"{name}.md"


def load_prompt(name: str, project_root: Path | None = None, **values: Any) -> str:
    path = prompt_path(name, project_root)
    if not path.is_file():
        raise LabtuiError(f"prompt {name!r} not found at {path}", "reinstall labtui")
    try:
        return Template(path.read_text(encoding="utf-8")).substitute(
            {k: str(v) for k, v in values.items()}
        )
    except KeyError as exc:
        raise LabtuiError(
            f"{path}: placeholder ${exc.args[0]} has no value",
            "use only the placeholders of the built-in prompt of the same name",
        ) from None
    except ValueError as exc:
        raise LabtuiError(f"{path}: {exc}", "write a literal $ as $$") from None
