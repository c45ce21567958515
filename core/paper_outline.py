"""The outline of a paper PDF (title, numbered headings with their level and page), read from
typography alone: no model, a fraction of a second a paper.

A PDF stores positioned glyphs, not sections, so headings are recognised by how they are set.
``core.pdf_lines`` gives the visual lines in reading order (columns, line numbers of review copies
and page furniture handled); this module decides which lines are the title, the abstract's
heading and the section headings. The one analysis, :func:`read_layout`, serves both
:func:`outline_of` (what ``labtui review PAPER.pdf --outline`` prints) and
``core.paper_text.paper_markdown`` (what the reviewer reads).

How headings are found:

- a heading stands on a line of its own (a number and a name at most), is short, is no caption
  ("Figure 2:"), no equation and no table row, and is set apart from the body: larger, bold,
  or in capitals (small capitals included, real or faked with smaller capitals);
- numbered headings ("1 Introduction", "2.1. Setup", "A Proofs", "Appendix B: Details") set the
  rules: the depth of the number is the level, and the style each level is set in (size,
  weight, capitals, slant, typeface) is the style of that level;
- unnumbered lines set in one of those styles are headings of that level ("References",
  "Acknowledgments", ``\\section*``) unless they sit in a table or before the abstract
  (authors, affiliations); "References" and "Bibliography" are headings however they are set;
- a paper without numbered headings ranks the styles of its heading-like lines by size, then
  weight, then capitals;
- the title is the largest text at the top of page 1; it is not a heading of the outline.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .pdf import open_paper, pdf_text
from .pdf_lines import Line, dominant, page_lines, without_furniture

MAX_HEADING_WORDS = 14
# a heading set one size step up from the body: \large over \normalsize is 2 pt, never below 0.5
HEADING_SIZE_STEP = 0.5
# the title sits on page 1 above this fraction of the page height
TITLE_ZONE = 0.4
DEEPEST_RANKED_LEVEL = 3
SENTENCE_ENDINGS = (".", ",", ";", ":")
NUMBER_CELL = re.compile(
    r"(?:(?:appendix|section)\s+)?(?P<number>\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVXL]+)[.:]?",
    re.IGNORECASE,
)
NUMBERED_TEXT = re.compile(r"(?P<number>\d+(?:\.\d+)*)\.?\s+(?P<name>[^\W\d].*)")
APPENDIX_TEXT = re.compile(
    r"(?:appendix|appendices)\s+(?P<number>[A-Z](?:\.\d+)*)\s*(?:[:.\-–—]\s*(?P<name>.+))?",
    re.IGNORECASE,
)
ROMAN = re.compile(r"[IVXL]+")
CAPTION = re.compile(
    r"(Figure|Fig\.|Table|Tab\.|Algorithm|Listing)\s*[A-Z]?\d+(\.\d+)*\s*[.:|]?", re.IGNORECASE
)
EQUATION_NUMBER = re.compile(r"\(\d+(\.\d+)?[a-z]?\)$")
REFERENCES = re.compile(r"(references|bibliography|literature cited|works cited)", re.IGNORECASE)
KNOWN_SECTIONS = re.compile(
    r"(references|bibliography|literature cited|acknowledge?ments?|appendix|appendices|"
    r"supplementary materials?|limitations|broader impacts?|ethics statement|"
    r"reproducibility statement|impact statement|conclusions?)",
    re.IGNORECASE,
)
# a line this close to a table row (in line heights) belongs to the table
TABLE_REACH = 1.6
# a heading starts at its column's left margin (or is centred) within this many points
ALIGNMENT_SLACK = 3.0


@dataclass(frozen=True)
class Heading:
    """A heading as printed: level 1 = section, 2 = subsection, 3 = subsubsection; number ""
    when unnumbered; page counted from 1."""

    level: int
    number: str
    text: str
    page: int


@dataclass(frozen=True)
class Outline:
    """A paper's title, page count and headings in reading order (the title is no heading)."""

    title: str
    pages: int
    headings: tuple[Heading, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "pages": self.pages,
            "headings": [asdict(heading) for heading in self.headings],
        }


@dataclass(frozen=True)
class PlacedHeading:
    """A heading and the lines it is printed on (more than one when its name wraps)."""

    heading: Heading
    lines: tuple[Line, ...]

    @property
    def printed(self) -> str:
        return " ".join(line.text for line in self.lines)


