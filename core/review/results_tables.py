"""Results tables in a paper's text, as the reviewer reads it: tables found in the reader's
Markdown-ish rows (``a | b | c``) and in plain text as other extractors give it (a row label
followed by numbers separated by spaces), with their captions; and the metric a column, a row or
a caption names (accuracy-like values have a maximum, loss-like ones cannot be negative; signed
differences are neither). What ``core.review.fabricate`` alters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import islice

# -- what a metric is, by its name ----------------------------------------------------------------

# A name with one of these words measures a difference or a signed quantity: never altered.
SIGNED_WORDS = ("δ", "Δ", "delta", "improvement", "gain", "change", "diff", "difference", "drop")
# Values that cannot be negative: made negative.
NONNEGATIVE_WORDS = (
    "loss", "error", "err", "perplexity", "ppl", "mse", "rmse", "mae", "nll", "fid", "wer",
    "cer", "ece", "bpd", "bpc", "latency", "runtime", "time", "regret", "divergence",
)  # fmt: skip
# Values with a maximum (1, or 100 %): raised above it.
BOUNDED_WORDS = (
    "accuracy", "acc", "f1", "auc", "auroc", "auprc", "precision", "recall", "iou", "miou",
    "map", "bleu", "rouge", "meteor", "exact match", "em", "top-1", "top-5", "top1", "top5",
    "success rate", "win rate", "dice", "specificity", "sensitivity", "ndcg", "mrr", "hit rate",
)  # fmt: skip

NUMBER = re.compile(r"(?<![\w.])[-−]?(?:\d+\.\d+|\d+|\.\d+)(?!\w)")
# A cell that holds a value: digits with the marks results carry (± std, %, bold, daggers).
VALUE_CELL = re.compile(r"[\s*_()\[\]{}†‡§±%+/,\-−–0-9.^]*")
PM = ("±", "+/-", "+-")
SEPARATOR_ROW = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*")
CAPTION = re.compile(r"\s*[*_]*\s*table\s+[0-9ivx]+\s*[:.]", re.IGNORECASE)
HEADING = re.compile(r"\s*#+\s")
REFERENCES = re.compile(r"\s*#*\s*(\d+\s+)?(references|bibliography)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Metric:
    kind: str  # "bounded" (has a maximum) or "nonnegative"
    word: str  # the word of its name that said so ("accuracy", "loss")


def metric_of(name: str) -> Metric | None:
    """What a column's (or row's, or caption's) name says its values are; None: not known, or a
    signed quantity, which no value makes impossible by definition."""

    def said(word: str) -> re.Match[str] | None:
        return re.search(rf"(?<![a-z]){re.escape(word)}(?![a-z])", name, re.IGNORECASE)

    if any(said(word) for word in SIGNED_WORDS):
        return None
    for kind, words in (("nonnegative", NONNEGATIVE_WORDS), ("bounded", BOUNDED_WORDS)):
        for word in words:
            if found := said(word):
                return Metric(kind, found.group())  # as the paper writes it: "F1", "Acc"
    return Metric("bounded", "percentage") if "%" in name else None


def caption_metric(caption: str) -> Metric | None:
    """The one metric a caption names ("Test accuracy on two moons"), None when it names none or
    several: a caption that names accuracy and loss does not say which column is which."""
    words = {m.word.lower(): m for part in caption_parts(caption) if (m := metric_of(part))}
    return next(iter(words.values())) if len(words) == 1 else None


def caption_parts(caption: str) -> list[str]:
    """A caption's listed quantities: "Speed and accuracy, per model" → three parts."""
    return re.split(r"[,;]|\band\b", caption)


# -- tables in text -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    text: str
    start: int  # where it stands in its line
    end: int

    @property
    def is_value(self) -> bool:
        return any(c.isdigit() for c in self.text) and VALUE_CELL.fullmatch(self.text) is not None


@dataclass(frozen=True)
class Row:
    line: int  # index in the text's lines
    cells: tuple[Cell, ...]  # the row's label first: a name, a seed or a year, never a result

    @property
    def label(self) -> str:
        return self.cells[0].text


@dataclass
class Table:
    number: int  # 1-based, in the order of the text
    lines: range  # the whole block, header included
    rows: list[Row]
    header: list[str] = field(default_factory=list)
    caption: str = ""

    def column(self, row: Row, index: int) -> str:
        """The header's name for a row's ``index``-th cell ("" when the header does not say)."""
        if len(self.header) == len(row.cells):
            return self.header[index]
        if len(self.header) == len(row.cells) - 1 and index > 0:  # no name over the labels
            return self.header[index - 1]
        return ""


def pipe_cells(line: str) -> tuple[Cell, ...] | None:
    """A row of the reader's tables ("a | b | c"), or None."""
    if "|" not in line or SEPARATOR_ROW.fullmatch(line):
        return None
    bars = [i for i, char in enumerate(line) if char == "|"]
    spans = list(zip([-1, *bars], [*bars, len(line)], strict=True))
    # "| a | b |" has no cell before its first bar nor after its last; "a || c" has an empty one
    if not line[: bars[0]].strip():
        spans = spans[1:]
    if not line[bars[-1] + 1 :].strip():
        spans = spans[:-1]
    cells = []
    for before, after in spans:
        text = line[before + 1 : after]
        start = before + 1 + len(text) - len(text.lstrip())
        cells.append(Cell(text.strip(), start, start + len(text.strip())))
    return tuple(cells) if len(cells) >= 2 else None


