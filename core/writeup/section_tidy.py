"""A section's text as a small model answers it, set right by code where that is certain
(core/writeup/sections.py asks, core/writeup/section_text.py checks what is left): backslashes JSON read as
control characters, the wrapping a model puts around a section (the document, its heading, other
sections, an abstract environment, an opening label), ``\\text{`` wrappers around prose, a
citation command no package defines, and the underscores and percent signs LaTeX would
misread. Each change is said, so the researcher sees what labtui did to the model's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..latex.checks import with_ampersands_escaped, with_specials_escaped
from ..latex.source import balanced_group, section_span, section_titles, strip_comments
from .section_text import SECTION_WORDS

_DOCUMENT = re.compile(r"\\begin\s*\{document\}(.*?)(?:\\end\s*\{document\}|\Z)", re.DOTALL)
_ABSTRACT_ENV = re.compile(r"^\s*\\begin\s*\{abstract\}(.*?)\\end\s*\{abstract\}\s*$", re.DOTALL)
_OPENING_LABEL = re.compile(
    r"\A\s*(?:\\(?:textbf|emph|textit|paragraph)\{)?\s*([A-Za-z][A-Za-z ]{1,40}?)\s*"
    r"(?::\s*\}|\}\s*:|:)\s*"
)
# An opening bold heading without a colon: "\textbf{Related Work}We review …".
_OPENING_HEADING = re.compile(
    r"\A\s*(?:\\(?:textbf|textit|emph|paragraph\*?)\{|\{\\bf\s+)([A-Za-z][A-Za-z ]{1,40}?)\s*\}\s*"
)
# "\n" written for a line break (JSON escaped twice): LaTeX reads an undefined command \n.
# Before a small letter it may be a command (\newline, \noindent, \nabla), and before a capital
# it is one only in amssymb's negated arrows; elsewhere it is certain.
_LITERAL_NEWLINE = re.compile(r"(?<!\\)\\n(?![a-z]|Rightarrow|Leftarrow|Leftrightarrow|V[dD]ash)")
# Characters pdflatex cannot set ("Unicode character − (U+2212) not set up for use with LaTeX",
# from the 1.5B model's results) and their commands; \ensuremath works in text and in math.
_UNSET: dict[str, str | int | None] = {
    "−": "\\ensuremath{-}",
    "≈": "\\ensuremath{\\approx}",
    "≤": "\\ensuremath{\\leq}",
    "≥": "\\ensuremath{\\geq}",
    "≠": "\\ensuremath{\\neq}",
    "→": "\\ensuremath{\\rightarrow}",
    "∞": "\\ensuremath{\\infty}",
    "α": "\\ensuremath{\\alpha}",
    "β": "\\ensuremath{\\beta}",
    "γ": "\\ensuremath{\\gamma}",
    "λ": "\\ensuremath{\\lambda}",
    "σ": "\\ensuremath{\\sigma}",
    "√": "\\ensuremath{\\surd}",
    "²": "\\ensuremath{^2}",
}
# A Markdown heading line ("## Related Work"): a line LaTeX cannot read (# is a macro parameter),
# read as the \section it means so that the wrapping below comes off the same way.
_MARKDOWN_HEADING = re.compile(r"^[ \t]*(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# By depth below the answer's top level: "### Background" under "## Introduction" is a part of
# it (a 1.5B model's background read as an empty section when every level became \section).
_HEADING_COMMANDS = ("section", "subsection", "subsubsection", "paragraph")
# A label before a paragraph inside the text: "\\textbf{Conclusion:} …", "**Results**: …".
_PARAGRAPH_LABEL = re.compile(
    r"^[ \t]*(?:\\textbf\{|\\emph\{|\*\*)?[ \t]*([A-Za-z][A-Za-z ]{1,40}?)[ \t]*"
    r"(?::[ \t]*\}|\}[ \t]*:|\*\*[ \t]*:|:[ \t]*\*\*|:)[ \t]*",
    re.MULTILINE,
)
# HTML paragraph and line-break tags, which pdflatex sets as "¡p¿" (the 1.5B model's setup was
# a run of <p>…</p>): paragraphs and line breaks, as LaTeX writes them.
_HTML_BREAK = re.compile(r"(\$[^$]*\$)|<\s*/?\s*(p|br)\s*/?\s*>", re.IGNORECASE)
# A citation command no package defines, as Qwen2.5-Coder-1.5B wrote it, and natbib's for it.
_UNDEFINED_CITE = re.compile(r"\\textcitep(?=\s*[\[{])")


@dataclass(frozen=True)
class Tidied:
    """A section's body with what code can fix for certain fixed."""

    body: str
    changes: tuple[str, ...] = ()  # what labtui did, as the notice says it ("took off …")


