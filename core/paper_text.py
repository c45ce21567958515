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

import re
from dataclasses import dataclass
from pathlib import Path

from .pdf import open_paper, pdf_text
from .pdf_lines import Line, dominant, page_lines, without_furniture

MAX_HEADING_WORDS = 12
# a heading set one size step up from the body: \large over \normalsize is 2 pt, never below 0.5
HEADING_SIZE_STEP = 0.5
DEEPEST_LEVEL = 4
# the title sits on page 1 above this fraction of the page height
TITLE_ZONE = 0.4
TABLE_MIN_ROWS = 2
SENTENCE_ENDINGS = (".", ",", ";", ":")
NUMBER_CELL = re.compile(r"(\d+(\.\d+)*|[A-Z](\.\d+)*|[IVXL]+)\.?")
NUMBERED_TEXT = re.compile(r"\d+(\.\d+)*\.?\s+[^\W\d]")
HYPHENATED_END = re.compile(r"[^\W\d_]-$")
CAPTION = re.compile(r"(Figure|Fig\.|Table|Algorithm)\s*[A-Z]?\d+[.:]")
PARAGRAPH_END = re.compile(r"[.!?:;)\]]$")


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
            pages = [page_lines(page, number) for number, page in enumerate(doc)]
        except Exception:  # an odd layout must not cost the review: the plain text still serves
            pages = []
        title_zone = doc[0].rect.height * TITLE_ZONE if doc.page_count else 0.0
    lines = without_furniture(pages)
    levels = _heading_levels(lines, title_zone) if lines else {}
    if not levels:
        return pdf_text(pdf)  # raises "has no extractable text" when there is no text at all
    parts = _join_continued_paragraphs(_merge_wrapped_headings(_parts(lines, levels)))
    return "\n\n".join(part.markdown() for part in parts) + "\n"


# --------------------------------------------------------------------------------------------
# Headings
# --------------------------------------------------------------------------------------------


def _heading_levels(lines: list[Line], title_zone: float) -> dict[Line, int]:
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


def _front_matter(lines: list[Line], body: float) -> list[Line]:
    # authors and affiliations, between the title and the abstract or the first numbered
    # section, are often set like headings (a bold \large name is a subsection's style)
    for index, line in enumerate(lines):
        if line.page > 0:
            break
        if _is_abstract_heading(line) or (_is_numbered(line) and _looks_like_heading(line, body)):
            return lines[:index]
    return []


def _body_size(lines: list[Line]) -> float:
    return dominant((f.size, len(f.text)) for line in lines for f in line.fragments)


def _looks_like_heading(line: Line, body: float) -> bool:
    text = line.text
    if not line.horizontal or not re.search(r"[^\W\d_]", text):
        return False
    if len(text.split()) > MAX_HEADING_WORDS or text.endswith(SENTENCE_ENDINGS):
        return False
    larger = line.size >= body + HEADING_SIZE_STEP
    bold_body = line.bold and abs(line.size - body) < HEADING_SIZE_STEP
    return larger or bold_body


def _is_numbered(line: Line) -> bool:
    cells = line.cells
    # a lone letter is a number only in its own cell ("A  Proofs"), never in "A Study of ..."
    number_cell = len(cells) > 1 and NUMBER_CELL.fullmatch(cells[0]) is not None
    return number_cell or NUMBERED_TEXT.match(line.text) is not None


def _title_lines(candidates: list[Line], body: float, title_zone: float) -> list[Line]:
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


def _is_abstract_heading(line: Line) -> bool:
    return line.text.strip(" .:—").lower() == "abstract"


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _parts(lines: list[Line], levels: dict[Line, int]) -> list[_Part]:
    parts: list[_Part] = []
    pending: list[Line] = []
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


def _heading_part(line: Line, level: int) -> _Part:
    return _Part("heading", line.text, (line.page, line.block), level, _is_numbered(line))


def _body_part(lines: list[Line]) -> _Part:
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
