"""The paper's bibliography: which BibTeX keys it has, and adding entries it lacks, whether it
lives in a filecontents block of the .tex (The AI Scientist's templates) or in a .bib file.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import LabtuiError
from .source import FILECONTENTS, filecontents_blocks, read_text_lenient, strip_comments

# The head of a BibTeX entry: @kind{key, (or @kind(key,). The one pattern for an entry's key.
BIB_ENTRY = re.compile(r"@\s*(\w+)\s*[{(]\s*([^,\s]+)\s*,")


def entry_key(bibtex: str) -> str:
    """The key of the BibTeX entry ``bibtex`` begins with ('' when it begins with none)."""
    found = BIB_ENTRY.match(bibtex.lstrip())
    return found.group(2) if found else ""


def bib_keys(bib_text: str) -> set[str]:
    """Entry keys of a .bib text (@string, @comment and @preamble are not entries)."""
    return {
        key
        for kind, key in BIB_ENTRY.findall(bib_text)
        if kind.lower() not in {"string", "comment", "preamble"}
    }


def add_bib_entries(tex: Path, entries: dict[str, str]) -> list[str]:
    """Add BibTeX ``entries`` (key -> entry) the document's bibliography lacks; the keys added.

    Where the bibliography is a filecontents block in the .tex (The AI Scientist's templates),
    the entries go at the end of its first .bib block; otherwise into the first .bib file the
    document names (or the only one beside it). Keys already there are left alone, so the
    template's own entries always win."""
    tex = Path(tex)
    text = tex.read_text(encoding="utf-8")
    present = bib_keys(bib_text_of(text, tex.parent))
    new = {key: entry.strip() for key, entry in entries.items() if key not in present}
    if not new:
        return []
    addition = "\n" + "\n\n".join(new.values()) + "\n"
    block = next(
        (m for m in FILECONTENTS.finditer(text) if m.group(1).strip().endswith(".bib")), None
    )
    if block is not None:
        end = block.end(2)
        tex.write_text(text[:end].rstrip("\n") + "\n" + addition + text[end:], encoding="utf-8")
        return list(new)
    bib = _named_bib_file(text, tex.parent)
    if bib is None:
        raise LabtuiError(
            f"{tex} has no bibliography to add citations to",
            "add a filecontents block for references.bib or a \\bibliography{references} line",
        )
    previous = bib.read_text(encoding="utf-8") if bib.is_file() else ""
    bib.write_text(previous.rstrip("\n") + "\n" + addition, encoding="utf-8")
    return list(new)


def entries_file(tex: Path) -> Path:
    """Where add_bib_entries writes: the .tex itself (its filecontents block) or the .bib file
    it names; what a commit of new entries must include."""
    text = Path(tex).read_text(encoding="utf-8")
    if any(m.group(1).strip().endswith(".bib") for m in FILECONTENTS.finditer(text)):
        return Path(tex)
    return _named_bib_file(text, Path(tex).parent) or Path(tex)


def paper_and_bibliography(root: Path, tex: Path) -> list[str]:
    """The project-relative names of the paper and of the file its new entries go into."""
    names = [Path(tex), entries_file(tex)]
    return list(
        dict.fromkeys(p.resolve().relative_to(Path(root).resolve()).as_posix() for p in names)
    )


def _named_bib_file(tex_text: str, latex_dir: Path) -> Path | None:
    names = _bibliography_names(tex_text)
    if names:
        name = names[0]
        return Path(latex_dir) / (name if name.endswith(".bib") else name + ".bib")
    beside = sorted(Path(latex_dir).glob("*.bib"))
    return beside[0] if len(beside) == 1 else None


def _bibliography_names(tex_text: str) -> list[str]:
    names: list[str] = []
    for match in re.finditer(
        r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\{([^}]*)\}", strip_comments(tex_text)
    ):
        names += [n.strip() for n in match.group(1).split(",") if n.strip()]
    return names


def bib_text_of(tex_text: str, latex_dir: Path) -> str:
    """The bibliography a document uses: its filecontents .bib blocks, else the .bib files
    named by \\bibliography{} beside it, else every .bib beside it."""
    blocks = [body for name, body in filecontents_blocks(tex_text) if name.endswith(".bib")]
    if blocks:
        return "\n".join(blocks)
    latex_dir = Path(latex_dir)
    names = _bibliography_names(tex_text)
    paths = [latex_dir / (n if n.endswith(".bib") else n + ".bib") for n in names]
    if not paths:
        paths = sorted(latex_dir.glob("*.bib"))
    return "\n".join(read_text_lenient(p) for p in paths if p.is_file())


_TITLE = re.compile(r"\btitle\s*=\s*[{\"]", re.I)


def bib_titles(bib_text: str) -> dict[str, str]:
    """{key: title} of a .bib text's entries, the title's braces taken off ('' without one)."""
    found = {}
    heads = [
        m
        for m in BIB_ENTRY.finditer(bib_text)
        if m.group(1).lower() not in {"string", "comment", "preamble"}
    ]
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        body = bib_text[head.end() : following.start() if following else len(bib_text)]
        title = _TITLE.search(body)
        text = ""
        if title:
            depth, chars = 1, []
            for ch in body[title.end() :]:
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if depth == 0 or (ch == '"' and body[title.end() - 1] == '"'):
                    break
                chars.append(ch)
            text = " ".join("".join(chars).replace("{", "").replace("}", "").split())
        found[head.group(2)] = text
    return found
