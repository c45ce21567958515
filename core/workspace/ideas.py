"""The idea archive (``ideas.json``): validated idea records in The AI Scientist's schema.

LLM output is parsed into ``Idea`` records here, with precise messages for every bad field so the
LLM layer can re-ask; nothing is clamped or guessed. The rules are ``core.answers.idea_answers``' IdeaRecord
(the archive) and IdeaProposal (a model's new idea: real content, no placeholders).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..answers.idea_answers import STATUSES as STATUSES
from ..answers.idea_answers import IdeaProposal, IdeaProposals, IdeaRecord
from ..answers.validation import validate
from ..errors import StageFailed
from .artifacts import IDEAS

SCORES = ("Interestingness", "Feasibility", "Novelty")
# STATUSES (core.answers.idea_answers): seed: from the template · proposed: new, not yet checked · novel /
# not_novel / unsure: the novelty check's decision · unchecked: checked, but no verdict had
# evidence (arXiv unreachable, no paper found, no usable answer) · chosen: picked (by the novelty
# stage or the researcher) · rejected: by the researcher, never run · done: has a paper and its
# review score


@dataclass
class Idea:
    name: str
    title: str
    experiment: str  # the experiment plan: what to change in experiment.py, what to measure
    interestingness: int
    feasibility: int
    novelty: int
    status: str = "proposed"  # one of STATUSES
    novelty_evidence: dict[str, Any] = field(default_factory=dict)
    score: float | None = None  # the review's Overall, once the idea has a paper
    hypothesis: str = ""  # what the experiment should show, and why; '' for older records

    @property
    def rank_key(self) -> tuple[int, int, int]:
        return (
            self.interestingness + self.feasibility + self.novelty,
            self.feasibility,
            self.novelty,
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"Name": self.name, "Title": self.title}
        if self.hypothesis:
            data["Hypothesis"] = self.hypothesis
        data |= {
            "Experiment": self.experiment,
            "Interestingness": self.interestingness,
            "Feasibility": self.feasibility,
            "Novelty": self.novelty,
            "status": self.status,
        }
        if self.novelty_evidence:
            data["novelty_evidence"] = self.novelty_evidence
            # The AI Scientist's flag, from the check's decision (the status moves on later).
            data["novel"] = self.novelty_evidence.get("decision") == "novel"
        if self.score is not None:
            data["Score"] = self.score
        return data


def parse_idea(data: Any, where: str = "idea", *, proposal: bool = False) -> Idea:
    """One validated record. A ``proposal`` (a model's new idea) must state its Hypothesis and
    write real content in every text field (``core.answers.idea_answers.IdeaProposal``); records already in
    an archive (seeds, The AI Scientist's ideas, hand edits) may lack a Hypothesis."""
    if proposal:
        return idea_of(validate(IdeaProposal, data, where=where))
    return idea_of(validate(IdeaRecord, data, where=where))


def idea_of(record: IdeaRecord | IdeaProposal) -> Idea:
    archived = record if isinstance(record, IdeaRecord) else None
    return Idea(
        name=record.name,
        title=record.title,
        experiment=record.experiment,
        interestingness=record.interestingness,
        feasibility=record.feasibility,
        novelty=record.novelty,
        status=archived.status if archived else "proposed",
        novelty_evidence=dict(archived.novelty_evidence) if archived else {},
        score=archived.score if archived else None,
        hypothesis=record.hypothesis or "",
    )


def parse_idea_list(
    data: Any, expected: int | None = None, *, proposal: bool = False
) -> list[Idea]:
    """{"ideas": [...]} (or a bare list) -> ideas; names must be unique. Beyond ``expected``
    ideas, the extra ones are dropped (a model that over-delivers is not asked again)."""
    items = data.get("ideas") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ValueError('the reply must be {"ideas": [ ... ]} with at least one idea')
    if proposal:
        ideas = [idea_of(i) for i in validate(IdeaProposals, {"ideas": items}).ideas]
    else:
        ideas = [parse_idea(item, f"ideas[{i}]") for i, item in enumerate(items)]
    names = [idea.name for idea in ideas]
    if len(set(names)) != len(names):
        raise ValueError(f"idea names must be unique, got {names}")
    if expected is not None and len(ideas) > expected:
        ideas = ideas[:expected]
    return ideas


def load_archive(root: Path) -> list[Idea]:
    """The archive on disk, validated; a broken file (often a hand edit) is a clear error."""
    path = Path(root) / IDEAS
    if not path.exists():
        return []
    fix = f"fix {path} (or restore it with `git checkout -- {IDEAS}`)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise StageFailed(f"{path} is not valid JSON: line {exc.lineno}: {exc.msg}", fix) from None
    if not isinstance(data, list):
        raise StageFailed(f"{path} must be a JSON list of idea records", fix)
    try:
        return [parse_idea(item, f"{path}[{i}]") for i, item in enumerate(data)]
    except ValueError as exc:
        raise StageFailed(str(exc), fix) from None


@dataclass(frozen=True)
class NoveltyStatus:
    """How the idea the paper is about was checked for novelty, as provenance.json keeps it."""

    idea: str
    decision: str  # novel | not_novel | unsure | unchecked | "" (never checked)
    reason: str
    queries: int
    papers_seen: int

    @property
    def line(self) -> str:
        """One line for the checkpoint and the review's facts."""
        if not self.decision or self.decision == "unchecked":
            why = f": {self.reason}" if self.reason else ""
            return f"Novelty of {self.idea}: **unchecked** (not judged novel){why}"
        return (
            f"Novelty of {self.idea}: {self.decision}, after {self.queries} search(es) and "
            f"{self.papers_seen} paper(s) seen: {self.reason}"
        )


def novelty_status(root: Path) -> NoveltyStatus | None:
    """The novelty check of the idea the paper is about: the chosen one, or once reviewed (its
    status "done") the last one done. None when there is none or the archive is unreadable:
    provenance then says nothing about novelty rather than failing."""
    try:
        archive = load_archive(root)
    except StageFailed:
        return None
    done = [i for i in archive if i.status == "done"]
    chosen = next((i for i in archive if i.status == "chosen"), done[-1] if done else None)
    if chosen is None:
        return None
    evidence = chosen.novelty_evidence
    return NoveltyStatus(
        idea=chosen.name,
        decision=str(evidence.get("decision", "")),
        reason=str(evidence.get("reason", "")),
        queries=len(evidence.get("queries", [])),
        papers_seen=len(evidence.get("papers_seen", [])),
    )


def save_archive(root: Path, ideas: list[Idea]) -> Path:
    path = Path(root) / IDEAS
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


# -- near-duplicates ---------------------------------------------------------------------------

_STOPWORDS = frozenset(
    "a an the of on in for to and or with via by from at as is are do does can how what why "
    "when which we our into using than vs versus its it this that".split()
)


def _words(text: str) -> set[str]:
    """Content words, crudely stemmed (plural s), so "layers" and "layer" meet."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in _STOPWORDS}


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def similarity(a: Idea, b: Idea) -> float:
    """0..1: how much two ideas say the same thing. Titles dominate (they name the question);
    the experiment plans confirm a match of partly overlapping titles."""
    if a.name == b.name:
        return 1.0
    titles = _overlap(_words(a.title), _words(b.title))
    plans = _overlap(_words(a.experiment), _words(b.experiment))
    return max(titles, (titles + plans) / 2)


def near_duplicate(idea: Idea, others: list[Idea], threshold: float) -> Idea | None:
    """The first of ``others`` that ``idea`` nearly repeats (similarity >= threshold)."""
    return next((other for other in others if similarity(idea, other) >= threshold), None)


# Marks a researcher may set by hand (the TUI's idea picker); anything else is the engine's.
MARKS = ("chosen", "rejected")


def mark_ideas(root: Path, marks: dict[str, str]) -> Path:
    """Set statuses in ideas.json from the researcher's picks: ``{name: "chosen" | "rejected"
    | "proposed"}`` ("proposed" takes a mark back). The pipeline then commits the file as the
    researcher's edit."""
    archive = load_archive(root)
    by_name = {idea.name: idea for idea in archive}
    for name, status in marks.items():
        if name not in by_name:
            raise ValueError(f"no idea named {name!r} in {IDEAS}")
        if status not in (*MARKS, "proposed"):
            raise ValueError(f"an idea can be marked {' or '.join(MARKS)}, not {status!r}")
        by_name[name].status = status
    return save_archive(root, archive)
