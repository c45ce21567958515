"""Citation rounds (The AI Scientist's write-up, made strict): in each round the model reads the
draft and names one place that needs a citation and a search query, or says it is done; labtui
searches arXiv (and Semantic Scholar with a key), the model picks among the results it was shown, labtui writes their BibTeX into
the bibliography itself, and aider puts the ``\\cite`` in. The model never writes BibTeX, and a
citation edit that cites a key the bibliography lacks is undone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..answers.validation import validate
from ..answers.writeup_answers import CitationProposal, CitationSelection
from ..coding.edit_guard import EditPolicy
from ..latex.bibliography import add_bib_entries, bib_keys, bib_text_of, paper_and_bibliography
from ..latex.source import strip_comments
from ..literature.combined import search_all
from ..stage_context import StageContext

if TYPE_CHECKING:
    from ..coding.coder import Coder

CITE = re.compile(r"\\cite[tp]?\*?(?:\[[^\]]*\])*\{([^}]*)\}")


@dataclass(frozen=True)
class Proposal:
    done: bool
    where: str = ""  # the section and sentence that needs support
    query: str = ""


@dataclass(frozen=True)
class Selection:
    chosen: list[int]  # indexes into the results shown
    how: str  # where and how to cite them


def parse_proposal(data: Any) -> Proposal:
    answer = validate(CitationProposal, data)
    if answer.done:
        return Proposal(done=True)
    return Proposal(False, answer.where, answer.query)


def parse_selection(data: Any, shown: int) -> Selection:
    answer = validate(CitationSelection, data)
    outside = [i for i in answer.chosen if not 0 <= i < shown]
    if outside:
        raise ValueError(
            f"indexes {outside} are not among the {shown} results shown (0 to {shown - 1})"
        )
    return Selection(sorted(set(answer.chosen)), answer.how.strip())


def cited_keys(tex_text: str) -> set[str]:
    uncommented = strip_comments(tex_text)
    return {
        key.strip()
        for group in CITE.findall(uncommented)
        for key in group.split(",")
        if key.strip()
    }


def unknown_citations(tex: Path) -> list[str]:
    """Keys the document cites that its bibliography lacks."""
    text = Path(tex).read_text(encoding="utf-8")
    return sorted(cited_keys(text) - bib_keys(bib_text_of(text, Path(tex).parent)))


def run_rounds(ctx: StageContext, coder: Coder, tex_name: str, rounds: int) -> list[str]:
    """Up to ``rounds`` citation rounds on ``tex_name`` (project-relative); the keys cited."""
    tex = ctx.project.root / tex_name
    llm = ctx.llm(role="citer")
    cited: list[str] = []
    for round_no in range(1, rounds + 1):
        text = tex.read_text(encoding="utf-8")
        keys = ", ".join(sorted(bib_keys(bib_text_of(text, tex.parent)))) or "none"
        proposal = llm.ask_json(
            [{"role": "user", "content": ctx.prompt(
                "citations_propose", paper=text, bibkeys=keys, round=round_no, rounds=rounds
            )}],
            parse_proposal,
            schema=CitationProposal,
        )  # fmt: skip
        if proposal.done:
            ctx.say(f"citations: done after {round_no - 1} round(s)")
            break
        papers, down = search_all(ctx, proposal.query)
        if down and not papers:
            ctx.say(f"citations stop here: no search service answers ({'; '.join(down)})")
            break
        if not papers:
            ctx.say(f"citations: nothing found for {proposal.query!r}")
            continue
        selection = llm.ask_json(
            [{"role": "user", "content": ctx.prompt(
                "citations_select", where=proposal.where, query=proposal.query,
                results="\n\n".join(p.listing(i) for i, p in enumerate(papers)),
            )}],
            partial(parse_selection, shown=len(papers)),
            schema=CitationSelection,
        )  # fmt: skip
        if not selection.chosen:
            continue
        entries = {papers[i].bibtex_key: papers[i].bibtex for i in selection.chosen}
        if add_bib_entries(tex, entries):
            ctx.commit(
                f"writeup: bibliography entries for {', '.join(entries)}",
                paper_and_bibliography(ctx.project.root, tex),
            )
        if _integrate(ctx, coder, tex, tex_name, list(entries), proposal.where, selection.how):
            cited += [key for key in entries if key not in cited]
    return cited


def _integrate(
    ctx: StageContext, coder: Coder, tex: Path, tex_name: str, keys: list[str], where: str, how: str
) -> bool:
    """aider adds the \\cite; an edit that cites a key the bibliography lacks is undone."""
    before = ctx.project.head()
    edit = coder.edit(
        [tex_name],
        ctx.prompt("citations_integrate", keys=", ".join(keys), where=where, how=how),
        commit_message=f"writeup: cite {', '.join(keys)}",
        policy=EditPolicy(),  # the LaTeX file only: the bibliography entries are labtui's
    )
    if not edit.changed:
        ctx.say(f"citations: the edit for {', '.join(keys)} changed nothing ({edit.error})")
        return False
    unknown = unknown_citations(tex)
    if unknown:
        ctx.project.repo.git.checkout(before, "--", tex_name)
        ctx.commit(
            f"writeup: undo a citation edit that cited unknown keys ({', '.join(unknown)})",
            [tex_name],
        )
        ctx.say(
            f"undid a citation edit: it cited {', '.join(unknown)}, which are not in the bibliography"
        )
        return False
    return True
