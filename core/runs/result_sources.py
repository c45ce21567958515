"""A run's numbers, read from wherever the researcher's repository writes them.

Every later step (effects, claims, the paper) reads a run's results in one shape, The AI
Scientist's final_info.json: {dataset: {"means": {metric: value}}}. A researcher's own repository
writes them its own way: a JSON or CSV file, metric lines on stdout, TensorBoard event files, a
W&B run (its wandb-summary.json, or the .wandb file of an offline run: core/runs/wandb_runs.py).
The [results] section of labtui.toml says which; ``read_results`` reads that source into the one
shape. A bad file is an outcome of the run, not a crash of labtui, so it never raises: what went
wrong comes back as one sentence naming the file, the metric and the fix.

``available_metrics`` lists what a result file offers (``labtui init`` proposes metrics from
it); ``read_table`` reads a CSV table of earlier runs.
"""

from __future__ import annotations

import glob
import math
import os
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..events import MetricPointData
from ..settings.sections import ResultsSection
from ..settings.templates import check_final_info
from ..workspace.run_folder import FINAL_INFO, FinalInfo, RunFolderError
from . import wandb_runs
from .result_formats import (
    FIX_METRICS,
    FIX_PATH,
    ResultProblem,
    Series,
    cell_number,
    column_series,
    csv_rows,
    event_scalars,
    is_number,
    json_series,
    load_json,
    missing,
    numeric_columns,
    numeric_leaves,
)

_USUAL_PATHS = {
    "final_info": "{out_dir}/" + FINAL_INFO,
    "tensorboard": "{out_dir}/**/events.out.tfevents.*",
}
_EVENT_FILES = "events.out.tfevents.*"
_FIX_RUN = "look at the run's log, then fix the run or choose another metric in [results] metrics"
# Filesystems stamp mtimes from a coarse clock (FAT to 2 s): a file written just after the run
# started may look slightly older than `since`.
_MTIME_SLACK_S = 2.0


@dataclass(frozen=True)
class ResultsRead:
    """What read_results found: the numbers in final_info.json's shape (None when none could be
    used), the files they came from, and '' or one sentence saying what is missing and the fix.
    Some metrics found and some not gives both the found numbers and a problem."""

    final_info: FinalInfo | None
    files: list[Path]
    problem: str = ""


@dataclass(frozen=True)
class _Numbers:
    """A readable source: ``lookup`` gives a metric's series, one per group of points."""

    where: str
    lookup: Callable[[str], list[Series]]
    files: list[Path]


def read_results(
    settings: ResultsSection,
    *,
    root: Path,
    run_dir: Path,
    since: float | None = None,
    log_points: Sequence[MetricPointData] = (),
) -> ResultsRead:
    """The run's numbers as final_info.json holds them, read from ``settings.source``.

    ``since`` (when the run started) drops a glob's older matches, which an earlier run wrote;
    among the rest the newest wins (TensorBoard: all event files are read). ``log_points`` are
    the metric points the engine parsed from the run's output, in order: with several groups
    ("seed 0", "seed 1"), each group's series is reduced on its own and the groups averaged.
    """
    try:
        if settings.source == "stdout":
            return _collect(settings, _stdout_numbers(log_points, _shown(run_dir, root)))
        if settings.source == "wandb":
            return _collect(settings, _wandb_numbers(settings, root, run_dir, since))
        files = _result_files(settings, root, run_dir, since)
        if settings.source == "final_info":
            return _from_final_info(settings, files[0], root)
        return _collect(settings, _file_numbers(settings.source, files, root))
    except ResultProblem as problem:
        return ResultsRead(None, [], _sentence([problem.issue]))


def _collect(settings: ResultsSection, numbers: _Numbers) -> ResultsRead:
    means: dict[str, float] = {}
    issues: list[tuple[str, str]] = []
    for name, direction in settings.metrics.items():
        try:
            groups = numbers.lookup(name)
        except ResultProblem as missing:
            issues.append(missing.issue)
            continue
        value = _mean(
            [_reduce(series, settings.reduce, direction == "higher") for series in groups]
        )
        if math.isfinite(value):
            means[name] = value
        else:
            issues.append((_not_finite(name, value, numbers.where), _FIX_RUN))
    final_info = FinalInfo.of_means({settings.dataset: means}) if means else None
    return ResultsRead(final_info, numbers.files if means else [], _sentence(issues))


def _reduce(series: Series, how: str, higher: bool) -> float:
    """One number from a series. A NaN anywhere makes every reduction but "last" NaN, so a run
    that diverged is never hidden behind its best epoch."""
    if how == "last":
        return series[-1]
    if any(math.isnan(value) for value in series):
        return math.nan
    if how == "best":
        how = "max" if higher else "min"
    reducers: dict[str, Callable[[Series], float]] = {"min": min, "max": max, "mean": _mean}
    return reducers[how](series)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


# -- where the files are ------------------------------------------------------------------------