# A LaTeX command written in JSON with one backslash arrives as a control character and the rest
# of its name (\textbf: a tab and "extbf"); before a letter, such a character is never text.
_EATEN = {"\t": "t", "\b": "b", "\f": "f", "\r": "r"}
_EATEN_COMMAND = re.compile(r"([\t\b\f\r])(?=[A-Za-z])")
# \newline, \noindent and \newpage lose their "\n" the same way, to a line break.
_EATEN_N_COMMAND = re.compile(r"\n(?=(?:ewline|oindent|ewpage)\b)")


def tidied(body: str, heading: str) -> Tidied:
    """The text a model answered for the section ``heading``, with what a small model gets wrong
    and code can set right for certain set right, each said: backslashes JSON read as control
    characters put back; the wrapping taken off (Qwen2.5-Coder-1.5B answered a background as
    ``\\begin{document} \\section*{Background} …`` and an abstract as a whole paper): the
    document around it, its own \\section heading (or, from a reply of several sections, only
    its own section's text; a lone heading at the start, whatever it says), an abstract
    environment, an opening label such as ``\\textbf{Introduction:}`` or heading such as
    ``\\textbf{Related Work}``; ``\\text{`` around prose taken off; ``\\textcitep`` written
    ``\\citep``; and the underscores, percent signs and ampersands LaTeX would misread
    escaped. Anything else is left for the checks."""
    changes: list[str] = []
    body, eaten = _EATEN_COMMAND.subn(lambda m: "\\" + _EATEN[m.group(1)], body)
    body, eaten_n = _EATEN_N_COMMAND.subn(lambda _: "\\n", body)
    eaten += eaten_n
    if eaten:
        changes.append(f"put back {eaten} backslash(es) that JSON had read as control characters")
    body, newlines = _LITERAL_NEWLINE.subn("\n", body)
    if newlines:
        changes.append(f"wrote {newlines} literal \\n as line break(s)")
    unset = sum(body.count(char) for char in _UNSET)
    if unset:
        body = body.translate(str.maketrans(_UNSET))
        changes.append(f"wrote {unset} character(s) pdflatex cannot set as LaTeX commands")
    body, tags = _without_html_breaks(body)
    if tags:
        body = re.sub(r"\n[ \t]*(?:\n[ \t]*)+", "\n\n", body)
        changes.append(f"wrote {tags} HTML paragraph tag(s) as LaTeX paragraphs")
    body, headings = _latex_headings(body)
    if headings:
        changes.append(f"read {headings} Markdown heading(s) as LaTeX headings")
    body, cites = _UNDEFINED_CITE.subn(lambda _: "\\citep", body)
    if cites:
        changes.append(f"wrote {cites} \\textcitep (defined by no package) as \\citep")
    body = _unwrapped(body, heading, changes)
    body, unwrapped = without_text_wrappers(body)
    if unwrapped:
        changes.append(f"took off {unwrapped} \\text{{…}} wrapper(s) around prose")
    body, underscores, percents = with_specials_escaped(body)
    if underscores or percents:
        changes.append(f"escaped {percents} percent sign(s) and {underscores} underscore(s)")
    body, ampersands = with_ampersands_escaped(body)
    if ampersands:
        changes.append(f"escaped {ampersands} ampersand(s) outside tables and equations")
    return Tidied(body.strip(), tuple(changes))


