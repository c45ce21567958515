"""Results the researcher had before labtui, imported as evidence (``labtui import``).

A result file (any source ``[results]`` knows: JSON, CSV, TensorBoard events, a W&B summary, a
final_info.json) or each row of a results table becomes a folder ``imported_<n>/`` beside the
runs: its ``final_info.json`` read through the same adapters as a run's, a copy of the file, and
a ``labtui_run.json`` that names the file, its digest and the commit of the code that made it.
Provenance then traces the paper's numbers to these folders as it traces them to runs
(core/workspace/artifacts.py ``result_folders``). Nothing is ever rerun or changed: the numbers are the
researcher's, recorded as they were.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from ..errors import LabtuiError
from ..runs.result_sources import read_results, read_table
from ..settings.sections import ResultsSection
from ..workspace.project import Project
from ..workspace.run_folder import (
    FINAL_INFO,
    FinalInfo,
    ImportRecord,
    imported_name,
    imported_number,
    write_final_info,
    write_run_record,
)


@dataclass(frozen=True)
class Imported:
    folder: str  # imported_<n>
    source: str  # the file, relative to the project when inside it
    row: str  # the table row's name ('' for a whole file)
    commit: str
    commit_from: str  # "given", "the file's last commit", or "HEAD (assumed)"
    means: dict[str, dict[str, float]]


def import_file(
    project: Project,
    path: Path,
    *,
    source: str = "",
    metrics: Mapping[str, str] | None = None,
    commit: str = "",
) -> Imported:
    """One result file as one imported folder, read as ``[results]`` says (``source`` and
    ``metrics`` override it: an old file may be of another kind than what runs write now)."""
    path = _existing(path)
    settings = _settings(project, path, source, metrics)
    folder = _next_folder(project.root)
    read = read_results(settings, root=project.root, run_dir=project.root / folder)
    if read.final_info is None or read.problem:
        raise LabtuiError(
            f"cannot import {path}: {read.problem or 'no numbers found'}",
            "name the metrics with --metric NAME=higher|lower, or the kind with --source",
        )
    return _record(project, folder, path, settings.source, read.final_info, commit, row="")


def import_table(
    project: Project,
    path: Path,
    name_column: str,
    *,
    metrics: Mapping[str, str] | None = None,
    commit: str = "",
) -> list[Imported]:
    """Each row of a CSV results table (one earlier run per row, named by ``name_column``) as
    one imported folder."""
    path = _existing(path)
    wanted = dict(metrics if metrics is not None else project.config.results.metrics)
    rows = read_table(path, name_column, wanted)
    if not rows:
        raise LabtuiError(f"{path} has no rows with numbers", "import a table with results in it")
    dataset = project.config.results.dataset
    imported = []
    for name, values in rows.items():
        final_info = FinalInfo.of_means({dataset: values})
        folder = _next_folder(project.root)
        imported.append(_record(project, folder, path, "csv", final_info, commit, row=name))
    return imported


def _existing(path: Path) -> Path:
    path = Path(path).expanduser().resolve()
    if not path.exists():
        raise LabtuiError(f"{path} not found", "name a result file that exists")
    return path


def _settings(
    project: Project, path: Path, source: str, metrics: Mapping[str, str] | None
) -> ResultsSection:
    configured = project.config.results
    chosen = source or _guess_source(path) or configured.source
    values = {
        "source": chosen,
        "path": str(path),
        "metrics": dict(metrics if metrics is not None else configured.metrics),
        "reduce": configured.reduce,
        "dataset": configured.dataset,
    }
    try:
        return ResultsSection.model_validate(values)
    except ValidationError as exc:
        raise LabtuiError(
            f"cannot import {path} as {chosen}: {exc.errors()[0]['msg']}",
            "name the metrics with --metric NAME=higher|lower, or the kind with --source",
        ) from None


def _guess_source(path: Path) -> str:
    """The kind of an old result file, by its name (what runs write now may differ)."""
    name = path.name
    if name == FINAL_INFO:
        return "final_info"
    if name == "wandb-summary.json":
        return "wandb"
    if name.startswith("events.out.tfevents") or path.is_dir():
        return "tensorboard"
    return {".json": "json", ".csv": "csv"}.get(path.suffix.lower(), "")


def _next_folder(root: Path) -> str:
    taken = [n for path in root.iterdir() if (n := imported_number(path)) is not None]
    return imported_name(max(taken, default=0) + 1)


def _record(
    project: Project,
    folder: str,
    path: Path,
    source: str,
    final_info: FinalInfo,
    commit: str,
    *,
    row: str,
) -> Imported:
    """Write the folder (numbers, a copy of the file, the record) and commit it."""
    target = project.root / folder
    target.mkdir()
    write_final_info(target, final_info)
    if path.is_file():
        shutil.copy2(path, target / path.name)
    known, commit_from = _commit_of(project, path, commit)
    shown = _shown(project.root, path)
    record = ImportRecord(
        run_id=folder,
        imported_from=shown,
        row=row,
        source=source,
        sha256=_digest(path),
        commit=known,
        commit_from=commit_from,
        imported_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    write_run_record(target, record)
    what = f"{shown} (row {row})" if row else shown
    project.commit(f"evidence: {folder} imported from {what} ({known[:8]})", [folder])
    return Imported(folder, shown, row, known, commit_from, final_info.means())


def _commit_of(project: Project, path: Path, given: str) -> tuple[str, str]:
    """The commit of the code that made the file, and how it is known: the one given
    (checked), else the last commit that touched a tracked file, else HEAD (assumed)."""
    if given:
        done = _git(project.root, "rev-parse", "--verify", "--quiet", f"{given}^{{commit}}")
        if not done:
            raise LabtuiError(
                f"--commit {given} names no commit of {project.root}",
                "pass the commit whose code made these results (git log shows them)",
            )
        return done, "given"
    inside = project.root in path.parents
    last = _git(project.root, "log", "-1", "--format=%H", "--", str(path)) if inside else ""
    if last:
        return last, "the file's last commit"
    return project.head(), "HEAD (assumed)"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def _digest(path: Path) -> str:
    if not path.is_file():
        return ""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shown(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if root in path.parents else str(path)
