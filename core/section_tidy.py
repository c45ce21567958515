"""A section's text as a small model answers it, set right by code where that is certain
(core/section_writer.py asks, core/section_text.py checks what is left): backslashes JSON read as
control characters, the wrapping a model puts around a section (the document, its heading, other
sections, an abstract environment, an opening label), and the underscores and percent signs
LaTeX would misread. Each change is said, so the researcher sees what labtui did to the model's
words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .latex_checks import with_specials_escaped
from .latex_text import balanced_group, section_span, section_titles, strip_comments
from .section_text import SECTION_WORDS

_DOCUMENT = re.compile(r"\\begin\s*\{document\}(.*?)(?:\\end\s*\{document\}|\Z)", re.DOTALL)
_ABSTRACT_ENV = re.compile(r"^\s*\\begin\s*\{abstract\}(.*?)\\end\s*\{abstract\}\s*$", re.DOTALL)
_OPENING_LABEL = re.compile(
    r"\A\s*(?:\\(?:textbf|emph|textit|paragraph)\{)?\s*([A-Za-z][A-Za-z ]{1,40}?)\s*"
    r"(?::\s*\}|\}\s*:|:)\s*"
)


@dataclass(frozen=True)
class Tidied:
    """A section's body with what code can fix for certain fixed."""

    body: str
    changes: tuple[str, ...] = ()  # what labtui did, as the notice says it ("took off …")


# A LaTeX command written in JSON with one backslash arrives as a control character and the rest
# of its name (\textbf: a tab and "extbf"); before a letter, such a character is never text.
_EATEN = {"\t": "t", "\b": "b", "\f": "f", "\r": "r"}
_EATEN_COMMAND = re.compile(r"([\t\b\f\r])(?=[A-Za-z])")


def tidied(body: str, heading: str) -> Tidied:
    """The text a model answered for the section ``heading``, with what a small model gets wrong
    and code can set right for certain set right, each said: backslashes JSON read as control
    characters put back; the wrapping taken off (Qwen2.5-Coder-1.5B answered a background as
    ``\\begin{document} \\section*{Background} …`` and an abstract as a whole paper): the
    document around it, its own \\section heading (or, from a reply of several sections, only
    its own section's text; a lone heading at the start, whatever it says), an abstract
    environment, an opening label such as ``\\textbf{Introduction:}``; and the underscores and
    percent signs LaTeX would misread escaped. Anything else is left for the checks."""
    changes: list[str] = []
    body, eaten = _EATEN_COMMAND.subn(lambda m: "\\" + _EATEN[m.group(1)], body)
    if eaten:
        changes.append(f"put back {eaten} backslash(es) that JSON had read as control characters")
    body = _unwrapped(body, heading, changes)
    body, underscores, percents = with_specials_escaped(body)
    if underscores or percents:
        changes.append(f"escaped {percents} percent sign(s) and {underscores} underscore(s)")
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
    label = _OPENING_LABEL.match(body)
    if label and _names(label.group(1), heading):
        body = body[label.end() :]
        changes.append(f"took off the label “{label.group(1).strip()}”")
    return body


_JOINING = frozenset({"and", "the", "our", "of", "work", "works"})


def _words(title: str) -> set[str]:
    return set(re.findall(r"[a-z]+", title.lower()))


def _names(title: str, heading: str) -> bool:
    """Whether a heading or label ``title`` names the section ``heading`` ("Experimental Setup"
    names "experimental"; "Title and Abstract" names "abstract")."""
    words = _words(title)
    singular = {word.removesuffix("s") for word in words}
    return heading.removesuffix("s") in singular and words <= SECTION_WORDS | _JOINING
