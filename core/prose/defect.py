"""One defect of a text: what kind, where (a character offset into the text checked), the words it
quotes, what is wrong and how to fix it. Said so that a researcher or a model can act on it."""

from __future__ import annotations

import re
from dataclasses import dataclass

QUOTED_CHARS = 80

MARKUP = "markup"  # HTML or Markdown inside LaTeX
LOST_BACKSLASH = "lost_backslash"  # "extbf{" for "\textbf{"
COPIED = "copied"  # labtui's own prompt or feedback, or an instruction, in the text
PROMISE = "promise"  # the future tense where finished work is reported
STRAY = "stray"  # a line that is no text ("done", "eof")


@dataclass(frozen=True)
class Defect:
    kind: str
    at: int  # offset into the text checked
    quoted: str  # the offending words, on one line, clipped
    problem: str  # one sentence: what is wrong
    fix: str  # one sentence: what to do

    @property
    def sentence(self) -> str:
        """Problem and fix, as a re-ask or a listing says them."""
        return f"{self.problem} {self.fix}"


def clipped(text: str, chars: int = QUOTED_CHARS) -> str:
    """``text`` on one line, cut to ``chars`` with an ellipsis: as a problem quotes it."""
    line = " ".join(text.split())
    return line if len(line) <= chars else line[: chars - 1] + "…"


def line_at(text: str, at: int) -> str:
    """The line of ``text`` around offset ``at``, clipped, as a problem quotes it."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return clipped(text[start : end if end >= 0 else len(text)])


# Where one sentence ends and the next begins: after . ! or ? before a capital, a digit, a quote,
# a bracket or a command ("0.9367 against 0.9367." then "\textbf{…}"), or at a blank line.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\\\"'(“])|\n\s*\n")


def sentences_at(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of each sentence of ``text``, in order; blank pieces left out."""
    found, start = [], 0
    for piece in SENTENCE_BREAK.split(text):
        at = text.find(piece, start)
        start = max(start, at + len(piece))
        if piece.strip():
            found.append((max(at, 0), piece))
    return found
