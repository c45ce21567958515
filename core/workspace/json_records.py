"""Small JSON records on disk that several processes read while one writes: written whole or not
at all, read as "not known" when missing, half-written by another process or broken by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object written by ``write_json``; None when there is none to read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` whole or not at all (a reader never sees half a file); OSError when
    the folder cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
