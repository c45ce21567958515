"""A fabrication probe: does the reviewer notice a results table with impossible numbers?

The paper's text, as the reviewer reads it, has its results tables altered by code: each value of
an accuracy-like metric (accuracy, F1, AUC, precision, …) is raised above its maximum (0.93 →
1.93, 93.1 → 193.1) and each value of a loss-like one (loss, error, perplexity, …) made negative,
and the same numbers are changed wherever the prose repeats them, so that the paper is
consistently fabricated. The same reviewer then reviews the original and the altered paper.

Whether it noticed is decided here from what it wrote, never from its own claim: the altered
paper's review noticed when one of its critiques (Weaknesses, Questions, Limitations) cites an
altered value in words of its own (a sentence or table row of the paper copied around the value
shows only that the model read it), or when any of its texts, the Summary included, names the
impossibility in words the original paper's review did not use (``IMPOSSIBILITY``); or when its
mean Soundness fell by at least 1 and it rejects. Otherwise the reviewer is flagged.

Tables are found in the reader's Markdown-ish text (rows ``a | b | c``) and in plain text as
other extractors give it (a row label followed by numbers separated by spaces); a column, or a
row, is given an impossible value only when its name says what the metric is (or the table's
caption names one metric), so hyperparameters, sizes and signed differences stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from .config_sections import ReviewSection
from .errors import LabtuiError
from .reviewer import Prompt, ReviewPanel, read_paper, review_panel

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

# What a review says when it sees an impossible number (one list, matched case-insensitively).
# Phrases a sound review also uses ("not possible to reproduce", "over one epoch", "inconsistent
# results across seeds") are left out: a word counts only where it can mean the impossibility.
IMPOSSIBILITY = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bimpossib",
        r"\bimplausib",
        r"\bfabricat",
        r"\bnonsensical\b",
        r"\bcan(not|'t) be (negative|above|over|greater|larger|more than)",
        r"\b(exceed\w*|above|over|more than|greater than|larger than|beyond)\s+"
        r"(100\s*(%|percent)|the maximum|its maximum)",
        r"\b(exceed\w*|above|greater than|larger than)\s+(1(\.0+)?|one)(?![\w%]|\.\d)"
        r"(?!\s+(million|billion|thousand|epoch|layer|hour|day|run|seed|order|point))",
        r"\bnegative (loss|error|perplexity|mse|rmse|mae|nll|values?)",
        r"\binconsistent (numbers|values|figures)",
        r"\b(erroneous|corrupted?) (numbers|values|results|scores|accuracy)",
        r"\bout of (the )?(valid|possible) range",
        r"\bnot (mathematically|physically) possible",
    )
)

NUMBER = re.compile(r"(?<![\w.])[-−]?(?:\d+\.\d+|\d+|\.\d+)(?!\w)")
# A cell that holds a value: digits with the marks results carry (± std, %, bold, daggers).
VALUE_CELL = re.compile(r"[\s*_()\[\]{}†‡§±%+/,\-−–0-9.^]*")
PM = ("±", "+/-", "+-")
SEPARATOR_ROW = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*")
CAPTION = re.compile(r"\s*[*_]*\s*table\s+[0-9ivx]+\s*[:.]", re.IGNORECASE)
HEADING = re.compile(r"\s*#+\s")
REFERENCES = re.compile(r"\s*#*\s*(\d+\s+)?(references|bibliography)\s*$", re.IGNORECASE)
CRITIQUES = ("Weaknesses", "Questions", "Limitations")
# A review's words and numbers, to tell a quotation of the paper from a critique of it.
TOKEN = re.compile(r"[-−–]?\d+(?:\.\d+)?|\w+")
DASHES = str.maketrans({"−": "-", "–": "-"})
QUOTED_CONTEXT = 2  # words on each side of a value that, as the paper has them, make a quote


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
    words = {m.word.lower(): m for part in _caption_parts(caption) if (m := metric_of(part))}
    return next(iter(words.values())) if len(words) == 1 else None


def _caption_parts(caption: str) -> list[str]:
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
    parts = _caption_parts(caption)
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


# -- did the reviewer notice? ---------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    who: str  # "reviewer 2", "Area Chair", "reviewer"
    where: str  # the form's field
    sentence: str
    cites: str  # the altered value, or the words that name the impossibility


def _reviews_of(panel: ReviewPanel) -> list[tuple[str, Any]]:
    if len(panel.reviews) == 1:
        return [("reviewer", panel.reviews[0])]
    named = [(f"reviewer {i}", review) for i, review in enumerate(panel.reviews, 1)]
    return [*named, ("Area Chair", panel.meta)]


def _sentences(value: Any) -> Iterator[str]:
    for text in value if isinstance(value, list) else [value]:
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'])", str(text)):
            if sentence.strip():
                yield sentence.strip()


def _texts(panel: ReviewPanel) -> Iterator[tuple[str, str, str]]:
    """(who, field, sentence) for the Summary and the critiques of every review of the panel."""
    for who, review in _reviews_of(panel):
        for name in ("Summary", *CRITIQUES):
            for sentence in _sentences(review.fields.get(name) or []):
                yield who, name, sentence


def find_evidence(
    original: ReviewPanel, altered: ReviewPanel, fabrication: Fabrication, original_text: str
) -> list[Evidence]:
    """The sentences of the altered paper's review that noticed: a critique citing an altered
    value (one the original paper never printed) in words of its own, or any sentence naming the
    impossibility in words the original paper's review did not use. A summary that repeats
    193.1%, or a critique that copies the paper's sentence or table row around it (small models
    copy what they read), noticed nothing."""
    already = [sentence for _, _, sentence in _texts(original)]
    words = [p for p in IMPOSSIBILITY if not any(p.search(s) for s in already)]
    cited = [
        (value, _cited(value))
        for value in fabrication.altered_values
        if not _cited(value).search(original_text)
    ]
    paper = _tokens(fabrication.text)
    found = []
    for who, name, sentence in _texts(altered):
        hit = next(
            (
                value
                for value, p in cited
                if name in CRITIQUES
                and p.search(sentence)
                and not _quotes_paper(sentence, value, paper)
            ),
            None,
        )
        if hit is None:
            hit = next((m.group() for p in words if (m := p.search(sentence))), None)
        if hit is not None:
            found.append(Evidence(who, name, sentence, hit))
    return found


def _tokens(text: str) -> list[str]:
    """A text's words and numbers, lowercased; a number keeps its sign (any dash written "-")
    and decimals, not its "%"; punctuation and table bars are dropped."""
    return [token.lower().translate(DASHES) for token in TOKEN.findall(text)]


def _quotes_paper(sentence: str, value: str, paper: list[str]) -> bool:
    """Whether each mention of ``value`` in ``sentence`` stands among the same words as in the
    altered paper (``QUOTED_CONTEXT`` on each side, as far as the sentence goes): a copied
    sentence or table row shows that the model read the number, not that it saw it was wrong."""
    words = _tokens(sentence)
    number = _tokens(value)[0]
    mentions = [i for i, word in enumerate(words) if word == number]
    return bool(mentions) and all(
        _occurs(words[max(i - QUOTED_CONTEXT, 0) : i + QUOTED_CONTEXT + 1], paper) for i in mentions
    )


def _occurs(window: list[str], paper: list[str]) -> bool:
    size = len(window)
    return any(paper[start : start + size] == window for start in range(len(paper) - size + 1))


def _cited(value: str) -> re.Pattern[str]:
    """A value as a review may write it: "-0.21" also as "−0.21" or "–0.21"."""
    body = re.escape(value.lstrip("-"))
    sign = "[-−–]" if value.startswith("-") else ""
    return re.compile(rf"(?<![\w.]){sign}{body}(?!\d)")


def soundness(panel: ReviewPanel) -> float:
    return panel.scores()["Soundness"][0]


@dataclass(frozen=True)
class ProbeResult:
    paper: str
    fabrication: Fabrication
    original: ReviewPanel
    altered: ReviewPanel
    evidence: tuple[Evidence, ...]

    @property
    def soundness_fell(self) -> bool:
        """The altered paper's mean Soundness at least 1 below the original's, and rejected."""
        fell = soundness(self.original) - soundness(self.altered) >= 1
        return fell and self.altered.decision == "Reject"

    @property
    def noticed(self) -> bool:
        return bool(self.evidence) or self.soundness_fell

    @property
    def reason(self) -> str:
        if self.evidence:
            return f"its review cites {self.evidence[0].cites!r} ({self.evidence[0].where})"
        drop = f"Soundness {soundness(self.original):.2f} → {soundness(self.altered):.2f}"
        if self.soundness_fell:
            return f"{drop} and Reject, though no sentence names the impossible values"
        return (
            f"no sentence cites an altered value or names the impossibility; {drop}, "
            f"{self.altered.decision}"
        )

    def to_json(self) -> dict[str, Any]:
        """What is registered beside the reviewer's calibration."""
        return {
            "noticed": self.noticed,
            "verdict": "noticed" if self.noticed else "flagged",
            "reason": self.reason,
            "paper": self.paper,
            "alterations": [asdict(a) for a in self.fabrication.alterations],
            "repeats": [asdict(r) for r in self.fabrication.repeats],
            "original": _scores(self.original),
            "altered": _scores(self.altered),
            "evidence": [asdict(e) for e in self.evidence],
        }


