"""A run's numbers, read from wherever the researcher's repository writes them.

Every later step (effects, claims, the paper) reads a run's results in one shape, The AI
Scientist's final_info.json: {dataset: {"means": {metric: value}}}. A researcher's own repository
writes them its own way: a JSON or CSV file, metric lines on stdout, TensorBoard event files,
W&B's wandb-summary.json. The [results] section of labtui.toml says which; ``read_results``
reads that source into the one shape. A bad file is an outcome of the run, not a crash of labtui,
so it never raises: what went wrong comes back as one sentence naming the file, the metric and
the fix.

``available_metrics`` lists what a result file offers (``labtui init`` proposes metrics from
it); ``read_table`` reads a CSV table of earlier runs.
"""

from __future__ import annotations

import csv
import difflib
import glob
import io
import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config_sections import ResultsSection
from .errors import LabtuiError
from .events import MetricPointData
from .templates import check_final_info

Series = list[float]

_USUAL_PATHS = {
    "final_info": "{out_dir}/final_info.json",
    "tensorboard": "{out_dir}/**/events.out.tfevents.*",
    "wandb": "wandb/latest-run/files/wandb-summary.json",
}
_EVENT_FILES = "events.out.tfevents.*"
_FIX_METRICS = "fix [results] metrics in labtui.toml"
_FIX_PATH = "make the run write it, or fix [results] path in labtui.toml"
_FIX_RUN = "look at the run's log, then fix the run or choose another metric in [results] metrics"
# Filesystems stamp mtimes from a coarse clock (FAT to 2 s): a file written just after the run
# started may look slightly older than `since`.
_MTIME_SLACK_S = 2.0
_MAX_NAMES = 200
_MAX_DEPTH = 6
_SHOWN_NAMES = 8
_INDEX = re.compile(r"-?\d+")
_ABSENT = object()


@dataclass(frozen=True)
class ResultsRead:
    """What read_results found: the numbers in final_info.json's shape (None when none could be
    used), the files they came from, and '' or one sentence saying what is missing and the fix.
    Some metrics found and some not gives both the found numbers and a problem."""

    final_info: dict[str, Any] | None
    files: list[Path]
    problem: str = ""


class _Problem(Exception):
    """What is wrong and the fix: for one metric, or for the whole source (a missing file)."""

    def __init__(self, what: str, fix: str = _FIX_METRICS) -> None:
        super().__init__(what)
        self.issue = (what, fix)


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
        files = _result_files(settings, root, run_dir, since)
        if settings.source == "final_info":
            return _from_final_info(settings, files[0], root)
        return _collect(settings, _file_numbers(settings.source, files, root))
    except _Problem as problem:
        return ResultsRead(None, [], _sentence([problem.issue]))


def _collect(settings: ResultsSection, numbers: _Numbers) -> ResultsRead:
    means: dict[str, float] = {}
    issues: list[tuple[str, str]] = []
    for name, direction in settings.metrics.items():
        try:
            groups = numbers.lookup(name)
        except _Problem as missing:
            issues.append(missing.issue)
            continue
        value = _mean(
            [_reduce(series, settings.reduce, direction == "higher") for series in groups]
        )
        if math.isfinite(value):
            means[name] = value
        else:
            issues.append((_not_finite(name, value, numbers.where), _FIX_RUN))
    final_info = {settings.dataset: {"means": means}} if means else None
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
        raise _Problem(f"{every}{pattern} was written before this run started", _FIX_PATH)
    if settings.source == "tensorboard":
        raise _Problem(f"no TensorBoard event files ({_EVENT_FILES}) match {pattern}", _FIX_PATH)
    shape = "no file matches {}" if glob.has_magic(pattern) else "{} does not exist"
    raise _Problem(shape.format(pattern), _FIX_PATH)


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
        header, rows = _csv_rows(path, where)
        return _Numbers(where, lambda name: [_column(header, rows, name, where)], files)
    data = _load_json(path, where)
    separators = ("/", ".") if source == "wandb" else (".",)
    return _Numbers(where, lambda name: [_json_series(data, name, separators, where)], files)


