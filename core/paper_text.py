"""A paper PDF as Markdown-ish text, so the reviewer sees its structure and not just its words.

A PDF stores positioned glyphs, not sections, so the structure is read back from typography:
the font size carrying most characters is the body; short lines set larger than the body, or
entirely bold at body size, are headings. The largest such line near the top of page 1 is the
title (``# ``); the other heading styles are ranked by size into ``## ``, ``### `` and ``#### ``.
When a paper numbers its headings ("1 Introduction", "2.1 Setup"), only the styles of numbered
lines count as heading styles: that keeps author names, figure labels and other large print
out of the outline. Page numbers and running heads or footers are dropped.

Whatever cannot be structured (no headings found, or PyMuPDF fails on the layout) falls back to
the plain text of ``core.pdf.pdf_text``, which also raises the clear errors for PDFs without
a text layer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pdf import open_paper, pdf_text, text_flags

MAX_HEADING_WORDS = 12
# a heading set one size step up from the body: \large over \normalsize is 2 pt, never below 0.5
HEADING_SIZE_STEP = 0.5
DEEPEST_LEVEL = 4
# the title sits on page 1 above this fraction of the page height
TITLE_ZONE = 0.4
# a horizontal gap wider than this many ems splits a visual line into cells (table columns, or
# a heading's number and name, which LaTeX separates by a quad)
CELL_GAP_EMS = 0.8
TABLE_MIN_ROWS = 2
# blocks this close (in ems) are lines of one paragraph that PyMuPDF split
LINE_GAP_EMS = 0.6
HANGING_INDENT_EMS = 0.5
JUSTIFIED_MIN_LINES = 3
SENTENCE_ENDINGS = (".", ",", ";", ":")
NUMBER_CELL = re.compile(r"(\d+(\.\d+)*|[A-Z](\.\d+)*|[IVXL]+)\.?")
NUMBERED_TEXT = re.compile(r"\d+(\.\d+)*\.?\s+[^\W\d]")
PAGE_NUMBER = re.compile(
    r"[-–—\s]*(page\s+)?(\d{1,4}|(?=[ivx])x{0,3}(ix|iv|v?i{0,3}))(\s*(of|/)\s*\d{1,4})?[-–—\s]*",
    re.IGNORECASE,
)
HYPHENATED_END = re.compile(r"[^\W\d_]-$")
CAPTION = re.compile(r"(Figure|Fig\.|Table|Algorithm)\s*[A-Z]?\d+[.:]")
PARAGRAPH_END = re.compile(r"[.!?:;)\]]$")


@dataclass(frozen=True)
class _Fragment:
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
class _Line:
    """A visual line: the fragments of one block that share a baseline band, left to right."""

    page: int
    block: int
    fragments: list[_Fragment]

    @property
    def y0(self) -> float:
        return min(f.y0 for f in self.fragments)

    @property
    def y1(self) -> float:
        return max(f.y1 for f in self.fragments)

    @property
    def cells(self) -> list[str]:
        cells: list[str] = []
        previous: _Fragment | None = None
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
        return _dominant((f.size, len(f.text)) for f in self.fragments)

    @property
    def font(self) -> str:
        return _dominant((f.font, len(f.text)) for f in self.fragments)

    @property
    def bold(self) -> bool:
        return all(f.bold for f in self.fragments)

    @property
    def horizontal(self) -> bool:
        return all(f.horizontal for f in self.fragments)

    @property
    def style(self) -> tuple[float, bool, str]:
        return (round(self.size * 2) / 2, self.bold, self.font)


@dataclass
class _Part:
    """One piece of the output: a heading, a paragraph, or a table's rows."""

    kind: str  # "heading", "paragraph" or "table"
    text: str
    block: tuple[int, int]
    level: int = 0
    numbered: bool = False

    def markdown(self) -> str:
        return f"{'#' * self.level} {self.text}" if self.kind == "heading" else self.text