def _result_files(
    settings: ResultsSection, root: Path, run_dir: Path, since: float | None
) -> list[Path]:
    """The files to read: the newest fresh match, or every fresh event file for TensorBoard."""
    pattern = (settings.path or _USUAL_PATHS[settings.source]).replace(
        "{out_dir}", _shown(run_dir, root)
    )
    full = root / pattern
    if settings.source == "tensorboard" and not glob.has_magic(pattern) and full.is_dir():
        pattern = f"{pattern.rstrip('/')}/**/{_EVENT_FILES}"
    # glob.escape: the project's own folder name must not be read as a pattern
    found = glob.glob(os.path.join(glob.escape(str(root)), pattern), recursive=True)
    matches = [Path(name) for name in sorted(found) if os.path.isfile(name)]
    fresh = [path for path in matches if since is None or _mtime(path) >= since - _MTIME_SLACK_S]
    if fresh:
        return fresh if settings.source == "tensorboard" else [max(fresh, key=_mtime)]
    if matches:
        every = "every file matching " if glob.has_magic(pattern) else ""
        raise ResultProblem(f"{every}{pattern} was written before this run started", FIX_PATH)
    if settings.source == "tensorboard":
        raise ResultProblem(
            f"no TensorBoard event files ({_EVENT_FILES}) match {pattern}", FIX_PATH
        )
    shape = "no file matches {}" if glob.has_magic(pattern) else "{} does not exist"
    raise ResultProblem(shape.format(pattern), FIX_PATH)


def _wandb_numbers(
    settings: ResultsSection, root: Path, run_dir: Path, since: float | None
) -> _Numbers:
    """The newest W&B run this run wrote: under [results] path when it names a file or a folder,
    else under the run's folder (WANDB_DIR={out_dir}) or the project's wandb/ folder."""
    pattern = settings.path.replace("{out_dir}", _shown(run_dir, root))
    if pattern and (glob.has_magic(pattern) or not (root / pattern).is_dir()):
        target = _result_files(settings, root, run_dir, since)[0]
    else:
        places = {root / pattern: pattern} if pattern else {run_dir: "", root: ""}
        shown = {f: label or _shown(f / "wandb", root) for f, label in places.items()}
        target = _newest_wandb_run(shown, since)
    numbers = wandb_runs.wandb_numbers(target, settings.reduce, lambda path: _shown(path, root))
    return _Numbers(numbers.where, numbers.lookup, numbers.files)


def _newest_wandb_run(folders: dict[Path, str], since: float | None) -> Path:
    """The newest W&B run folder in ``folders`` (each with its name for messages) written after
    ``since``."""
    runs = [run for folder in folders for run in wandb_runs.run_folders(folder)]
    times = {run: wandb_runs.written_at(run) for run in runs}
    fresh = [run for run in runs if since is None or times[run] >= since - _MTIME_SLACK_S]
    if fresh:
        return max(fresh, key=lambda run: times[run])
    looked_in = list(folders.values())
    if runs:
        raise ResultProblem(
            f"every W&B run in {' or '.join(looked_in)} was written before this run started",
            wandb_runs.FIX_WANDB_DIR,
        )
    raise wandb_runs.no_run_found(looked_in)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # deleted between the glob and now
        return -math.inf


