"""``labtui review PAPER --probe``: the fabrication probe (``core.review.probe``) run with the
reviewer ``labtui review`` would use, its outcome printed (rich, or JSON) and registered beside
the reviewer's calibration, where every later review by the same reviewer says it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labtui.core.review.calibration_store import save_probe
from labtui.core.review.fabricate import fabricate
from labtui.core.review.probe import ProbeResult, probe_text, run_probe
from labtui.core.review.reviewer import ReviewPanel, reviewer_facts
from labtui.core.settings.prompts import load_prompt

from ..review_session import progress, review_settings, reviewer_llm, who_reviews
from .common import EXIT_OK

SHOWN_EVIDENCE = 3  # sentences quoted; the JSON has them all


def cmd_probe(paper: Path, *, model: str, budget: float, overrides: dict, as_json: bool) -> int:
    """Review ``paper`` and the same paper with its results table made impossible; print whether
    the reviewer noticed and register it. A measurement: EXIT_OK either way."""
    settings = review_settings(overrides)
    text = probe_text(paper)
    # before any model call: a paper without a results table costs nothing
    fabrication = fabricate(text, str(paper))
    llm = reviewer_llm(model, budget)
    progress(
        f"probing {paper.name}: {len(fabrication.alterations)} impossible values, "
        f"{who_reviews(settings)}, {llm.spec.name}"
    )
    result = run_probe(
        llm, load_prompt, text, fabrication, settings, name=paper.name, progress=progress
    )
    facts = reviewer_facts(llm.spec.name, settings)
    registered = save_probe(facts, result.to_json())
    tokens_in, tokens_out, usd = llm.ledger.stage_totals(llm.stage)
    if as_json:
        reviews = {"original": result.original.to_json(), "altered": result.altered.to_json()}
        spent = {"tokens_in": tokens_in, "tokens_out": tokens_out, "usd": usd}
        record = {**result.to_json(), "reviews": reviews, "reviewer": facts, "spent": spent}
        print(json.dumps({**record, "registered": str(registered)}, indent=2))
        return EXIT_OK
    console = Console()
    print_probe(result, console)
    console.print(
        f"[dim]spent ${usd:.4f}, {tokens_in + tokens_out:,} tokens · registered for this "
        f"reviewer: {escape(str(registered))}[/]"
    )
    return EXIT_OK


def print_probe(result: ProbeResult, console: Console | None = None) -> None:
    """What was altered, both reviews side by side, the sentences that noticed, the verdict."""
    console = console or Console()
    fabrication = result.fabrication
    count = len(fabrication.alterations)
    console.print(f"[bold]Fabrication probe: {escape(result.paper)}[/]")
    console.print(
        f"{count} value{'s' if count > 1 else ''} made impossible in "
        f"{_tables(fabrication.alterations)}"
    )
    console.print(_alteration_table(result))
    if fabrication.repeats:
        console.print(f"also changed where the text repeats them: {_repeats(result)}")
    console.print()
    console.print(_scores_table(result.original, result.altered))
    for evidence in result.evidence[:SHOWN_EVIDENCE]:
        console.print(
            f'[bold]noticed[/] by {evidence.who} ({evidence.where}): "{escape(evidence.sentence)}"'
        )
    if len(result.evidence) > SHOWN_EVIDENCE:
        console.print(f"… and {len(result.evidence) - SHOWN_EVIDENCE} more sentence(s)")
    if result.noticed:
        console.print(f"\n[bold green]NOTICED[/]: {escape(result.reason)}")
    else:
        console.print(
            f"\n[bold red]FLAGGED[/]: the reviewer did not notice the impossible values "
            f"({escape(result.reason)})"
        )


def _tables(alterations: Any) -> str:
    tables = sorted({a.table for a in alterations})
    return f"table{'s' if len(tables) > 1 else ''} {', '.join(str(t) for t in tables)}"


def _alteration_table(result: ProbeResult) -> Table:
    table = Table(box=None, pad_edge=False)
    for name in ("table", "row", "column", "original → altered", "impossible because"):
        table.add_column(name, style="bold" if name == "original → altered" else "")
    for a in result.fabrication.alterations:
        table.add_row(
            str(a.table), escape(a.row), escape(a.column), f"{a.original} → {a.altered}", a.why
        )
    return table


def _repeats(result: ProbeResult) -> str:
    places: dict[tuple[str, str], list[str]] = {}
    for repeat in result.fabrication.repeats:
        where = places.setdefault((repeat.original, repeat.altered), [])
        if repeat.where not in where:
            where.append(repeat.where)
    return "; ".join(
        f"{original} → {altered} ({escape(', '.join(where))})"
        for (original, altered), where in places.items()
    )


def _scores_table(original: ReviewPanel, altered: ReviewPanel) -> Table:
    table = Table(box=None, pad_edge=False)
    table.add_column("")
    table.add_column("original paper", justify="right")
    table.add_column("altered paper", justify="right")
    for name in ("Overall", "Soundness"):
        table.add_row(name, *(f"{p.scores()[name][0]:.2f}" for p in (original, altered)))
    table.add_row("Decision", original.decision, altered.decision)
    return table
