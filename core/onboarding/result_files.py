"""The files earlier runs left with results in a repository: JSON files with numbers and a
result-like name, numeric CSV tables, final_info.json, TensorBoard event files and W&B summaries,
looked for among the repository's files and in the ignored folders (outputs/, wandb/) where runs
write, data folders left out.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from ..settings.templates import check_final_info
from ..source.files import SKIP_DIRS, read_text, walk_files
from ..workspace.run_folder import FINAL_INFO
from .repo_facts import ResultFile

_WALK_LIMIT = 50_000  # files looked at in ignored folders, where earlier runs' results lie


RESULT_WORDS = re.compile(
    r"metric|result|final_info|eval|score|summary|history|stats|report|trainer_state", re.I
)
_NOT_RESULTS = re.compile(
    r"(^|/)(package(-lock)?|composer|tsconfig.*|jsconfig|launch|settings|tokenizer.*|vocab.*"
    r"|manifest|.*config.*)\.json$|(^|/)(conf|configs?|node_modules)/",
    re.I,
)
DATA_PARTS = {"data", "dataset", "datasets", "raw", "inputs"}


_MAX_RESULTS = 200


def find_result_files(root: Path, files: list[str]) -> list[ResultFile]:
    # outputs/ and wandb/ are often git-ignored: walk them too, but not data folders (huge)
    candidates = dict.fromkeys([*files, *walk_files(root, _WALK_LIMIT, SKIP_DIRS | DATA_PARTS)])
    found = []
    for rel in candidates:
        source = _result_source(root, rel)
        try:
            info = (root / rel).stat() if source else None
        except OSError:
            continue
        if source and info:
            found.append(ResultFile(rel, source, info.st_size, round(info.st_mtime, 3)))
            if len(found) >= _MAX_RESULTS:
                break
    return found


def _result_source(root: Path, rel: str) -> str | None:
    name = PurePosixPath(rel).name
    if name.startswith("events.out.tfevents."):
        return "tensorboard" if (root / rel).is_file() else None
    if name == "wandb-summary.json":
        return "wandb" if read_text(root, rel) is not None else None
    if name.endswith(".json") and RESULT_WORDS.search(rel) and not _NOT_RESULTS.search(rel):
        try:
            data = json.loads(read_text(root, rel) or "null")
        except (ValueError, RecursionError):
            return None
        if name == FINAL_INFO and not check_final_info(data, rel):
            return "final_info"
        return "json" if _has_number(data) else None
    if name.endswith(".csv") and not DATA_PARTS & set(PurePosixPath(rel).parts[:-1]):
        return "csv" if _numeric_csv(read_text(root, rel)) else None
    return None


def _has_number(data: Any, depth: int = 0) -> bool:
    if isinstance(data, bool) or depth > 20:
        return False
    if isinstance(data, int | float):
        return True
    values = data.values() if isinstance(data, dict) else data if isinstance(data, list) else ()
    return any(_has_number(v, depth + 1) for v in list(values)[:1000])


def _numeric_csv(text: str | None) -> bool:
    """A header and at least one column whose cells (of the first 50 rows) are all numbers."""
    try:
        rows = [r for r in list(csv.reader(io.StringIO(text or "")))[:51] if r]
    except csv.Error:
        return False
    for column in range(len(rows[0]) if len(rows) > 1 else 0):
        cells = [r[column] for r in rows[1:] if column < len(r) and r[column].strip()]
        if cells and all(
            re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", c) for c in cells
        ):
            return True
    return False
