"""The idea archive (``ideas.json``): validated idea records in The AI Scientist's schema.

LLM output is parsed into ``Idea`` records here, with precise messages for every bad field so the
LLM layer can re-ask; nothing is clamped or guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ARCHIVE_NAME = "ideas.json"
SCORES = ("Interestingness", "Feasibility", "Novelty")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")


@dataclass
class Idea:
    name: str
    title: str
    experiment: str
    interestingness: int
    feasibility: int
    novelty: int
    status: str = "proposed"  # seed | proposed | novel | not_novel | unsure | chosen | done
    novelty_evidence: dict[str, Any] = field(default_factory=dict)
    score: float | None = None  # the review's Overall, once the idea has a paper

    @property
    def rank_key(self) -> tuple[int, int, int]:
        return (
            self.interestingness + self.feasibility + self.novelty,
            self.feasibility,
            self.novelty,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "Name": self.name,
            "Title": self.title,
            "Experiment": self.experiment,
            "Interestingness": self.interestingness,
            "Feasibility": self.feasibility,
            "Novelty": self.novelty,
            "status": self.status,
        }
        if self.novelty_evidence:
            data["novelty_evidence"] = self.novelty_evidence
            data["novel"] = self.status == "novel"
        if self.score is not None:
            data["Score"] = self.score
        return data


def _score(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: field {key!r} must be an integer from 1 to 10, got {value!r}")
    if not 1 <= value <= 10:
        raise ValueError(f"{where}: field {key!r} must be from 1 to 10, got {value}")
    return value


def _text(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def parse_idea(data: Any, where: str = "idea") -> Idea:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must be a JSON object with Name, Title, Experiment and scores")
    name = _text(data, "Name", where)
    if not _SLUG.match(name):
        raise ValueError(
            f"{where}: field 'Name' must be a lowercase slug (letters, digits, underscores), got {name!r}"
        )
    return Idea(
        name=name,
        title=_text(data, "Title", where),
        experiment=_text(data, "Experiment", where),
        interestingness=_score(data, "Interestingness", where),
        feasibility=_score(data, "Feasibility", where),
        novelty=_score(data, "Novelty", where),
        status=str(data.get("status", "proposed")),
        novelty_evidence=dict(data.get("novelty_evidence") or {}),
        score=data.get("Score"),
    )


def parse_idea_list(data: Any, expected: int | None = None) -> list[Idea]:
    """{"ideas": [...]} (or a bare list) -> ideas; names must be unique."""
    items = data.get("ideas") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ValueError('the reply must be {"ideas": [ ... ]} with at least one idea')
    ideas = [parse_idea(item, f"ideas[{i}]") for i, item in enumerate(items)]
    names = [idea.name for idea in ideas]
    if len(set(names)) != len(names):
        raise ValueError(f"idea names must be unique, got {names}")
    if expected is not None and len(ideas) > expected:
        ideas = ideas[:expected]
    return ideas


def load_archive(root: Path) -> list[Idea]:
    path = Path(root) / ARCHIVE_NAME
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return [parse_idea(item, f"{path}[{i}]") for i, item in enumerate(data)]


def save_archive(root: Path, ideas: list[Idea]) -> Path:
    path = Path(root) / ARCHIVE_NAME
    path.write_text(json.dumps([i.to_dict() for i in ideas], indent=2) + "\n", encoding="utf-8")
    return path


def ranked(ideas: list[Idea]) -> list[Idea]:
    return sorted(ideas, key=lambda idea: idea.rank_key, reverse=True)


def ideas_table(ideas: list[Idea]) -> str:
    """A Markdown table for checkpoints."""
    rows = ["| idea | title | I | F | N | status |", "|---|---|---|---|---|---|"]
    for idea in ideas:
        rows.append(
            f"| {idea.name} | {idea.title} | {idea.interestingness} | {idea.feasibility} "
            f"| {idea.novelty} | {idea.status} |"
        )
    return "\n".join(rows)
