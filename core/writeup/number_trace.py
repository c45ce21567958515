"""Tracing the paper's numbers and claims to the runs: one round in which the model fixes what
matches no run, then ``provenance.json`` committed. The write-up runs it after the draft, and so
does each of the review's improvement rounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..coding.edit_guard import PAPER_ONLY
from ..provenance.record import check_paper, load_waivers
from ..stage_context import StageContext
from ..workspace.artifacts import NOTES, PROVENANCE

if TYPE_CHECKING:
    from ..coding.coder import Coder
    from ..provenance.numbers import Contradiction, Written


def trace_numbers(ctx: StageContext, coder: Coder) -> list[Written | Contradiction]:
    """One round in which the model replaces the numbers that match no run with the recorded
    ones (or removes them) and rewrites the sentences whose claims the runs' effects contradict;
    provenance.json is committed. Returns what is still open and not waived: untraced numbers,
    then contradicted sentences (each has a ``text`` to list). The review's improvement rounds
    use it too."""
    root = ctx.project.root
    waivers = load_waivers(root)
    report = check_paper(root, root / ctx.config.paper.tex, waivers, ctx.config.paper.sections)
    open_issues: list[Written | Contradiction] = [
        *report.open_issues(waivers),
        *report.open_claims(waivers),
    ]
    if open_issues:
        coder.edit(
            [ctx.config.paper.tex],
            ctx.prompt(
                "writeup_provenance",
                numbers=_listed_numbers(report.open_issues(waivers)),
                claims=_listed_claims(report.open_claims(waivers)),
            ),
            commit_message=f"{ctx.stage}: numbers and claims traced to the runs",
            read_only=[NOTES],
            policy=PAPER_ONLY,
        )
        report = check_paper(root, root / ctx.config.paper.tex, waivers, ctx.config.paper.sections)
        open_issues = [*report.open_issues(waivers), *report.open_claims(waivers)]
    ctx.commit(f"{ctx.stage}: provenance of the paper's numbers", [PROVENANCE])
    return open_issues


def _listed_numbers(numbers: list[Any]) -> str:
    return "\n".join(f"- {w.text} on line {w.line}: {w.context}" for w in numbers) or "- none"


def _listed_claims(claims: list[Any]) -> str:
    return "\n".join(f'- line {c.line}: "{c.sentence}"\n  {c.problem}' for c in claims) or "- none"