def paper_markdown(pdf: Path) -> str:
    """The paper as Markdown-ish text: '# ' for the title, '## ' for section headings, '### ' for
    subsections, paragraphs separated by blank lines; plain text (core.pdf.pdf_text) when no
    structure can be found."""
    with open_paper(pdf) as doc:
        try:
            pages = [_page_lines(page, number) for number, page in enumerate(doc)]
        except Exception:  # an odd layout must not cost the review: the plain text still serves
            pages = []
        title_zone = doc[0].rect.height * TITLE_ZONE if doc.page_count else 0.0
    lines = _without_furniture(pages)
    levels = _heading_levels(lines, title_zone) if lines else {}
    if not levels:
        return pdf_text(pdf)  # raises "has no extractable text" when there is no text at all
    parts = _join_continued_paragraphs(_merge_wrapped_headings(_parts(lines, levels)))
    return "\n\n".join(part.markdown() for part in parts) + "\n"


# --------------------------------------------------------------------------------------------
# Reading the page
# --------------------------------------------------------------------------------------------


def _page_lines(page: Any, page_number: int) -> list[_Line]:
    flags = text_flags("dict")
    blocks = [b for b in page.get_text("dict", flags=flags)["blocks"] if b.get("type") == 0]
    fragment_blocks = [[f for f in map(_fragment, b["lines"]) if f] for b in blocks]
    lines: list[_Line] = []
    for index, fragments in enumerate(_regroup_blocks([b for b in fragment_blocks if b])):
        lines += [_Line(page_number, index, band) for band in _baseline_bands(fragments)]
    return lines


def _regroup_blocks(blocks: list[list[_Fragment]]) -> list[list[_Fragment]]:
    # PyMuPDF splits what belongs together: a displayed equation into many small blocks side
    # by side, a bibliography entry into its first line and its hanging-indented rest
    margins = _right_margins([f for block in blocks for f in block])
    grouped: list[list[_Fragment]] = []
    for block in blocks:
        if grouped and (
            _overlap(grouped[-1], block) > 1.0 or _continues_hanging(grouped[-1], block, margins)
        ):
            grouped[-1] += block
        else:
            grouped.append(block)
    return grouped


def _overlap(first: list[_Fragment], second: list[_Fragment]) -> float:
    top = max(min(f.y0 for f in first), min(f.y0 for f in second))
    bottom = min(max(f.y1 for f in first), max(f.y1 for f in second))
    return bottom - top


def _right_margins(fragments: list[_Fragment]) -> list[float]:
    # justified text ends at the column's right edge: an x where several lines end
    ends = Counter(round(f.x1) for f in fragments)
    return [x for x, count in ends.items() if count >= JUSTIFIED_MIN_LINES]


def _continues_hanging(
    block: list[_Fragment], after: list[_Fragment], margins: list[float]
) -> bool:
    last = max(block, key=lambda f: f.y1)
    gap = min(f.y0 for f in after) - last.y1
    indented = all(f.x0 >= block[0].x0 + HANGING_INDENT_EMS * f.size for f in after)
    runs_to_margin = any(abs(last.x1 - x) <= 2 for x in margins)
    # a new paragraph is indented too, but the line before it stops short of the margin
    return 0 <= gap < LINE_GAP_EMS * last.size and indented and runs_to_margin


def _fragment(line: dict[str, Any]) -> _Fragment | None:
    spans = [s for s in line["spans"] if s["text"].strip()]
    text = " ".join("".join(s["text"] for s in line["spans"]).split())
    if not spans or not text:
        return None
    x0, y0, x1, y1 = line["bbox"]
    return _Fragment(
        text=text,
        x0=x0,
        y0=y0,
        x1=x1,
        y1=y1,
        size=_dominant((round(s["size"], 1), len(s["text"].strip())) for s in spans),
        font=_dominant((s["font"], len(s["text"].strip())) for s in spans),
        bold=all(s["flags"] & 16 or "bold" in s["font"].lower() for s in spans),
        horizontal=abs(line["dir"][0] - 1.0) < 1e-3,
    )


