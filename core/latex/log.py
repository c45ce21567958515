"""TeX's and BibTeX's logs as messages: file, line, text, error or warning (TeX runs with
``-file-line-error`` and an unwrapped log, see ``core.latex.compile.TEX_LOG_ENV``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class LatexMessage:
    file: str
    line: int | None
    message: str
    kind: str  # "error" | "warning"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"


# "./paper.tex:12: Undefined control sequence." (-file-line-error). Requiring a TeX-ish file
# extension keeps lines such as "Package: foo 2020/01/01" from reading as errors.
_FILE_LINE_ERROR = re.compile(
    r"^(?P<file>(?:[A-Za-z]:)?[^:\n]*?\.(?:tex|sty|cls|clo|def|cfg|fd|bbl|aux|ltx|dtx|ins)):"
    r"(?P<line>\d+): (?P<msg>.+)$"
)
_WARNING = re.compile(r"^(?:LaTeX|(?:Package|Class|Module) (?P<pkg>\S+)) Warning: (?P<msg>.*)$")
_CONTEXT_LINE = re.compile(r"^l\.(?P<line>\d+) ?(?P<text>.*)$")
_INPUT_LINE = re.compile(r"on input line (\d+)")
_FOLLOW_UP_ERRORS = ("==> Fatal error occurred", "Emergency stop")
TEX_LOG_WIDTH = 79  # a line of exactly this length in a default log continues on the next


def parse_log(text: str, main_file: str) -> tuple[list[LatexMessage], list[LatexMessage]]:
    """Errors and warnings of a (pdf)LaTeX log, each once, in log order.

    Warnings carry the line LaTeX names ("on input line N") and ``main_file``: the log does not
    reliably say which \\input file a warning came from.
    """
    lines = text.splitlines()
    errors: list[LatexMessage] = []
    warnings: list[LatexMessage] = []
    for i in range(len(lines)):
        message = _error_at(lines, i, main_file) or _warning_at(lines, i, main_file)
        if message is not None:
            (errors if message.kind == "error" else warnings).append(message)
    return _unique(errors), _unique(warnings)


def _error_at(lines: list[str], i: int, main_file: str) -> LatexMessage | None:
    line = lines[i]
    match = _FILE_LINE_ERROR.match(line)
    if match:
        file, lineno, msg = match.group("file"), int(match.group("line")), match.group("msg")
    elif line.startswith("! "):
        file, lineno, msg = main_file, None, line[2:]
    else:
        return None
    msg = msg.strip()
    if msg.startswith(_FOLLOW_UP_ERRORS):
        return None  # the consequence of the error already reported, not a second error
    context = _error_context(lines, i)
    if context is not None:
        lineno = lineno if lineno is not None else context[0]
        msg = _describe(msg, context[1])
    return LatexMessage(clean_path(file), lineno, msg, "error")


def _error_context(lines: list[str], i: int) -> tuple[int, str] | None:
    """The ``l.N <text up to the error>`` line TeX prints a few lines after an error."""
    for follow in lines[i + 1 : i + 12]:
        match = _CONTEXT_LINE.match(follow)
        if match:
            return int(match.group("line")), match.group("text").rstrip()
        if _FILE_LINE_ERROR.match(follow) or follow.startswith("! "):
            return None
    return None


def _describe(msg: str, context: str) -> str:
    """Name the culprit: for an undefined control sequence it is the last one before the error."""
    if msg.startswith("Undefined control sequence"):
        culprit = re.findall(r"\\(?:[A-Za-z@]+|.)", context)
        if culprit:
            return f"Undefined control sequence {culprit[-1]}"
    return f"{msg} (at: {context.strip()[-80:]})" if context.strip() else msg


def _warning_at(lines: list[str], i: int, main_file: str) -> LatexMessage | None:
    match = _WARNING.match(lines[i])
    if not match:
        return None
    pkg = match.group("pkg")
    parts = [match.group("msg").strip()]
    previous = lines[i]
    for follow in lines[i + 1 : i + 8]:
        if pkg and follow.startswith(f"({pkg})"):
            parts.append(follow[len(pkg) + 2 :].strip())
        elif len(previous) == TEX_LOG_WIDTH and follow.strip():
            parts[-1] += follow.strip()  # a default-width log broke the line mid-word
        else:
            break
        previous = follow
    msg = " ".join(p for p in parts if p)
    line = _INPUT_LINE.search(msg)
    return LatexMessage(main_file, int(line.group(1)) if line else None, msg, "warning")


def clean_path(file: str) -> str:
    return file.removeprefix("./")


def _unique(messages: Iterable[LatexMessage]) -> list[LatexMessage]:
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for m in messages:
        key = (m.file, m.line, m.message)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


_BLG_WARNING = re.compile(r"^Warning--(?P<msg>.+)$")
_BLG_ERROR = re.compile(r"^(?P<msg>.*?)---line (?P<line>\d+) of file (?P<file>\S+)$")
_BLG_NO_DATABASE = re.compile(r"^I couldn't open (?:database|auxiliary|style) file .+$")


def parse_blg(text: str) -> list[LatexMessage]:
    """BibTeX's own problems (missing entries, .bib syntax), as warnings: the PDF still builds."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := _BLG_WARNING.match(line):
            out.append(LatexMessage("bibtex", None, f"BibTeX: {m.group('msg')}", "warning"))
        elif m := _BLG_ERROR.match(line):
            msg = m.group("msg").strip() or (lines[i - 1].strip() if i else "syntax error")
            out.append(
                LatexMessage(m.group("file"), int(m.group("line")), f"BibTeX: {msg}", "warning")
            )
        elif _BLG_NO_DATABASE.match(line):
            out.append(LatexMessage("bibtex", None, f"BibTeX: {line.strip()}", "warning"))
    return _unique(out)
