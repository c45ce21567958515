"""A paper consistently fabricated, by code: each value of an accuracy-like metric in its results
tables raised above its maximum (0.93 → 1.93, 93.1 → 193.1), each value of a loss-like one made
negative, and the same numbers changed wherever the prose repeats them. Only values whose column,
row or caption names the metric are altered (``core.review.results_tables``); a paper with no such table
is a clear error. The fabrication probe (``core.review.probe``) reviews the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import LabtuiError
from .results_tables import (
    HEADING,
    NUMBER,
    REFERENCES,
    Cell,
    Metric,
    Row,
    Table,
    caption_metric,
    caption_parts,
    find_tables,
    metric_of,
)

# -- altering -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alteration:
    table: int
    row: str
    column: str
    original: str
    altered: str
    why: str  # "accuracy above 100%", "negative loss"


@dataclass(frozen=True)
class Repeat:
    """A number of the table that the text repeats, changed there too."""

    original: str
    altered: str
    where: str  # the section it is in ("Abstract", "4 Results")


@dataclass(frozen=True)
class Fabrication:
    text: str
    alterations: tuple[Alteration, ...]
    repeats: tuple[Repeat, ...]
    tables: int

    @property
    def altered_values(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.altered for a in self.alterations))


@dataclass(frozen=True)
class _Change:
    """One number to replace in a line: where, by what, and the alteration it records."""

    line: int
    start: int
    end: int
    alteration: Alteration


def fabricate(text: str, source: str) -> Fabrication:
    """``text`` with the values of its results tables made impossible, and the same numbers
    changed where the prose repeats them. LabtuiError naming ``source`` when it has no table
    with a metric to alter."""
    lines = text.splitlines()
    tables = find_tables(lines)
    changes = [change for table in tables for change in _changes_in(table)]
    if not changes:
        raise _no_results_table(source, tables)
    for change in sorted(changes, key=lambda c: (c.line, -c.start)):
        line = lines[change.line]
        lines[change.line] = line[: change.start] + change.alteration.altered + line[change.end :]
    alterations = tuple(c.alteration for c in changes)
    in_tables = {i for table in tables for i in table.lines}
    repeats = _repeat_in_prose(lines, in_tables, alterations)
    ending = "\n" if text.endswith("\n") else ""
    return Fabrication("\n".join(lines) + ending, alterations, repeats, len(tables))


def _no_results_table(source: str, tables: list[Table]) -> LabtuiError:
    needs = (
        "the fabrication probe alters a results table: rows of numbers whose column or row "
        "(or the table's caption) names a metric such as accuracy, F1, AUC, loss or error"
    )
    if not tables:
        why = f"{source}: no table with numbers found in the text the reviewer reads"
    else:
        why = (
            f"{source}: {len(tables)} table(s) with numbers, but none names a metric that an "
            "impossible value can be given to"
        )
    return LabtuiError(
        f"{why}; {needs}",
        "probe a paper that reports its results in a table; `labtui review PAPER` without "
        "--probe reviews any paper",
    )


@dataclass(frozen=True)
class _Measured:
    """A value cell whose metric is known, and the name that said which (column, row, caption)."""

    row: Row
    index: int
    column: str
    metric: Metric
    named_by: str
    number: re.Match[str]

    @property
    def cell(self) -> Cell:
        return self.row.cells[self.index]

    @property
    def group(self) -> tuple[str, str]:
        """The values read on one scale: one metric under one name (a column, or the row of a
        table whose rows are the metrics)."""
        return self.named_by, self.metric.word.lower()


def _measured(table: Table) -> Iterator[_Measured]:
    caption = caption_metric(table.caption)
    for row in table.rows:
        for index, cell in enumerate(row.cells[1:], 1):
            number = NUMBER.search(cell.text)
            if not cell.is_value or number is None:
                continue
            column = table.column(row, index)
            names = [(column, metric_of(column)), (row.label, metric_of(row.label))]
            if not _caption_names(table.caption, column):
                names.append((table.caption, caption))
            for name, metric in names:
                if metric is not None:
                    yield _Measured(row, index, column, metric, name, number)
                    break


def _caption_names(caption: str, column: str) -> bool:
    """Whether the caption names this column as a quantity of its own, apart from its metric
    ("Speed and accuracy of …" for a column "Speed"; not "Test error on CIFAR" for "CIFAR")."""
    name = column.strip()
    said = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
    parts = caption_parts(caption)
    return bool(name) and any(said.search(part) and metric_of(part) is None for part in parts)


def _changes_in(table: Table) -> Iterator[_Change]:
    measured = list(_measured(table))
    percent = _percent_groups(measured)
    for value in measured:
        original = value.number.group()
        scale = 100 if value.group in percent else 1
        altered = _impossible(original, value.metric, scale)
        if altered is None:
            continue
        start = value.cell.start + value.number.start()
        alteration = Alteration(
            table.number,
            value.row.label or f"row {value.row.line + 1}",
            value.column or f"column {value.index + 1}",
            original,
            altered,
            _why(value.metric, scale),
        )
        yield _Change(value.row.line, start, start + len(original), alteration)


def _why(metric: Metric, scale: int) -> str:
    # "Acc" and "Loss" are capitalised by their header; "F1", "AUC", "mAP" stay as written
    word = metric.word
    if not (word.isupper() or word[1:] != word[1:].lower()):
        word = word.lower()
    if metric.kind == "nonnegative":
        return f"negative {word}"
    return f"{word} above {'100%' if scale == 100 else '1'}"


def _percent_groups(measured: list[_Measured]) -> set[tuple[str, str]]:
    """The groups of bounded values on a 0–100 scale: a "%" in a cell or in the name that named
    the metric (a caption's "%" says nothing of a column that names its own metric), or any
    value above 1. The others are fractions (0.93 → 1.93)."""
    groups: dict[tuple[str, str], list[_Measured]] = {}
    for value in measured:
        if value.metric.kind == "bounded":
            groups.setdefault(value.group, []).append(value)
    return {
        key
        for key, values in groups.items()
        if any("%" in v.cell.text or "%" in v.named_by for v in values)
        or any(float(v.number.group().replace("−", "-")) > 1 for v in values)
    }


def _impossible(original: str, metric: Metric, scale: int) -> str | None:
    """The value made impossible, written with the original's decimals; None when the original
    is not a value of that metric (negative, or above the maximum: the name misled)."""
    value = float(original.replace("−", "-"))
    decimals = len(original.partition(".")[2])
    if value < 0 or (metric.kind == "bounded" and (value > scale or value == 0)):
        return None
    if metric.kind == "nonnegative":
        altered = -value if value > 0 else -1.0
    else:
        altered = value + scale
    return f"{altered:.{decimals}f}"


def _repeat_in_prose(
    lines: list[str], in_tables: set[int], alterations: tuple[Alteration, ...]
) -> tuple[Repeat, ...]:
    """Change, in ``lines`` outside the tables and before the references, each number of the
    tables that the text repeats: decimals wherever they stand ("a loss of 0.21"), whole numbers
    only as percentages ("93%"), and a fraction also as its percentage (0.93 as "93%")."""
    replacements = _prose_replacements(alterations)
    if not replacements:
        return ()
    pattern = re.compile(
        "|".join(  # the longest first: "93.1%" is one repeat, not "93.1" and a "%"
            rf"(?<![\w.]){re.escape(original)}(?![\w]|\.\d)"
            for original in sorted(replacements, key=len, reverse=True)
        )
    )
    repeats: list[Repeat] = []
    section = ""
    for index, line in enumerate(lines):
        if REFERENCES.match(line):
            break
        if HEADING.match(line):
            section = line.lstrip("#").strip()
        if index in in_tables:
            continue

        def change(match: re.Match[str], where: str = section) -> str:
            altered = replacements[match.group()]
            repeats.append(Repeat(match.group(), altered, where or "the opening"))
            return altered

        lines[index] = pattern.sub(change, line)
    return tuple(repeats)


def _prose_replacements(alterations: tuple[Alteration, ...]) -> dict[str, str]:
    """original → altered as the prose writes them; the first alteration of a number wins."""
    replacements: dict[str, str] = {}
    for alteration in alterations:
        original, altered = alteration.original, alteration.altered
        if "." in original:
            replacements.setdefault(original, altered)
        replacements.setdefault(f"{original}%", f"{altered}%")
        if round(float(altered) - float(original), 9) == 1:  # a fraction raised above 1
            as_percent = _as_percent(original)
            replacements.setdefault(as_percent, f"{float(as_percent[:-1]) + 100:g}%")
    return replacements


def _as_percent(fraction: str) -> str:
    """0.93 → "93%", 0.931 → "93.1%"."""
    return f"{float(fraction) * 100:.{max(len(fraction.partition('.')[2]) - 2, 0)}f}%"
