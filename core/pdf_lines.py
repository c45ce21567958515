"""A PDF page as lines of text with their typography: PyMuPDF's lines regrouped into the visual
lines a reader sees (one baseline, cells split at wide gaps), with size, weight and font; and the
page furniture (running heads, page numbers, line numbers of review copies) left out. What
``core.paper_text`` builds the paper's outline from.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from .pdf import text_flags

T = TypeVar("T")

# a horizontal gap wider than this many ems splits a visual line into cells (table columns, or
# a heading's number and name, which LaTeX separates by a quad)
CELL_GAP_EMS = 0.8
# blocks this close (in ems) are lines of one paragraph that PyMuPDF split
LINE_GAP_EMS = 0.6
HANGING_INDENT_EMS = 0.5
JUSTIFIED_MIN_LINES = 3
PAGE_NUMBER = re.compile(
    r"[-–—\s]*(page\s+)?(\d{1,4}|(?=[ivx])x{0,3}(ix|iv|v?i{0,3}))(\s*(of|/)\s*\d{1,4})?[-–—\s]*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Fragment:
    """One PyMuPDF line: text on one baseline with no wide gap, and its typography."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    font: str
    bold: bool
    horizontal: bool

    @property
    def middle(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass(eq=False)  # compared by identity: lines are keys of the heading map
class Line:
    """A visual line: the fragments of one block that share a baseline band, left to right."""

    page: int
    block: int
    fragments: list[Fragment]

    @property
    def y0(self) -> float:
        return min(f.y0 for f in self.fragments)

    @property
    def y1(self) -> float:
        return max(f.y1 for f in self.fragments)

    @property
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

    @property
    def text(self) -> str:
        return " ".join(self.cells)

    @property
    def size(self) -> float:
        return dominant((f.size, len(f.text)) for f in self.fragments)

    @property
    def font(self) -> str:
        return dominant((f.font, len(f.text)) for f in self.fragments)

    @property
    def bold(self) -> bool:
        return all(f.bold for f in self.fragments)

    @property
    def horizontal(self) -> bool:
        return all(f.horizontal for f in self.fragments)

    @property
    def style(self) -> tuple[float, bool, str]:
        return (round(self.size * 2) / 2, self.bold, self.font)


def page_lines(page: Any, page_number: int) -> list[Line]:
    flags = text_flags("dict")
    blocks = [b for b in page.get_text("dict", flags=flags)["blocks"] if b.get("type") == 0]
    fragment_blocks = [[f for f in map(_fragment, b["lines"]) if f] for b in blocks]
    lines: list[Line] = []
    for index, fragments in enumerate(_regroup_blocks([b for b in fragment_blocks if b])):
        lines += [Line(page_number, index, band) for band in _baseline_bands(fragments)]
    return lines


def _regroup_blocks(blocks: list[list[Fragment]]) -> list[list[Fragment]]:
    # PyMuPDF splits what belongs together: a displayed equation into many small blocks side
    # by side, a bibliography entry into its first line and its hanging-indented rest
    margins = _right_margins([f for block in blocks for f in block])
    grouped: list[list[Fragment]] = []
    for block in blocks:
        if grouped and (
            _overlap(grouped[-1], block) > 1.0 or _continues_hanging(grouped[-1], block, margins)
        ):
            grouped[-1] += block
        else:
            grouped.append(block)
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


def _fragment(line: dict[str, Any]) -> Fragment | None:
    spans = [s for s in line["spans"] if s["text"].strip()]
    text = " ".join("".join(s["text"] for s in line["spans"]).split())
    if not spans or not text:
        return None
    x0, y0, x1, y1 = line["bbox"]
    return Fragment(
        text=text,
        x0=x0,
        y0=y0,
        x1=x1,
        y1=y1,
        size=dominant((round(s["size"], 1), len(s["text"].strip())) for s in spans),
        font=dominant((s["font"], len(s["text"].strip())) for s in spans),
        bold=all(s["flags"] & 16 or "bold" in s["font"].lower() for s in spans),
        horizontal=abs(line["dir"][0] - 1.0) < 1e-3,
    )


def _baseline_bands(fragments: list[Fragment]) -> list[list[Fragment]]:
    bands: list[list[Fragment]] = []
    for fragment in fragments:
        band = next((b for b in bands if _in_band(fragment, b)), None)
        if band is None:
            bands.append([fragment])
        else:
            band.append(fragment)
    bands.sort(key=lambda band: min(f.y0 for f in band))
    return [sorted(band, key=lambda f: f.x0) for band in bands]


def _in_band(fragment: Fragment, band: list[Fragment]) -> bool:
    return min(f.y0 for f in band) <= fragment.middle <= max(f.y1 for f in band)


def dominant(weighted: Iterable[tuple[T, int]]) -> T:
    """The value with the most weight (the size or font most of a line's text is set in)."""
    counts: Counter[T] = Counter()
    for value, weight in weighted:
        counts[value] += weight
    return counts.most_common(1)[0][0]


def without_furniture(pages: list[list[Line]]) -> list[Line]:
    edges = [_edge_lines(page) for page in pages]
    seen_on = Counter(
        key for page_edges in edges for key in {_furniture_key(line) for line in page_edges}
    )
    most_pages = max(2, math.ceil(len(pages) / 2))
    repeated = {key for key, count in seen_on.items() if count >= most_pages}
    furniture = {
        id(line)
        for page_edges in edges
        for line in page_edges
        if PAGE_NUMBER.fullmatch(line.text) or _furniture_key(line) in repeated
    }
    return [line for page in pages for line in page if id(line) not in furniture]


def _edge_lines(page: list[Line]) -> list[Line]:
    # running heads and footers live in the page margins: the topmost and bottommost bands
    if not page:
        return []
    top = min(line.y0 for line in page)
    bottom = max(line.y1 for line in page)
    return [line for line in page if line.y0 <= top + 2 or line.y1 >= bottom - 2]


def _furniture_key(line: Line) -> str:
    # "Page 3 of 9" and "Page 4 of 9" are the same footer
    return re.sub(r"\d+", "#", line.text)
