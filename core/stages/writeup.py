"""Write-up: the paper (latex/template.tex, or ``[paper] tex``) from the lab notebook, the runs and
the figures. ``[paper] writer = "sections"`` (the default): each section's text is a structured
answer that labtui checks and places (core/writeup/sections.py); ``"aider"``: aider fills each
section in the whole file, and the placeholders left behind are sent back once.
"""

from __future__ import annotations

from ..checkpoints import WAIVE
from ..coding.edit_guard import PAPER_ONLY
from ..errors import StageFailed
from ..events import LatexUpdated
from ..latex.bibliography import add_bib_entries, bib_keys, bib_text_of, paper_and_bibliography
from ..latex.checks import referenced_figures
from ..provenance.record import check_paper, claim_key, key, load_waivers, report_markdown
from ..search.ledger import SearchLedger
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import NOTES, PROVENANCE, has_literature, load_literature
from ..workspace.stage_results import ExperimentsResult, PlotsResult, WriteupResult
from ..writeup.citations import run_rounds
from ..writeup.completeness import gap_key, project_gaps, record_gaps
from ..writeup.draft_parts import write_parts
from ..writeup.ledger_appendix import appendix_latex, with_appendix
from ..writeup.number_trace import trace_numbers
from ..writeup.section_repair import gathered_facts, literature_block
from ..writeup.section_text import placeholders_left
from ..writeup.sections import (
    SECTIONS,
    Flagged,
    Revision,
    Section,
    judge_section,
    rewrite_section,
    write_sections,
)
from ..writeup.slot_paper import place_facts, write_slot_paper

__all__ = ["SECTIONS", "STAGE", "placeholders_left"]


def _bib_keys(ctx: StageContext, text: str) -> list[str]:
    return sorted(bib_keys(bib_text_of(text, (ctx.project.root / ctx.config.paper.tex).parent)))


def _cite_the_literature(ctx: StageContext, tex_path) -> str:
    """The literature review's papers join the bibliography (labtui writes their BibTeX, the
    model never does) and the prompt, for the related work; '' without a review."""
    if not has_literature(ctx.project.root):
        return ""
    review = load_literature(ctx.project.root)
    entries = {
        p["bibtex_key"]: p["bibtex"]
        for p in review["papers"]
        if p.get("bibtex_key") and p.get("bibtex")
    }
    added = add_bib_entries(tex_path, entries)
    if added:
        ctx.commit(
            f"writeup: cite the literature review's papers ({', '.join(added)})",
            paper_and_bibliography(ctx.project.root, tex_path),
        )
    return literature_block(ctx)


def _search_ledger_appendix(ctx: StageContext, tex_path) -> None:
    """After a hill-climb or a tree search, its ledger as the paper's last appendix: a table
    labtui writes from the ledger (every number a run's), replaced when written again."""
    experiments = ctx.result(ExperimentsResult)
    search = experiments.search
    if search is None or search.strategy not in ("climb", "tree"):
        return
    strategy = search.strategy
    ledger = SearchLedger(ctx.project.root, strategy, experiments.idea, search.metric)
    baseline = float(search.noise.get("values", [0.0])[0])
    text = tex_path.read_text(encoding="utf-8")
    tex_path.write_text(with_appendix(text, appendix_latex(ledger, baseline)), encoding="utf-8")
    ctx.commit(f"{ctx.stage}: the {strategy}'s ledger as an appendix", [ctx.config.paper.tex])


