"""A review, readable in a terminal (``labtui review``): the decision, the scores as a table, then
the summary and the lists of the form."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from labtui.core.review import SCORE_RANGES, Review


def print_review(
    review: Review,
    title: str,
    console: Console | None = None,
    spread: dict[str, tuple[float, float]] | None = None,
) -> None:
    """``spread``: the ensemble's mean and spread per score, shown beside the meta-review's."""
    console = console or Console()
    fields = review.fields
    style = "bold green" if review.decision == "Accept" else "bold red"
    console.print(f"[bold]{title}[/]: [{style}]{review.decision}[/], overall {review.overall}/10")
    scores = Table(show_header=spread is not None, box=None, pad_edge=False)
    scores.add_column("score", style="bold")
    scores.add_column("meta-review" if spread else "value", justify="right")
    if spread:
        scores.add_column("reviewers: mean ± spread", justify="right")
    for name, (_, high) in SCORE_RANGES.items():
        row = [name, f"{fields[name]}/{high}"]
        if spread:
            mean, deviation = spread[name]
            row.append(f"{mean:.2f} ± {deviation:.2f}")
        scores.add_row(*row)
    console.print(scores)
    console.print(f"\n[bold]Summary[/]\n{fields['Summary']}")
    for name in ("Strengths", "Weaknesses", "Questions", "Limitations"):
        console.print(f"\n[bold]{name}[/]")
        for item in fields[name] or ["(none)"]:
            console.print(f"  • {item}", highlight=False)
    concerns = "yes" if fields["Ethical Concerns"] else "no"
    console.print(f"\n[bold]Ethical concerns[/]: {concerns}")