@dataclass(frozen=True)
class PaperLayout:
    """The one reading of a paper's structure: its lines in reading order (page furniture
    dropped), the title's lines, the abstract's heading and the section headings."""

    pages: int
    lines: tuple[Line, ...]
    title: tuple[Line, ...]
    abstract: Line | None
    headings: tuple[PlacedHeading, ...]

    @property
    def title_text(self) -> str:
        return " ".join(line.text for line in self.title)

    @property
    def found_structure(self) -> bool:
        return bool(self.title or self.abstract or self.headings)

    def outline(self) -> Outline:
        return Outline(self.title_text, self.pages, tuple(h.heading for h in self.headings))


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
    text_width = max(len(h.text) + 2 * (h.level - 1) for h in outline.headings)
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
    return _Analysis(lines, title_zone).layout(page_total)


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    """A line shaped like a heading, its number split off."""

    line: Line
    number: str
    name: str


class _Analysis:
    def __init__(self, lines: list[Line], title_zone: float) -> None:
        self.lines = lines
        self.title_zone = title_zone
        self.position = {id(line): index for index, line in enumerate(lines)}
        self.body = dominant((f.size, len(f.text)) for line in lines for f in line.fragments)
        self.candidates = [c for c in map(_candidate, lines) if c is not None]
        self.margins = _column_margins(lines, self.body)

    def layout(self, pages: int) -> PaperLayout:
        abstract = next((c.line for c in self.candidates if _is_abstract(c.name)), None)
        numbered = self._numbered()
        title = self._title(numbered, abstract)
        excluded = {id(line) for line in (*title, *self._front_matter(numbered, abstract))}
        numbered = [c for c in numbered if id(c.line) not in excluded]
        levels = _numbered_levels(numbered)
        numbered = [c for c in numbered if _has_parent(c, levels)]
        style_levels = self._style_levels(numbered, levels, excluded | {id(abstract)})
        chosen = {id(c.line): (c, levels[c.number]) for c in numbered}
        for candidate in self.candidates:
            if id(candidate.line) in chosen or id(candidate.line) in excluded:
                continue
            if candidate.line is abstract:
                continue
            level = self._unnumbered_level(candidate, style_levels)
            if level:
                chosen[id(candidate.line)] = (candidate, level)
        placed = [
            self._placed(candidate, level)
            for candidate, level in sorted(
                chosen.values(), key=lambda pair: self.position[id(pair[0].line)]
            )
        ]
        return PaperLayout(pages, tuple(self.lines), tuple(title), abstract, _merged(placed))

    # numbered headings ------------------------------------------------------------------------

    def _numbered(self) -> list[_Candidate]:
        numbered = [c for c in self.candidates if c.number and self._set_apart(c.line, True)]
        by_depth: dict[int, Counter[tuple[Any, ...]]] = {}
        for candidate in numbered:
            by_depth.setdefault(_depth(candidate.number), Counter())[candidate.line.style] += 1
        # a level's headings share one style; a bold numbered list item is set like the body
        styles = {
            depth: max(counts, key=lambda s: (counts[s], s[0], s[1]))
            for depth, counts in by_depth.items()
        }
        return [c for c in numbered if c.line.style == styles[_depth(c.number)]]

    def _set_apart(self, line: Line, numbered: bool = False) -> bool:
        """Set apart from the body text: larger, bold, in capitals, or (numbered) slanted."""
        larger = line.nominal_size >= self.body + HEADING_SIZE_STEP
        smaller = line.nominal_size < self.body - 1.5 * HEADING_SIZE_STEP
        emphasised = line.bold or line.capitals or (numbered and line.italic)
        return larger or (emphasised and not smaller)

    # the title and what comes before the text ---------------------------------------------------

    def _title(self, numbered: list[_Candidate], abstract: Line | None) -> list[Line]:
        end = self._front_matter_end(numbered, abstract)
        top = [
            line
            for line in self.lines[:end]
            if line.page == 0
            and line.y0 < self.title_zone
            and line.horizontal
            and not any(c.line is line for c in numbered)
        ]
        if not top:
            return []
        size = max(line.nominal_size for line in top)
        heading_size = max((c.line.nominal_size for c in numbered), default=0.0)
        if size < self.body + HEADING_SIZE_STEP or size < heading_size + HEADING_SIZE_STEP:
            return []
        first = next(line for line in top if abs(line.nominal_size - size) < HEADING_SIZE_STEP)
        title = [first]
        for line in self.lines[self.position[id(first)] + 1 : end]:
            if abs(line.nominal_size - size) >= HEADING_SIZE_STEP or line.page != 0:
                break
            title.append(line)
        return title

    def _front_matter_end(self, numbered: list[_Candidate], abstract: Line | None) -> int:
        """Where the text begins: the abstract's heading, or the first numbered heading."""
        starts = [self.position[id(c.line)] for c in numbered if c.line.page == 0]
        if abstract is not None:
            starts.append(self.position[id(abstract)])
        return min(starts, default=len(self.lines))

    def _front_matter(self, numbered: list[_Candidate], abstract: Line | None) -> list[Line]:
        # authors and affiliations, between the title and the abstract or the first numbered
        # section, are often set like headings (a bold author name is a subsection's style)
        end = self._front_matter_end(numbered, abstract)
        return self.lines[:end] if end < len(self.lines) else []

    # unnumbered headings --------------------------------------------------------------------------

    def _style_levels(
        self, numbered: list[_Candidate], levels: dict[str, int], excluded: set[int]
    ) -> dict[tuple[Any, ...], int]:
        """Each heading style and its level: from numbered headings when there are any, else
        the styles of heading-like lines ranked by size, weight and capitals."""
        if numbered:
            style_levels: dict[tuple[Any, ...], int] = {}
            for candidate in numbered:
                level = levels[candidate.number]
                style_levels[candidate.line.style] = min(
                    level, style_levels.get(candidate.line.style, level)
                )
            return style_levels
        styles = {
            c.line.style
            for c in self.candidates
            if id(c.line) not in excluded and self._set_apart(c.line) and self._stands_alone(c)
        }
        ranked = sorted(styles, key=lambda s: (-s[0], not s[1], not s[2], s[3]))
        return {style: min(i + 1, DEEPEST_RANKED_LEVEL) for i, style in enumerate(ranked)}

    def _unnumbered_level(
        self, candidate: _Candidate, style_levels: dict[tuple[Any, ...], int]
    ) -> int:
        line = candidate.line
        if REFERENCES.fullmatch(candidate.name.strip(" .:")) and self._alone_in_block(line):
            return 1
        if not self._set_apart(line) or not self._stands_alone(candidate):
            return 0
        if line.style in style_levels:
            return style_levels[line.style]
        if KNOWN_SECTIONS.fullmatch(candidate.name.strip(" .:")):
            return 1
        return 0

    def _stands_alone(self, candidate: _Candidate) -> bool:
        """Not a table cell, a figure's label or a line of a paragraph: flush with its
        column's left margin (or centred), alone in its block or on top of it, away from
        table rows."""
        line = candidate.line
        return self._aligned(line) and self._first_in_block(line) and not self._in_table(line)

    def _aligned(self, line: Line) -> bool:
        left, right = self.margins.get((line.page, line.column), (line.x0, line.x1))
        centred = abs((line.x0 + line.x1) / 2 - (left + right) / 2) <= ALIGNMENT_SLACK
        return abs(line.x0 - left) <= ALIGNMENT_SLACK or centred

    def _first_in_block(self, line: Line) -> bool:
        index = self.position[id(line)]
        before = self.lines[index - 1] if index else None
        return before is None or (before.page, before.block) != (line.page, line.block)

    def _alone_in_block(self, line: Line) -> bool:
        index = self.position[id(line)]
        after = self.lines[index + 1] if index + 1 < len(self.lines) else None
        if after is None or (after.page, after.block) != (line.page, line.block):
            return self._first_in_block(line)
        return self._first_in_block(line) and after.style != line.style

    def _in_table(self, line: Line) -> bool:
        index = self.position[id(line)]
        reach = TABLE_REACH * (line.y1 - line.y0)
        neighbours = self.lines[max(0, index - 2) : index + 3]
        return any(
            other is not line
            and other.page == line.page
            and len(other.cells) > 1
            and min(abs(other.y0 - line.y1), abs(line.y0 - other.y1)) < reach
            for other in neighbours
        )

    # output -----------------------------------------------------------------------------------------

    def _placed(self, candidate: _Candidate, level: int) -> PlacedHeading:
        lines = self._wrapped([candidate.line])
        name = " ".join([candidate.name, *(line.text for line in lines[1:])])
        heading = Heading(level, candidate.number, name, candidate.line.page + 1)
        return PlacedHeading(heading, tuple(lines))

    def _wrapped(self, lines: list[Line]) -> list[Line]:
        """A heading (or the title) and the lines its text wraps onto: same style, same block."""
        if not lines:
            return lines
        wrapped = list(lines)
        index = self.position[id(wrapped[-1])] + 1
        while index < len(self.lines):
            line = self.lines[index]
            last = wrapped[-1]
            if (line.page, line.block, line.style) != (last.page, last.block, last.style):
                break
            continuation = _candidate(line)
            if continuation is None or continuation.number:
                break
            wrapped.append(line)
            index += 1
        return wrapped


