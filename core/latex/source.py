"""Reading LaTeX source: comments, brace groups, line numbers, and the filecontents blocks in
which The AI Scientist's templates keep their bibliography. Shared by the compiler, the code
checks and the bibliography editing.
"""

from __future__ import annotations

import re
from pathlib import Path

FILECONTENTS = re.compile(
    r"\\begin\{filecontents\*?\}\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}(.*?)\\end\{filecontents\*?\}",
    re.DOTALL,
)


def filecontents_blocks(tex_text: str) -> list[tuple[str, str]]:
    """(file name, contents) of every filecontents environment, in document order."""
    return [(m.group(1).strip(), m.group(2)) for m in FILECONTENTS.finditer(tex_text)]


def read_text_lenient(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def first_comment_start(line: str) -> int | None:
    for match in re.finditer(r"%", line):
        backslashes = len(line[: match.start()]) - len(line[: match.start()].rstrip("\\"))
        if backslashes % 2 == 0:
            return match.start()
    return None


def strip_comments(text: str) -> str:
    """Blank out comments (an unescaped % to the end of the line), keeping line numbers."""
    out = []
    for line in text.split("\n"):
        start = first_comment_start(line)
        out.append(line if start is None else line[:start] + " " * (len(line) - start))
    return "\n".join(out)


def blank_out(match: re.Match[str]) -> str:
    """Replace a match by spaces but keep its newlines, so line numbers stay right."""
    return re.sub(r"[^\n]", " ", match.group())


def balanced_group(text: str, open_index: int) -> str:
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : i]
    return text[open_index + 1 :]


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


_SECTION = re.compile(r"\\section\*?\s*\{")
# Where a section's text ends: the next section, or the back matter.
_SECTION_END = re.compile(
    r"\\section\*?\s*\{|\\appendix\b|\\bibliographystyle\b|\\bibliography\s*\{"
    r"|\\printbibliography\b|\\end\s*\{document\}"
)


def section_titles(tex_text: str) -> list[str]:
    """The \\section titles of a LaTeX source, in order (commented-out ones left out)."""
    text = strip_comments(tex_text)
    return [
        " ".join(balanced_group(text, match.end() - 1).split()) for match in _SECTION.finditer(text)
    ]


def section_span(tex_text: str, title: str) -> tuple[int, int] | None:
    """Where the section titled ``title`` (case and spacing ignored) lies in ``tex_text``: from
    its \\section command to the next section or the back matter; None when there is none."""
    text = strip_comments(tex_text)
    wanted = " ".join(title.split()).lower()
    for match in _SECTION.finditer(text):
        heading = " ".join(balanced_group(text, match.end() - 1).split()).lower()
        if heading != wanted:
            continue
        body_from = match.end() + len(balanced_group(text, match.end() - 1)) + 1
        end = _SECTION_END.search(text, body_from)
        return match.start(), end.start() if end else len(text)
    return None


def outside_section(tex_text: str, title: str) -> str:
    """The source without the section ``title``: what an edit of that section must not touch."""
    span = section_span(tex_text, title)
    return tex_text if span is None else tex_text[: span[0]] + tex_text[span[1] :]
