"""Lines that are no text: what a model says when it stops ("done", "eof", "end of file"),
a chat template's tokens, a lone line break command. Each stands on a line of its own between
paragraphs; in a PDF it is a line of the page."""

from __future__ import annotations

import re

from .defect import STRAY, Defect

# The words themselves on a line, in LaTeX source and in a PDF's text alike.
_END_WORDS = re.compile(
    r"^[ \t]*(?:done|eof|the end|end of (?:file|text|answer|section)|<eos>|</s>|<\|[a-z_]+\|>)"
    r"[ \t.!]*$",
    re.I | re.M,
)
# In LaTeX source: a paragraph of one or two words without a full stop that is no command,
# no heading and no cell ("et al" never stands alone).
_LONE_WORDS = re.compile(
    r"(?:^|\n[ \t]*\n)[ \t]*([a-z][a-z'-]*(?:[ \t]+[a-z][a-z'-]*)?)[ \t]*(?=\n[ \t]*\n|$)"
)


def stray_lines(text: str, latex: bool = True) -> list[Defect]:
    """The first stray line of ``text``, as a defect; []."""
    found = _END_WORDS.search(text)
    at, word = (found.start(), found.group(0).strip()) if found else (-1, "")
    if latex and at < 0:
        lone = _LONE_WORDS.search(text)
        if lone:
            at, word = lone.start(1), lone.group(1)
    if at < 0:
        return []
    return [
        Defect(
            STRAY,
            at,
            word,
            f"The line “{word}” stands alone between paragraphs: it is no text of the paper.",
            "Delete it.",
        )
    ]
