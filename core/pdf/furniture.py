"""The page furniture of a paper, left out of what is read: running heads, footers and page
numbers at the edges of its pages.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from .lines import Line

PAGE_NUMBER = re.compile(
    r"[-–—\s]*(page\s+)?(\d{1,4}|(?=[ivx])x{0,3}(ix|iv|v?i{0,3}))(\s*(of|/)\s*\d{1,4})?[-–—\s]*",
    re.IGNORECASE,
)
DIGITS = re.compile(r"\d+")
# a running head or footer is set off from the text by more than this many line heights
FURNITURE_GAP_LINES = 1.0


def without_furniture(pages: list[list[Line]]) -> list[Line]:
    """The lines of all pages without running heads, footers and page numbers: bare numbers at
    the top or bottom edge of a page, and what repeats there on most pages, either as text
    (digits aside) or as a line set apart from the text at the same height and size (a running
    head that names the current section)."""
    edges = [_edge_lines(page) for page in pages]
    most_pages = max(2, math.ceil(len(pages) / 2))
    texts = Counter(
        key for page_edges in edges for key in {_furniture_key(line) for line in page_edges}
    )
    places = Counter(
        key
        for page, page_edges in zip(pages, edges, strict=True)
        for key in {_place(line) for line in page_edges if _set_off(line, page)}
    )
    repeated = {key for key, count in texts.items() if count >= most_pages}
    placed = {key for key, count in places.items() if count >= most_pages}
    furniture = {
        id(line)
        for page, page_edges in zip(pages, edges, strict=True)
        for line in page_edges
        if PAGE_NUMBER.fullmatch(line.text)
        or _furniture_key(line) in repeated
        or (_place(line) in placed and _set_off(line, page))
    }
    return [line for page in pages for line in page if id(line) not in furniture]


def _place(line: Line) -> tuple[int, int]:
    return (round(line.y0), round(line.size))


def _set_off(edge: Line, page: list[Line]) -> bool:
    """Set off from the text by more than a line's spacing, as a running head or a footer."""
    height = edge.y1 - edge.y0
    others = [line for line in page if line.y1 < edge.y0 or line.y0 > edge.y1]
    gaps = [max(line.y0 - edge.y1, edge.y0 - line.y1) for line in others]
    return bool(gaps) and min(gaps) > FURNITURE_GAP_LINES * height


def _edge_lines(page: list[Line]) -> list[Line]:
    # running heads and footers live in the page margins: the topmost and bottommost bands
    if not page:
        return []
    top = min(line.y0 for line in page)
    bottom = max(line.y1 for line in page)
    return [line for line in page if line.y0 <= top + 2 or line.y1 >= bottom - 2]


def _furniture_key(line: Line) -> str:
    # "Page 3 of 9" and "Page 4 of 9" are the same footer; a running head that repeats the
    # title is set smaller than the title on page 1
    return f"{round(line.size)}|{DIGITS.sub('#', line.text)}"
