"""A benchmark of reviewed papers: each paper's text with the human reviewers' ratings and the
final decision, read from a folder for ``labtui review --calibrate DIR``.

The folder holds one ratings table, in either of two formats (found by name):

**The AI Scientist's reviewer benchmark** (its ``review_iclr_bench`` folder): a tab-separated
file, any single ``*.tsv`` (there: ``ratings_subset.tsv``), whose header is ``paper_id``, then one
column per human reviewer (named ``0`` to ``6`` there; any number of them), then ``decision``::

    paper_id<TAB>0<TAB>1<TAB>2<TAB>3<TAB>4<TAB>5<TAB>6<TAB>decision
    xZ6H7wydGl<TAB>5.0<TAB>5.0<TAB>6.0<TAB><TAB><TAB><TAB><TAB>Accept (Poster)

The rating columns are the reviewers' Overall ratings (1 to 10, written ``6.0`` or ``6``; blank
where a paper had fewer reviewers). A decision is ``Accept (Oral)``, ``Accept (Poster)``,
``Accept (Spotlight)`` or ``Accept`` (all counted as Accept), ``Reject``, or ``Unknown``: as in
The AI Scientist's ``iclr_analysis.py``, a row with an Unknown decision is left out (and
counted). The paper texts lie beside the table as ``iclr_parsed/<paper_id>.txt`` (or as
``papers/<paper_id>.txt``, ``.md`` or ``.pdf``).

**labtui's CSV**: ``benchmark.csv``, comma-separated with a header row::

    paper_id,decision,ratings,paper,venue
    p01,accept,6;8;5,,ICLR 2022
    p02,Reject,3;5,pdfs/second.pdf,ICLR 2022

- ``paper_id`` (required): the paper's name, unique in the table.
- ``decision`` (required): ``accept`` or ``reject`` in any case (the labels of the TSV above
  are accepted too; ``unknown`` leaves the row out).
- ``ratings`` (required, may be empty): the human reviewers' Overall ratings, 1 to 10,
  separated by ``;``.
- ``paper`` (optional): the paper's file, relative to the folder; when the column is absent
  or empty, ``papers/<paper_id>.txt``, ``.md`` or ``.pdf`` (the first that exists).
- ``venue`` (optional): where it was reviewed, e.g. ``ICLR 2022``; when every row names the same
  venue, it names the benchmark. ``title`` (optional) is read and ignored.

A paper is text (``.txt``, ``.md``, read as UTF-8) or a PDF (read as the reviewer reads any PDF,
``core.review.reviewer.read_paper``). Any problem is a ``LabtuiError`` naming the table, the line and
the paper: a row with the wrong number of columns, a rating that is not a number from 1 to 10,
an unknown decision, a paper_id repeated with other values (a row repeated word for word is
left out and counted), a paper file not found (where it was looked for; with
``skip_missing`` such rows are left out and counted instead), a folder with no table or with
both, an empty table, or a header without the required columns.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabtuiError
from .reviewer import read_paper

CSV_NAME = "benchmark.csv"
TSV_FORMAT = "ai-scientist-tsv"
CSV_FORMAT = "labtui-csv"
LOWEST_RATING, HIGHEST_RATING = 1.0, 10.0
# The decision labels a table may use (any case), and what each counts as; None: left out.
DECISIONS: dict[str, str | None] = {
    "accept": "Accept",
    "accept (oral)": "Accept",
    "accept (poster)": "Accept",
    "accept (spotlight)": "Accept",
    "reject": "Reject",
    "unknown": None,
}
DECISION_LABELS = "Accept (Oral), Accept (Poster), Accept (Spotlight), Accept, Reject, Unknown"
CSV_REQUIRED = ("paper_id", "decision", "ratings")
CSV_OPTIONAL = ("paper", "venue", "title")
PAPER_SUFFIXES = (".txt", ".md", ".pdf")
SKIP_HINT = "or pass --skip-missing to leave such rows out (they are counted)"


@dataclass(frozen=True)
class BenchmarkPaper:
    """One row of the table whose paper was found."""

    paper_id: str
    decision: str  # "Accept" or "Reject"
    ratings: tuple[float, ...]
    source: Path
    line: int
    venue: str = ""

    @property
    def accepted(self) -> bool:
        return self.decision == "Accept"

    @property
    def human_mean(self) -> float | None:
        """The human reviewers' mean Overall rating; None when the row has no rating."""
        return sum(self.ratings) / len(self.ratings) if self.ratings else None

    def text(self) -> str:
        """The paper's text: a text file as it is, a PDF as the reviewer reads one."""
        if self.source.suffix.lower() == ".pdf":
            return read_paper(self.source)
        try:
            return self.source.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise LabtuiError(
                f"cannot read the paper {self.source}: {exc.strerror or exc}",
                "make the file readable, or remove its row from the table",
            ) from None