def _baseline_bands(fragments: list[_Fragment]) -> list[list[_Fragment]]:
    bands: list[list[_Fragment]] = []
    for fragment in fragments:
        band = next((b for b in bands if _in_band(fragment, b)), None)
        if band is None:
            bands.append([fragment])
        else:
            band.append(fragment)
    bands.sort(key=lambda band: min(f.y0 for f in band))
    return [sorted(band, key=lambda f: f.x0) for band in bands]


def _in_band(fragment: _Fragment, band: list[_Fragment]) -> bool:
    return min(f.y0 for f in band) <= fragment.middle <= max(f.y1 for f in band)


def _dominant(weighted: Iterable[tuple[Any, int]]) -> Any:
    counts: Counter[Any] = Counter()
    for value, weight in weighted:
        counts[value] += weight
    return counts.most_common(1)[0][0]


# --------------------------------------------------------------------------------------------
# Page furniture
# --------------------------------------------------------------------------------------------


def _without_furniture(pages: list[list[_Line]]) -> list[_Line]:
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


def _edge_lines(page: list[_Line]) -> list[_Line]:
    # running heads and footers live in the page margins: the topmost and bottommost bands
    if not page:
        return []
    top = min(line.y0 for line in page)
    bottom = max(line.y1 for line in page)
    return [line for line in page if line.y0 <= top + 2 or line.y1 >= bottom - 2]


def _furniture_key(line: _Line) -> str:
    # "Page 3 of 9" and "Page 4 of 9" are the same footer
    return re.sub(r"\d+", "#", line.text)


# --------------------------------------------------------------------------------------------
# Headings
# --------------------------------------------------------------------------------------------


def _heading_levels(lines: list[_Line], title_zone: float) -> dict[_Line, int]:
    body = _body_size(lines)
    candidates = [line for line in lines if _looks_like_heading(line, body)]
    title = _title_lines(candidates, body, title_zone)
    not_sections = set(title) | set(_front_matter(lines, body))
    numbered_styles = {line.style for line in candidates if _is_numbered(line)}
    sections = [
        line
        for line in candidates
        if line not in not_sections and (not numbered_styles or line.style in numbered_styles)
    ]
    ranks = sorted({line.style[:2] for line in sections}, key=lambda s: (-s[0], not s[1]))
    level_of = {rank: min(2 + i, DEEPEST_LEVEL) for i, rank in enumerate(ranks)}
    levels = {line: 1 for line in title}
    levels |= {line: level_of[line.style[:2]] for line in sections}
    levels |= {line: 2 for line in lines if _is_abstract_heading(line)}
    return levels


def _front_matter(lines: list[_Line], body: float) -> list[_Line]:
    # authors and affiliations, between the title and the abstract or the first numbered
    # section, are often set like headings (a bold \large name is a subsection's style)
    for index, line in enumerate(lines):
        if line.page > 0:
            break
        if _is_abstract_heading(line) or (_is_numbered(line) and _looks_like_heading(line, body)):
            return lines[:index]
    return []


def _body_size(lines: list[_Line]) -> float:
    return _dominant((f.size, len(f.text)) for line in lines for f in line.fragments)


def _looks_like_heading(line: _Line, body: float) -> bool:
    text = line.text
    if not line.horizontal or not re.search(r"[^\W\d_]", text):
        return False
    if len(text.split()) > MAX_HEADING_WORDS or text.endswith(SENTENCE_ENDINGS):
        return False
    larger = line.size >= body + HEADING_SIZE_STEP
    bold_body = line.bold and abs(line.size - body) < HEADING_SIZE_STEP
    return larger or bold_body


