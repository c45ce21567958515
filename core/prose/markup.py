"""Markup of another format in a paper, and LaTeX commands that lost their backslash.

A small model asked for LaTeX writes what it has seen most: HTML (Qwen2.5-Coder-1.5B's
Experimental Setup was eighteen ``<p>…</p>`` paragraphs), Markdown (``**bold**``, ``# headings``,
code fences), and LaTeX written inside JSON with one backslash, which JSON decodes as an escape:
``"\\textbf"`` arrives as a tab and ``extbf``, ``"\\begin"`` as a backspace and ``egin``. Both
print as garbage in the PDF. ``latex=False`` reads text extracted from a PDF, where Markdown-like
rows are the reader's own and only HTML and the lost commands' letters can be told.
"""

from __future__ import annotations

import re

from .defect import LOST_BACKSLASH, MARKUP, Defect, clipped, line_at

_HTML = re.compile(
    r"</?(?:p|br|div|span|b|i|u|em|strong|h[1-6]|ul|ol|li|table|tr|td|th|thead|tbody|code|pre"
    r"|sup|sub|a|img|hr|blockquote)(?:\s[^<>\n]{0,80})?/?>|&(?:nbsp|amp|lt|gt|quot|#\d{2,4});",
    re.I,
)
_MARKDOWN = re.compile(
    r"```|^[ \t]*#{1,6}[ \t]+\S|\*\*[^*\n]+\*\*|(?<![\w\\])__[^_\n]+__(?!\w)|"
    r"\[[^\]\n]{1,80}\]\((?:https?://|www\.|/)[^)\s]*\)|^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*\|",
    re.M,
)
# Control characters a JSON decoder made of "\b", "\f", "\r", "\t": never text in a paper.
_CONTROL = re.compile(r"[\b\f\r]|\t(?=[a-z])")
# Commands whose first letter a JSON escape ate, as they stand in LaTeX source ("extbf{") and in
# a PDF's text, where the braces are gone ("extbfIntroduction"). No English word begins so.
_EATEN = r"extbf|extit|exttt|extsc|extsf|extrm|extnormal|extwidth|egin|oindent|ewline|ewpage"
_EATEN_IN_SOURCE = re.compile(rf"(?<![\\\w])(?:{_EATEN}|rac|ef|abla|eta|ullet)\{{")
_EATEN_IN_TEXT = re.compile(rf"(?<![\w])(?:{_EATEN})(?=[A-Z{{\s])")
_ESCAPES = {"\t": "t", "\b": "b", "\f": "f", "\r": "r"}
# The letter each eaten command began with: \t (tab), \b (backspace), \n (newline), \f, \r.
_FIRST_LETTER = (
    ("ext", "t"),
    ("egin", "b"),
    ("eta", "b"),
    ("ullet", "b"),
    ("rac", "f"),
    ("ef", "r"),
)


def foreign_markup(text: str, latex: bool = True) -> list[Defect]:
    """The first HTML tag or entity and (in LaTeX source) the first Markdown mark, each a
    defect."""
    found = []
    html = _HTML.search(text)
    if html:
        found.append(
            Defect(
                MARKUP,
                html.start(),
                line_at(text, html.start()),
                f"HTML markup (“{html.group(0)}”) is in the text (in “{line_at(text, html.start())}”).",
                "Write LaTeX: a blank line between paragraphs, \\textbf{…} for bold, no tags.",
            )
        )
    markdown = _MARKDOWN.search(text) if latex else None
    if markdown:
        found.append(
            Defect(
                MARKUP,
                markdown.start(),
                line_at(text, markdown.start()),
                f"Markdown (“{clipped(markdown.group(0), 30)}”) is in the LaTeX "
                f"(in “{line_at(text, markdown.start())}”).",
                "Write LaTeX: \\textbf{…} for bold, \\section or \\paragraph for headings, "
                "no code fences.",
            )
        )
    return found


def lost_backslashes(text: str, latex: bool = True) -> list[Defect]:
    """The first LaTeX command that lost its backslash: a control character a JSON decoder
    made of it, or the letters left ("extbf{", in a PDF "extbfIntroduction")."""
    control = _CONTROL.search(text) if latex else None
    if control:
        word = re.match(r"[A-Za-z]*", text[control.end() :])
        command = "\\" + _ESCAPES.get(control.group(0), "") + (word.group(0) if word else "")
        return [_lost(text, control.start(), command, control.group(0))]
    eaten = (_EATEN_IN_SOURCE if latex else _EATEN_IN_TEXT).search(text)
    if eaten:
        letters = re.match(r"[a-z]+", eaten.group(0))
        left = letters.group(0) if letters else ""
        first = next((f for start, f in _FIRST_LETTER if left.startswith(start)), "n")
        return [_lost(text, eaten.start(), "\\" + first + left)]
    return []


def _lost(text: str, at: int, command: str, control: str = "") -> Defect:
    how = (
        f"to JSON (“{command}” arrived as a control character and “{command[2:]}”)"
        if control
        else f"(“{command}” in “{line_at(text, at)}”)"
    )
    return Defect(
        LOST_BACKSLASH,
        at,
        line_at(text, at),
        f"A LaTeX command lost its backslash {how}: it prints as stray letters.",
        "Write the command with its backslash (in JSON every backslash twice: \\\\textbf).",
    )
