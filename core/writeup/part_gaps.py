"""The gaps a paper's text shows by itself, part by part, before any run is consulted: a placeholder
left, a part too short to say anything, a paragraph opening with a label, the prose defects a
reviewer sees at once (core/prose/: markup of another format, lost backslashes, copied text and
instructions, stray lines, promises where finished work is reported) and paragraphs that repeat
one another, across parts and within one. Read from LaTeX source or from a PDF's text alike.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from ..prose.check import prose_defects
from ..prose.copied import Shingles
from .paper_parts import Gap, Part, plain_words
from .section_text import labelled_paragraph, placeholders_left

MIN_WORDS = 25  # fewer words than this in a part: not written
# Parts that carry the paper's substance say nothing in fewer words than this (the 1.5B model's
# Method was 38 words: one sentence and a numbered step it never took).
SUBSTANCE_WORDS = 60
_SUBSTANCE_TITLES = ("method", "approach", "setup", "experimental", "result")
REPEAT_MIN_WORDS = 15  # shorter paragraphs are not compared: parallel figures read alike
REPEAT_RATIO = 0.8  # word-sequence similarity from which a paragraph repeats another
# Parts that report finished work: the future tense there is a promise.
_FLOATS = re.compile(r"\\begin\{(figure|table)\*?\}.*?\\end\{\1\*?\}", re.DOTALL)
# A caption in a PDF's text ("Figure 3: Training loss for enwik8", "(a) Validation loss"): the
# captions of a figure's panels say the same of different data, and are no paragraphs.
_CAPTION = re.compile(r"\s*(?:[*_]+\s*)?(?:(?:Figure|Fig\.|Table)\s*\d+\s*[:.]|\([a-h]\)\s)", re.I)
_REPORTING = ("abstract", "result", "conclusion", "discussion", "method", "setup", "experiment")


def written_gaps(
    parts: list[Part], *, latex: bool = True, known: Shingles | None = None
) -> list[Gap]:
    """Every gap the parts' text shows by itself. ``latex``: the parts are LaTeX source (else a
    PDF's text); ``known``: the texts no part may copy (default: labtui's own)."""
    gaps: list[Gap] = []
    for part in parts:
        gaps += _part_gaps(part, latex, known)
    return gaps + _repeats(parts)


def _part_gaps(part: Part, latex: bool, known: Shingles | None) -> list[Gap]:
    left = placeholders_left(part.body)
    if left:
        return [
            Gap(part.title, "placeholder", part.line, f"still holds the template's {left[0]!r}")
        ]
    words = len(plain_words(part.body))
    least = _least_words(part.title)
    gaps = []
    if words < least:
        problem = f"is too short to say anything ({words} words; at least {least})"
        gaps.append(Gap(part.title, "unwritten", part.line, problem))
    label = labelled_paragraph(part.body)
    if label:
        gaps.append(Gap(part.title, "label", part.line, label))
    reports = any(word in part.title.lower() for word in _REPORTING)
    for defect in prose_defects(part.body, latex=latex, known=known, reports=reports):
        line = part.line + part.body.count("\n", 0, defect.at)
        gaps.append(Gap(part.title, defect.kind, line, defect.problem, defect.fix))
    return gaps


def _least_words(title: str) -> int:
    lowered = title.lower()
    return SUBSTANCE_WORDS if any(word in lowered for word in _SUBSTANCE_TITLES) else MIN_WORDS


def _paragraphs(part: Part) -> list[tuple[int, list[str]]]:
    """(line, lower-case words) of each paragraph of a part long enough to compare; a figure
    or a table is no paragraph (its caption may say what the text says of it)."""
    found = []
    offset = 0
    for block in re.split(r"(\n\s*\n)", _FLOATS.sub(" ", part.body)):
        words = [w.lower() for w in plain_words(block)]
        cells = block.count("|") + block.count("&")  # a table's rows repeat its header
        if len(words) >= REPEAT_MIN_WORDS and not _CAPTION.match(block) and cells < 2:
            found.append((part.line + part.body.count("\n", 0, offset), words))
        offset += len(block)
    return found


def _repeats(parts: list[Part]) -> list[Gap]:
    """A paragraph that says what an earlier paragraph says: of an earlier part (the same
    sentence as the abstract, introduction and related work; Method and Setup as one
    paragraph) or of its own part (a Results of two paragraphs, each printed twice)."""
    gaps = []
    seen: list[tuple[str, list[str]]] = []
    for part in parts:
        said = False  # one gap a part
        for line, words in _paragraphs(part):
            twin = next((title for title, other in seen if _similar(words, other)), None)
            if twin is not None and not said:
                where = (
                    "one of its own paragraphs"
                    if twin == part.title
                    else f"a paragraph of the {twin}"
                )
                gaps.append(Gap(part.title, "repeats", line, f"repeats {where}"))
                said = True
            seen.append((part.title, words))
    return gaps


def _similar(words: list[str], other: list[str]) -> bool:
    matcher = SequenceMatcher(None, words, other, autojunk=False)
    return matcher.quick_ratio() >= REPEAT_RATIO and matcher.ratio() >= REPEAT_RATIO