@dataclass(frozen=True)
class Benchmark:
    folder: Path
    table: Path
    format: str
    papers: list[BenchmarkPaper]
    unknown_decision: int = 0  # rows left out: the decision is Unknown
    missing_paper: int = 0  # rows left out (skip_missing): no paper file
    duplicate_row: int = 0  # rows left out: the same as an earlier row, word for word

    @property
    def default_name(self) -> str:
        """The venue every row names, else the folder's name."""
        venues = {paper.venue for paper in self.papers}
        if len(venues) == 1 and "" not in venues:
            return venues.pop()
        return self.folder.resolve().name


@dataclass(frozen=True)
class _Row:
    """A data row as written: its cells, not yet checked."""

    line: int
    paper_id: str
    decision: str
    ratings: list[tuple[str, str]]  # (column, text)
    paper: str = ""
    venue: str = ""


def load_benchmark(folder: Path, *, skip_missing: bool = False) -> Benchmark:
    """The benchmark in ``folder``: its usable papers in table order, and the rows left out."""
    folder = Path(folder)
    table, kind = find_table(folder)
    rows = _tsv_rows(table) if kind == TSV_FORMAT else _csv_rows(table)
    if not rows:
        raise LabtuiError(
            f"{table} has a header but no rows",
            "add one row per paper (see the benchmark formats in docs/review.md)",
        )
    papers: list[BenchmarkPaper] = []
    seen: dict[str, _Seen] = {}
    unknown = missing = repeated = 0
    for row in rows:
        where = f"{table} line {row.line}" + (f" (paper_id {row.paper_id})" if row.paper_id else "")
        decision = _decision(row.decision, where)
        ratings = tuple(_rating(column, text, where) for column, text in row.ratings if text)
        if _repeated(_Seen(row.line, decision, ratings), row.paper_id, seen, where):
            repeated += 1
        elif decision is None:
            unknown += 1
        elif (source := _paper_file(folder, row, kind, where, skip_missing)) is None:
            missing += 1
        else:
            papers.append(
                BenchmarkPaper(row.paper_id, decision, ratings, source, row.line, row.venue)
            )
    if not papers:
        raise LabtuiError(
            f"{table}: no paper left to review ({unknown} row(s) with decision Unknown, "
            f"{missing} without a paper file)",
            "add papers with a decision of Accept or Reject and their text",
        )
    return Benchmark(folder, table, kind, papers, unknown, missing, repeated)


def find_table(folder: Path) -> tuple[Path, str]:
    """The folder's one ratings table and its format."""
    if not folder.is_dir():
        raise LabtuiError(
            f"benchmark folder not found: {folder}",
            "give a folder holding a ratings table (benchmark.csv or a .tsv) and the papers",
        )
    tsvs = sorted(path for path in folder.glob("*.tsv") if path.is_file())
    own = folder / CSV_NAME
    if own.is_file() and tsvs:
        raise LabtuiError(
            f"{folder} holds two ratings tables: {CSV_NAME} and {tsvs[0].name}",
            "keep one of them in the folder (move the other away)",
        )
    if len(tsvs) > 1:
        raise LabtuiError(
            f"{folder} holds {len(tsvs)} .tsv tables: {', '.join(p.name for p in tsvs)}",
            "keep one ratings table in the folder (e.g. ratings_subset.tsv)",
        )
    if own.is_file():
        return own, CSV_FORMAT
    if tsvs:
        return tsvs[0], TSV_FORMAT
    raise LabtuiError(
        f"{folder} holds no ratings table",
        f"add {CSV_NAME} (paper_id,decision,ratings) or The AI Scientist's ratings_subset.tsv "
        "with its iclr_parsed/ folder",
    )


# -- the two tables -------------------------------------------------------------------------------


def _lines(table: Path) -> list[str]:
    try:
        return table.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LabtuiError(
            f"cannot read the ratings table {table}: {exc}", "save it as UTF-8 text"
        ) from None


def _tsv_rows(table: Path) -> list[_Row]:
    lines = _lines(table)
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not numbered:
        raise LabtuiError(f"{table} is empty", _TSV_SHAPE)
    header_line, header_text = numbered[0]
    header = [cell.strip() for cell in header_text.split("\t")]
    if len(header) < 3 or header[0] != "paper_id" or header[-1] != "decision":
        raise LabtuiError(
            f"{table} line {header_line}: the header is {header_text!r}; it must be paper_id, "
            "then one column per reviewer's rating, then decision, separated by tabs",
            _TSV_SHAPE,
        )
    rows = []
    for number, text in numbered[1:]:
        cells = [cell.strip() for cell in text.split("\t")]
        if len(cells) != len(header):
            raise LabtuiError(
                f"{table} line {number} (paper_id {cells[0]}): {len(cells)} tab-separated "
                f"columns, the header has {len(header)}",
                _TSV_SHAPE,
            )
        ratings = list(zip(header[1:-1], cells[1:-1], strict=True))
        rows.append(_Row(number, cells[0], cells[-1], ratings))
    return rows


