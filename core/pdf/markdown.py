"""A paper PDF as Markdown-ish text, so the reviewer sees its structure and not just its words.

The structure comes from ``core.pdf.outline.read_layout`` (the same analysis that
``labtui review PAPER.pdf --outline`` prints): the title becomes ``# ``, the abstract's heading
``## ``, a section ``## ``, a subsection ``### `` and so on, each as printed ("## 1 INTRODUCTION").
The other lines, in reading order (two columns read one after the other, line numbers of review
copies and page furniture dropped), become paragraphs, and table rows stay rows ("a | b | c").

Whatever cannot be structured (no heading found, or PyMuPDF fails on the layout) falls back to
the plain text of ``core.pdf.document.pdf_text``, which also raises the clear errors for PDFs without
a text layer.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .document import pdf_text
from .lines import Line
from .outline import PaperLayout, read_layout

TABLE_MIN_ROWS = 2
TABLE_MIN_CELLS = 3
PARAGRAPH_INDENT_EMS = 0.5
HYPHENATED_END = re.compile(r"[^\W\d_]-$")
# TeX breaks a line after a dash or a slash without a space there
UNSPACED_BREAKS = ("–", "—", "/")
CAPTION = re.compile(r"(Figure|Fig\.|Table|Algorithm)\s*[A-Z]?\d+[.:]")
PARAGRAPH_END = re.compile(r"[.!?:;)\]]$")
# the end of a sentence (a displayed equation's number "(1)" is none)
SENTENCE_END = re.compile(r"[.!?:]$")


@dataclass
class _Part:
    """One piece of the output: a heading, a paragraph, or a table's rows."""

    kind: str  # "heading", "paragraph" or "table"
    text: str
    level: int = 0

    def markdown(self) -> str:
        return f"{'#' * self.level} {self.text}" if self.kind == "heading" else self.text


def paper_markdown(pdf: Path) -> str:
    """The paper as Markdown-ish text: '# ' for the title, '## ' for the abstract's and the
    section headings, '### ' for subsections, paragraphs separated by blank lines; plain text
    (core.pdf.document.pdf_text) when no structure can be found."""
    layout = read_layout(pdf)
    if not layout.found_structure:
        return pdf_text(pdf)  # raises "has no extractable text" when there is no text at all
    parts = _join_continued_paragraphs(_parts(layout))
    return "\n\n".join(part.markdown() for part in parts) + "\n"


def _headings(layout: PaperLayout) -> tuple[dict[int, _Part], set[int]]:
    """The heading part that each heading's first line turns into, and the ids of all lines
    that headings (and the title) are printed on."""
    starts: dict[int, _Part] = {}
    taken: set[int] = set()
    if layout.title:
        starts[id(layout.title[0])] = _Part("heading", layout.title_text, 1)
        taken |= {id(line) for line in layout.title}
    if layout.abstract is not None:
        starts[id(layout.abstract)] = _Part("heading", layout.abstract.text, 2)
        taken.add(id(layout.abstract))
    for placed in layout.headings:
        starts[id(placed.lines[0])] = _Part("heading", placed.printed, placed.heading.level + 1)
        taken |= {id(line) for line in placed.lines}
    return starts, taken


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _parts(layout: PaperLayout) -> list[_Part]:
    starts, taken = _headings(layout)
    parts: list[_Part] = []
    pending: list[Line] = []
    for line in layout.lines:
        if pending and (
            id(line) in taken or (line.page, line.block) != (pending[0].page, pending[0].block)
        ):
            parts += _body_parts(pending)
            pending = []
        if id(line) in starts:
            parts.append(starts[id(line)])
        elif id(line) not in taken:
            pending.append(line)
    parts += _body_parts(pending)
    return _joined_tables(parts)


def _body_parts(lines: list[Line]) -> list[_Part]:
    """A block's lines as a table, or as its paragraphs; a caption that shares its table's
    block is a paragraph of its own."""
    if not lines:
        return []
    found = _caption_and_rows(lines)
    if found is not None:
        caption, rows, caption_first = found
        parts = [_paragraph(caption), _table(rows)]
        return parts if caption_first else parts[::-1]
    if _is_table(lines):
        return [_table(lines)]
    return [_paragraph(paragraph) for paragraph in _paragraphs(lines)]


def _caption_and_rows(lines: list[Line]) -> tuple[list[Line], list[Line], bool] | None:
    """The caption, the rows and whether the caption comes first, of a block that holds a
    table and its caption ("Table 1: ..." above its rows, or below them)."""
    start = next((i for i, line in enumerate(lines) if CAPTION.match(line.text)), None)
    if start is None:
        return None
    if start > 0:  # below the rows
        rows, caption = lines[:start], lines[start:]
    else:  # above the rows, perhaps on several lines
        end = next((i for i, line in enumerate(lines) if len(line.cells) > 1), len(lines))
        caption, rows = lines[:end], lines[end:]
    if rows and all(len(line.cells) > 1 for line in rows):
        return caption, rows, start == 0
    return None


def _is_table(lines: list[Line]) -> bool:
    # a justified line may stretch a space into a wide gap; in a table most rows have gaps, and
    # a header row on its own has several cells
    rows = sum(len(line.cells) > 1 for line in lines)
    single_row = len(lines) == 1 and len(lines[0].cells) >= TABLE_MIN_CELLS
    return (rows >= TABLE_MIN_ROWS and rows * 2 >= len(lines)) or single_row


def _table(lines: list[Line]) -> _Part:
    return _Part("table", "\n".join(" | ".join(line.cells) for line in lines))


def _paragraph(lines: list[Line]) -> _Part:
    return _Part("paragraph", _join_wrapped([line.text for line in lines]))


def _paragraphs(lines: list[Line]) -> list[list[Line]]:
    # PyMuPDF keeps paragraphs without space between them in one block: a new one starts with
    # an indented line after a line that ends a sentence, or that stops short of the margin
    margin = Counter(round(line.x0) for line in lines).most_common(1)[0][0]
    right = max(line.x1 for line in lines)
    paragraphs = [[lines[0]]]
    for line in lines[1:]:
        before = paragraphs[-1][-1]
        indented = line.x0 > margin + PARAGRAPH_INDENT_EMS * line.size
        ended = SENTENCE_END.search(before.text) or before.x1 < right - line.size
        if indented and ended:
            paragraphs.append([line])
        else:
            paragraphs[-1].append(line)
    return paragraphs


def _joined_tables(parts: list[_Part]) -> list[_Part]:
    # a table's header row and its body often come as separate blocks
    joined: list[_Part] = []
    for part in parts:
        if joined and part.kind == joined[-1].kind == "table":
            joined[-1].text = f"{joined[-1].text}\n{part.text}"
        else:
            joined.append(part)
    return joined


def _join_wrapped(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        if HYPHENATED_END.search(text) and line[:1].islower():
            text = text[:-1] + line  # "regulari-" + "sation": a word TeX broke at the margin
        elif text.endswith(UNSPACED_BREAKS):
            text += line  # "pages 448–" + "456", "https://example.org/" + "paper"
        else:
            text = f"{text} {line}"
    return text


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