def _unwrapped(body: str, heading: str, changes: list[str]) -> str:
    document = _DOCUMENT.search(body)
    if document:
        body = document.group(1)
        changes.append("took off the document around it")
    titles = section_titles(body)
    own = next((t for t in titles if _names(t, heading)), None)
    # a lone heading at the start that names no part of a paper: the model's title for it
    lone = (
        len(titles) == 1
        and re.match(r"\s*\\section", body) is not None
        and not _words(titles[0]) <= SECTION_WORDS | _JOINING
    )
    if own is not None or lone:
        title = own if own is not None else titles[0]
        span = section_span(body, title)
        assert span is not None  # the title was found in this text
        text = strip_comments(body)
        start = text.index("{", span[0])
        body = body[start + len(balanced_group(text, start)) + 2 : span[1]]
        others = len(titles) - 1
        changes.append(
            f"took off its heading and {others} other section(s)"
            if others
            else f"took off the heading “{title}”"
        )
    abstract = _ABSTRACT_ENV.match(body)
    if abstract:
        body = abstract.group(1)
        changes.append("took off the abstract environment")
    label = _OPENING_LABEL.match(body) or _OPENING_HEADING.match(body)
    if label and (_names(label.group(1), heading) or _heading_line(label, body)):
        body = body[label.end() :]
        changes.append(f"took off the label “{label.group(1).strip()}”")
    body, elsewhere = _without_other_parts(body, heading)
    if elsewhere:
        changes.append(
            "took off the paragraphs under "
            + ", ".join(f"“{x}”" for x in elsewhere)
            + " (other parts of the paper)"
        )
    labels = [m.group(1).strip() for m in _PARAGRAPH_LABEL.finditer(body) if _parts(m.group(1))]
    if labels:  # "\textbf{Conclusion:}" before a paragraph: the paper's headings are labtui's
        body = _PARAGRAPH_LABEL.sub(lambda m: "" if _parts(m.group(1)) else m.group(0), body)
        changes.append(f"took off the paragraph label(s) {', '.join(f'“{x}”' for x in labels)}")
    body, breaks = _without_stray_line_breaks(body)
    if breaks:
        changes.append(f"took off {breaks} line break(s) where no line was to end")
    return body


def _without_other_parts(body: str, heading: str) -> tuple[str, list[str]]:
    """Without the paragraphs labelled as other parts of the paper, when there are two or more
    such labels: a whole paper answered for one section (the 1.5B model's setup ran
    "Introduction: …", "Background: …", "Method: …", then "Seeds: …" and "Metrics: …"). One
    such label may be a word that begins a paragraph, so it stays; the labels are the removed
    labels."""
    starts = [m for m in _PARAGRAPH_LABEL.finditer(body)]
    bounds = [m.start() for m in starts] + [len(body)]
    elsewhere = [
        (m.group(1).strip(), m.start(), bounds[i + 1])
        for i, m in enumerate(starts)
        if _parts(m.group(1)) and not _names(m.group(1), heading)
    ]
    if len({label.lower() for label, _, _ in elsewhere}) < 2:
        return body, []
    for _, start, end in reversed(elsewhere):
        body = body[:start] + body[end:]
    return body, [label for label, _, _ in elsewhere]


# A line break that ends no line: at the start of the text or of a paragraph (pdflatex stops:
# "There's no line here to end"; the 1.5B model's background opened "\textbf{Background}\newline",
# and once its label was taken off the \newline began the section), or \newline at a paragraph's
# end (an underfull line at best).
_LEADING_BREAK = re.compile(r"(\A|\n[ \t]*\n)[ \t]*(?:\\newline(?![A-Za-z])|\\\\)[ \t]*\n?")
_TRAILING_BREAK = re.compile(r"[ \t]*\\newline(?![A-Za-z])[ \t]*(?=\n[ \t]*\n|\s*\Z)")


