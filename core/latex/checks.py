"""Code checks of the paper before it is compiled, each a sentence that says what to fix:
citations without a BibTeX entry, figures that do not exist, duplicated sections and labels,
underscores outside math, a % after a number that silently comments out the rest of the line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .bibliography import bib_keys
from .source import balanced_group, blank_out, first_comment_start, line_of, strip_comments

GRAPHICS_EXTENSIONS = (".png", ".pdf", ".jpg", ".jpeg", ".eps")


_CITE = re.compile(r"\\[A-Za-z]*cite[A-Za-z]*\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^}]*)\}")
_INCLUDEGRAPHICS = re.compile(r"\\includegraphics\*?\s*(?:\[[^\]]*\]\s*)?\{([^}]*)\}")
_GRAPHICSPATH = re.compile(r"\\graphicspath\s*\{((?:\s*\{[^}]*\}\s*)*)\}")
_SECTION = re.compile(r"\\section\*?\s*(?:\[[^\]]*\])?\s*\{")
_LABEL = re.compile(r"\\label\s*\{([^}]*)\}")
# Commands whose arguments are names, not text: an underscore there is legitimate.
_NAME_ARG_COMMANDS = (
    r"label|ref|eqref|pageref|autoref|cref|Cref|nameref|[A-Za-z]*cite[A-Za-z]*|includegraphics|"
    r"input|include|bibliography|bibliographystyle|graphicspath|usepackage|documentclass|"
    r"begin|end|url|href|hyperref|newcommand|renewcommand|def|setlength|addtolength|"
    r"includepdf|lstinputlisting|verb"
)
_NAME_ARGS = re.compile(r"\\(?:" + _NAME_ARG_COMMANDS + r")\*?\s*(?:\[[^\]]*\]\s*)?\{[^}]*\}")
_VERBATIM_ENVS = re.compile(
    r"\\begin\{(verbatim|lstlisting|minted|comment|filecontents)\*?\}.*?\\end\{\1\*?\}", re.DOTALL
)
_MATH = re.compile(
    r"\$\$.*?\$\$|(?<!\\)\$.*?(?<!\\)\$|\\\(.*?\\\)|\\\[.*?\\\]|"
    r"\\begin\{(equation|align|alignat|gather|multline|flalign|eqnarray|math|displaymath)"
    r"\*?\}.*?\\end\{\1\*?\}",
    re.DOTALL,
)


def check_references(
    tex_text: str, bib_text: str, project_root: Path, graphics_dirs: list[Path]
) -> list[str]:
    """Problems a compile would hide or report badly, each as a sentence a model can act on.

    ``project_root`` is the directory the .tex compiles in: relative ``graphics_dirs`` and
    ``\\graphicspath`` entries resolve against it (and graphicspath entries against each
    graphics dir too).
    """
    body = strip_comments(_VERBATIM_ENVS.sub(blank_out, tex_text))
    problems: list[str] = []
    problems += _check_cites(body, bib_text)
    problems += _check_figures(body, Path(project_root), graphics_dirs)
    problems += _check_duplicate_sections(body)
    problems += _check_duplicate_labels(body)
    problems += _check_underscores(body)
    problems += _check_percent_after_numbers(_VERBATIM_ENVS.sub(blank_out, tex_text))
    return problems


def _check_cites(body: str, bib_text: str) -> list[str]:
    known = bib_keys(bib_text)
    problems = []
    reported: set[str] = set()
    for match in _CITE.finditer(body):
        for key in (k.strip() for k in match.group(1).split(",")):
            if key and key != "*" and key not in known and key not in reported:
                reported.add(key)
                problems.append(
                    f"Line {line_of(body, match.start())}: \\cite key '{key}' is not in the "
                    f"bibliography (references.bib); use a key that is there or remove the "
                    f"citation."
                )
    return problems


def referenced_figures(
    tex: str, root: Path, graphics_dirs: Sequence[Path] = ()
) -> list[dict[str, Any]]:
    """Every ``\\includegraphics`` target of ``tex`` once, in order of first use.

    Each is ``{"path": name as written, "exists": bool, "line": first line}``. Targets resolve as
    TeX resolves them when compiling in ``root`` (the .tex file's folder): against ``root``,
    then ``graphics_dirs``, then every ``\\graphicspath`` entry. Commented-out and verbatim
    includes do not count: TeX never reads them.
    """
    body = strip_comments(_VERBATIM_ENVS.sub(blank_out, tex))
    dirs = _graphics_search_dirs(body, Path(root), graphics_dirs)
    return [
        {"path": name, "exists": _find_graphic(name, dirs) is not None, "line": lines[0]}
        for name, lines in _figure_uses(body).items()
    ]


def _figure_uses(body: str) -> dict[str, list[int]]:
    """Lines of each ``\\includegraphics`` target of a comment-free body, in order of first use."""
    uses: dict[str, list[int]] = {}
    for match in _INCLUDEGRAPHICS.finditer(body):
        uses.setdefault(match.group(1).strip(), []).append(line_of(body, match.start()))
    return uses


def _check_figures(body: str, root: Path, graphics_dirs: Sequence[Path]) -> list[str]:
    dirs = _graphics_search_dirs(body, root, graphics_dirs)
    uses = _figure_uses(body)
    problems = [
        f"Line {lines[0]}: figure file '{name}' does not exist (looked in "
        f"{', '.join(str(d) for d in dirs)}); include only figures that exist."
        for name, lines in uses.items()
        if _find_graphic(name, dirs) is None
    ]
    problems += [
        f"Figure file '{name}' is included {len(lines)} times (lines "
        f"{', '.join(map(str, lines))}); include each figure once."
        for name, lines in uses.items()
        if len(lines) > 1
    ]
    return problems


def _graphics_search_dirs(body: str, root: Path, graphics_dirs: Sequence[Path]) -> list[Path]:
    bases = [root] + [d if Path(d).is_absolute() else root / d for d in graphics_dirs]
    extra = []
    for match in _GRAPHICSPATH.finditer(body):
        for entry in re.findall(r"\{([^}]*)\}", match.group(1)):
            extra += [base / entry for base in bases]
    seen: dict[Path, None] = {}
    for d in bases + extra:
        seen.setdefault(Path(os.path.normpath(d)), None)
    return list(seen)


def _find_graphic(name: str, dirs: list[Path]) -> Path | None:
    candidates = [name] if Path(name).suffix.lower() in GRAPHICS_EXTENSIONS else []
    candidates += [name + ext for ext in GRAPHICS_EXTENSIONS]
    for d in dirs:
        for candidate in candidates:
            path = d / candidate
            if path.is_file():
                return path
    return None


def _check_duplicate_sections(body: str) -> list[str]:
    titles = [
        (" ".join(balanced_group(body, match.end() - 1).split()), line_of(body, match.start()))
        for match in _SECTION.finditer(body)
    ]
    return [
        f"Section '{title}' appears {len(lines)} times (lines "
        f"{', '.join(map(str, lines))}); keep one and merge the text."
        for title, lines in _repeated(titles, key=str.lower)
    ]


def _check_duplicate_labels(body: str) -> list[str]:
    labels = [
        (match.group(1).strip(), line_of(body, match.start())) for match in _LABEL.finditer(body)
    ]
    return [
        f"Label '{label}' is defined {len(lines)} times (lines {', '.join(map(str, lines))}); "
        f"labels must be unique."
        for label, lines in _repeated(labels)
    ]


def _repeated(
    named: list[tuple[str, int]], key: Callable[[str], str] = str
) -> list[tuple[str, list[int]]]:
    """The names that occur more than once (compared by ``key``; shown as first written), each
    with the lines it is on."""
    lines: dict[str, list[int]] = {}
    shown: dict[str, str] = {}
    for name, line in named:
        lines.setdefault(key(name), []).append(line)
        shown.setdefault(key(name), name)
    return [(shown[k], found) for k, found in lines.items() if len(found) > 1]


def _check_underscores(body: str) -> list[str]:
    text = _MATH.sub(blank_out, body)
    text = _NAME_ARGS.sub(blank_out, text)
    problems = []
    for match in re.finditer(r"(?<!\\)_", text):
        line = line_of(text, match.start())
        snippet = body.splitlines()[line - 1].strip()[:60]
        problems.append(
            f"Line {line}: unescaped underscore outside math in '{snippet}'; write \\_ "
            f"(or put it in math mode)."
        )
    return _first_per_line(problems)


def with_specials_escaped(body: str) -> tuple[str, int, int]:
    """``body`` with what _check_underscores and _check_percent_after_numbers would refuse
    escaped: an underscore outside math and outside names (``\\ref{fig:a_b}`` stays) becomes
    ``\\_``, a percent sign after a digit ``\\%``. Returns the text and how many of each."""
    text = _NAME_ARGS.sub(blank_out, _MATH.sub(blank_out, body))
    underscores = [m.start() for m in re.finditer(r"(?<!\\)_", text)]
    for at in reversed(underscores):
        body = body[:at] + "\\" + body[at:]
    percents = 0
    lines = body.split("\n")
    for number, line in enumerate(lines):
        start = first_comment_start(line)
        while start and line[start - 1].isdigit():  # "0%, 25%": each in turn starts the comment
            line = line[:start] + "\\" + line[start:]
            percents += 1
            start = first_comment_start(line)
        lines[number] = line
    return "\n".join(lines), len(underscores), percents


# Environments whose rows are split at "&" in text mode (math ones are in _MATH).
_ALIGNED_TEXT = re.compile(
    r"\\begin\{(tabular[x*]?|longtable|array|[pbvBV]?matrix|cases)\*?\}.*?\\end\{\1\*?\}",
    re.DOTALL,
)


def with_ampersands_escaped(body: str) -> tuple[str, int]:
    """``body`` with each "&" outside a table, an array or an aligned equation written ``\\&``
    (Qwen2.5-Coder-1.5B cites "Kingma, D. & Ba, J." in prose: "Misplaced alignment tab
    character &", and the compile stops). Returns the text and how many."""
    text = _NAME_ARGS.sub(blank_out, _ALIGNED_TEXT.sub(blank_out, _MATH.sub(blank_out, body)))
    text = strip_comments(text)
    bare = [m.start() for m in re.finditer(r"(?<!\\)&", text)]
    for at in reversed(bare):
        body = body[:at] + "\\" + body[at:]
    return body, len(bare)


def _check_percent_after_numbers(tex_text: str) -> list[str]:
    """'improves by 5% over' starts a comment at the %: the rest of the line silently vanishes."""
    problems = []
    for n, line in enumerate(tex_text.splitlines(), start=1):
        start = first_comment_start(line)
        if start and line[start - 1].isdigit():
            number = re.search(r"[\d.]*\d$", line[:start])
            value = number.group() if number else line[start - 1]
            problems.append(
                f"Line {n}: '{value}%' starts a comment at the %, so the rest of the line is "
                f"dropped; write {value}\\%."
            )
    return problems


def _first_per_line(problems: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for p in problems:
        prefix = p.split(":", 1)[0]
        if prefix not in seen:
            seen.add(prefix)
            out.append(p)
    return out