def _stdout_numbers(points: Sequence[MetricPointData], run: str) -> _Numbers:
    if not points:
        raise _Problem(
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
            raise _Problem(_missing("metric", name, where, "metrics printed", names))
        return found

    return _Numbers(where, lookup, [])


def _tensorboard_numbers(files: list[Path], root: Path) -> _Numbers:
    scalars = _event_scalars(files)
    folders = [_shown(path.parent, root) for path in files]
    where = f"the TensorBoard events under {os.path.commonpath(folders) or '.'}"
    used = sorted({file for points in scalars.values() for *_, file in points})

    def lookup(name: str) -> list[Series]:
        if name not in scalars:
            raise _Problem(_missing("scalar tag", name, where, "tags", list(scalars)))
        return [[value for _, _, value, _ in scalars[name]]]

    return _Numbers(where, lookup, [files[index] for index in used] or files)


def _from_final_info(settings: ResultsSection, path: Path, root: Path) -> ResultsRead:
    """The run wrote final_info.json itself: check its shape and the metrics asked for."""
    where = _shown(path, root)
    data = _load_json(path, where)
    shape = check_final_info(data, where)
    if shape:
        fix = 'make the run write {dataset: {"means": {metric: number}}}, or set [results] source'
        raise _Problem("; ".join(shape), f"{fix} in labtui.toml")
    means = [entry["means"] for entry in data.values()]
    offered = list(dict.fromkeys(name for entry in means for name in entry))
    wanted = list(settings.metrics) or list(_final_info_numbers(data))
    if not wanted:
        raise _Problem(f"{where} holds no numbers", _FIX_PATH)
    issues: list[tuple[str, str]] = []
    usable = 0
    for name in wanted:
        values = [entry[name] for entry in means if name in entry]
        if not values:
            issues.append((_missing("mean", name, where, "means", offered), _FIX_METRICS))
        elif not all(_is_number(value) for value in values):
            issues.append((f'"{name}" in {where} is not a number', _FIX_METRICS))
        elif not all(math.isfinite(value) for value in values):
            bad = next(value for value in values if not math.isfinite(value))
            issues.append((_not_finite(name, bad, where), _FIX_RUN))
            for entry in means:  # NaN is not JSON, and no later step can use it
                entry.pop(name, None)
        else:
            usable += 1
    return ResultsRead(data if usable else None, [path] if usable else [], _sentence(issues))


# -- reading files ------------------------------------------------------------------------------


def _text(path: Path, where: str) -> str:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise _Problem(f"{where} cannot be read ({error.strerror or error})", _FIX_PATH) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        what = f"{where} is not UTF-8 text (byte {error.start} is {raw[error.start]:#04x})"
        fix = "make the run write UTF-8, or fix [results] path in labtui.toml"
        raise _Problem(what, fix) from None
    if not text.strip():
        raise _Problem(f"{where} is empty: the run wrote nothing there", _FIX_PATH)
    return text


def _load_json(path: Path, where: str) -> Any:
    text = _text(path, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        what = (
            f"{where} is not valid JSON ({error.msg} at line {error.lineno}): a run that stops "
            "while writing it leaves it cut short"
        )
        raise _Problem(
            what, "look at the run's log, or fix [results] path in labtui.toml"
        ) from None
    except RecursionError:
        raise _Problem(f"{where} is nested too deeply to read", _FIX_PATH) from None


def _json_series(data: Any, name: str, separators: Sequence[str], where: str) -> Series:
    for separator in separators:
        value = _walk(data, name, separator)
        if value is _ABSENT:
            continue
        series = _series_of(value)
        if series is None:
            shown = json.dumps(value)[:40]
            raise _Problem(f'"{name}" in {where} is {shown}, not a number or a list of numbers')
        return series
    offered = list(_numeric_leaves(data, wandb=len(separators) > 1))
    raise _Problem(_missing("number at", name, where, "numbers there", offered))


def _walk(node: Any, name: str, separator: str) -> Any:
    """The value at a separated path; a key that itself holds the separator ("eval.acc") is
    found by trying the whole remaining name, then ever shorter keys, before going deeper."""
    if isinstance(node, dict):
        if name in node:
            return node[name]
        cut = name.rfind(separator)
        while cut > 0:
            head = name[:cut]
            if head in node:
                found = _walk(node[head], name[cut + len(separator) :], separator)
                if found is not _ABSENT:
                    return found
            cut = name.rfind(separator, 0, cut)
    elif isinstance(node, list):
        head, has_rest, rest = name.partition(separator)
        if _INDEX.fullmatch(head) and -len(node) <= int(head) < len(node):
            item = node[int(head)]
            return _walk(item, rest, separator) if has_rest else item
    return _ABSENT


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _series_of(value: Any) -> Series | None:
    """A number, or a list of numbers (nulls skipped: epochs with no evaluation)."""
    if _is_number(value):
        return [float(value)]
    if isinstance(value, list):
        present = [item for item in value if item is not None]
        if present and all(_is_number(item) for item in present):
            return [float(item) for item in present]
    return None


def _numeric_leaves(data: Any, *, wandb: bool = False) -> dict[str, float]:
    """Dotted paths of the numbers in JSON (the last value of a list of numbers); inside a list
    of objects only the last one, as "history.-1.loss". W&B's own keys ("_runtime") and media
    ({"_type": "histogram", …}) are left out."""
    found: dict[str, float] = {}

    def visit(node: Any, path: str, depth: int) -> None:
        series = _series_of(node)
        if len(found) >= _MAX_NAMES or depth > _MAX_DEPTH:
            return
        if series is not None and path:
            found[path] = series[-1]
        elif isinstance(node, dict) and not (wandb and "_type" in node):
            for key, child in node.items():
                if not (wandb and str(key).startswith("_")):
                    visit(child, f"{path}.{key}" if path else str(key), depth + 1)
        elif isinstance(node, list) and node:
            visit(node[-1], f"{path}.-1" if path else "-1", depth + 1)

    visit(data, "", 0)
    return found


def _csv_rows(path: Path, where: str) -> tuple[list[str], list[list[str]]]:
    text = _text(path, where)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True))
    except csv.Error as error:
        raise _Problem(f"{where} is not a readable CSV table ({error})", _FIX_PATH) from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    return [cell.strip() for cell in rows[0]], rows[1:]


