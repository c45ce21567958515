"""The lab notebook ``notes.md``: one entry per run. Numbers are copied from the run's
``final_info.json`` by code, never retyped by an LLM, so the notebook cannot drift from the runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NOTEBOOK_NAME = "notes.md"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def metrics_table(means: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> str:
    rows = ["| dataset | metric | this run | baseline (run_0) |", "|---|---|---|---|"]
    for dataset, values in means.items():
        for metric, value in values.items():
            base = baseline.get(dataset, {}).get(metric, "—")
            rows.append(f"| {dataset} | {metric} | {_fmt(value)} | {_fmt(base)} |")
    return "\n".join(rows)


def start_notebook(root: Path, title: str, description: str, baseline: dict[str, Any]) -> Path:
    path = Path(root) / NOTEBOOK_NAME
    if not path.exists():
        path.write_text(
            f"# {title}\n\n{description}\n\n## run_0: baseline\n\n"
            f"{metrics_table(baseline, baseline)}\n",
            encoding="utf-8",
        )
    return path


def append_run(
    root: Path,
    run_id: str,
    *,
    what_changed: str,
    means: dict[str, Any],
    baseline: dict[str, Any],
    commit: str,
    wall_s: float,
) -> Path:
    path = Path(root) / NOTEBOOK_NAME
    entry = (
        f"\n## {run_id}\n\n"
        f"Code: commit `{commit[:12]}` · wall time {wall_s:.1f} s\n\n"
        f"What changed (the coder's words):\n\n{what_changed.strip() or '(no description)'}\n\n"
        f"Results (copied from `{run_id}/final_info.json`):\n\n{metrics_table(means, baseline)}\n"
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write(entry)
    return path


def append_analysis(root: Path, run_id: str, analysis: str, decision: str) -> Path:
    """The agent's reading of a run, under the run's entry (its numbers are already there)."""
    path = Path(root) / NOTEBOOK_NAME
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\nAnalysis of {run_id} (the agent's words):\n\n{analysis.strip()}\n\n")
        handle.write(f"Decision: {decision}\n")
    return path
