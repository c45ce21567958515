"""The researcher's editor: $VISUAL, else $EDITOR, else vi, on one file, in the terminal."""

from __future__ import annotations

import os
import shlex
import subprocess
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
