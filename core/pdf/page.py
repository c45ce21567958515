"""A PDF page as the visual lines a reader sees, in reading order, with their typography
(``core.pdf.lines`` says what a fragment and a line are).

PyMuPDF gives lines of glyph runs (spans) grouped into blocks, in the order the PDF draws them.
This module turns them into:

- fragments: PyMuPDF's lines with their typography;
- the line numbers of review copies (a ruler of small numbers in a margin or the gutter, as
  lineno, ACL and ICML print them) left out, and text drawn at a slant (watermarks);
- one or two columns: a two-column page is read left column top to bottom, then the right one,
  with what spans both columns (title, wide figures) read where it stands;
- visual lines: the fragments of one block that share a baseline band, left to right.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .document import text_flags
from .lines import LETTER, Fragment, FragmentBox, Line, family

if TYPE_CHECKING:
    import pymupdf

# blocks this close (in ems) are lines of one paragraph that PyMuPDF split
LINE_GAP_EMS = 0.6
HANGING_INDENT_EMS = 0.5
JUSTIFIED_MIN_LINES = 3
# fonts that set mathematics (Computer Modern, AMS, Times and Latin Modern math, OpenType math)
MATH_FONT = re.compile(
    r"^(CM(MI|SY|EX|BSY|MIB)\d|MSBM|MSAM|EU(FM|SM|RM|EX)|RSFS|ztmcm|rtx|txsy|txex|txmi|pxsy|"
    r"NewTXMI|Symbol|.*Math)",
    re.IGNORECASE,
)
ITALIC_FONT = re.compile(r"(Italic|Oblique|-It\b|-Ital|CMTI|CMSL|-Regu?Ital)", re.IGNORECASE)
# a ruler of line numbers has at least this many numbers aligned on one x on a page
RULER_MIN_NUMBERS = 3
# a two-column page: at most this share of the text crosses the gutter, at least this on each side
SPANNING_MAX_SHARE = 0.4
COLUMN_MIN_SHARE = 0.2
# a line's direction is across or up the page when its cosine or sine is within this of 0
SLANT_TOLERANCE = 1e-3
FLAG_ITALIC = 2
FLAG_BOLD = 16


@dataclass
class _Unit(FragmentBox):
    """A block of one column: the fragments PyMuPDF grouped, split where columns split them."""

    order: int
    fragments: list[Fragment]
    column: int = 0


def page_lines(page: pymupdf.Page, page_number: int) -> list[Line]:
    """The page's visual lines in reading order, without line numbers of review copies."""
    flags = text_flags("dict")
    blocks = [b for b in page.get_text("dict", flags=flags)["blocks"] if b.get("type") == 0]
    fragment_blocks = [[f for f in map(_fragment, b["lines"]) if f] for b in blocks]
    numbers = _line_numbers([f for block in fragment_blocks for f in block])
    fragment_blocks = [[f for f in block if id(f) not in numbers] for block in fragment_blocks]
    units = [_Unit(i, block) for i, block in enumerate(fragment_blocks) if block]
    gutter = _gutter([f for unit in units for f in unit.fragments])
    if gutter is not None:
        units = _split_columns(units, gutter)
    lines: list[Line] = []
    for index, unit in enumerate(_reading_order(_regroup(units))):
        lines += [
            Line(page_number, index, band, unit.column) for band in _baseline_bands(unit.fragments)
        ]
    return lines


def _fragment(line: dict[str, Any]) -> Fragment | None:
    """The PyMuPDF line as a fragment, or None when it is blank or drawn at a slant."""
    spans = [s for s in line["spans"] if s["text"].strip()]
    text = " ".join("".join(s["text"] for s in line["spans"]).split())
    if not spans or not text or _slanted(line["dir"]):
        return None
    x0, y0, x1, y1 = line["bbox"]
    horizontal = abs(line["dir"][0] - 1.0) < 1e-3
    return Fragment(text, x0, y0, x1, y1, *_typography(spans), horizontal)


def _slanted(direction: tuple[float, float]) -> bool:
    """Drawn neither across nor up the page: a watermark or a stamp set diagonally over the
    text (The AI Scientist's "CAUTION!!! THIS PAPER WAS AUTONOMOUSLY GENERATED" at 30
    degrees), or a figure's tilted tick labels. None of it is text to read, and its box spans
    many baselines of the text it crosses, which would hide the headings there."""
    return min(abs(direction[0]), abs(direction[1])) > SLANT_TOLERANCE