def _merged(placed: list[PlacedHeading]) -> tuple[PlacedHeading, ...]:
    """Drop a heading found as the continuation of the one before it."""
    seen: set[int] = set()
    merged: list[PlacedHeading] = []
    for heading in placed:
        if id(heading.lines[0]) in seen:
            continue
        seen |= {id(line) for line in heading.lines}
        merged.append(heading)
    return tuple(merged)


def _candidate(line: Line) -> _Candidate | None:
    """The line as a possible heading: its number and name, or None when its shape rules it
    out (too long, a sentence, a caption, an equation, a table row)."""
    if not line.horizontal or line.math_share > 0.3 or EQUATION_NUMBER.search(line.text):
        return None
    number, name = _split_number(line)
    if len(line.cells) > (2 if number else 1):
        return None
    if not re.search(r"[^\W\d_].*[^\W\d_]", name) or CAPTION.match(line.text):
        return None
    if len(name.split()) > MAX_HEADING_WORDS or name.endswith(SENTENCE_ENDINGS):
        return None
    return _Candidate(line, number, name)


def _split_number(line: Line) -> tuple[str, str]:
    """("2.1", "Setup") from "2.1 Setup", "2.1. Setup" or "Appendix B: Setup"; ("", text)."""
    cells = line.cells
    if len(cells) == 2:
        match = NUMBER_CELL.fullmatch(cells[0])
        if match:
            return match.group("number").upper(), cells[1]
    text = line.text
    appendix = APPENDIX_TEXT.fullmatch(text)
    if appendix:
        return appendix.group("number").upper(), appendix.group("name") or text
    numbered = NUMBERED_TEXT.fullmatch(text)
    if numbered:
        return numbered.group("number"), numbered.group("name")
    return "", text