def _cell_number(row: list[str], index: int) -> float | None:
    """A cell's number; None for a blank, a short row or text."""
    if index >= len(row):
        return None
    try:
        return float(row[index].strip())
    except ValueError:
        return None


def _column(header: list[str], rows: list[list[str]], name: str, where: str) -> Series:
    if name not in header:
        raise _Problem(_missing("column", name, where, "columns", header))
    index = header.index(name)
    series = [value for row in rows if (value := _cell_number(row, index)) is not None]
    if not series:
        raise _Problem(f'column "{name}" in {where} holds no numbers')
    return series


def _numeric_columns(header: list[str], rows: list[list[str]]) -> list[str]:
    """Columns whose non-blank cells are mostly numbers: "accuracy" with an "n/a" or two, not
    "method" or "notes"."""

    def numeric(index: int) -> bool:
        cells = [row[index].strip() for row in rows if index < len(row) and row[index].strip()]
        numbers = sum(_cell_number([cell], 0) is not None for cell in cells)
        return numbers > len(cells) - numbers

    return [name for index, name in enumerate(header) if numeric(index)]


def _event_scalars(files: Sequence[Path]) -> dict[str, list[tuple[int, float, float, int]]]:
    """Every scalar of the event files: tag -> (step, wall_time, value, file index) points,
    ordered by (step, wall_time) across the files."""
    # The Legacy loader is EventFileLoader without its compat layer, which rewrites every
    # simple_value as a tensor proto: that tripled the time to read PyTorch's event files.
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from tensorboard.util import tensor_util

    points: dict[str, list[tuple[int, float, float, int]]] = defaultdict(list)
    is_scalar: dict[str, bool] = {}
    for index, path in enumerate(files):
        try:
            # The loader stops quietly at a truncated last record (a file still being written)
            for event in LegacyEventFileLoader(str(path)).Load():
                for value in event.summary.value:
                    number = _scalar_value(value, is_scalar, tensor_util.make_ndarray)
                    if number is not None:
                        points[value.tag].append((event.step, event.wall_time, number, index))
        except Exception:  # a corrupt record ends the file: what came before it still counts
            continue
    return {tag: sorted(series, key=lambda point: point[:2]) for tag, series in points.items()}