def _typography(
    spans: list[dict[str, Any]],
) -> tuple[float, float, str, int, int, bool, int, int]:
    """size, top, font, letters, bold letters, italic, math and lowercase letters of a run of
    spans."""
    sizes: dict[float, int] = {}
    fonts: dict[str, int] = {}
    top = 0.0
    letters = bold = math = lowercase = 0
    italic = True
    for span in spans:
        text = span["text"]
        weight = len(text.strip())
        size = round(span["size"], 1)
        font = span["font"].split("+")[-1]
        sizes[size] = sizes.get(size, 0) + weight
        fonts[font] = fonts.get(font, 0) + weight
        if MATH_FONT.match(font):
            math += weight
        elif LETTER.search(text):
            top = max(top, size)
            letters += weight
            lowercase += sum(c.islower() for c in text)
            if span["flags"] & FLAG_BOLD or _is_bold(font):
                bold += weight
            italic = italic and bool(span["flags"] & FLAG_ITALIC or ITALIC_FONT.search(font))
    return (
        max(sizes, key=sizes.__getitem__),
        top or max(sizes),
        max(fonts, key=fonts.__getitem__),
        letters,
        bold,
        letters > 0 and italic,
        math,
        lowercase,
    )


def _is_bold(font: str) -> bool:
    name = font.lower()
    return "bold" in name or "-medi" in name or "black" in name or family(font).startswith("CMB")


def _line_numbers(fragments: list[Fragment]) -> set[int]:
    """The ids of the numbers of a line-number ruler: bare numbers aligned on one x (right-
    aligned like lineno's, or left-aligned), at least three on the page, with no words above or
    below them in their own x range (a table's column of numbers has its header above it)."""
    numbers = [f for f in fragments if f.text.isdigit() and f.horizontal]
    words = [f for f in fragments if f.has_letters]
    ruler: set[int] = set()
    for edge in ("x0", "x1"):
        for group in _aligned(numbers, edge):
            if len(group) < RULER_MIN_NUMBERS:
                continue
            left, right = min(n.x0 for n in group) - 1, max(n.x1 for n in group) + 1
            in_range = [w for w in words if w.x0 < right and w.x1 > left]
            if not any(_words_beside(number, in_range) for number in group):
                ruler |= {id(number) for number in group}
    return ruler


def _aligned(fragments: list[Fragment], edge: str) -> list[list[Fragment]]:
    groups: list[list[Fragment]] = []
    for fragment in sorted(fragments, key=lambda f: getattr(f, edge)):
        if groups and getattr(fragment, edge) - getattr(groups[-1][-1], edge) <= 1.0:
            groups[-1].append(fragment)
        else:
            groups.append([fragment])
    return groups


def _words_beside(number: Fragment, words: list[Fragment]) -> bool:
    reach = 1.5 * (number.y1 - number.y0) + 6
    return any(
        w.x0 < number.x1 + 1
        and w.x1 > number.x0 - 1
        and abs(w.middle - number.middle) < reach + (w.y1 - w.y0)
        for w in words
    )


@dataclass(frozen=True)
class _Gutter:
    """The space between two columns: from the left column's right margin to the right
    column's left margin."""

    left: float
    right: float

    @property
    def split(self) -> float:
        return (self.left + self.right) / 2


def _gutter(fragments: list[Fragment]) -> _Gutter | None:
    """The gutter of a two-column page, or None for one column."""
    text = [f for f in fragments if f.horizontal and f.has_letters]
    if not text:
        return None
    left_edge, right_edge = min(f.x0 for f in text), max(f.x1 for f in text)
    centre = (left_edge + right_edge) / 2
    weight = {id(f): len(f.text) for f in text}
    total = sum(weight.values())
    left = [f for f in text if f.x1 <= centre]
    right = [f for f in text if f.x0 >= centre]
    spanning = total - sum(weight[id(f)] for f in left + right)
    if (
        spanning > SPANNING_MAX_SHARE * total
        or sum(weight[id(f)] for f in left) < COLUMN_MIN_SHARE * total
        or sum(weight[id(f)] for f in right) < COLUMN_MIN_SHARE * total
    ):
        return None
    left_margin = _common_edge([f.x1 for f in left], max)
    right_margin = _common_edge([f.x0 for f in right], min)
    if left_margin >= right_margin:
        return _Gutter(centre, centre)
    return _Gutter(left_margin, right_margin)


def _common_edge(xs: list[float], pick: Any) -> float:
    counts = Counter(round(x) for x in xs)
    common = [x for x, n in counts.items() if n >= JUSTIFIED_MIN_LINES]
    return float(pick(common or [round(x) for x in xs]))