def _without_stray_line_breaks(body: str) -> tuple[str, int]:
    """Without the line breaks that end no line; how many."""
    count = 0
    while True:
        body, leading = _LEADING_BREAK.subn(lambda m: m.group(1), body)
        body, trailing = _TRAILING_BREAK.subn("", body)
        if not leading + trailing:
            return body, count
        count += leading + trailing


def _without_html_breaks(body: str) -> tuple[str, int]:
    """HTML paragraph and line-break tags outside math as LaTeX's; how many."""
    tags = 0

    def latex(match: re.Match[str]) -> str:
        nonlocal tags
        if match.group(1):  # math: "$x<p>y$" compares
            return match.group(1)
        tags += 1
        return "\n" if match.group(2).lower() == "br" else "\n\n"

    return _HTML_BREAK.sub(latex, body), tags


def _heading_line(label: re.Match[str], body: str) -> bool:
    """Whether an opening bold label names a part of a paper on a line of its own: another
    part's heading (the 1.5B model's related work opened "\\textbf{Introduction}" and a blank
    line), not bold words that begin a sentence ("\\textbf{Results} show the gap")."""
    closing = body.rfind("}", 0, label.end())
    return _parts(label.group(1)) and closing >= 0 and "\n" in body[closing : label.end()]


def _latex_headings(body: str) -> tuple[str, int]:
    """The Markdown headings as LaTeX's, the top level as \\section; how many."""
    levels = [len(m.group(1)) for m in _MARKDOWN_HEADING.finditer(body)]
    if not levels:
        return body, 0
    top = min(levels)

    def heading(match: re.Match[str]) -> str:
        depth = min(len(match.group(1)) - top, len(_HEADING_COMMANDS) - 1)
        return f"\\{_HEADING_COMMANDS[depth]}{{{match.group(2)}}}"

    return _MARKDOWN_HEADING.sub(heading, body), len(levels)


def _parts(label: str) -> bool:
    """Whether a label names parts of a paper only ("Conclusion", "Related Work")."""
    return _words(label) <= SECTION_WORDS | _JOINING


_JOINING = frozenset({"and", "the", "our", "of", "work", "works"})


def _words(title: str) -> set[str]:
    return set(re.findall(r"[a-z]+", title.lower()))


def _names(title: str, heading: str) -> bool:
    """Whether a heading or label ``title`` names the section ``heading`` ("Experimental Setup"
    names "experimental"; "Title and Abstract" names "abstract")."""
    words = _words(title)
    singular = {word.removesuffix("s") for word in words}
    return heading.removesuffix("s") in singular and words <= SECTION_WORDS | _JOINING


_TEXT_WRAPPER = "\\text{"


def without_text_wrappers(body: str) -> tuple[str, int]:
    """``body`` without the ``\\text{`` a small model wraps prose in outside math, each with its
    closing brace where it has one (Qwen2.5-Coder-1.5B opened three per related work and closed
    one: LaTeX stopped at the braces). Outside math ``\\text{x}`` sets x as it is, so taking it
    off changes nothing on the page; inside ``$…$`` it is kept. The count taken off."""
    out: list[str] = []
    closes: list[bool] = []  # per open brace: whether its } belongs to a wrapper taken off
    in_math, taken, i = False, 0, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            if not in_math and body.startswith(_TEXT_WRAPPER, i):
                if out and out[-1][-1:] in ".!?;:,":  # ".\text{These": the sentences stay apart
                    out.append(" ")
                closes.append(True)
                taken += 1
                i += len(_TEXT_WRAPPER)
                continue
            out.append(body[i : i + 2])  # an escaped character or a command's backslash
            i += 2
            continue
        if char == "$":
            in_math = not in_math
        elif char == "{":
            closes.append(False)
        elif char == "}" and closes and closes.pop():
            i += 1
            continue
        out.append(char)
        i += 1
    return "".join(out), taken
