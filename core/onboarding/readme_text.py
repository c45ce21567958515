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


# Sections that say how to use or cite the code, or warn about it: not what the research is.
_NOT_THE_TASK = re.compile(
    r"\W*(?:\d+\.?\s*)?(?:caveat|note|warning|disclaimer|news|update|changelog|install|"
    r"requirement|setup|set-up|getting started|quick ?start|usage|how to|running|license|"
    r"licence|citation|cite|acknowledg|todo|contents|table of contents|contributing|contact|"
    r"faq|dependencies|environment)",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"\s*(?:[*+-]|\d+[.)])\s+")


def readme_task(text: str) -> str:
    """The README's title and its first paragraphs of prose (no badges, code or tables; a list
    only where a paragraph introduces it with a colon), sections on installing, using, citing or
    caveats skipped, cut at a paragraph's or an item's end, never inside one."""
    title = ""
    parts: list[str] = []
    rule = re.compile(r"([=\-~^*#])\1{2,}")
    skipping = False
    for block in _blocks(text):
        if rule.fullmatch(block[0].strip()):
            block = block[1:]  # an rst title's overline
        first = block[0].strip() if block else ""
        underlined = len(block) > 1 and bool(rule.fullmatch(block[1].strip()))
        if first.startswith("#") or first.lower().startswith("<h1") or underlined:
            heading = _clean_markup(first.lstrip("#"))
            skipping = bool(_NOT_THE_TASK.match(heading))
            if parts and not skipping:
                break  # the next section starts
            title = title or ("" if skipping else heading)
            block = block[2:] if underlined else block[1:]
        if skipping or not block:
            continue
        if _LIST_ITEM.match(block[0]):
            if parts and parts[-1].endswith(":"):  # the list a paragraph introduces
                parts[-1] += " " + "; ".join(_items(block))
            continue
        if re.match(r"\s|[|>] ", block[0]):
            continue  # a table, quote or indented code
        prose = _clean_markup(" ".join(line.strip() for line in block))
        if prose and len("\n\n".join([title, *parts, prose])) > TASK_CHARS and parts:
            break
        parts += [prose] if prose else []
    if parts and parts[-1].endswith(":"):
        parts.pop()  # a paragraph that introduces what is not there
    task = "\n\n".join(p for p in [title, *parts] if p)
    return task if len(task) <= TASK_CHARS else _cut(task)


def _items(block: list[str]) -> list[str]:
    items: list[str] = []
    for line in block:
        if _LIST_ITEM.match(line):
            items.append(_clean_markup(_LIST_ITEM.sub("", line, count=1)))
        elif items:
            items[-1] += " " + _clean_markup(line)
    return [i for i in items if i]


def _cut(task: str) -> str:
    """At most TASK_CHARS, ending where a sentence ends."""
    head = task[:TASK_CHARS]
    end = max(head.rfind(". "), head.rfind(".\n"), head.rfind("; "))
    return head[: end + 1] if end > 0 else head.rsplit(" ", 1)[0] + " …"


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
