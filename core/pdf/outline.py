"""The outline of a paper PDF (title, numbered headings with their level and page), read from
typography alone: no model, a fraction of a second a paper.

A PDF stores positioned glyphs, not sections, so headings are recognised by how they are set.
``core.pdf.page`` gives each page's visual lines in reading order (columns and line numbers of
review copies handled), ``core.pdf.furniture`` drops the page furniture, and
``core.pdf.headings`` decides which of them are the title, the abstract's heading and the
section headings. The one analysis, :func:`read_layout`, serves both
:func:`outline_of` (what ``labtui review PAPER.pdf --outline`` prints) and
``core.pdf.markdown.paper_markdown`` (what the reviewer reads).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .document import open_paper, pdf_text
from .furniture import without_furniture
from .headings import Heading, Outline, PaperLayout, PlacedHeading, analyse
from .page import page_lines

__all__ = [
    "Heading",
    "Outline",
    "PaperLayout",
    "PlacedHeading",
    "outline_of",
    "outline_text",
    "read_layout",
]

# the title sits on page 1 above this fraction of the page height
TITLE_ZONE = 0.4
# the column of heading names in the listing is at most this wide
LISTING_TEXT_WIDTH = 60


def outline_of(pdf: Path) -> Outline:
    """The outline of a paper PDF: title, page count, headings with level, number and page.
    Raises LabtuiError when the file is missing, not a PDF, encrypted or has no text."""
    return read_layout(pdf).outline()


def outline_text(outline: Outline) -> str:
    """The outline as a listing for people: title, counts, one heading a line, indented by
    level, with its number and page."""
    counts = Counter(heading.level for heading in outline.headings)
    names = {1: "section", 2: "subsection", 3: "subsubsection"}
    summary = [f"{outline.pages} page{'s' * (outline.pages != 1)}"] + [
        f"{counts[level]} {names.get(level, f'level-{level} heading')}{'s' * (counts[level] != 1)}"
        for level in sorted(counts)
    ]
    lines = [outline.title or "(no title found)", " · ".join(summary)]
    if not outline.headings:
        return "\n".join([*lines, "  (no headings found)"]) + "\n"
    number_width = max(len(h.number) + 2 * (h.level - 1) for h in outline.headings)
    # a very long heading runs past the page column rather than pushing every page number out
    text_width = min(
        LISTING_TEXT_WIDTH, max(len(h.text) + 2 * (h.level - 1) for h in outline.headings)
    )
    for heading in outline.headings:
        indent = "  " * (heading.level - 1)
        number = f"{indent}{heading.number}".ljust(number_width)
        text = f"{indent}{heading.text}".ljust(text_width)
        lines.append(f"  {number}  {text}  p. {heading.page}")
    return "\n".join(lines) + "\n"


def read_layout(pdf: Path) -> PaperLayout:
    """The lines of ``pdf`` in reading order and the structure read from their typography.
    An odd layout PyMuPDF cannot take apart gives no structure (the plain text still serves);
    a PDF without any text is an error."""
    with open_paper(pdf) as doc:
        try:
            pages = [page_lines(page, number) for number, page in enumerate(doc)]
        except Exception:  # an odd layout must not cost the review: the plain text still serves
            pages = []
        title_zone = doc[0].rect.height * TITLE_ZONE if doc.page_count else 0.0
        page_total = int(doc.page_count)
    lines = without_furniture(pages)
    if not lines:
        pdf_text(pdf)  # raises "has no extractable text" when there is no text at all
        return PaperLayout(page_total, (), (), None, ())
    return analyse(lines, title_zone, page_total)