def _is_numbered(line: _Line) -> bool:
    cells = line.cells
    # a lone letter is a number only in its own cell ("A  Proofs"), never in "A Study of ..."
    number_cell = len(cells) > 1 and NUMBER_CELL.fullmatch(cells[0]) is not None
    return number_cell or NUMBERED_TEXT.match(line.text) is not None


def _title_lines(candidates: list[_Line], body: float, title_zone: float) -> list[_Line]:
    top_of_first_page = [
        line
        for line in candidates
        if line.page == 0 and line.y0 < title_zone and not _is_numbered(line)
    ]
    if not top_of_first_page:
        return []
    size = max(line.size for line in top_of_first_page)
    numbered_sizes = [line.size for line in candidates if _is_numbered(line)]
    if size < body + HEADING_SIZE_STEP or size < max(numbered_sizes, default=0) + HEADING_SIZE_STEP:
        return []
    return [line for line in top_of_first_page if abs(line.size - size) < HEADING_SIZE_STEP]


def _is_abstract_heading(line: _Line) -> bool:
    return line.text.strip(" .:—").lower() == "abstract"


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _parts(lines: list[_Line], levels: dict[_Line, int]) -> list[_Part]:
    parts: list[_Part] = []
    pending: list[_Line] = []
    for line in lines:
        if pending and (line.page, line.block) != (pending[0].page, pending[0].block):
            parts.append(_body_part(pending))
            pending = []
        if line in levels:
            if pending:
                parts.append(_body_part(pending))
                pending = []
            parts.append(_heading_part(line, levels[line]))
        else:
            pending.append(line)
    if pending:
        parts.append(_body_part(pending))
    return parts


def _heading_part(line: _Line, level: int) -> _Part:
    return _Part("heading", line.text, (line.page, line.block), level, _is_numbered(line))


def _body_part(lines: list[_Line]) -> _Part:
    block = (lines[0].page, lines[0].block)
    # a justified line may stretch a space into a wide gap; in a table most rows have gaps
    rows = sum(len(line.cells) > 1 for line in lines)
    if rows >= TABLE_MIN_ROWS and rows * 2 >= len(lines):
        return _Part("table", "\n".join(" | ".join(line.cells) for line in lines), block)
    return _Part("paragraph", _join_wrapped([line.text for line in lines]), block)


def _join_wrapped(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        if HYPHENATED_END.search(text) and line[:1].islower():
            text = text[:-1] + line  # "regulari-" + "sation": a word TeX broke at the margin
        else:
            text = f"{text} {line}"
    return text


def _merge_wrapped_headings(parts: list[_Part]) -> list[_Part]:
    # a title or heading too long for one line comes back as several lines of the same style
    merged: list[_Part] = []
    for part in parts:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and part.kind == previous.kind == "heading"
            and part.level == previous.level
            and not part.numbered
            and (part.level == 1 or part.block == previous.block)
        ):
            previous.text = f"{previous.text} {part.text}"
        else:
            merged.append(part)
    return merged


def _join_continued_paragraphs(parts: list[_Part]) -> list[_Part]:
    # a paragraph broken by a page or column break continues in lower case, mid-sentence,
    # often after a figure or table that LaTeX floated to the top of the next page
    joined: list[_Part] = []
    open_paragraph: _Part | None = None
    for part in parts:
        if open_paragraph and part.kind == "paragraph" and part.text[:1].islower():
            open_paragraph.text = _join_wrapped([open_paragraph.text, part.text])
        else:
            joined.append(part)
            if not _is_float(part):
                open_paragraph = part if _is_unfinished_paragraph(part) else None
        if open_paragraph and PARAGRAPH_END.search(open_paragraph.text):
            open_paragraph = None
    return joined


def _is_float(part: _Part) -> bool:
    return part.kind == "table" or (
        part.kind == "paragraph" and CAPTION.match(part.text) is not None
    )


def _is_unfinished_paragraph(part: _Part) -> bool:
    return part.kind == "paragraph" and not PARAGRAPH_END.search(part.text)