def _split_columns(units: list[_Unit], gutter: _Gutter) -> list[_Unit]:
    """Each unit in the column it sits in, or 0 when it spans the gutter (a title, a table or
    an equation as wide as the page); a PyMuPDF block that holds text of both columns becomes
    two units."""
    result: list[_Unit] = []
    for unit in units:
        left = [f for f in unit.fragments if (f.x0 + f.x1) / 2 < gutter.split]
        right = [f for f in unit.fragments if (f.x0 + f.x1) / 2 >= gutter.split]
        if _spans(unit.fragments, left, right, gutter):
            result.append(_Unit(unit.order, unit.fragments, 0))
        else:
            result += [
                _Unit(unit.order, part, column) for column, part in ((1, left), (2, right)) if part
            ]
    return result


def _spans(
    fragments: list[Fragment], left: list[Fragment], right: list[Fragment], gutter: _Gutter
) -> bool:
    """Whether a block spans the gutter: some of its text crosses it, or it sets text on both
    sides of it on one baseline with a gap other than the gutter (the cells of a wide table;
    two lines of the two columns are a gutter apart)."""
    if any(f.x0 < gutter.split - 3 and f.x1 > gutter.split + 3 for f in fragments):
        return True
    return any(
        abs(a.middle - b.middle) < (a.y1 - a.y0) / 2
        and abs((b.x0 - a.x1) - (gutter.right - gutter.left)) > 2
        for a in left
        for b in right
    )


def _reading_order(units: list[_Unit]) -> list[_Unit]:
    """Top to bottom on a one-column page; on a two-column page, between two things that span
    the gutter, the left column then the right one."""
    spanning = sorted((u for u in units if u.column == 0), key=lambda u: u.y0)
    if len(spanning) == len(units):
        return sorted(units, key=lambda u: (round(u.y0), u.x0))

    def key(unit: _Unit) -> tuple[int, int, float, float]:
        above = sum(1 for s in spanning if s is not unit and s.y1 <= unit.y0 + 1)
        rank = 2 if unit.column == 0 else unit.column - 1
        return (above, rank, unit.y0, unit.x0)

    return sorted(units, key=key)


def _regroup(units: list[_Unit]) -> list[_Unit]:
    # PyMuPDF splits what belongs together: a displayed equation into many small blocks side
    # by side, a table into a block per column, a bibliography entry into its first line and
    # its hanging-indented rest
    margins = _right_margins([f for unit in units for f in unit.fragments])
    grouped: list[_Unit] = []
    last_in_column: dict[int, _Unit] = {}
    for unit in sorted(units, key=lambda u: (u.order, u.column)):
        previous = last_in_column.get(unit.column)
        if previous is not None and (
            _overlap(previous.fragments, unit.fragments) > 1.0
            or _continues_hanging(previous.fragments, unit.fragments, margins)
        ):
            previous.fragments += unit.fragments
        else:
            grouped.append(_Unit(unit.order, list(unit.fragments), unit.column))
            last_in_column[unit.column] = grouped[-1]
    return grouped


def _overlap(first: list[Fragment], second: list[Fragment]) -> float:
    top = max(min(f.y0 for f in first), min(f.y0 for f in second))
    bottom = min(max(f.y1 for f in first), max(f.y1 for f in second))
    return bottom - top


def _right_margins(fragments: list[Fragment]) -> list[float]:
    # justified text ends at the column's right edge: an x where several lines end
    ends = Counter(round(f.x1) for f in fragments)
    return [x for x, count in ends.items() if count >= JUSTIFIED_MIN_LINES]


def _continues_hanging(block: list[Fragment], after: list[Fragment], margins: list[float]) -> bool:
    last = max(block, key=lambda f: f.y1)
    gap = min(f.y0 for f in after) - last.y1
    indented = all(f.x0 >= block[0].x0 + HANGING_INDENT_EMS * f.size for f in after)
    runs_to_margin = any(abs(last.x1 - x) <= 2 for x in margins)
    # a new paragraph is indented too, but the line before it stops short of the margin
    return 0 <= gap < LINE_GAP_EMS * last.size and indented and runs_to_margin


def _baseline_bands(fragments: list[Fragment]) -> list[list[Fragment]]:
    bands: list[list[Fragment]] = []
    for fragment in sorted(fragments, key=lambda f: f.y0):
        band = next((b for b in reversed(bands) if _in_band(fragment, b)), None)
        if band is None:
            bands.append([fragment])
        else:
            band.append(fragment)
    bands.sort(key=lambda band: min(f.y0 for f in band))
    return [sorted(band, key=lambda f: f.x0) for band in bands]


def _in_band(fragment: Fragment, band: list[Fragment]) -> bool:
    return min(f.y0 for f in band) <= fragment.middle <= max(f.y1 for f in band)
