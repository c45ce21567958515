"""What each stage hands on to the stages after it: one typed record per stage.

A stage returns its record as ``StageOutput.result``; the pipeline journals it as the JSON object
``StageFinished.result`` (the keys each stage has always written), and a later stage reads it back
typed, ``ctx.result(ExperimentsResult).runs``, where it used to read ``result_of(...).get(...)``.
Reading forgives: a key a journal lacks (it was written before the key existed, or the stage was
skipped) or holds as null takes the field's default, so a project begun by an older labtui resumes.

The records sit below every layer that reads them (the stages, which never import each other;
the steps, a search's frame and the write-up's section repair; the engine's status): beside the
artifacts the stages hand on as files, in the workspace, and importing nothing of labtui.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class JournaledRecord:
    """A record journaled as a JSON object, its fields by name."""

    # Keys written only when they hold something (as the stage always wrote them).
    omitted_when_empty: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        """The journaled form: the fields by name, copied."""
        return {
            f.name: copy.deepcopy(getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) or f.name not in self.omitted_when_empty
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The record a journaled result gives; keys it does not know are left out, and a field
        missing (or null) takes its default."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: copy.deepcopy(v) for k, v in data.items() if k in known and v is not None})


@dataclass(frozen=True)
class StageResult(JournaledRecord):
    """A stage's result: ``stage`` names the stage that writes it."""

    stage: ClassVar[str] = ""


@dataclass(frozen=True)
class LiteratureResult(StageResult):
    stage: ClassVar[str] = "literature"
    summary: str = ""  # the review's digest, for the ideas' prompt
    papers: list[str | None] = field(
        default_factory=list
    )  # arXiv ids (an edited paper may lack one)


@dataclass(frozen=True)
class IdeasResult(StageResult):
    stage: ClassVar[str] = "ideas"
    ideas: list[str] = field(default_factory=list)  # this round's ideas by name, best first


@dataclass(frozen=True)
class NoveltyResult(StageResult):
    stage: ClassVar[str] = "novelty"
    idea: str = ""  # the idea chosen to run
    evidence: dict[str, Any] = field(default_factory=dict)  # its novelty check, as ideas.json


@dataclass(frozen=True)
class PlanResult(StageResult):
    stage: ClassVar[str] = "plan"
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("written",)
    idea: str = ""
    runs: list[dict[str, Any]] = field(default_factory=list)  # the runs as plan.json has them
    written: dict[str, str] = field(default_factory=dict)  # a scaffolded file -> its commit


@dataclass(frozen=True)
class SearchSummary(JournaledRecord):
    """What a hill-climb or a tree search ended with (journaled among the experiments' keys)."""

    strategy: str = ""  # climb or tree
    metric: str = ""
    direction: str = ""
    best: dict[str, Any] = field(default_factory=dict)  # step, run, value, commit, seeds, mean, std
    noise: dict[str, Any] = field(default_factory=dict)  # values (the baseline's), threshold
    counts: dict[str, int] = field(default_factory=dict)  # steps by status
    ledger: str = ""  # the ledger's results.tsv
    branch: str = ""
    reason: str = ""  # why it ended


@dataclass(frozen=True)
class ExperimentsResult(StageResult):
    stage: ClassVar[str] = "experiments"
    omitted_when_empty: ClassVar[tuple[str, ...]] = ("abandoned", "parallel", "search")
    idea: str = ""
    runs: list[str] = field(default_factory=list)  # the run folders, in order
    means: dict[str, dict[str, Any]] = field(default_factory=dict)  # run -> its means
    baseline: dict[str, Any] = field(default_factory=dict)
    abandoned: dict[str, str] = field(default_factory=dict)  # run -> why every attempt failed
    parallel: dict[str, dict[str, Any]] = field(default_factory=dict)  # idea run beside -> lane
    search: SearchSummary | None = None  # the search's own facts ([experiment] strategy)

    def to_json(self) -> dict[str, Any]:
        """The search's facts sit among the experiments' keys, as they always have."""
        data = super().to_json()
        data.pop("search", None)
        return data | (self.search.to_json() if self.search is not None else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        plain = super().from_json({k: v for k, v in data.items() if k != "search"})
        search = SearchSummary.from_json(data) if data.get("strategy") else None
        return replace(plain, search=search)


@dataclass(frozen=True)
class PlotsResult(StageResult):
    stage: ClassVar[str] = "plots"
    figures: list[str] = field(default_factory=list)
    descriptions: dict[str, str] = field(default_factory=dict)  # figure -> what it shows
    plot_failed: bool = False  # the figures are the last that worked


@dataclass(frozen=True)
class WriteupResult(StageResult):
    stage: ClassVar[str] = "writeup"
    tex: str = ""
    placeholders_left: list[str] = field(default_factory=list)
    flagged: list[dict[str, str]] = field(default_factory=list)  # sections no answer passed
    traced: int = 0  # the paper's numbers traced to a run
    untraced: int = 0
    waived: int = 0
    contradicted: int = 0  # sentences the runs contradict
    claims_waived: int = 0
    open_problems: list[str] = field(default_factory=list)  # the draft's gaps nobody accepted


@dataclass(frozen=True)
class CompileResult(StageResult):
    stage: ClassVar[str] = "compile"
    pdf: str = ""
    pages: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReviewResult(StageResult):
    stage: ClassVar[str] = "review"
    overall: float = 0.0
    decision: str = ""
    review: str = ""  # the review's file
    improvements: int = 0  # rounds run
