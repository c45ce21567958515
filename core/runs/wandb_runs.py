"""Where a W&B run's numbers are, for ``[results] source = "wandb"``: its folder
(``offline-run-<time>-<id>`` or ``run-<time>-<id>``, under ``$WANDB_DIR/wandb/``), the summary
file ``files/wandb-summary.json`` in it, and the ``run-<id>.wandb`` file beside that.

The summary file is read when it holds numbers and the final values are all that is asked
(``[results] reduce = "last"``); otherwise the ``.wandb`` file is (core/runs/wandb_offline.py),
which holds every logged value, so "best", "min", "max" and "mean" reduce the real series. That
is also what an offline run needs: wandb 0.31 writes no summary file offline, and 0.17 one that
holds only ``_wandb.runtime``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .result_formats import (
    ResultProblem,
    Series,
    json_series,
    load_json,
    missing,
    numeric_leaves,
)
from .wandb_offline import OfflineRun, read_offline_run, series_of, wandb_file

SUMMARY_FILE = "files/wandb-summary.json"
# "latest-run" is wandb's link to the newest run folder (a copied tree may hold it as a folder)
_RUN_FOLDERS = ("offline-run-*", "run-*", "latest-run")
_SEPARATORS = ("/", ".")
FIX_WANDB_DIR = (
    'give the run WANDB_DIR = "{out_dir}" (and WANDB_MODE = "offline" without a network) in '
    "[experiment] env of labtui.toml, or point [results] path at the W&B run's folder"
)

Shown = Callable[[Path], str]


@dataclass(frozen=True)
class WandbNumbers:
    """A W&B run made readable: ``lookup`` gives a metric's series (one group)."""

    where: str
    lookup: Callable[[str], list[Series]]
    files: list[Path]


def run_folders(folder: Path) -> list[Path]:
    """The W&B run folders ``folder`` is or holds: itself (a run folder), its runs (a
    ``wandb/`` folder), or those of its ``wandb/`` (a run's output folder, as WANDB_DIR)."""
    if _is_run_folder(folder):
        return [folder]
    found: dict[Path, Path] = {}  # a run reached by its name and by latest-run counts once
    for parent in (folder, folder / "wandb"):
        for pattern in _RUN_FOLDERS:
            for path in sorted(parent.glob(pattern)):
                if _is_run_folder(path):
                    found.setdefault(path.resolve(), path)
    return list(found.values())


def _is_run_folder(folder: Path) -> bool:
    return folder.is_dir() and (wandb_file(folder) is not None or (folder / SUMMARY_FILE).is_file())


def written_at(run_folder: Path) -> float:
    """When the run last wrote its numbers: its .wandb or summary file's time, else the
    folder's."""
    files = [wandb_file(run_folder), run_folder / SUMMARY_FILE]
    times = [path.stat().st_mtime for path in files if path is not None and path.is_file()]
    return max(times, default=run_folder.stat().st_mtime)


def wandb_numbers(target: Path, reduce: str, shown: Shown) -> WandbNumbers:
    """The numbers of ``target``: a W&B run folder, its summary file or its .wandb file."""
    summary, record_file = _files_of(target)
    data = load_json(summary, shown(summary)) if summary is not None else None
    final_values = data is not None and bool(numeric_leaves(data, wandb=True))
    if final_values and summary is not None and (reduce == "last" or record_file is None):
        return _summary_numbers(data, summary, shown(summary))
    if record_file is not None:
        return _record_numbers(read_offline_run(record_file, shown(record_file)))
    assert summary is not None  # _files_of gives one of the two at least
    where = shown(summary)
    raise ResultProblem(
        f"{where} holds no numbers (only W&B's own keys, such as _wandb.runtime: an offline run "
        f"writes its numbers to run-<id>.wandb) and there is no run-*.wandb beside "
        f"{shown(summary.parent)}",
        "make the run call wandb.log, or point [results] path in labtui.toml at the run's folder",
    )


def _files_of(target: Path) -> tuple[Path | None, Path | None]:
    """The summary file and the .wandb file of the run ``target`` is or belongs to."""
    if target.suffix == ".wandb":
        return None, target
    if target.is_dir():
        summary = target / SUMMARY_FILE
        return (summary if summary.is_file() else None), wandb_file(target)
    folder = target.parent.parent if target.parent.name == "files" else target.parent
    return target, wandb_file(folder)


def _summary_numbers(data: Any, path: Path, where: str) -> WandbNumbers:
    return WandbNumbers(where, lambda name: [json_series(data, name, _SEPARATORS, where)], [path])


def _record_numbers(run: OfflineRun) -> WandbNumbers:
    where = str(run.where)
    if run.cut:
        where += f" (read up to where {run.cut})"
    # Sorted: the order of a history record's items is wandb's (it varied between two runs of
    # the same script), and a message must read the same each time.
    offered = sorted({*run.history, *run.summary})

    def lookup(name: str) -> list[Series]:
        series = series_of(run, name)
        if series is None:
            raise ResultProblem(missing("key", name, where, "keys it logged", offered))
        return [series]

    return WandbNumbers(where, lookup, [run.file])


def summary_numbers(path: Path) -> dict[str, float]:
    """Every final number of a W&B run (a run folder, its summary file or its .wandb file), by
    the name [results] metrics would give it; {} when none can be read."""
    try:
        summary, record_file = _files_of(path)
        if summary is not None:
            found = numeric_leaves(load_json(summary, str(summary)), wandb=True)
            if found or record_file is None:
                return found
        return dict(read_offline_run(record_file).summary) if record_file else {}
    except (ResultProblem, OSError):
        return {}


def no_run_found(looked_in: list[str]) -> ResultProblem:
    """The problem of a run that left no W&B run folder where labtui looked."""
    return ResultProblem(
        f"no W&B run folder (offline-run-*/ or run-*/ holding run-*.wandb or {SUMMARY_FILE}) "
        f"in {' or '.join(looked_in)}: the run never called wandb.init, or wrote elsewhere",
        FIX_WANDB_DIR,
    )