_TSV_SHAPE = (
    "each line is the paper_id, one column per reviewer's rating (blank when the paper had fewer "
    "reviewers) and the decision, separated by tabs, as in The AI Scientist's ratings_subset.tsv"
)


def _csv_rows(table: Path) -> list[_Row]:
    reader = csv.reader(_lines(table))
    header: list[str] = []
    rows = []
    for cells in reader:
        cells = [cell.strip() for cell in cells]
        if not any(cells):
            continue
        if not header:
            header = _csv_header(table, reader.line_num, cells)
            continue
        line = reader.line_num
        if len(cells) != len(header):
            raise LabtuiError(
                f"{table} line {line} (paper_id {cells[0]}): {len(cells)} columns, the header "
                f"has {len(header)} ({','.join(header)})",
                "write one value per column (an empty one as nothing between two commas); "
                "quote a value that holds a comma",
            )
        value = dict(zip(header, cells, strict=True))
        ratings = [("ratings", text.strip()) for text in value["ratings"].split(";")]
        rows.append(
            _Row(
                line,
                value["paper_id"],
                value["decision"],
                ratings,
                value.get("paper", ""),
                value.get("venue", ""),
            )
        )
    if not header:
        raise LabtuiError(f"{table} is empty", f"write the header {','.join(CSV_REQUIRED)}")
    return rows


def _csv_header(table: Path, line: int, cells: list[str]) -> list[str]:
    known = CSV_REQUIRED + CSV_OPTIONAL
    missing = [name for name in CSV_REQUIRED if name not in cells]
    unknown = [name for name in cells if name not in known]
    if missing or unknown:
        problem = f"lacks {', '.join(missing)}" if missing else f"has unknown {', '.join(unknown)}"
        raise LabtuiError(
            f"{table} line {line}: the header {problem}",
            f"the columns are {', '.join(CSV_REQUIRED)} (required) and "
            f"{', '.join(CSV_OPTIONAL)} (optional), e.g. paper_id,decision,ratings",
        )
    return cells


# -- one row --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Seen:
    """What a row said about its paper."""

    line: int
    decision: str | None
    ratings: tuple[float, ...]


def _repeated(row: _Seen, paper_id: str, seen: dict[str, _Seen], where: str) -> bool:
    """Whether the row repeats an earlier one word for word (it is left out, as The AI
    Scientist's analysis drops duplicate rows); a paper_id again with other values is an error."""
    if not paper_id:
        raise LabtuiError(f"{where}: the paper_id is empty", "name every paper in its first column")
    earlier = seen.setdefault(paper_id, row)
    if earlier is row:
        return False
    if (earlier.decision, earlier.ratings) == (row.decision, row.ratings):
        return True
    raise LabtuiError(
        f"{where}: paper_id {paper_id} is already on line {earlier.line}, with other ratings or "
        "another decision",
        "give each paper one row",
    )


def _decision(label: str, where: str) -> str | None:
    key = " ".join(label.lower().split())
    if key not in DECISIONS:
        raise LabtuiError(
            f"{where}: unknown decision {label!r}", f"write one of: {DECISION_LABELS}"
        )
    return DECISIONS[key]


def _rating(column: str, text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not LOWEST_RATING <= value <= HIGHEST_RATING:  # also false for nan
        raise LabtuiError(
            f"{where}: rating {text!r} in column {column} is not a number from "
            f"{LOWEST_RATING:g} to {HIGHEST_RATING:g}",
            "write each human reviewer's Overall rating as a number from 1 to 10 "
            "(leave a rating column blank when the paper had fewer reviewers)",
        )
    return value


def _paper_file(folder: Path, row: _Row, kind: str, where: str, skip_missing: bool) -> Path | None:
    """The row's paper file; None (skip_missing) or an error naming where it was looked for."""
    candidates = _candidates(folder, row, kind)
    for path in candidates:
        if path.is_file() and path.stat().st_size > 0:
            return path
    if skip_missing:
        return None
    empty = [path for path in candidates if path.is_file()]
    looked = ", ".join(_shown(path, folder) for path in candidates)
    said = f" ({', '.join(p.name for p in empty)} is empty)" if empty else ""
    raise LabtuiError(
        f"{where}: no paper text; looked for {looked} in {folder}{said}",
        f"put the paper's text or PDF there, {SKIP_HINT}",
    )


def _shown(path: Path, folder: Path) -> str:
    """``path`` as the table names it: relative to the folder when it lies inside."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def _candidates(folder: Path, row: _Row, kind: str) -> list[Path]:
    if row.paper:
        return [folder / row.paper]
    papers = [folder / "papers" / f"{row.paper_id}{suffix}" for suffix in PAPER_SUFFIXES]
    if kind == TSV_FORMAT:
        return [folder / "iclr_parsed" / f"{row.paper_id}.txt", *papers]
    return papers
