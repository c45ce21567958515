"""Lines shaped like a section heading, and what their numbers say: the depth of a number is
its level, sections come in order, a subsection has its section (``core.pdf.headings`` picks
the headings among these candidates by how they are set).

A candidate stands alone on its baseline, is short, is no caption ("Figure 2:"), no equation
and no table row; "2.1 Setup", "A.1 Proofs", "II. Method" and "Appendix B: Details" have their
number split off.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .lines import Line

# a heading is a name, not a sentence
MAX_HEADING_WORDS = 14
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


@dataclass(frozen=True)
class Candidate:
    """A line shaped like a heading, its number split off."""

    line: Line
    number: str
    name: str  # "" for a bare "Appendix A" whose name follows on the next line
    labelled: bool = False  # numbered with a word: "Appendix A", "Chapter 2"


def kin(candidate: Candidate, other: Line) -> bool:
    """Whether ``other`` is numbered at the same depth in the same style: an item of the same
    list or a cell of the same grid, when it stands next to the candidate."""
    number, _, _ = split_number(other)
    return (
        bool(number)
        and other.style == candidate.line.style
        and (depth(number) == depth(candidate.number))
    )


def sharing_a_baseline(lines: list[Line]) -> set[int]:
    """The ids of lines that share their baseline with another line of their column (or with
    any line, for what spans the columns): cells of a table or labels of a figure that PyMuPDF
    put in blocks of their own. A heading stands alone on its baseline. Text set up the page
    (an arXiv stamp in the margin) has no baseline across it: its box spans every line beside
    it, and would hide the headings there."""
    by_page: dict[int, list[Line]] = {}
    for line in filter(lambda line: line.horizontal, lines):
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


def as_candidate(line: Line) -> Candidate | None:
    """The line as a possible heading: its number and name, or None when its shape rules it
    out (too long, a sentence, a caption, an equation, a table row)."""
    if not line.horizontal or line.math_share > 0.3 or EQUATION_NUMBER.search(line.text):
        return None
    number, name, labelled = split_number(line)
    if len(line.cells) > (2 if number else 1):
        return None
    words = name or line.text
    if not re.search(r"[^\W\d_].*[^\W\d_]", words) or CAPTION.match(line.text):
        return None
    if len(words.split()) > MAX_HEADING_WORDS or words.endswith(SENTENCE_ENDINGS):
        return None
    return Candidate(line, number, name, labelled)


def split_number(line: Line) -> tuple[str, str, bool]:
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


def depth(number: str) -> int:
    return number.count(".") + 1


def in_sequence(sections: list[Candidate], numbered: list[Candidate]) -> list[Candidate]:
    """``numbered`` without the ``sections`` whose numbers break the order (1, 2, 3; A, B; I,
    II), each kind of number on its own: a grid of numbered cells or a stray numbered line out
    of order is no section."""
    kinds: dict[str, list[tuple[int, Candidate]]] = {}
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


def _longest_increasing(run: list[tuple[int, Candidate]]) -> list[Candidate]:
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
    chain: list[Candidate] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        chain.append(run[index][1])
        index = parents[index]
    return chain[::-1]


def level_rule(candidates: list[Candidate]) -> Callable[[Candidate], int]:
    """The level of a numbered heading: the depth of its number, except that lettered headings
    under roman-numbered sections ("II. Method", "A. Setup") are subsections."""
    roman_sections = any(ROMAN.fullmatch(c.number) and len(c.number) > 1 for c in candidates)

    def level(candidate: Candidate) -> int:
        number = candidate.number
        lettered = len(number) == 1 and number.isalpha() and not ROMAN.fullmatch(number)
        return 2 if roman_sections and lettered and not candidate.labelled else depth(number)

    return level


def with_parents(numbered: list[Candidate]) -> list[Candidate]:
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