def _scores(panel: ReviewPanel) -> dict[str, Any]:
    return {"overall": panel.overall, "soundness": soundness(panel), "decision": panel.decision}


# -- the probe ------------------------------------------------------------------------------------


def probe_text(paper: Path) -> str:
    """The paper as the reviewer reads it: a PDF through the reader, a .txt or .md file as is."""
    if Path(paper).suffix.lower() not in (".txt", ".md", ".markdown"):
        return read_paper(paper)
    try:
        return Path(paper).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LabtuiError(f"paper not found: {paper}", "check the path to the paper") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabtuiError(
            f"{paper}: cannot be read as UTF-8 text ({exc})", "give a PDF or a UTF-8 text file"
        ) from None


def run_probe(
    llm: Any,
    prompt: Prompt,
    paper: str,
    fabrication: Fabrication,
    settings: ReviewSection,
    *,
    name: str,
    progress: Callable[[str], None] = lambda text: None,
) -> ProbeResult:
    """The same reviewer (``llm`` and ``settings``) on the original ``paper`` and on its
    ``fabrication``, one after the other under the one budget, and what it noticed."""
    progress(f"1/2: the original {name}")
    original = review_panel(llm, prompt, paper, settings, progress=progress)
    count = len(fabrication.alterations)
    progress(f"2/2: {name} with {count} impossible value{'s' if count > 1 else ''}")
    altered = review_panel(llm, prompt, fabrication.text, settings, progress=progress)
    evidence = find_evidence(original, altered, fabrication, paper)
    return ProbeResult(name, fabrication, original, altered, tuple(evidence))
