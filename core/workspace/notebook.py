"""The lab notebook ``notes.md``: one entry per run. Numbers are copied from the run's
``final_info.json`` by code, never retyped by an LLM, so the notebook cannot drift from the runs.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from .artifacts import NOTES
from .run_folder import FINAL_INFO


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


# A module-level constant: the settings The AI Scientist's templates keep at the top of the file.
_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*)\s*=\s*(.+?)\s*(?:#.*)?$", re.MULTILINE)
MAX_EXPLANATION_CHARS = 800


def code_change(old: str, new: str, name: str = "experiment.py") -> str:
    """What changed in the code, computed: the constants whose value changed and the lines
    added and removed. The notebook states this as fact, beside the coder's own words."""
    before, after = dict(_CONSTANT.findall(old)), dict(_CONSTANT.findall(new))
    settings = [
        f"{key} {before.get(key, '(new)')} → {after.get(key, '(removed)')}"
        for key in dict.fromkeys([*before, *after])
        if before.get(key) != after.get(key)
    ]
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    lines = f"{name}: {added} line(s) added, {removed} removed"
    return lines + (f"; settings: {', '.join(settings)}" if settings else "")


def own_words(explanation: str, sent: list[str]) -> str:
    """The coder's explanation without what it copied from the prompts it was sent (labtui's
    re-asks, aider's format instructions): a line that occurs in a prompt is not its words."""
    haystack = _squash("\n".join(sent))
    kept = [
        line
        for line in explanation.splitlines()
        if not (len(_squash(line)) > 12 and _squash(line) in haystack)
    ]
    text = "\n".join(kept).strip()
    if len(text) > MAX_EXPLANATION_CHARS:
        text = text[:MAX_EXPLANATION_CHARS].rsplit(" ", 1)[0] + " …"
    return text


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def start_notebook(root: Path, title: str, description: str, baseline: dict[str, Any]) -> Path:
    path = Path(root) / NOTES
    if not path.exists():
        path.write_text(
            f"# {title}\n\n{description}\n\n## run_0: baseline\n\n"
            f"{metrics_table(baseline, baseline)}\n",
            encoding="utf-8",
        )
    return path


COMPUTED_CHANGE = "What changed (computed from the commit): "


def computed_facts(notes: str) -> str:
    """What the notebook says that code computed or the plan set: the title and the plan above
    the first run, then each run's heading and the change computed from its commit. Not the
    coder's explanation or the agent's analysis (a model's words, which may be false), nor the
    tables (the effects carry the numbers)."""
    kept: list[str] = []
    in_runs = False
    for line in notes.splitlines():
        in_runs = in_runs or line.startswith("## ")
        if line.startswith("## ") or line.startswith(COMPUTED_CHANGE):
            kept.append(line)
        elif not in_runs and not line.lstrip().startswith("|"):
            kept.append(line)
    return "\n".join(kept).strip()


def append_run(
    root: Path,
    run_id: str,
    *,
    what_changed: str,
    computed: str,
    results: str,
    commit: str,
    wall_s: float,
) -> Path:
    path = Path(root) / NOTES
    entry = (
        f"\n## {run_id}\n\n"
        f"Code: commit `{commit[:12]}` · wall time {wall_s:.1f} s\n\n"
        f"{COMPUTED_CHANGE}{computed}\n\n"
        f"The coder's explanation:\n\n{what_changed.strip() or '(none given)'}\n\n"
        f"Results (computed from `{run_id}/{FINAL_INFO}` and `run_0/{FINAL_INFO}`):\n\n"
        f"{results}\n"
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write(entry)
    return path


def append_failure(
    root: Path, run_id: str, *, tried: list[str], last_error: str, reverted_to: str
) -> Path:
    """A run given up after its attempts: what was tried, the last error, and which run's code
    experiment.py went back to, so the notebook still tells what happened."""
    path = Path(root) / NOTES
    attempts = "\n".join(f"- {line}" for line in tried) or "- (none)"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            f"\n## {run_id}: failed, abandoned\n\n"
            f"{run_id} did not succeed in {len(tried)} attempt(s); experiment.py was reverted to "
            f"the code of {reverted_to}. No results.\n\nWhat was tried:\n\n{attempts}\n\n"
            f"Last error: {last_error.strip() or '(none recorded)'}\n"
        )
    return path


def append_analysis(root: Path, run_id: str, analysis: str, decision: str) -> Path:
    """The agent's reading of a run, under the run's entry (its numbers are already there)."""
    path = Path(root) / NOTES
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\nAnalysis of {run_id} (the agent's words):\n\n{analysis.strip()}\n\n")
        handle.write(f"Decision: {decision}\n")
    return path
