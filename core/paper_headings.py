"""Which lines of a paper are its title, its abstract's heading and its section headings, read
from typography alone (``core.paper_outline`` reads the lines and gives the outline).

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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from .pdf_lines import Line, dominant

MAX_HEADING_WORDS = 14
# a heading set one size step up from the body: \large over \normalsize is 2 pt, never below 0.5
HEADING_SIZE_STEP = 0.5
DEEPEST_RANKED_LEVEL = 3
# a title wraps onto a few lines; more of them in one size are a block of text
MAX_TITLE_LINES = 4
# a line of running text has at least this many words
MIN_TEXT_WORDS = 8
SENTENCE_ENDINGS = (".", ",", ";", ":")
NUMBER_CELL = re.compile(
    r"(?:(?i:appendix|chapter|section)\s+)?(?P<number>\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVXL]+)[.:]?"
)
# "2.1 Setup", "2.1. Setup", "A.1 Proofs", "A. Proofs"; a lone letter without a period only in a
# cell of its own ("A  Proofs"), never in running text ("A Study of ...")
NUMBERED_TEXT = re.compile(
    r"(?P<number>\d+(?:\.\d+)*|[A-Z](?:\.\d+)+|[A-Z](?=\.))\.?\s+(?P<name>[^\W\d].*)"
)
# "Appendix B: Proofs", "Appendix B" (its name on the next line), "Chapter 2 Methods"
LABELLED_TEXT = re.compile(
    r"(?i:appendix|appendices|chapter)\s+(?P<number>[A-Z](?:\.\d+)*|\d+)"
    r"(?:\s*[:.\-–—]?\s+(?P<name>.+))?"
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
# the text of a paper begins within its first pages
FRONT_MATTER_PAGES = 3
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


def analyse(lines: list[Line], title_zone: float, pages: int) -> PaperLayout:
    """The structure of a paper's ``lines`` (in reading order, furniture dropped): its title
    (set on page 1 above ``title_zone``), abstract heading and section headings."""
    return _Analysis(lines, title_zone).layout(pages)


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    """A line shaped like a heading, its number split off."""

    line: Line
    number: str
    name: str  # "" for a bare "Appendix A" whose name follows on the next line
    labelled: bool = False  # numbered with a word: "Appendix A", "Chapter 2"


class _Analysis:
    def __init__(self, lines: list[Line], title_zone: float) -> None:
        self.lines = lines
        self.title_zone = title_zone
        self.position = {id(line): index for index, line in enumerate(lines)}
        self.body = dominant((f.size, len(f.text)) for line in lines for f in line.fragments)
        shared = _sharing_a_baseline(lines)
        self.candidates = [
            c for c in map(_candidate, lines) if c is not None and id(c.line) not in shared
        ]
        self.margins = _column_margins(lines, self.body)
        self.level = _level_rule([c for c in self.candidates if self._set_apart(c.line, True)])

    def layout(self, pages: int) -> PaperLayout:
        abstract = next((c.line for c in self.candidates if _is_abstract(c.name)), None)
        numbered = self._numbered()
        title = self._title(numbered, abstract)
        excluded = {id(line) for line in (*title, *self._front_matter(numbered, abstract))}
        numbered = [c for c in numbered if id(c.line) not in excluded]
        numbered = _with_parents(numbered)
        style_levels = self._style_levels(numbered, excluded | {id(abstract)})
        chosen = {id(c.line): (c, self.level(c)) for c in numbered}
        for candidate in self.candidates:
            # a numbered line the numbered headings turned down is no unnumbered heading
            if candidate.number or candidate.line is abstract:
                continue
            if id(candidate.line) in chosen or id(candidate.line) in excluded:
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
        numbered = [
            c
            for c in self.candidates
            if c.number and self._set_apart(c.line, True) and self._aligned(c.line)
        ]
        numbered = self._apart_from_their_kind(numbered)
        by_level: dict[int, Counter[tuple[Any, ...]]] = {}
        # an "Appendix A" may be set in any heading style: it says nothing of its level's
        for candidate in [c for c in numbered if not c.labelled] or numbered:
            by_level.setdefault(self.level(candidate), Counter())[candidate.line.style] += 1
        styles = {level: _heading_style(counts) for level, counts in by_level.items()}
        numbered = [c for c in numbered if _in_heading_style(c, self.level(c), styles)]
        return _in_sequence([c for c in numbered if self.level(c) == 1], numbered)

    def _apart_from_their_kind(self, numbered: list[_Candidate]) -> list[_Candidate]:
        """Without numbered lines next to another numbered line in their style and depth: items
        of a list or cells of a grid; sections have text between them."""
        return [c for c in numbered if not any(map(partial(_kin, c), self._neighbours(c.line)))]

    def _neighbours(self, line: Line) -> list[Line]:
        index = self.position[id(line)]
        around = self.lines[max(0, index - 1) : index] + self.lines[index + 1 : index + 2]
        return [other for other in around if other.page == line.page]

    def _set_apart(self, line: Line, numbered: bool = False) -> bool:
        """Set apart from the body text: larger, bold, in capitals, or (numbered) slanted."""
        larger = line.nominal_size >= self.body + HEADING_SIZE_STEP
        smaller = line.nominal_size < self.body - 1.5 * HEADING_SIZE_STEP
        emphasised = line.bold or line.capitals or (numbered and line.italic)
        return larger or (emphasised and not smaller)

    # the title and what comes before the text ---------------------------------------------------

    def _title(self, numbered: list[_Candidate], abstract: Line | None) -> list[Line]:
        """The title's lines: the largest print before the abstract or the first section (on a
        title page, that may be anywhere on page 1; with neither in sight, at the top of page
        1). A style that sets its title no larger than its headings (amsart: bold capitals at
        body size) has it as the first line set apart before the abstract."""
        end = self._front_matter_end(numbered, abstract)
        zone = self.title_zone if end == len(self.lines) else float("inf")
        top = [
            line
            for line in self.lines[:end]
            if line.page == 0
            and line.y0 < zone
            and line.horizontal
            and not any(c.line is line for c in numbered)
        ]
        if not top:
            return []
        size = max(line.nominal_size for line in top)
        heading_size = max((c.line.nominal_size for c in numbered), default=0.0)
        first: Line | None = None
        if size >= self.body + HEADING_SIZE_STEP and size >= heading_size + HEADING_SIZE_STEP:
            first = next(line for line in top if abs(line.nominal_size - size) < HEADING_SIZE_STEP)
        elif end < len(self.lines):
            first = next((line for line in top if line.bold and _candidate(line)), None)
            if first is not None and self._text_before(first):
                first = None  # a title comes before any running text
        return self._title_run(first, end) if first is not None else []

    def _text_before(self, line: Line) -> bool:
        return any(
            len(other.text.split()) >= MIN_TEXT_WORDS and not self._set_apart(other)
            for other in self.lines[: self.position[id(line)]]
        )

    def _title_run(self, first: Line, end: int) -> list[Line]:
        """The title's first line and the lines of the same size and weight that follow it."""
        title = [first]
        for line in self.lines[self.position[id(first)] + 1 : end]:
            same = abs(line.nominal_size - first.nominal_size) < HEADING_SIZE_STEP
            if not same or line.bold != first.bold or line.page != 0:
                break
            title.append(line)
        return title if len(title) <= MAX_TITLE_LINES else []

    def _front_matter_end(self, numbered: list[_Candidate], abstract: Line | None) -> int:
        """Where the text begins: the abstract's heading, or the first numbered heading when
        it comes within the first pages (a title page and a licence may come before it)."""
        starts = [self.position[id(c.line)] for c in numbered if c.line.page < FRONT_MATTER_PAGES]
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
        self, numbered: list[_Candidate], excluded: set[int]
    ) -> dict[tuple[Any, ...], int]:
        """Each heading style and its level: from numbered headings when there are any, else
        the styles of heading-like lines ranked by size, weight and capitals."""
        if numbered:
            style_levels: dict[tuple[Any, ...], int] = {}
            # an "Appendix A" may be set in any heading style: it says nothing of its level
            for candidate in (c for c in numbered if not c.labelled):
                level = self.level(candidate)
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
        """Flush with its column's left margin (or hanging into it, as some styles set a
        heading's number), or centred in the column."""
        left, right = self.margins.get((line.page % 2, line.column), (line.x0, line.x1))
        centred = abs((line.x0 + line.x1) / 2 - (left + right) / 2) <= ALIGNMENT_SLACK
        return line.x0 <= left + ALIGNMENT_SLACK or centred

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
        parts = [candidate.name, *(line.text for line in lines[1:])]
        name = " ".join(part for part in parts if part) or candidate.line.text
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