def _shown(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(path)


# -- the sources --------------------------------------------------------------------------------


def _file_numbers(source: str, files: list[Path], root: Path) -> _Numbers:
    if source == "tensorboard":
        return _tensorboard_numbers(files, root)
    path = files[0]
    where = _shown(path, root)
    if source == "csv":
        header, rows = csv_rows(path, where)
        return _Numbers(where, lambda name: [column_series(header, rows, name, where)], files)
    data = load_json(path, where)
    return _Numbers(where, lambda name: [json_series(data, name, (".",), where)], files)


def _stdout_numbers(points: Sequence[MetricPointData], run: str) -> _Numbers:
    if not points:
        raise ResultProblem(
            f"{run} printed no metric lines (name value, name=value, or a JSON object a line)",
            "make the run print its metrics, or set [results] source in labtui.toml",
        )
    groups: dict[str, dict[str, Series]] = defaultdict(lambda: defaultdict(list))
    for point in points:
        for name, value in point["values"].items():
            groups[point["group"]][name].append(float(value))
    where = f"the metric lines {run} printed"
    names = list(dict.fromkeys(name for group in groups.values() for name in group))

    def lookup(name: str) -> list[Series]:
        found = [group[name] for group in groups.values() if name in group]
        if not found:
            raise ResultProblem(missing("metric", name, where, "metrics printed", names))
        return found

    return _Numbers(where, lookup, [])


def _tensorboard_numbers(files: list[Path], root: Path) -> _Numbers:
    scalars = event_scalars(files)
    folders = [_shown(path.parent, root) for path in files]
    where = f"the TensorBoard events under {os.path.commonpath(folders) or '.'}"
    used = sorted({file for points in scalars.values() for *_, file in points})

    def lookup(name: str) -> list[Series]:
        if name not in scalars:
            raise ResultProblem(missing("scalar tag", name, where, "tags", list(scalars)))
        return [[value for _, _, value, _ in scalars[name]]]

    return _Numbers(where, lookup, [files[index] for index in used] or files)


def _from_final_info(settings: ResultsSection, path: Path, root: Path) -> ResultsRead:
    """The run wrote final_info.json itself: check its shape and the metrics asked for."""
    where = _shown(path, root)
    data = load_json(path, where)
    shape = check_final_info(data, where)
    if shape:
        fix = 'make the run write {dataset: {"means": {metric: number}}}, or set [results] source'
        raise ResultProblem("; ".join(shape), f"{fix} in labtui.toml")
    means = [entry["means"] for entry in data.values()]
    offered = list(dict.fromkeys(name for entry in means for name in entry))
    wanted = list(settings.metrics) or list(_final_info_numbers(data))
    if not wanted:
        raise ResultProblem(f"{where} holds no numbers", FIX_PATH)
    issues: list[tuple[str, str]] = []
    usable = 0
    for name in wanted:
        values = [entry[name] for entry in means if name in entry]
        if not values:
            issues.append((missing("mean", name, where, "means", offered), FIX_METRICS))
        elif not all(is_number(value) for value in values):
            issues.append((f'"{name}" in {where} is not a number', FIX_METRICS))
        elif not all(math.isfinite(value) for value in values):
            bad = next(value for value in values if not math.isfinite(value))
            issues.append((_not_finite(name, bad, where), _FIX_RUN))
            for entry in means:  # NaN is not JSON, and no later step can use it
                entry.pop(name, None)
        else:
            usable += 1
    final_info = FinalInfo.from_json(data, where) if usable else None
    return ResultsRead(final_info, [path] if usable else [], _sentence(issues))


# -- sentences ----------------------------------------------------------------------------------


def _not_finite(name: str, value: float, where: str) -> str:
    word = "NaN" if math.isnan(value) else "infinite"
    return f"{name} is {word} in {where}: the run diverged, or wrote no number"


def _sentence(issues: Sequence[tuple[str, str]]) -> str:
    """Issues joined into one sentence, each distinct fix said once at the end."""
    if not issues:
        return ""
    fixes = list(dict.fromkeys(fix for _, fix in issues))
    return "; ".join(what for what, _ in issues) + "; " + "; ".join(fixes)


# -- listing and tables -------------------------------------------------------------------------


def available_metrics(source: str, path: Path) -> dict[str, float]:
    """Every number one result file offers, by the name [results] metrics would give it, with
    its last value: JSON's dotted paths, a CSV's numeric columns, TensorBoard's scalar tags (of
    an event file, or every one under a folder), W&B's summary keys (of a summary file, a .wandb
    file or a run folder), final_info's means. {} when the file cannot be read."""
    try:
        if source == "tensorboard":
            files = sorted(path.rglob(_EVENT_FILES)) if path.is_dir() else [path]
            return {tag: points[-1][2] for tag, points in event_scalars(files).items()}
        if source == "csv":
            header, rows = csv_rows(path, str(path))
            return {
                name: column_series(header, rows, name, "")[-1]
                for name in numeric_columns(header, rows)
            }
        if source == "wandb":
            return wandb_runs.summary_numbers(path)
        data = load_json(path, str(path))
    except (ResultProblem, OSError):
        return {}
    if source == "final_info":
        return _final_info_numbers(data)
    return numeric_leaves(data) if source == "json" else {}


def _final_info_numbers(data: Any) -> dict[str, float]:
    """final_info.json's numeric means by name, of any well-formed dataset (the last one wins)."""
    try:
        means = FinalInfo.from_json(data).means().values()
    except RunFolderError:
        return {}
    pairs = [pair for entry in means for pair in entry.items()]
    return {name: float(value) for name, value in pairs if is_number(value)}


def read_table(
    path: Path, name_column: str, metrics: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """A CSV table of earlier runs, a row each: {row name: {metric: value}} for ``metrics``
    (every numeric column when empty). Repeated names become "name (2)", "name (3)"; a cell that
    is blank, text or not finite is left out. Raises LabtuiError naming file and column."""
    try:
        header, rows = csv_rows(path, str(path))
    except ResultProblem as problem:
        raise LabtuiError(
            problem.issue[0], "give the path of a CSV table with a header row"
        ) from None
    wanted = list(metrics) or [
        name for name in numeric_columns(header, rows) if name != name_column
    ]
    for column in [name_column, *wanted]:
        if column not in header:
            raise LabtuiError(
                missing("column", column, str(path), "columns", header), "name one of its columns"
            )
    name_index = header.index(name_column)
    indexes = {metric: header.index(metric) for metric in wanted}
    table: dict[str, dict[str, float]] = {}
    for number, row in enumerate(rows, start=1):
        name = row[name_index].strip() if name_index < len(row) else ""
        name = _unique(name or f"row {number}", table)
        cells = {metric: cell_number(row, index) for metric, index in indexes.items()}
        table[name] = {m: v for m, v in cells.items() if v is not None and math.isfinite(v)}
    return table


def _unique(name: str, taken: Mapping[str, object]) -> str:
    count, unique = 2, name
    while unique in taken:
        unique, count = f"{name} ({count})", count + 1
    return unique
