"""Completing the researcher's own draft: only the parts ``[paper] sections`` names are written.

A repository often has its paper already (The AI Scientist v2's users ask to "complete an
incomplete draft"). Each named part is either a ``\\section`` title of the main file or a file the
paper ``\\input``s; the agents rewrite that part from the lab notebook, the runs and the figures,
and the rest stays exactly as the researcher wrote it. That is checked by code, not trusted: an
edit of a section that changed any text outside it is undone (and said), and asked once more.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..coding.edit_guard import PAPER_ONLY
from ..errors import Aborted, StageFailed
from ..events import Refused
from ..latex.source import outside_section, section_span, section_titles
from ..provenance.record import part_file
from ..stage_context import StageContext
from ..workspace.artifacts import NOTES


@dataclass(frozen=True)
class Part:
    """One part to write: a file of its own, or a section of the main file."""

    name: str  # as [paper] sections says it
    file: str  # the file edited, relative to the project
    section: str = ""  # the section's title in ``file`` ('' : the whole file is the part)


def draft_parts(root: Path, tex: str, sections: list[str]) -> list[Part]:
    """The parts ``[paper] sections`` names, checked against the draft: a StageFailed names
    each that the draft does not have, and the titles it does have."""
    main = Path(root) / tex
    if not main.is_file():
        raise StageFailed(
            f"[paper] tex = {tex!r}: no such file in {root}",
            "write the path of the paper's main .tex file, relative to the project",
        )
    text = main.read_text(encoding="utf-8", errors="replace")
    parts, missing = [], []
    for name in sections:
        as_file = part_file(Path(root), main, name)
        if as_file is not None:
            relative = as_file.resolve().relative_to(Path(root).resolve()).as_posix()
            parts.append(Part(name, relative))
        elif section_span(text, name) is not None:
            parts.append(Part(name, tex, name))
        else:
            missing.append(name)
    if missing:
        raise StageFailed(
            f"[paper] sections names {', '.join(map(repr, missing))}, which {tex} has neither "
            "as a \\section title nor as a file it inputs",
            "use the titles as the draft writes them: " + (", ".join(section_titles(text)) or
                                                            "(it has no \\section)"),
        )  # fmt: skip
    return parts


def write_parts(ctx: StageContext, coder, facts: dict[str, str], bibkeys: str) -> int:
    """Write each part, keep the rest of the draft as it was, and (in co-pilot mode) let the
    researcher judge each part. Returns how many parts were written."""
    written = 0
    for part in draft_parts(ctx.project.root, ctx.config.paper.tex, ctx.config.paper.sections):
        prompt = ctx.prompt(
            "writeup_draft_part",
            part=part.name,
            where=f"the section \\section{{{part.section}}} of {part.file}"
            if part.section
            else f"the file {part.file}",
            bibkeys=bibkeys,
            notes=ctx.notes_block(),
            **facts,
        )
        if _edit_part(ctx, coder, part, prompt):
            written += 1
            _judge(ctx, coder, part)
    return written


def _edit_part(ctx: StageContext, coder, part: Part, prompt: str, tries: int = 2) -> bool:
    path = ctx.project.root / part.file
    for _ in range(tries):
        before = path.read_text(encoding="utf-8")
        edit = coder.edit(
            [part.file],
            prompt,
            commit_message=f"writeup: {part.name}",
            read_only=[NOTES],
            policy=PAPER_ONLY,
        )
        if not edit.changed:
            why = (edit.error or "no change").strip().splitlines()[0]
            ctx.say(f"{part.name} was not written ({why}); it keeps your text")
            return False
        problem = _touched_elsewhere(part, before, path.read_text(encoding="utf-8"))
        if not problem:
            return True
        path.write_text(before, encoding="utf-8")
        ctx.commit(f"writeup: undo the edit of {part.name}: {problem}", [part.file])
        ctx.emit(Refused(stage=ctx.stage, what="edit", subject=part.file, reason=problem))
        prompt += f"\n\nYour last edit {problem}; it was undone. Change only {part.name}."
    return False


def _touched_elsewhere(part: Part, before: str, after: str) -> str:
    """Why an edit of a section went beyond it ('' when it stayed inside)."""
    if not part.section:
        return ""
    if section_span(after, part.section) is None:
        return f"removed the section \\section{{{part.section}}}"
    if outside_section(before, part.section) != outside_section(after, part.section):
        return f"changed text outside the section {part.section}"
    return ""


def _judge(ctx: StageContext, coder, part: Part) -> None:
    while True:
        decision = ctx.ask(
            f"writeup: {part.name} written",
            _part_body(ctx, part),
            kind="section",
            product=part.file,
        )
        if decision.action == "abort":
            raise Aborted(decision.note or "stopped during the write-up; the project is resumable")
        if decision.action != "revise":
            return
        note = (
            f"The researcher read {part.name} and asks: {decision.note}\nChange only {part.name}."
        )
        _edit_part(ctx, coder, part, note, tries=1)


def _part_body(ctx: StageContext, part: Part) -> str:
    text = (ctx.project.root / part.file).read_text(encoding="utf-8")
    span = section_span(text, part.section) if part.section else (0, len(text))
    shown = text[span[0] : span[1]].strip() if span else "(not found)"
    return f"{part.name} as written:\n\n```latex\n{shown[:3000]}\n```"