def _scalar_value(value: Any, is_scalar: dict[str, bool], make_ndarray: Any) -> float | None:
    """The number of a summary value when its tag is a scalar: PyTorch and tensorboardX write a
    simple_value, TF2 a tensor that it describes (plugin "scalars") only at the tag's first
    value, so a tag's first plugin name decides for its later ones."""
    import numpy

    if value.WhichOneof("value") == "simple_value":
        return _shortest(numpy.float32(value.simple_value))
    if value.WhichOneof("value") != "tensor":
        return None
    plugin = value.metadata.plugin_data.plugin_name
    if value.tag not in is_scalar and plugin:
        is_scalar[value.tag] = plugin == "scalars"
    if not is_scalar.get(value.tag, True):
        return None
    array = make_ndarray(value.tensor)
    if array.size != 1 or array.dtype.kind not in "fiu":
        return None
    return _shortest(array.reshape(-1)[0])


def _shortest(number: Any) -> float:
    """The float a numpy number prints as: TensorBoard keeps float32, and the 0.3 a run logged
    must not reach the paper as 0.30000001192092896."""
    return float(str(number))


# -- sentences ----------------------------------------------------------------------------------


def _missing(noun: str, name: str, where: str, label: str, offered: Sequence[str]) -> str:
    # difflib misses abbreviations ("acc" for "accuracy"): a name that starts another counts too
    close = difflib.get_close_matches(name, offered, n=1, cutoff=0.6) or [
        other for other in offered if other.startswith(name) or name.startswith(other)
    ]
    guess = f'did you mean "{close[0]}"? ' if close else ""
    shown = ", ".join(offered[:_SHOWN_NAMES]) + (", …" if len(offered) > _SHOWN_NAMES else "")
    return f'no {noun} "{name}" in {where} ({guess}{label}: {shown or "none"})'


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
    an event file, or every one under a folder), W&B's summary keys, final_info's means. {} when
    the file cannot be read."""
    try:
        if source == "tensorboard":
            files = sorted(path.rglob(_EVENT_FILES)) if path.is_dir() else [path]
            return {tag: points[-1][2] for tag, points in _event_scalars(files).items()}
        if source == "csv":
            header, rows = _csv_rows(path, str(path))
            return {
                name: _column(header, rows, name, "")[-1] for name in _numeric_columns(header, rows)
            }
        data = _load_json(path, str(path))
    except (_Problem, OSError):
        return {}
    if source == "final_info":
        return _final_info_numbers(data)
    return _numeric_leaves(data, wandb=source == "wandb") if source in ("json", "wandb") else {}


def _final_info_numbers(data: Any) -> dict[str, float]:
    """final_info.json's numeric means by name, of any well-formed dataset (the last one wins)."""
    entries = data.values() if isinstance(data, dict) else []
    means = [entry.get("means") for entry in entries if isinstance(entry, dict)]
    pairs = [pair for entry in means if isinstance(entry, dict) for pair in entry.items()]
    return {name: float(value) for name, value in pairs if _is_number(value)}


def read_table(
    path: Path, name_column: str, metrics: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """A CSV table of earlier runs, a row each: {row name: {metric: value}} for ``metrics``
    (every numeric column when empty). Repeated names become "name (2)", "name (3)"; a cell that
    is blank, text or not finite is left out. Raises LabtuiError naming file and column."""
    try:
        header, rows = _csv_rows(path, str(path))
    except _Problem as problem:
        raise LabtuiError(
            problem.issue[0], "give the path of a CSV table with a header row"
        ) from None
    wanted = list(metrics) or [
        name for name in _numeric_columns(header, rows) if name != name_column
    ]
    for column in [name_column, *wanted]:
        if column not in header:
            raise LabtuiError(
                _missing("column", column, str(path), "columns", header), "name one of its columns"
            )
    name_index = header.index(name_column)
    indexes = {metric: header.index(metric) for metric in wanted}
    table: dict[str, dict[str, float]] = {}
    for number, row in enumerate(rows, start=1):
        name = row[name_index].strip() if name_index < len(row) else ""
        name = _unique(name or f"row {number}", table)
        cells = {metric: _cell_number(row, index) for metric, index in indexes.items()}
        table[name] = {m: v for m, v in cells.items() if v is not None and math.isfinite(v)}
    return table


def _unique(name: str, taken: Mapping[str, object]) -> str:
    count, unique = 2, name
    while unique in taken:
        unique, count = f"{name} ({count})", count + 1
    return unique
