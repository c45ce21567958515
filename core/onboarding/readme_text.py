"""A repository's README: which file it is, and the research task its prose tells.

``find_readme`` picks the README (Markdown first) and keeps its beginning for the survey;
``readme_task`` takes its title and first paragraphs of prose, markup, badges, lists, tables and
code left out, for [project] task.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..source.files import read_text
from .command_lines import FENCE
from .repo_facts import Readme

README_CHARS = 4000
TASK_CHARS = 1200


def find_readme(root: Path, files: list[str]) -> Readme | None:
    """The top folder's README (Markdown before other kinds), its first ``README_CHARS``."""
    pattern = re.compile(r"readme(\.(md|markdown|rst|txt))?", re.I)
    names = sorted((f for f in files if pattern.fullmatch(f)), key=lambda n: (n[-3:] != ".md", n))
    for name in names:
        text = read_text(root, name)
        if text is not None:
            return Readme(name, text[:README_CHARS])
    return None


def _clean_markup(line: str) -> str:
    line = re.sub(r"`([^`<]+?)\s*<[^>]*>`_+", r"\1", line)  # an rst link keeps its text
    line = re.sub(r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)|!\[[^\]]*\]\([^)]*\)|<[^>]*>", "", line)
    line = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", line)  # a Markdown link too
    line = re.sub(r"\*\*|__|`|^\.\. .*|\|[\w -]+\|", "", line)
    return " ".join(line.split())


def readme_task(text: str) -> str:
    """The README's title and its first paragraphs of prose: no badges, code, lists, tables."""
    title = ""
    paragraphs: list[str] = []
    rule = re.compile(r"([=\-~^*#])\1{2,}")
    for block in _blocks(text):
        if rule.fullmatch(block[0].strip()):
            block = block[1:]  # an rst title's overline
        first = block[0].strip() if block else ""
        underlined = len(block) > 1 and bool(rule.fullmatch(block[1].strip()))
        if first.startswith("#") or first.lower().startswith("<h1") or underlined:
            if paragraphs:
                break  # the next section starts
            title = title or _clean_markup(first.lstrip("#"))
            block = block[2:] if underlined else block[1:]
        if not block or re.match(r"\s|[|>*+-] |\d+[.)] ", block[0]):
            continue  # a list, table, quote or indented code
        prose = _clean_markup(" ".join(line.strip() for line in block))
        paragraphs += [prose] if prose else []
        if sum(map(len, paragraphs)) > TASK_CHARS:
            break
    task = "\n\n".join(p for p in [title, *paragraphs] if p)
    return task if len(task) <= TASK_CHARS else task[:TASK_CHARS].rsplit(" ", 1)[0] + " …"


def _blocks(text: str) -> list[list[str]]:
    """The lines between blank lines, fenced code left out."""
    blocks: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            blocks.append([])
        elif fenced:
            continue
        elif line.strip():
            blocks[-1].append(line)
        else:
            blocks.append([])
    return [b for b in blocks if b]
