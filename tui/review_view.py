"""A review, readable in a terminal (``labtui review``): the decision (and why, where the paper's
facts made it), how far this reviewer is to be trusted (its calibration, or that it has none), the scores as a table (the reviewers'
mean ± spread beside each reviewer's and the Area Chair's), then the meta-review's summary and
the lists of the form."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from labtui.core.review.calibration_store import CALIBRATE_HINT, Trust
from labtui.core.review.form import SCORE_RANGES
from labtui.core.review.reviewer import ReviewPanel, rejection_note

RICH_TONES = {"muted": "dim", "warning": "yellow", "error": "bold red"}


def print_review(
    panel: ReviewPanel, title: str, console: Console | None = None, trust: Trust | None = None
) -> None:
    """``trust``: what the registry says of the reviewer (None: say nothing)."""
    console = console or Console()
    style = "bold green" if panel.decision == "Accept" else "bold red"
    rule = f" (Accept from {panel.threshold:g})" if panel.threshold else ""
    console.print(
        f"[bold]{escape(title)}[/]: [{style}]{panel.decision}[/], "
        f"overall {panel.overall:.2f}/10{rule}"
    )
    if panel.rejected_because:
        console.print(Text(f"  {rejection_note(panel.rejected_because)}", style="red"))
    if trust is not None:
        spans = [(text, RICH_TONES[tone]) for text, tone in trust_spans(trust)]
        console.print(Text.assemble(*spans), highlight=False)
        if not trust.calibrated:
            console.print(Text(f"  {CALIBRATE_HINT}", style="dim"), highlight=False)
    console.print(_score_table(panel))
    fields = panel.meta.fields
    console.print(f"\n[bold]Summary[/]\n{escape(fields['Summary'])}")
    for name in ("Strengths", "Weaknesses", "Questions", "Limitations"):
        console.print(f"\n[bold]{name}[/]")
        for item in fields[name] or ["(none)"]:
            console.print(f"  • {escape(item)}", highlight=False)
    concerns = "yes" if fields["Ethical Concerns"] else "no"
    console.print(f"\n[bold]Ethical concerns[/]: {concerns}")


def _score_table(panel: ReviewPanel) -> Table:
    several = len(panel.reviews) > 1
    table = Table(box=None, pad_edge=False)
    table.add_column("score", style="bold")
    if several:
        table.add_column("reviewers: mean ± spread", justify="right")
        for number in range(1, len(panel.reviews) + 1):
            table.add_column(f"R{number}", justify="right")
        table.add_column("Area Chair", justify="right")
    else:
        table.add_column("value", justify="right")
    spread = panel.scores()
    for name, (_, high) in SCORE_RANGES.items():
        if several:
            mean, deviation = spread[name]
            row = [name, f"{mean:.2f} ± {deviation:.2f}"]
            row += [str(review.fields[name]) for review in panel.reviews]
            row.append(f"{panel.meta.fields[name]}/{high}")
        else:
            row = [name, f"{panel.meta.fields[name]}/{high}"]
        table.add_row(*row)
    return table


def trust_spans(trust: Trust) -> list[tuple[str, str]]:
    """The trust line cut into (text, tone): "muted" for a measured reviewer, "warning" for an
    uncalibrated one, and "error" for the flag of a fabrication probe it failed."""
    tone = "muted" if trust.calibrated else "warning"
    if not trust.flagged:
        return [(trust.known, tone)]
    return [(trust.known + " · ", tone), (trust.flag, "error")]