def plain_cells(line: str) -> tuple[Cell, ...] | None:
    """A row of a plain-text table as other extractors give it: a label, then at least two
    numbers separated by spaces ("Wide MLP 93.1 ± 0.4 0.92 0.21"); a sentence is none."""
    tokens = [Cell(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", line)]
    first_value = len(tokens)
    while first_value > 0 and (
        tokens[first_value - 1].is_value or tokens[first_value - 1].text in (*PM, "%")
    ):
        first_value -= 1
    values = _joined_values(tokens[first_value:])
    label = tokens[:first_value]
    if len(values) < 2 or not label or not any(c.isalpha() for t in label for c in t.text):
        return None
    head = Cell(line[label[0].start : label[-1].end], label[0].start, label[-1].end)
    return (head, *values)


def _joined_values(tokens: list[Cell]) -> list[Cell]:
    """Tokens joined into value cells: "93.1 ± 0.4", "93.1 (0.4)" and "93.1 %" are one each."""
    cells: list[Cell] = []
    joining = False
    for token in tokens:
        std = token.text.startswith(("(", *PM)) or token.text == "%"
        if cells and (joining or std):
            last = cells[-1]
            cells[-1] = Cell(last.text + " " + token.text, last.start, token.end)
        else:
            cells.append(token)
        joining = token.text in PM
    return cells


def find_tables(lines: list[str]) -> list[Table]:
    """Blocks of rows with numbers: pipe rows (the reader's tables), or plain rows of a label and
    numbers (two or more such rows, or one beside a "Table N:" caption)."""
    blocks: list[range] = []
    index = 0
    while index < len(lines):
        block = _block_at(lines, index)
        if block is None:
            index += 1
            continue
        blocks.append(block)
        index = block.stop
    captions = _captions(lines, blocks)
    tables: list[Table] = []
    for block, caption in zip(blocks, captions, strict=True):
        table = _table_of(lines, block, caption, len(tables) + 1)
        if table is not None:
            tables.append(table)
    return tables


def _block_at(lines: list[str], start: int) -> range | None:
    for parse in (pipe_cells, plain_cells):
        if parse(lines[start]) is None:
            continue
        end = start
        while end < len(lines) and (
            parse(lines[end]) is not None
            or (parse is pipe_cells and _inside_pipe_table(lines, end))
        ):
            end += 1
        return range(start, end)
    return None


def _inside_pipe_table(lines: list[str], index: int) -> bool:
    """A separator row, or a group's name between rows ("Baselines", "Ours")."""
    line = lines[index].strip()
    if SEPARATOR_ROW.fullmatch(line):
        return True
    short = 0 < len(line.split()) <= 4 and not line.endswith((".", ":"))
    follows = index + 1 < len(lines) and pipe_cells(lines[index + 1]) is not None
    return short and follows and not (CAPTION.match(line) or HEADING.match(line))


def _table_of(lines: list[str], block: range, caption: str, number: int) -> Table | None:
    piped = pipe_cells(lines[block.start]) is not None
    parse = pipe_cells if piped else plain_cells
    rows = [Row(i, cells) for i in block if (cells := parse(lines[i])) is not None]
    numeric = [row for row in rows if any(cell.is_value for cell in row.cells[1:])]
    if not numeric or (not piped and len(numeric) < 2 and not caption):
        return None
    header_rows = [row for row in rows if row.line < numeric[0].line and row not in numeric]
    if header_rows:
        header = [cell.text for cell in header_rows[-1].cells]
    else:
        header = [] if piped else _plain_header(lines, block.start)
    return Table(number, block, numeric, header, caption)


def _captions(lines: list[str], blocks: list[range]) -> list[str]:
    """Each block's "Table N:" caption: the one set just above it (within three non-blank
    lines), or else one set just below it that no block below claimed."""
    captions = [i for i, line in enumerate(lines) if CAPTION.match(line)]
    above: dict[int, int] = {}  # block number → its caption's line
    for caption in captions:
        after = _non_blank(lines, caption + 1)
        number = next((n for n, block in enumerate(blocks) if block.start in after), None)
        if number is not None and number not in above:
            above[number] = caption
    claimed = set(above.values())
    found = []
    for number, block in enumerate(blocks):
        below = _non_blank(lines, block.stop)
        free = [i for i in below if i in captions and i not in claimed]
        at = above.get(number, free[0] if free else None)
        found.append("" if at is None else lines[at].strip())
    return found


def _non_blank(lines: list[str], start: int, count: int = 3) -> list[int]:
    """The first ``count`` non-blank lines from ``start`` on."""
    return list(islice((i for i in range(start, len(lines)) if lines[i].strip()), count))


def _plain_header(lines: list[str], start: int) -> list[str]:
    """The column names of a plain-text table: the line just above it, split at runs of two or
    more spaces (layout-preserving extractors) or else at single spaces, "(%)" kept with its
    name; [] when that line is a sentence, a caption or a heading."""
    if start == 0 or not (line := lines[start - 1].strip()):
        return []
    if CAPTION.match(line) or HEADING.match(line) or line.endswith("."):
        return []
    wide = re.split(r"\s{2,}|\t", line)
    if len(wide) > 1:
        return wide
    names: list[str] = []
    for token in line.split():
        if names and token.startswith(("(", "[")):
            names[-1] += " " + token
        else:
            names.append(token)
    return names
