"""What the researcher reads about a run: its effects against the baseline, what the checks kept
out of its analysis, the runs abandoned, and its code change as a clipped diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...runs.effect_text import effects_markdown
from ...runs.effects import effects_of_runs, metric_directions


def run_effects(root: Path, run_id: str) -> list[Any]:
    """The run's effects against the baseline, computed (core.runs.effects)."""
    return effects_of_runs(root / run_id, root / "run_0", metric_directions(root))


def run_body(root: Path, run_id: str, edit: Any, beside: str = "", review: Any = None) -> str:
    """What the researcher judges about a run: its effects against the baseline, computed,
    what the checks kept out of its analysis (and the ideas run ``beside`` it), then its code."""
    withheld = (
        "\n\n**Withheld from the notebook:**\n\n" + "\n".join(f"- {w}" for w in review.withheld)
        if review is not None and review.withheld
        else ""
    )
    return (
        f"Results of {run_id} against the baseline:\n\n"
        + effects_markdown(run_effects(root, run_id))
        + withheld
        + beside
        + diff_block(f"The code of {run_id}", edit.commit)
    )


def abandoned_body(abandoned: dict[str, str]) -> str:
    if not abandoned:
        return ""
    lines = "\n".join(f"- `{run_id}`: {problem}" for run_id, problem in abandoned.items())
    return f"\n\nAbandoned after every fix attempt (see notes.md):\n\n{lines}"


SHOWN_DIFF_LINES = 60


def diff_block(heading: str, commit: Any) -> str:
    """The run's code change as a fenced diff (clipped: the whole diff is in git)."""
    if commit is None or not commit.diff.strip():
        return ""
    lines = commit.diff.rstrip().splitlines()
    more = len(lines) - SHOWN_DIFF_LINES
    shown = "\n".join(lines[:SHOWN_DIFF_LINES]) + (f"\n… {more} more lines" if more > 0 else "")
    return f"\n\n{heading} (commit `{commit.sha[:8]}`):\n\n```diff\n{shown}\n```\n"
