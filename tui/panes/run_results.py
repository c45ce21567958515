"""The results table of the logs pane: each finished run's means against the baseline run."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from labtui.core.events import RunFinished
from labtui.core.machine.metric_lines import lower_is_better

from ..job_words import end_words
from .base import format_number

BASELINE_RUN = "run_0"


def flatten_numbers(means: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"ds": {"means": {"acc": 0.91}}}`` → ``{"ds.acc": 0.91}``.

    The AI-Scientist contract nests each dataset's numbers under a ``means`` key; that level adds
    nothing for the reader, so it is skipped.
    """
    flat: dict[str, Any] = {}
    for key, value in means.items():
        name = prefix if key == "means" and prefix else f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            flat.update(flatten_numbers(value, name))
        else:
            flat[name] = value
    return flat


def flatten_means(means: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``{"ds": {"means": {"acc": 0.91}}}`` → ``["ds.acc=0.91"]``."""
    return [
        f"{name}={format_number(value)}" for name, value in flatten_numbers(means, prefix).items()
    ]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def succeeded(run: RunFinished) -> bool:
    """The run exited cleanly within its time limit: its means count."""
    return run.returncode == 0 and not run.timed_out


@dataclass(frozen=True)
class ResultColours:
    good: str
    bad: str
    muted: str


def results_table(
    runs: Sequence[RunFinished],
    width: int,
    colours: ResultColours,
    job_ends: Mapping[str, str] | None = None,
) -> Table:
    """Each finished run's means, the baseline first, with deltas against the baseline.

    ``job_ends``: how the Slurm job of a cluster run ended, by run id; a failed run that Slurm
    ended (TIMEOUT, OUT_OF_MEMORY, ...) says so instead of its exit code.

    One row per run and one column per metric; when that would not fit in ``width`` (a narrow
    pane, long metric names) the table is transposed, one row per metric.
    """
    ordered = sorted(runs, key=lambda run: run.run_id != BASELINE_RUN)  # stable: baseline first
    values = [flatten_numbers(run.means) if succeeded(run) else {} for run in ordered]
    names = list(dict.fromkeys(name for flat in values for name in flat))
    corner, short_names = _shared_prefix(names)
    baseline = values[0] if ordered and ordered[0].run_id == BASELINE_RUN else None
    header = [Text(corner or "run", style="bold"), *(Text(n, style="bold") for n in short_names)]
    ends = job_ends or {}
    rows = [
        [
            _run_cell(run, colours, ends.get(run.run_id, "")),
            *(_metric_cell(name, flat, baseline, colours) for name in names),
        ]
        for run, flat in zip(ordered, values, strict=True)
    ]
    matrix = [header, *rows]
    if _natural_width(matrix) > width and len(names) > 1:
        matrix = [list(column) for column in zip(*matrix, strict=True)]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), pad_edge=False)
    for cell in matrix[0]:
        table.add_column(cell, no_wrap=False)
    for row in matrix[1:]:
        table.add_row(*row)
    return table


def _shared_prefix(names: list[str]) -> tuple[str, list[str]]:
    """With a single dataset ("moons.acc", "moons.loss") its name goes in the corner cell."""
    heads = {name.split(".", 1)[0] for name in names}
    if len(heads) == 1 and all("." in name for name in names):
        return heads.pop(), [name.split(".", 1)[1] for name in names]
    return "", names


def _run_cell(run: RunFinished, colours: ResultColours, job_end: str = "") -> Text:
    if succeeded(run):
        return Text(run.run_id)
    if job_end not in ("", "COMPLETED", "FAILED"):  # Slurm ended it: the exit code says nothing
        what = end_words(job_end)
    else:
        what = "timed out" if run.timed_out else f"exit {run.returncode}"
    return Text.assemble(run.run_id, (f" ✘ {what}", colours.bad))


def _metric_cell(
    name: str, flat: Mapping[str, Any], baseline: Mapping[str, Any] | None, colours: ResultColours
) -> Text:
    if name not in flat:
        return Text("–", style=colours.muted)
    value = flat[name]
    cell = Text(format_number(value))
    reference = baseline.get(name) if baseline is not None and baseline is not flat else None
    if _is_number(value) and _is_number(reference):
        delta = value - reference
        if delta == 0:
            cell.append("\n±0", style=colours.muted)
        else:
            better = (delta < 0) == lower_is_better(name)
            cell.append(f"\n{delta:+.3g}", style=colours.good if better else colours.bad)
    return cell


def _natural_width(matrix: list[list[Text]]) -> int:
    """Columns at their widest cell line, and between two columns the table's padding on both
    sides plus the (blank) column separator of ``box.SIMPLE_HEAD``."""
    widths = [
        max(max(len(line) for line in cell.plain.split("\n")) for cell in column)
        for column in zip(*matrix, strict=True)
    ]
    return sum(widths) + 3 * (len(widths) - 1)
