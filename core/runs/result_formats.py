"""Reading the files a run's numbers come in: JSON (a dotted path to a number or a series),
CSV columns, TensorBoard event files (TensorBoard's own loader), and the sentence that says a
name is missing with the nearest one there is. core/runs/result_sources.py chooses the files and
turns what is read here into final_info.json's shape; a problem is a ``ResultProblem`` that says
what is wrong and the fix, never a crash.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Series = list[float]

FIX_METRICS = "fix [results] metrics in labtui.toml"
FIX_PATH = "make the run write it, or fix [results] path in labtui.toml"
MAX_NAMES = 200
MAX_DEPTH = 6
SHOWN_NAMES = 8
_INDEX = re.compile(r"-?\d+")
_ABSENT = object()


class ResultProblem(Exception):
    """What is wrong and the fix: for one metric, or for the whole source (a missing file)."""

    def __init__(self, what: str, fix: str = FIX_METRICS) -> None:
        super().__init__(what)
        self.issue = (what, fix)


def missing(noun: str, name: str, where: str, label: str, offered: Sequence[str]) -> str:
    # difflib misses abbreviations ("acc" for "accuracy"): a name that starts another counts too
    close = difflib.get_close_matches(name, offered, n=1, cutoff=0.6) or [
        other for other in offered if other.startswith(name) or name.startswith(other)
    ]
    guess = f'did you mean "{close[0]}"? ' if close else ""
    shown = ", ".join(offered[:SHOWN_NAMES]) + (", …" if len(offered) > SHOWN_NAMES else "")
    return f'no {noun} "{name}" in {where} ({guess}{label}: {shown or "none"})'


# -- reading files ------------------------------------------------------------------------------


def read_bytes(path: Path, where: str) -> bytes:
    """A result file's bytes; a ResultProblem naming it when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise ResultProblem(
            f"{where} cannot be read ({error.strerror or error})", FIX_PATH
        ) from None


def _text(path: Path, where: str) -> str:
    raw = read_bytes(path, where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        what = f"{where} is not UTF-8 text (byte {error.start} is {raw[error.start]:#04x})"
        fix = "make the run write UTF-8, or fix [results] path in labtui.toml"
        raise ResultProblem(what, fix) from None
    if not text.strip():
        raise ResultProblem(f"{where} is empty: the run wrote nothing there", FIX_PATH)
    return text


def load_json(path: Path, where: str) -> Any:
    text = _text(path, where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        what = (
            f"{where} is not valid JSON ({error.msg} at line {error.lineno}): a run that stops "
            "while writing it leaves it cut short"
        )
        raise ResultProblem(
            what, "look at the run's log, or fix [results] path in labtui.toml"
        ) from None
    except RecursionError:
        raise ResultProblem(f"{where} is nested too deeply to read", FIX_PATH) from None


def json_series(data: Any, name: str, separators: Sequence[str], where: str) -> Series:
    for separator in separators:
        value = _walk(data, name, separator)
        if value is _ABSENT:
            continue
        series = _series_of(value)
        if series is None:
            shown = json.dumps(value)[:40]
            raise ResultProblem(
                f'"{name}" in {where} is {shown}, not a number or a list of numbers'
            )
        return series
    offered = list(numeric_leaves(data, wandb=len(separators) > 1))
    raise ResultProblem(missing("number at", name, where, "numbers there", offered))


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


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _series_of(value: Any) -> Series | None:
    """A number, or a list of numbers (nulls skipped: epochs with no evaluation)."""
    if is_number(value):
        return [float(value)]
    if isinstance(value, list):
        present = [item for item in value if item is not None]
        if present and all(is_number(item) for item in present):
            return [float(item) for item in present]
    return None


def numeric_leaves(data: Any, *, wandb: bool = False) -> dict[str, float]:
    """Dotted paths of the numbers in JSON (the last value of a list of numbers); inside a list
    of objects only the last one, as "history.-1.loss". W&B's own keys ("_runtime") and media
    ({"_type": "histogram", …}) are left out."""
    found: dict[str, float] = {}

    def visit(node: Any, path: str, depth: int) -> None:
        series = _series_of(node)
        if len(found) >= MAX_NAMES or depth > MAX_DEPTH:
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


def csv_rows(path: Path, where: str) -> tuple[list[str], list[list[str]]]:
    text = _text(path, where)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True))
    except csv.Error as error:
        raise ResultProblem(f"{where} is not a readable CSV table ({error})", FIX_PATH) from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    return [cell.strip() for cell in rows[0]], rows[1:]


def cell_number(row: list[str], index: int) -> float | None:
    """A cell's number; None for a blank, a short row or text."""
    if index >= len(row):
        return None
    try:
        return float(row[index].strip())
    except ValueError:
        return None


def column_series(header: list[str], rows: list[list[str]], name: str, where: str) -> Series:
    if name not in header:
        raise ResultProblem(missing("column", name, where, "columns", header))
    index = header.index(name)
    series = [value for row in rows if (value := cell_number(row, index)) is not None]
    if not series:
        raise ResultProblem(f'column "{name}" in {where} holds no numbers')
    return series


def numeric_columns(header: list[str], rows: list[list[str]]) -> list[str]:
    """Columns whose non-blank cells are mostly numbers: "accuracy" with an "n/a" or two, not
    "method" or "notes"."""

    def numeric(index: int) -> bool:
        cells = [row[index].strip() for row in rows if index < len(row) and row[index].strip()]
        numbers = sum(cell_number([cell], 0) is not None for cell in cells)
        return numbers > len(cells) - numbers

    return [name for index, name in enumerate(header) if numeric(index)]


def event_scalars(files: Sequence[Path]) -> dict[str, list[tuple[int, float, float, int]]]:
    """Every scalar of the event files: tag -> (step, wall_time, value, file index) points,
    ordered by (step, wall_time) across the files."""
    # The Legacy loader is EventFileLoader without its compat layer, which rewrites every
    # simple_value as a tensor proto: that tripled the time to read PyTorch's event files.
    # tensorboard (with numpy and protobuf) is imported only when event files are read.
    from tensorboard.backend.event_processing.event_file_loader import (  # noqa: PLC0415
        LegacyEventFileLoader,
    )
    from tensorboard.util import tensor_util  # noqa: PLC0415

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
    import numpy  # noqa: PLC0415 -- ~250 ms to import: only event files need it

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
