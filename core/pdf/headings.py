"""Which lines of a paper are its title, its abstract's heading and its section headings, read
from typography alone (``core.pdf.outline`` reads the lines and gives the outline).

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
from functools import partial
from typing import Any

from .heading_candidates import (
    Candidate,
    as_candidate,
    in_sequence,
    kin,
    level_rule,
    sharing_a_baseline,
    with_parents,
)
from .lines import Line, dominant

# a heading set one size step up from the body: \large over \normalsize is 2 pt, never below 0.5
HEADING_SIZE_STEP = 0.5
DEEPEST_RANKED_LEVEL = 3
# a title wraps onto a few lines; more of them in one size are a block of text
MAX_TITLE_LINES = 4
# a line of running text has at least this many words
MIN_TEXT_WORDS = 8
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
        # a title wrapped after a hyphen ("LOW-" / "DIMENSIONAL") reads as one word, keeping
        # the hyphen: a compound's hyphen and a broken word's look alike
        return re.sub(r"(?<=[^\W\d_]-) ", "", " ".join(line.text for line in self.title))

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


class _Analysis:
    def __init__(self, lines: list[Line], title_zone: float) -> None:
        self.lines = lines
        self.title_zone = title_zone
        self.position = {id(line): index for index, line in enumerate(lines)}
        self.body = dominant((f.size, len(f.text)) for line in lines for f in line.fragments)
        shared = sharing_a_baseline(lines)
        self.candidates = [
            c for c in map(as_candidate, lines) if c is not None and id(c.line) not in shared
        ]
        self.margins = _column_margins(lines, self.body)
        self.level = level_rule([c for c in self.candidates if self._set_apart(c.line, True)])

    def layout(self, pages: int) -> PaperLayout:
        abstract = next((c.line for c in self.candidates if _is_abstract(c.name)), None)
        numbered = self._numbered()
        title = self._title(numbered, abstract)
        excluded = {id(line) for line in (*title, *self._front_matter(numbered, abstract))}
        numbered = [c for c in numbered if id(c.line) not in excluded]
        numbered = with_parents(numbered)
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

    def _numbered(self) -> list[Candidate]:
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
        return in_sequence([c for c in numbered if self.level(c) == 1], numbered)

    def _apart_from_their_kind(self, numbered: list[Candidate]) -> list[Candidate]:
        """Without numbered lines next to another numbered line in their style and depth: items
        of a list or cells of a grid; sections have text between them."""
        return [c for c in numbered if not any(map(partial(kin, c), self._neighbours(c.line)))]

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

    def _title(self, numbered: list[Candidate], abstract: Line | None) -> list[Line]:
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
            first = next((line for line in top if line.bold and as_candidate(line)), None)
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
            if not _same_size(line, first) or line.bold != first.bold or line.page != 0:
                break
            title.append(line)
        return title if len(title) <= MAX_TITLE_LINES else []

    def _front_matter_end(self, numbered: list[Candidate], abstract: Line | None) -> int:
        """Where the text begins: the abstract's heading, or the first numbered heading when
        it comes within the first pages (a title page and a licence may come before it)."""
        starts = [self.position[id(c.line)] for c in numbered if c.line.page < FRONT_MATTER_PAGES]
        if abstract is not None:
            starts.append(self.position[id(abstract)])
        return min(starts, default=len(self.lines))

    def _front_matter(self, numbered: list[Candidate], abstract: Line | None) -> list[Line]:
        # authors and affiliations, between the title and the abstract or the first numbered
        # section, are often set like headings (a bold author name is a subsection's style)
        end = self._front_matter_end(numbered, abstract)
        return self.lines[:end] if end < len(self.lines) else []

    # unnumbered headings --------------------------------------------------------------------------

    def _style_levels(
        self, numbered: list[Candidate], excluded: set[int]
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
        self, candidate: Candidate, style_levels: dict[tuple[Any, ...], int]
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

    def _stands_alone(self, candidate: Candidate) -> bool:
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

    def _placed(self, candidate: Candidate, level: int) -> PlacedHeading:
        lines = self._wrapped([candidate.line])
        parts = [candidate.name, *(line.text for line in lines[1:])]
        name = " ".join(part for part in parts if part) or candidate.line.text
        heading = Heading(level, candidate.number, name, candidate.line.page + 1)
        return PlacedHeading(heading, tuple(lines))

    def _wrapped(self, lines: list[Line]) -> list[Line]:
        """A heading (or the title) and the lines its text wraps onto: same style, same block
        (in faked small capitals, the same size of the smaller ones)."""
        if not lines:
            return lines
        wrapped = list(lines)
        index = self.position[id(wrapped[-1])] + 1
        while index < len(self.lines):
            line = self.lines[index]
            last = wrapped[-1]
            if (line.page, line.block, line.style[1:]) != (last.page, last.block, last.style[1:]):
                break
            if not _same_size(line, last):
                break
            continuation = as_candidate(line)
            if continuation is None or continuation.number:
                break
            wrapped.append(line)
            index += 1
        return wrapped


def _same_size(line: Line, other: Line) -> bool:
    """Set at the same size: the same nominal size, or in faked small capitals the same size
    of the smaller ones. A title's or a heading's last line of small words ("DATA", or "ELS"
    after "GENERATIVE MOD-") has no full capital to show the size it was set in."""
    if abs(line.nominal_size - other.nominal_size) < HEADING_SIZE_STEP:
        return True
    return line.capitals and other.capitals and abs(line.size - other.size) < HEADING_SIZE_STEP


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


def _heading_style(counts: Counter[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The style a level's headings are set in: of the styles seen more than once, the largest
    (a paper checklist's numbered items are many, but set at body size), then the most used."""
    repeated = [style for style, count in counts.items() if count > 1] or list(counts)
    return max(repeated, key=lambda s: (s[0], counts[s], s[1], s[2]))


def _in_heading_style(candidate: Candidate, level: int, styles: dict[int, tuple[Any, ...]]) -> bool:
    """Set in its level's style, or in a higher level's (a subsection of an appendix set like
    a section); an appendix named as such may be set in any heading style."""
    if candidate.labelled:
        return candidate.line.style in styles.values()
    return any(candidate.line.style == style for at, style in styles.items() if at <= level)


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
