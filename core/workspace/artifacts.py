"""The files a project's stages hand to each other, by name, with typed load and save.

Stages never import each other: what one stage leaves for the next is a file in the project's
repository, named here, and read and written through the functions here (or, for the idea
archive and the lab notebook, through ``core.workspace.ideas`` and ``core.workspace.notebook``, which own those
formats and take their names from here, as ``core.review.record`` does for review.json). A
hand-edited file that no longer parses is a ``StageFailed`` that names the file and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, cast

from ..answers.experiment_answers import Plan, PlanEdit, plan_answer
from ..answers.validation import validate
from ..errors import StageFailed
from ..source.setting_edit import Editable

IDEAS = "ideas.json"  # the idea archive (core/workspace/ideas.py)
LITERATURE = "literature.json"  # the literature review's papers and summary
PLAN = "plan.json"  # the approved plan of runs
NOTES = "notes.md"  # the lab notebook (core/workspace/notebook.py)
FIGURES = "figures.json"  # every figure's description, for captions and the write-up
PROVENANCE = (
    "provenance.json"  # where each number of the paper comes from (core/provenance/record.py)
)
PDF = "paper.pdf"  # the paper as it last compiled
PAPER_REVIEW = "review.json"  # the reviewers' verdict and the improvement rounds
# A run's folder and its numbers and record (run_i/final_info.json, run_i/labtui_run.json) are
# core/workspace/run_folder.py's.


def _write_json(
    root: Path, name: str, data: Any, *, indent: int = 1, ascii_only: bool = True
) -> Path:
    path = Path(root) / name
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# -- plan.json ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRun:
    change: str  # what the run changes in experiment.py
    measure: str  # the comparison that answers the question, in words (no values)
    # metric -> the direction the change should move it ("higher" / "lower"), never a value
    expect: dict[str, str] = field(default_factory=dict)
    # setting -> its value in this run: applied by code, no model asked (core/runs/setting_changes)
    settings: dict[str, Any] = field(default_factory=dict)


def parse_plan(
    data: Any,
    max_runs: int,
    metrics: tuple[str, ...] = (),
    *,
    edited: bool = False,
    settings: tuple[Editable, ...] = (),
) -> list[PlannedRun]:
    """Validated runs from the model's JSON (or the researcher's plan.json, ``edited``: metrics
    optional, numbers allowed); ValueError says what is wrong. ``metrics``: the baseline's, the
    only names a model's run may be judged by (when known); ``settings``: the code's, the only
    ones a model's run may change (their values are checked where the run applies them)."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if isinstance(runs, list) and len(runs) > max_runs:  # said first: it changes the whole plan
        raise ValueError(f"the plan has {len(runs)} runs; at most {max_runs} are allowed")
    record: type[Plan] | type[PlanEdit] = (
        PlanEdit if edited else plan_answer(metrics, max_runs, settings)
    )
    plan: Plan | PlanEdit = validate(record, data)
    return [
        PlannedRun(
            run.change,
            run.measure,
            {m.metric: m.expect for m in run.metrics},
            run.chosen_settings,
        )
        for run in plan.runs
    ]


def load_plan(root: Path, max_runs: int) -> list[PlannedRun]:
    """The plan on disk (as approved or edited); [] when there is none."""
    path = Path(root) / PLAN
    if not path.exists():
        return []
    try:
        return parse_plan(json.loads(path.read_text(encoding="utf-8")), max_runs, edited=True)
    except (ValueError, json.JSONDecodeError) as error:
        raise StageFailed(
            f"{PLAN} is not a valid plan: {error}",
            f'fix {PLAN} ({{"runs": [{{"change": <what>, "metrics": [{{"metric": <name>, '
            f'"expect": "higher"}}], "measure": <what, no values>}}]}}, at most '
            f"{max_runs} runs) or delete it to plan again",
        ) from None


def save_plan(root: Path, idea: str, runs: list[PlannedRun]) -> Path:
    return _write_json(root, PLAN, {"idea": idea, "runs": plan_record(runs)})


def planned_idea(root: Path) -> str:
    """The idea plan.json was made for ('' without a readable plan)."""
    try:
        data = json.loads((Path(root) / PLAN).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ""
    idea = data.get("idea") if isinstance(data, dict) else None
    return idea if isinstance(idea, str) else ""


def plan_record(runs: list[PlannedRun]) -> list[dict[str, Any]]:
    """The runs as plan.json and the model's answer write them."""
    return [
        {
            "change": run.change,
            **({"settings": run.settings} if run.settings else {}),
            "metrics": [{"metric": m, "expect": e} for m, e in run.expect.items()],
            "measure": run.measure,
        }
        for run in runs
    ]


# -- literature.json ------------------------------------------------------------------------


class LiteraturePaper(TypedDict, total=False):
    """One paper of the review as literature.json keeps it (a hand-edited file may lack some
    fields; ``title`` and ``summary`` are checked when it is loaded)."""

    id: str
    arxiv_id: str
    title: str
    authors: list[str]
    year: int | str
    url: str
    citations: int | None
    summary: str
    bibtex_key: str
    bibtex: str


class LiteratureReview(TypedDict):
    topic: str
    summary: str
    papers: list[LiteraturePaper]


def save_literature(root: Path, topic: str, summary: str, papers: list[LiteraturePaper]) -> Path:
    data = LiteratureReview(topic=topic, summary=summary, papers=papers)
    return _write_json(root, LITERATURE, data, ascii_only=False)


def has_literature(root: Path) -> bool:
    return (Path(root) / LITERATURE).is_file()


def load_literature(root: Path) -> LiteratureReview:
    """literature.json as written (or edited): a clear error names what is wrong."""
    path = Path(root) / LITERATURE
    fix = f"fix {path} or delete it and revise at the checkpoint to review again"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StageFailed(f"{path} is missing", fix) from None
    except json.JSONDecodeError as exc:
        raise StageFailed(f"{path} is not valid JSON: line {exc.lineno}: {exc.msg}", fix) from None
    papers = data.get("papers") if isinstance(data, dict) else None
    if not isinstance(papers, list) or not all(
        isinstance(p, dict)
        and isinstance(p.get("title"), str)
        and isinstance(p.get("summary"), str)
        for p in papers
    ):
        raise StageFailed(f'{path}: "papers" must be a list of {{"title", "summary", ...}}', fix)
    if not isinstance(data.get("summary", ""), str):
        raise StageFailed(f'{path}: "summary" must be text', fix)
    return cast(LiteratureReview, data)  # the fields checked above; the rest as written


def literature_digest(review: LiteratureReview, summary_chars: int = 500) -> str:
    """The review as a prompt block: the overall summary, then each paper in a line or two."""
    lines = [review.get("summary", "").strip()] if review.get("summary") else []
    for paper in review.get("papers", []):
        key = f" [{paper['bibtex_key']}]" if paper.get("bibtex_key") else ""
        text = " ".join(paper["summary"].split())
        if len(text) > summary_chars:
            text = text[:summary_chars].rsplit(" ", 1)[0] + " ..."
        lines.append(f"- {paper['title']} ({paper.get('year', '')}){key}: {text}")
    return "\n".join(lines)
