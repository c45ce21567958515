"""``labtui review --calibrate DIR``: measure a reviewer against the human decisions of a benchmark
folder (core/review/benchmark.py for its formats, core/review/calibration.py for the run), save the
result beside the benchmark and register it for the reviewer, and print it: a table, or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labtui.core.review.benchmark import load_benchmark
from labtui.core.review.calibration import (
    FAILURES_IN_A_ROW,
    calibrate,
    project_reviewer,
    standalone_reviewer,
)
from labtui.core.review.calibration_store import save_calibration, trust_line
from labtui.core.settings.config import CONFIG_NAME

from ..review_session import say_refusals_and_notices
from .common import EXIT_FAILED, EXIT_OK

OUT_NAME = "calibration.json"


def cmd_calibrate(
    directory: Path,
    *,
    model: str,
    budget: float,
    n: int,
    seed: int,
    skip_missing: bool,
    name: str,
    out: Path | None,
    as_json: bool,
    overrides: dict,
    project: Path | None,
) -> int:
    """Review a seeded sample of ``n`` papers of the benchmark in ``directory`` and measure the
    reviewer: ``project``'s (when it is a labtui project) or labtui's default settings, with
    ``model`` and ``overrides`` (None: not given) in their place. Progress on stderr; EXIT_FAILED
    when not every sampled paper was measured: the budget or the model stopped it, or papers got
    no usable review."""
    benchmark = load_benchmark(directory, skip_missing=skip_missing)  # errors before any cost
    if project is not None and (project / CONFIG_NAME).is_file():
        reviewer = project_reviewer(project, model, budget, say_refusals_and_notices, overrides)
    else:
        reviewer = standalone_reviewer(model, budget, say_refusals_and_notices, overrides)
    _say(_opening(benchmark, reviewer.facts, n, seed))
    record = calibrate(benchmark, reviewer, n=n, seed=seed, name=name, progress=_say)
    path = out or Path(directory) / OUT_NAME
    save_calibration(record, path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    if as_json:
        print(json.dumps(saved, indent=2))
    else:
        print_calibration(saved, path)
    return EXIT_OK if saved["complete"] else EXIT_FAILED


def _say(text: str) -> None:
    print(f"  {text}", file=sys.stderr)


def _opening(benchmark: Any, facts: dict[str, Any], n: int, seed: int) -> str:
    left = []
    if benchmark.unknown_decision:
        left.append(f"{benchmark.unknown_decision} with decision Unknown")
    if benchmark.missing_paper:
        left.append(f"{benchmark.missing_paper} without a paper (--skip-missing)")
    if benchmark.duplicate_row:
        left.append(f"{benchmark.duplicate_row} repeating an earlier row")
    out = f" ({'; '.join(left)} left out)" if left else ""
    return (
        f"calibrating {facts['model']} ({_settings(facts)}) on {benchmark.table}: "
        f"{min(n, len(benchmark.papers))} of {len(benchmark.papers)} papers, seed {seed}{out}"
    )


def _settings(facts: dict[str, Any]) -> str:
    threshold = f"{facts['threshold']:g}" if facts["threshold"] else "the Area Chair's"
    return (
        f"ensemble {facts['ensemble']}, reflections {facts['reflections']}, "
        f"few-shot {facts['few_shot']}, threshold {threshold}"
    )


# -- the table ------------------------------------------------------------------------------------


def print_calibration(record: dict[str, Any], path: Path, console: Console | None = None) -> None:
    """The calibration as a table of measures (the humans' beside the reviewer's where both
    have one), its cost, and the line every review by this reviewer will show."""
    console = console or Console(highlight=False)
    facts, bench, metrics = record["reviewer"], record["benchmark"], record["metrics"]
    console.print(
        f"[bold]{escape(facts['model'])}[/] on {escape(bench['name'])}: "
        f"{metrics['papers']} of {bench['sampled']} sampled papers reviewed "
        f"({_settings(facts)}; seed {record['sample']['seed']})"
    )
    table = Table(box=None, pad_edge=False)
    table.add_column("measure", style="bold")
    table.add_column("reviewer", justify="right")
    table.add_column("humans", justify="right")
    for row in _rows(record):
        table.add_row(*row)
    console.print(table)
    if not record["complete"]:
        console.print(f"[yellow]incomplete[/]: {escape(why_incomplete(record))}")
    console.print(escape(trust_line(record)))
    console.print(f"saved to {escape(str(path))}")


def why_incomplete(record: dict[str, Any]) -> str:
    """Why a calibration measured fewer papers than it sampled: the budget, a model that failed
    papers in a row, or papers without a usable review in a run that went to the end."""
    measured = f"{record['metrics']['papers']} of {record['benchmark']['sampled']} sampled papers"
    if record.get("stopped") == "budget":
        return f"the budget was spent after {measured} (see above)"
    if record.get("stopped") == "failures":
        return (
            f"stopped after {FAILURES_IN_A_ROW} papers in a row without a usable review; "
            f"{measured} measured (see above)"
        )
    failed = len(record.get("failed") or [])
    return (
        f"{failed} sampled paper{'s' if failed != 1 else ''} got no usable review and "
        f"{'are' if failed != 1 else 'is'} not measured; {measured} measured (see above)"
    )


def _rows(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    metrics, cost = record["metrics"], record["cost"]
    interval = metrics["balanced_accuracy_ci"]
    ci = f" (95% CI {interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
    failed = f", {len(record['failed'])} failed" if record.get("failed") else ""
    return [
        ("balanced accuracy", _number(metrics["balanced_accuracy"]) + ci, ""),
        ("accuracy", _number(metrics["accuracy"]), ""),
        ("F1 (Accept)", _number(metrics["f1"]), ""),
        ("ROC AUC of mean Overall", _number(metrics["roc_auc"]), ""),
        ("Pearson r: Overall vs human mean", _number(metrics["pearson_r"]), ""),
        ("Spearman ρ: Overall vs human mean", _number(metrics["spearman_rho"]), ""),
        ("accept rate", _share(metrics["accept_rate"]), _share(metrics["human_accept_rate"])),
        (
            "mean Overall (1-10)",
            _number(metrics["mean_overall"]),
            _number(metrics["human_mean_rating"]),
        ),
        ("ensemble spread of Overall", _number(metrics["ensemble_spread"]), ""),
        ("papers", f"{metrics['papers']} ({cost['cached_papers']} cached{failed})", ""),
        ("tokens in · out", f"{cost['tokens_in']:,} · {cost['tokens_out']:,}", ""),
        ("cost", f"${cost['usd']:.4f}", ""),
    ]


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"
