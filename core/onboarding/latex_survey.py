"""The LaTeX of a repository: each main file (one with \\documentclass), its sections in reading
order through the files it inputs, those inputs, its bibliography files, and placeholders such as
"RESULTS HERE". Read with regular expressions, comments left out; nothing is compiled.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..source.files import normal_path, read_text
from .repo_facts import LatexMain, TexFile

_TEX_ITEM = re.compile(r"\\(section|input|include|subfile)\*?\s*(?:\[[^\]]*\])?\{")
_BIB = re.compile(r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\{([^}]*)\}")
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z ]*[A-Z] HERE\b")


def _uncomment(text: str | None) -> str:
    return re.sub(r"(?<!\\)%.*", "", text or "")


def _braced(text: str, start: int) -> str:
    """The group whose opening brace ends just before ``start`` (nested braces kept)."""
    depth = 1
    for i in range(start, min(len(text), start + 500)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start : start + 200]


def find_latex_mains(root: Path, files: list[str]) -> list[LatexMain]:
    mains = []
    for rel in (f for f in files if f.endswith(".tex")):
        text = _uncomment(read_text(root, rel))
        if "\\documentclass" in text:
            sections: list[str] = []
            inputs: list[TexFile] = []
            holders: list[str] = []
            folder = PurePosixPath(rel).parent
            _tex_walk(root, folder, text, (sections, inputs, holders), {rel}, 0)
            bibs = [
                normal_path(folder / (n if n.endswith(".bib") else f"{n}.bib"))
                for group in _BIB.findall(text)
                for n in (part.strip() for part in group.split(","))
                if n
            ]
            bib_files = tuple(TexFile(b, (root / b).is_file()) for b in bibs)
            mains.append(
                LatexMain(
                    rel, tuple(sections), tuple(inputs), bib_files, tuple(dict.fromkeys(holders))
                )
            )
    return mains


def _tex_walk(
    root: Path,
    folder: PurePosixPath,
    text: str,
    out: tuple[list[str], list[TexFile], list[str]],
    seen: set[str],
    depth: int,
) -> None:
    """Sections in reading order, following \\input into the files it names (which LaTeX looks
    for from the main file's folder)."""
    sections, inputs, holders = out
    holders += _PLACEHOLDER.findall(text)
    for match in _TEX_ITEM.finditer(text):
        argument = " ".join(_braced(text, match.end()).split())
        if match.group(1) == "section":
            sections.append(argument)
            continue
        path = normal_path(
            folder / (argument if PurePosixPath(argument).suffix else f"{argument}.tex")
        )
        inputs.append(TexFile(path, (root / path).is_file()))
        if inputs[-1].exists and path not in seen and depth < 4:
            seen.add(path)
            _tex_walk(root, folder, _uncomment(read_text(root, path)), out, seen, depth + 1)