def _kin(candidate: _Candidate, other: Line) -> bool:
    number, _, _ = _split_number(other)
    return (
        bool(number)
        and other.style == candidate.line.style
        and (_depth(number) == _depth(candidate.number))
    )


def _sharing_a_baseline(lines: list[Line]) -> set[int]:
    """The ids of lines that share their baseline with another line of their column (or with
    any line, for what spans the columns): cells of a table or labels of a figure that PyMuPDF
    put in blocks of their own. A heading stands alone on its baseline."""
    by_page: dict[int, list[Line]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    shared: set[int] = set()
    for page in by_page.values():
        page.sort(key=lambda line: line.y0)
        for index, line in enumerate(page):
            for other in page[index + 1 :]:
                if other.y0 > line.y1:
                    break
                if _same_baseline(line, other) and (
                    line.column == other.column or 0 in (line.column, other.column)
                ):
                    shared |= {id(line), id(other)}
    return shared


def _same_baseline(line: Line, other: Line) -> bool:
    return (
        line.y0 <= (other.y0 + other.y1) / 2 <= line.y1
        or other.y0 <= (line.y0 + line.y1) / 2 <= other.y1
    )


def _candidate(line: Line) -> _Candidate | None:
    """The line as a possible heading: its number and name, or None when its shape rules it
    out (too long, a sentence, a caption, an equation, a table row)."""
    if not line.horizontal or line.math_share > 0.3 or EQUATION_NUMBER.search(line.text):
        return None
    number, name, labelled = _split_number(line)
    if len(line.cells) > (2 if number else 1):
        return None
    words = name or line.text
    if not re.search(r"[^\W\d_].*[^\W\d_]", words) or CAPTION.match(line.text):
        return None
    if len(words.split()) > MAX_HEADING_WORDS or words.endswith(SENTENCE_ENDINGS):
        return None
    return _Candidate(line, number, name, labelled)


def _split_number(line: Line) -> tuple[str, str, bool]:
    """The number, name and whether a word labels the number: ("2.1", "Setup", False) from
    "2.1 Setup" or "2.1. Setup", ("B", "Proofs", True) from "Appendix B: Proofs"."""
    cells = line.cells
    if len(cells) == 2:
        match = NUMBER_CELL.fullmatch(cells[0])
        if match:
            named = cells[0].lower().startswith(("appendix", "chapter"))
            return match.group("number"), cells[1], named
    text = line.text
    labelled = LABELLED_TEXT.fullmatch(text)
    if labelled:
        return labelled.group("number"), labelled.group("name") or "", True
    numbered = NUMBERED_TEXT.fullmatch(text)
    if numbered:
        return numbered.group("number"), numbered.group("name"), False
    return "", text, False


def _depth(number: str) -> int:
    return number.count(".") + 1


def _heading_style(counts: Counter[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The style a level's headings are set in: of the styles seen more than once, the largest
    (a paper checklist's numbered items are many, but set at body size), then the most used."""
    repeated = [style for style, count in counts.items() if count > 1] or list(counts)
    return max(repeated, key=lambda s: (s[0], counts[s], s[1], s[2]))


def _in_heading_style(
    candidate: _Candidate, level: int, styles: dict[int, tuple[Any, ...]]
) -> bool:
    """Set in its level's style, or in a higher level's (a subsection of an appendix set like
    a section); an appendix named as such may be set in any heading style."""
    if candidate.labelled:
        return candidate.line.style in styles.values()
    return any(candidate.line.style == style for at, style in styles.items() if at <= level)


def _in_sequence(sections: list[_Candidate], numbered: list[_Candidate]) -> list[_Candidate]:
    """``numbered`` without the ``sections`` whose numbers break the order (1, 2, 3; A, B; I,
    II), each kind of number on its own: a grid of numbered cells or a stray numbered line out
    of order is no section."""
    kinds: dict[str, list[tuple[int, _Candidate]]] = {}
    for candidate in sections:
        kind, value = _section_value(candidate.number)
        kinds.setdefault(kind, []).append((value, candidate))
    kept = {id(c) for run in kinds.values() for c in _longest_increasing(run)}
    dropped = {id(c) for c in sections} - kept
    return [c for c in numbered if id(c) not in dropped]


def _section_value(number: str) -> tuple[str, int]:
    if number.isdigit():
        return "arabic", int(number)
    if ROMAN.fullmatch(number) and (len(number) > 1 or number in "IVX"):
        roman = {"I": 1, "V": 5, "X": 10, "L": 50}
        values = [roman[c] for c in number]
        return "roman", sum(
            -v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True)
        )
    return "letter", ord(number[0])


def _longest_increasing(run: list[tuple[int, _Candidate]]) -> list[_Candidate]:
    """The longest strictly increasing subsequence by value (patience sorting, n log n)."""
    tails: list[int] = []  # index into run of the smallest tail of each length
    parents: list[int] = [-1] * len(run)
    for index, (value, _) in enumerate(run):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if run[tails[middle]][0] < value:
                low = middle + 1
            else:
                high = middle
        parents[index] = tails[low - 1] if low else -1
        if low == len(tails):
            tails.append(index)
        else:
            tails[low] = index
    chain: list[_Candidate] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        chain.append(run[index][1])
        index = parents[index]
    return chain[::-1]


def _level_rule(candidates: list[_Candidate]) -> Callable[[_Candidate], int]:
    """The level of a numbered heading: the depth of its number, except that lettered headings
    under roman-numbered sections ("II. Method", "A. Setup") are subsections."""
    roman_sections = any(ROMAN.fullmatch(c.number) and len(c.number) > 1 for c in candidates)

    def level(candidate: _Candidate) -> int:
        number = candidate.number
        lettered = len(number) == 1 and number.isalpha() and not ROMAN.fullmatch(number)
        return 2 if roman_sections and lettered and not candidate.labelled else _depth(number)

    return level


def _with_parents(numbered: list[_Candidate]) -> list[_Candidate]:
    """Without numbered lines whose parent number is nowhere ("0.5 Dropout" in a bold table
    cell); subsections whose section heading was missed (a chapter, an odd style) stay when
    they are several."""
    numbers = {c.number for c in numbered}
    parents = Counter(c.number.rsplit(".", 1)[0] for c in numbered if "." in c.number)
    return [
        c
        for c in numbered
        if "." not in c.number
        or c.number.rsplit(".", 1)[0] in numbers
        or (parents[c.number.rsplit(".", 1)[0]] > 1 and not c.number.startswith("0"))
    ]


def _is_abstract(name: str) -> bool:
    return name.strip(" .:—-").lower() == "abstract"


def _column_margins(lines: list[Line], body: float) -> dict[tuple[int, int], tuple[float, float]]:
    """The left and right margins of each column, on odd and on even pages (two-sided layouts
    shift them): justified lines end at the right one, and most of them (all but a paragraph's
    first) start at the left one. Read over the whole paper, so that a page of lists or a
    table does not move them."""
    columns: dict[tuple[int, int], list[Line]] = {}
    for line in lines:
        if abs(line.size - body) < HEADING_SIZE_STEP:
            columns.setdefault((line.page % 2, line.column), []).append(line)
    margins = {}
    for key, column in columns.items():
        right = Counter(round(line.x1) for line in column).most_common(1)[0][0]
        full = [line for line in column if abs(line.x1 - right) <= 2] or column
        left = Counter(round(line.x0) for line in full).most_common(1)[0][0]
        margins[key] = (float(left), float(right))
    return margins
