"""The vocabulary of the paper reader: a visual line of a PDF page and the runs of text it is
made of, with their typography (size, weight, capitals, slant, typeface).

``core.pdf.page`` reads a page into these lines (fragments, line-number rulers, columns, reading
order); ``core.pdf.furniture`` drops what repeats across pages (running heads, footers, page
numbers, watermarks); ``core.pdf.headings`` reads a paper's structure from what is left.

- fragments: PyMuPDF's lines, text on one baseline with no wide gap (MuPDF splits at wide
  gaps: table cells, or a heading's number and its name, which LaTeX separates by a quad);
- visual lines: the fragments of one block that share a baseline band, left to right.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

T = TypeVar("T")

# a horizontal gap wider than this many ems splits a visual line into cells (table columns, or
# a heading's number and name, which LaTeX separates by a quad)
CELL_GAP_EMS = 0.8
LETTER = re.compile(r"[^\W\d_]")
SMALL_CAPS_FONT = re.compile(r"(CMCSC|SmallCaps|-SC\b|Caps|\bSC\d|csc)", re.IGNORECASE)
# a line is bold when this share of its letters is
BOLD_SHARE = 0.6


@dataclass(frozen=True)
class Fragment:
    """Text on one baseline with no wide gap, and its typography."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float  # the size most of its characters are set in
    top: float  # the largest size of its letters: the nominal size of faked small capitals
    font: str
    letters: int  # letters of words (not of mathematics)
    bold_letters: int  # of those, how many are set in a bold face
    italic: bool
    math: int  # how many of its characters are set in a math font
    # lowercase letters of words: a symbol of mathematics ("β" in "WITH β-SCHEDULES") is none
    lowercase: int
    horizontal: bool

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def has_letters(self) -> bool:
        return LETTER.search(self.text) is not None


class FragmentBox:
    """The box around some fragments: a visual line's, or a block's while the page is read
    (``core.pdf.page``). Read from the fragments each time, since a block's grow as blocks of
    one paragraph are joined."""

    fragments: list[Fragment]

    @property
    def x0(self) -> float:
        return min(f.x0 for f in self.fragments)

    @property
    def x1(self) -> float:
        return max(f.x1 for f in self.fragments)

    @property
    def y0(self) -> float:
        return min(f.y0 for f in self.fragments)

    @property
    def y1(self) -> float:
        return max(f.y1 for f in self.fragments)


@dataclass(eq=False)  # compared by identity: lines are keys of the heading map
class Line(FragmentBox):
    """A visual line: the fragments of one block that share a baseline band, left to right."""

    page: int
    block: int
    fragments: list[Fragment]
    column: int = 0  # 0 on a one-column page or spanning both columns; 1 left, 2 right

    @cached_property
    def cells(self) -> list[str]:
        cells: list[str] = []
        previous: Fragment | None = None
        for fragment in self.fragments:
            gap = fragment.x0 - previous.x1 if previous else math.inf
            if gap > CELL_GAP_EMS * fragment.size:
                cells.append(fragment.text)
            else:
                glue = "" if gap <= 0.1 * fragment.size else " "
                cells[-1] = f"{cells[-1]}{glue}{fragment.text}"
            previous = fragment
        return cells

    @cached_property
    def text(self) -> str:
        return " ".join(self.cells)

    @cached_property
    def size(self) -> float:
        return dominant((f.size, len(f.text)) for f in self.fragments)

    @cached_property
    def font(self) -> str:
        return dominant((f.font, len(f.text)) for f in self.fragments)

    @cached_property
    def words(self) -> list[Fragment]:
        """The fragments that carry words (letters, not mathematics)."""
        return [f for f in self.fragments if f.has_letters and f.math * 2 < len(f.text)]

    @cached_property
    def bold(self) -> bool:
        """Mostly bold: a bold heading may set a logo or a name in another face ("BibTeX")."""
        letters = sum(f.letters for f in self.fragments)
        return letters > 0 and sum(f.bold_letters for f in self.fragments) >= BOLD_SHARE * letters

    @cached_property
    def italic(self) -> bool:
        return bool(self.words) and all(f.italic for f in self.words)

    @cached_property
    def capitals(self) -> bool:
        """Set in capitals or small capitals (real ones, or faked with smaller capitals)."""
        letters = [c for f in self.words for c in f.text if c.isalpha()]
        if len(letters) < 2:
            return False
        upper = not any(f.lowercase for f in self.words)
        return upper or all(SMALL_CAPS_FONT.search(f.font) for f in self.words)

    @cached_property
    def nominal_size(self) -> float:
        """The size the line was set in: faked small capitals set most letters smaller."""
        if self.capitals and self.words:
            return max(f.top for f in self.words)
        return self.size

    @cached_property
    def math_share(self) -> float:
        return sum(f.math for f in self.fragments) / max(
            1, sum(len(f.text) for f in self.fragments)
        )

    @property
    def horizontal(self) -> bool:
        return all(f.horizontal for f in self.fragments)

    @cached_property
    def style(self) -> tuple[float, bool, bool, bool, str]:
        """What tells heading levels apart: size, weight, capitals, slant, typeface."""
        return (
            round(self.nominal_size * 2) / 2,
            self.bold,
            self.capitals,
            self.italic,
            family(self.font),
        )


def family(font: str) -> str:
    """A typeface without its subset prefix and design size: "ABCDEF+CMBX12" → "CMBX"."""
    return re.sub(r"\d+$", "", font.split("+")[-1])


def dominant(weighted: Iterable[tuple[T, int]]) -> T:
    """The value with the most weight (the size or font most of a line's text is set in); the
    first seen of equal ones."""
    counts: dict[T, int] = {}
    for value, weight in weighted:
        counts[value] = counts.get(value, 0) + weight
    return max(counts, key=counts.__getitem__)