def run(ctx: StageContext) -> StageOutput:
    root = ctx.project.root
    tex_path = root / ctx.config.paper.tex
    figures = ctx.result(PlotsResult).figures or sorted(p.name for p in root.glob("*.png"))
    experiments = ctx.result(ExperimentsResult)
    facts = {
        "title": experiments.idea,
        "runs": ", ".join(experiments.runs),
        "figures": ", ".join(figures) or "none",
        "literature": _cite_the_literature(ctx, tex_path),
    }
    coder = ctx.coder()
    if ctx.config.paper.sections:
        return _complete_the_draft(ctx, coder, facts)
    tex = tex_path.read_text(encoding="utf-8")
    if not any(p in tex for section in SECTIONS for p in section.placeholders):
        raise StageFailed(
            f"{ctx.config.paper.tex} has none of the section placeholders (TITLE HERE, INTRO HERE, …)",
            "restore the template's placeholders with git, or revise the paper by hand",
        )
    flagged: list[dict[str, str]] = []
    if ctx.config.paper.writer == "slots":
        write_slot_paper(ctx, gathered_facts(ctx, figures, facts["literature"]))
        left = placeholders_left(tex_path.read_text(encoding="utf-8"))
    elif ctx.config.paper.writer == "aider":
        place_facts(ctx)  # the setup is code's: aider is not asked for it
        left = _write_with_aider(ctx, coder, facts)
        place_facts(ctx)
    else:
        flagged = _write_as_answers(ctx, figures, facts["literature"])
        left = placeholders_left(tex_path.read_text(encoding="utf-8"))
        if left:
            ctx.say(f"placeholders still in the paper: {', '.join(left)}")
    if ctx.config.paper.writer != "slots":  # slots cite the bibliography's papers themselves
        run_rounds(ctx, coder, ctx.config.paper.tex, max(0, ctx.config.limits.citation_rounds))
    _search_ledger_appendix(ctx, tex_path)
    trace_numbers(ctx, coder)
    return _draft_output(ctx, left, flagged)


def _write_as_answers(
    ctx: StageContext, figures: list[str], literature: str
) -> list[dict[str, str]]:
    """Each section a checked, placed answer (core/writeup/sections.py), then the whole draft's
    gaps sent back to the sections that have them; the sections flagged."""
    facts = gathered_facts(ctx, figures, literature)
    place_facts(ctx)  # the setup is code's: its placeholder goes, and no model is asked for it
    written = write_sections(ctx, facts)
    place_facts(ctx)  # again: a section asked twice may have replaced a table with its words
    _mend_gaps(ctx, facts)
    place_facts(ctx)
    return [_flag_record(f) for f in written.flagged]


def _mend_gaps(ctx: StageContext, facts) -> None:
    """Up to ``[paper] mend_rounds`` times: each section with a gap of the whole draft
    (core/writeup/completeness.py) asked again with its gaps named, as a researcher's revision
    note would be; a section whose answers fail keeps its text."""
    tex_path = ctx.project.root / ctx.config.paper.tex
    for _ in range(ctx.config.paper.mend_rounds):
        by_section = _gaps_by_section(project_gaps(ctx.project.root, tex_path))
        if not by_section:
            return
        for section, problems in by_section.items():
            note = " ".join(problems)
            ctx.say(f"the draft's {section.name} is asked again: {note}")
            rewrite_section(ctx, section, facts, Revision(note, "labtui read the whole draft"))


def _gaps_by_section(gaps: list) -> dict[Section, list[str]]:
    """The gaps by the section that must mend them: the part's own, and the Results for the
    paper's missing figures and results."""
    by_section: dict[Section, list[str]] = {}
    for gap in gaps:
        title = (gap.part or "results").lower()
        section = next((s for s in SECTIONS if s.heading in title), None)
        if section is not None and section.heading != "experimental":  # code writes the setup
            by_section.setdefault(section, []).append(gap.sentence)
    return by_section


def _flag_record(flagged: Flagged) -> dict[str, str]:
    return {"section": flagged.name, "problem": flagged.problem}


def _write_with_aider(ctx: StageContext, coder, facts: dict[str, str]) -> list[str]:
    """``[paper] writer = "aider"``: aider fills each section in the whole file, then refines
    the paper and gets one more try at the placeholders left; those still left."""
    tex_path = ctx.project.root / ctx.config.paper.tex
    for section in SECTIONS:
        present = [p for p in section.placeholders if p in tex_path.read_text(encoding="utf-8")]
        if present:
            _write_section(ctx, coder, section, present, facts)
    _edit_optional(coder, ctx.prompt("writeup_refine"), "writeup: whole-paper refinement")
    left = placeholders_left(tex_path.read_text(encoding="utf-8"))
    if left:
        coder.edit(
            [ctx.config.paper.tex],
            ctx.prompt("writeup_placeholders", placeholders=", ".join(left)),
            commit_message="writeup: replace leftover placeholders",
            read_only=[NOTES],
            policy=PAPER_ONLY,
        )
        left = placeholders_left(tex_path.read_text(encoding="utf-8"))
        if left:
            ctx.say(f"placeholders still in the paper: {', '.join(left)}")
    return left


