"""The researcher's editor: $VISUAL, else $EDITOR, else vi, on one file, in the terminal."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path


def open_in_editor(path: Path) -> str:
    """Edit ``path`` and wait; an error message for the researcher, or "" when it went well."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        completed = subprocess.run([*shlex.split(editor), str(path)], check=False)
    except OSError as error:
        return f"could not start the editor {editor!r} ({error}); set $EDITOR"
    if completed.returncode != 0:
        return f"{editor} exited with status {completed.returncode}; nothing was kept"
    return ""


def edit_product(root: Path | None, product: str, edit_file: Callable[[Path], str]) -> str:
    """Edit a checkpoint's product (a project-relative file) with ``edit_file``; an error
    message for the researcher, or "" when it went well. Both front ends answer `e` with it."""
    if root is None or not (Path(root) / product).is_file():
        return f"{product} does not exist in the project"
    return edit_file((Path(root) / product).resolve())