def _depth(number: str) -> int:
    return number.count(".") + 1


def _numbered_levels(numbered: list[_Candidate]) -> dict[str, int]:
    """The level of each heading number: its depth, except that lettered headings under
    roman-numbered sections ("II. Method", "A. Setup") are subsections."""
    numbers = [c.number for c in numbered]
    roman_sections = any(ROMAN.fullmatch(n) and len(n) > 1 for n in numbers)
    levels = {}
    for number in numbers:
        lettered = len(number) == 1 and number.isalpha() and not ROMAN.fullmatch(number)
        levels[number] = 2 if roman_sections and lettered else _depth(number)
    return levels


def _has_parent(candidate: _Candidate, levels: dict[str, int]) -> bool:
    # "3.1" needs a section 3; "0.5 Dropout" in a bold table cell has none
    if "." not in candidate.number:
        return True
    return candidate.number.rsplit(".", 1)[0] in levels


def _is_abstract(name: str) -> bool:
    return name.strip(" .:—-").lower() == "abstract"


def _column_margins(lines: list[Line], body: float) -> dict[tuple[int, int], tuple[float, float]]:
    """Each page column's left and right margins: where most of its body lines start and end."""
    starts: dict[tuple[int, int], Counter[int]] = {}
    ends: dict[tuple[int, int], Counter[int]] = {}
    for line in lines:
        if abs(line.size - body) < HEADING_SIZE_STEP:
            key = (line.page, line.column)
            starts.setdefault(key, Counter())[round(line.x0)] += 1
            ends.setdefault(key, Counter())[round(line.x1)] += 1
    return {
        key: (float(starts[key].most_common(1)[0][0]), float(ends[key].most_common(1)[0][0]))
        for key in starts
    }