def _complete_the_draft(ctx: StageContext, coder, facts: dict[str, str]) -> StageOutput:
    """The researcher's own draft: only the parts [paper] sections names are written (the rest
    is theirs, so no whole-paper refinement, citation rounds or number fixes touch it); its
    numbers are still traced, and the checkpoint shows what matches no run."""
    text = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    written = write_parts(ctx, coder, facts, ", ".join(_bib_keys(ctx, text)) or "none")
    _search_ledger_appendix(ctx, ctx.project.root / ctx.config.paper.tex)
    ctx.say(f"{written} of {len(ctx.config.paper.sections)} part(s) of your draft written")
    output = _draft_output(ctx, [])
    ctx.commit(f"{ctx.stage}: provenance of the paper's numbers", [PROVENANCE])
    return output


def _write_section(
    ctx: StageContext, coder, section: Section, present: list[str], facts: dict[str, str]
) -> None:
    """Write one section, reflect on it once, and (in co-pilot mode) let the researcher judge
    it: approve, revise with a note (rewritten, asked again), edit it, or abort."""
    tips = ctx.prompt(f"section_{section.tips}").strip()
    tex_text = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    prompt = ctx.prompt(
        "writeup_section",
        section=section.name,
        placeholders=", ".join(present),
        tips=tips,
        bibkeys=", ".join(_bib_keys(ctx, tex_text)) or "none",
        notes=ctx.notes_block(),
        **facts,
    )
    edit = coder.edit(
        [ctx.config.paper.tex],
        prompt,
        commit_message=f"writeup: {section.name}",
        read_only=[NOTES],
        policy=PAPER_ONLY,
    )
    if not edit.changed:
        # A failed section does not end the paper: it keeps its last text (the placeholder),
        # which the leftover round asks for again and the draft checkpoint shows.
        why = (edit.error or "no change").strip().splitlines()[0]
        ctx.say(f"the {section.name} was not written ({why}); it keeps its previous text")
        return
    reflect = ctx.prompt("writeup_reflect", section=section.name, tips=tips)
    _edit_optional(coder, reflect, f"writeup: {section.name}, reflected")
    judge_section(
        ctx,
        section,
        lambda note: _edit_optional(
            coder,
            ctx.prompt("writeup_revise_section", section=section.name, note=note),
            f"writeup: {section.name}, revised",
        ),
    )


def _edit_optional(coder, prompt: str, message: str) -> None:
    """An edit the model may decline (a reflection with nothing to fix): no retry, no error."""
    coder.edit(
        [coder.project.config.paper.tex],
        prompt,
        commit_message=message,
        read_only=[NOTES],
        retries=0,
        policy=PAPER_ONLY,
    )


def _blocked(numbers: list, claims: list, gaps: list) -> str:
    """Why approval waits, or '' when nothing is open."""
    reasons = [f"the draft is not yet a whole paper ({len(gaps)} gap(s))"] if gaps else []
    if numbers:
        reasons.append(f"{len(numbers)} number(s) in the paper match no run")
    if claims:
        reasons.append(f"{len(claims)} sentence(s) claim what the runs contradict")
    return "; ".join(reasons)


def _draft_output(
    ctx: StageContext, left: list[str], flagged: list[dict[str, str]] | None = None
) -> StageOutput:
    """The checkpoint about the draft: placeholders, the sections no answer could be placed
    for, the provenance report, and approval blocked while numbers match no run or sentences
    claim what the runs contradict."""
    root = ctx.project.root
    tex_path = root / ctx.config.paper.tex
    text = tex_path.read_text(encoding="utf-8")
    figures = referenced_figures(text, tex_path.parent)  # as TeX resolves them in latex/
    ctx.emit(LatexUpdated(stage=ctx.stage, path=ctx.config.paper.tex, text=text, figures=figures))
    waivers = load_waivers(root)
    report = check_paper(root, tex_path, waivers, ctx.config.paper.sections)
    open_issues = report.open_issues(waivers)
    open_claims = report.open_claims(waivers)
    gaps = _checked_gaps(ctx, waivers)
    # Gaps wait for a researcher, who may mend or accept them; under --auto the paper goes on,
    # its gaps its open problems. Untraced numbers and false claims wait in both.
    blocked = _blocked(open_issues, open_claims, gaps if ctx.attended else [])
    incomplete = f"; paper incomplete: {len(gaps)} gap(s)" if gaps and not blocked else ""
    return StageOutput(
        summary=f"paper drafted ({len(text.splitlines())} lines)"
        + (f"; {blocked}" if blocked else incomplete),
        result=WriteupResult(
            tex=ctx.config.paper.tex,
            placeholders_left=left,
            flagged=flagged or [],
            traced=len(report.traced),
            untraced=len(open_issues),
            waived=len(report.untraced) - len(open_issues),
            contradicted=len(open_claims),
            claims_waived=len(report.contradicted) - len(open_claims),
            open_problems=[gap.text for gap in gaps],
        ),
        checkpoint_body=_gaps_markdown(gaps)
        + f"The draft `{ctx.config.paper.tex}` ({len(text.splitlines())} lines). "
        + (f"Placeholders left: {', '.join(left)}" if left else "No placeholders left.")
        + _flagged_markdown(flagged or [])
        + "\n\n"
        + report_markdown(report, waivers)
        + (
            "\n\n*Approval waits until each is fixed (e edits the draft, r asks the agents) "
            "or waived (w, with your reason).*"
            if blocked
            else ""
        ),
        kind="section",
        product=ctx.config.paper.tex,
        blocked=blocked,
    )


