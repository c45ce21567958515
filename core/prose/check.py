"""Every rule of this package over one text, in the order a reader meets them."""

from __future__ import annotations

from .copied import Shingles, copied_text, instructions
from .defect import Defect
from .markup import foreign_markup, lost_backslashes
from .stray import stray_lines
from .tense import promises


def prose_defects(
    text: str, *, latex: bool = True, known: Shingles | None = None, reports: bool = False
) -> list[Defect]:
    """The defects of ``text``: markup of another format, lost backslashes, copied text and
    instructions, stray lines, and (``reports``: it reports finished work) promises.
    ``latex``: LaTeX source, else text read out of a PDF; ``known``: the texts it must not
    copy (default: labtui's own)."""
    found = foreign_markup(text, latex) + lost_backslashes(text, latex)
    found += copied_text(text, known) + instructions(text)
    found += stray_lines(text, latex)
    if reports:
        found += promises(text)
    return sorted(found, key=lambda d: d.at)