def _checked_gaps(ctx: StageContext, waivers: dict[str, str]) -> list:
    """The draft's gaps that no waiver accepts, all of them recorded in provenance.json; none
    for a researcher's own draft, whose other parts are theirs."""
    root = ctx.project.root
    if ctx.config.paper.sections:
        return []
    gaps = project_gaps(root, root / ctx.config.paper.tex)
    record_gaps(root, gaps, waivers)
    return [gap for gap in gaps if gap_key(gap) not in waivers]


def _gaps_markdown(gaps: list) -> str:
    if not gaps:
        return ""
    lines = "\n".join(f"- {gap.text}" for gap in gaps)
    return f"**Not yet a whole paper** ({len(gaps)} gap(s)):\n{lines}\n\n"


def _flagged_markdown(flagged: list[dict[str, str]]) -> str:
    if not flagged:
        return ""
    lines = [f"- **{f['section']}**: {f['problem']}" for f in flagged]
    return (
        "\n\nSections not written (no answer passed the checks; each keeps its placeholder: "
        "edit the draft, or revise):\n" + "\n".join(lines)
    )


def reload(ctx: StageContext, output: StageOutput) -> StageOutput:
    """After the researcher edited the draft: its numbers are traced again."""
    text = (ctx.project.root / ctx.config.paper.tex).read_text(encoding="utf-8")
    left = placeholders_left(text)
    # A flagged section the researcher has written since is no longer flagged.
    flagged = [
        f
        for f in output.result_as(WriteupResult).flagged
        if any(s.name == f["section"] and set(s.placeholders) & set(left) for s in SECTIONS)
    ]
    return _draft_output(ctx, left, flagged)


def waive(ctx: StageContext, output: StageOutput, reason: str) -> StageOutput:
    """The researcher accepts the numbers that match no run and the sentences the runs
    contradict, for ``reason``: recorded in provenance.json (and the journal), committed, and
    the draft asked about again."""
    root = ctx.project.root
    waivers = load_waivers(root)
    report = check_paper(root, root / ctx.config.paper.tex, waivers, ctx.config.paper.sections)
    open_issues = report.open_issues(waivers)
    open_claims = report.open_claims(waivers)
    open_gaps = _checked_gaps(ctx, waivers)
    why = reason.strip() or "waived by the researcher"
    waivers |= {key(w): why for w in open_issues}
    waivers |= {claim_key(c): why for c in open_claims}
    waivers |= {gap_key(g): why for g in open_gaps}
    check_paper(root, root / ctx.config.paper.tex, waivers, ctx.config.paper.sections)
    _checked_gaps(ctx, waivers)
    waived = [f"{len(open_issues)} untraced number(s)"] if open_issues else []
    waived += [f"{len(open_claims)} contradicted sentence(s)"] if open_claims else []
    waived += [f"{len(open_gaps)} gap(s) of the draft"] if open_gaps else []
    ctx.commit(f"writeup: researcher waived {' and '.join(waived) or 'nothing'}", [PROVENANCE])
    texts = [w.text for w in open_issues] + [c.text for c in open_claims]
    texts += [g.text for g in open_gaps]
    ctx.say(f"waived {', '.join(texts)}: {reason}")
    drafted = output.result_as(WriteupResult)
    return _draft_output(ctx, drafted.placeholders_left, drafted.flagged)


STAGE = DeclaredStage("writeup", run, reload=reload, actions={WAIVE: waive})
