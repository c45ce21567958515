"""Calibrating a reviewer (``labtui review --calibrate DIR``): review a seeded sample of a
benchmark's papers and measure the decisions and scores against the human ones.

The sample is the benchmark's rows shuffled by ``random.Random(seed)``, first ``n``: a larger
``n`` with the same seed takes the same papers first and more after them. Each paper is reviewed
by ``core.review.reviewer.review_panel`` with the reviewer's model and ``[review]`` settings, and the
review is cached under ``$XDG_CACHE_HOME/labtui/reviews/<reviewer fingerprint>/`` (default
``~/.cache``), keyed by a digest of the paper's text and the review prompts, so that running the
same calibration again, or a longer one, pays only for the papers not yet reviewed.

The budget cap applies (``core.llm.budget``): once it is spent, the papers already cached are still
counted, the others are left, and the record says it is incomplete and how to continue. A paper
the model gives no usable review of is recorded as failed; three such papers in a row stop the
run (the model or its server is broken, not the paper).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import BudgetExceeded, ConfigError, LabtuiError, LLMError
from ..events import Event
from ..llm.budget import Ledger
from ..llm.client import LLM
from ..llm.litellm_setup import check_model
from ..settings.config import load_config
from ..settings.profiles import apply_profile
from ..settings.prompts import load_prompt, prompt_path
from ..settings.sections import ReviewSection
from . import measures as measure
from .benchmark import Benchmark, BenchmarkPaper
from .calibration_store import fingerprint, read_json, write_json
from .reviewer import Prompt, review_panel, reviewer_facts, standalone_llm

REVIEW_PROMPTS = ("review_system", "review", "review_reflect", "review_meta")
FAILURES_IN_A_ROW = 3

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Reviewer:
    """The reviewer being calibrated: a model (an ``core.llm.client.LLM`` with its budget) and its
    ``[review]`` settings; ``project``: whose prompts and examples folder it uses, if any."""

    llm: LLM
    settings: ReviewSection
    project: Path | None = None

    @property
    def facts(self) -> dict[str, Any]:
        return reviewer_facts(self.llm.spec.name, self.settings)

    @property
    def prompt(self) -> Prompt:
        return partial(load_prompt, project_root=self.project)


def standalone_reviewer(
    model: str, budget_usd: float, emit: Callable[[Event], None], overrides: dict[str, Any]
) -> Reviewer:
    """A reviewer outside any project: ``model`` or $LABTUI_MODEL, labtui's ``[review]``
    defaults with ``overrides`` (None values: not given) on top."""
    settings = ReviewSection(**_given(overrides))
    return Reviewer(standalone_llm(model, budget_usd, emit), settings)


def project_reviewer(
    project: Path,
    model: str,
    budget_usd: float,
    emit: Callable[[Event], None],
    overrides: dict[str, Any],
) -> Reviewer:
    """The project's reviewer, as its review stage has it: its ``[review]`` settings (with the
    small-model profile where the pipeline applies it) and review-stage model (``model``, when
    given, in its place), ``overrides`` on top, its prompts and examples."""
    config = load_config(project)
    apply_profile(config)
    settings = ReviewSection(**{**config.review.model_dump(), **_given(overrides)})
    if model:
        config = config.model_copy(
            update={"models": config.models.model_copy(update={"review": model})}
        )
    spec = config.model_for("review")
    if spec is None:
        raise ConfigError(
            f"no reviewer model for {project}",
            "pass --model, or set [models] review (or default) in labtui.toml, or LABTUI_MODEL",
        )
    problems = check_model(spec)
    if problems:
        raise ConfigError(problems[0], "see `labtui doctor` for what the model needs")
    llm = LLM(spec, config.llm, Ledger(budget_usd, emit), emit, "review", role="reviewer")
    return Reviewer(llm, settings, project)


def _given(overrides: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in overrides.items() if value is not None}


def sample(papers: list[BenchmarkPaper], n: int, seed: int) -> list[BenchmarkPaper]:
    """The first ``n`` papers after a shuffle seeded by ``seed`` (all of them when n is more)."""
    shuffled = list(papers)
    random.Random(seed).shuffle(shuffled)
    return shuffled[:n]


# -- the review cache -----------------------------------------------------------------------------


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "labtui" / "reviews"


class ReviewCache:
    """Reviews by one reviewer, one file per paper text (and version of the review prompts)."""

    def __init__(self, reviewer: Reviewer) -> None:
        self.folder = cache_root() / fingerprint(reviewer.facts)
        self._prompts = "".join(
            prompt_path(name, reviewer.project).read_text(encoding="utf-8")
            for name in REVIEW_PROMPTS
        )
        self.unwritable = ""  # why the cache could not be written, once it could not

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(f"{self._prompts}\0{text}".encode()).hexdigest()[:32]
        return self.folder / f"{digest}.json"

    def get(self, text: str) -> dict[str, Any] | None:
        # a cache file that is unreadable or cut short is a review not yet made
        entry = read_json(self._path(text))
        return entry if entry is not None and "panel" in entry else None

    def put(self, text: str, entry: dict[str, Any]) -> None:
        path = self._path(text)
        try:
            write_json(path, entry)
        except OSError as exc:
            self.unwritable = f"{path.parent}: {exc.strerror or exc}"


# -- one paper ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reviewed:
    """A sampled paper's review, as the calibration counts it."""

    paper: BenchmarkPaper
    overall: float
    spread: float
    decision: str
    cached: bool

    def row(self) -> dict[str, Any]:
        return {
            "paper_id": self.paper.paper_id,
            "human_decision": self.paper.decision,
            "human_mean": self.paper.human_mean,
            "overall": self.overall,
            "spread": self.spread,
            "decision": self.decision,
            "cached": self.cached,
        }


def _reviewed(paper: BenchmarkPaper, panel: dict[str, Any], cached: bool) -> Reviewed:
    overall = panel["scores"]["Overall"]
    return Reviewed(paper, overall["mean"], overall["spread"], panel["decision"], cached)


@dataclass
class _Spending:
    """What the reviewer's ledger booked: before and after one paper."""

    tokens_in: int = 0
    tokens_out: int = 0
    usd: float = 0.0

    @classmethod
    def of(cls, llm: LLM) -> _Spending:
        tokens_in, tokens_out, _ = llm.ledger.stage_totals(llm.stage)
        return cls(tokens_in, tokens_out, llm.ledger.total_usd)

    def since(self, before: _Spending) -> _Spending:
        return _Spending(
            self.tokens_in - before.tokens_in,
            self.tokens_out - before.tokens_out,
            self.usd - before.usd,
        )


# -- the run --------------------------------------------------------------------------------------


@dataclass
class _Run:
    """A calibration under way: what was reviewed, what failed, and why it stopped (if so)."""

    reviewer: Reviewer
    cache: ReviewCache
    progress: Progress
    reviewed: list[Reviewed]
    failed: list[dict[str, str]]
    stopped: str = ""  # "", "budget" or "failures"
    failures_in_a_row: int = 0

    def paper(self, number: int, total: int, paper: BenchmarkPaper) -> None:
        """Review one paper (or take its cached review) and say how it went."""
        head = f"[{number}/{total}] {paper.paper_id}"
        try:
            text = paper.text()
        except LabtuiError as exc:
            self._fail(head, paper, exc.message, counts=False)
            return
        entry = self.cache.get(text)
        if entry is not None:
            self._count(head, _reviewed(paper, entry["panel"], cached=True), "cached")
            return
        if self.stopped:  # the budget is spent: only cached reviews are counted now
            return
        llm = self.reviewer.llm
        before = _Spending.of(llm)
        try:
            panel = review_panel(
                llm,
                self.reviewer.prompt,
                text,
                self.reviewer.settings,
                examples_root=self.reviewer.project,
            )
        except BudgetExceeded:
            self.stopped = "budget"
            return
        except LLMError as exc:
            self._fail(head, paper, exc.message, counts=True)
            return
        spent = _Spending.of(llm).since(before)
        record = panel.to_json()
        self.cache.put(text, {"paper_id": paper.paper_id, "panel": record, **vars(spent)})
        self._count(head, _reviewed(paper, record, cached=False), f"${spent.usd:.4f}")
        if llm.ledger.exhausted:
            self.stopped = "budget"

    def _count(self, head: str, reviewed: Reviewed, cost: str) -> None:
        self.reviewed.append(reviewed)
        self.failures_in_a_row = 0
        self.progress(f"{head}: {_scores_line(reviewed)} · {cost}")

    def _fail(self, head: str, paper: BenchmarkPaper, why: str, *, counts: bool) -> None:
        self.failed.append({"paper_id": paper.paper_id, "error": why})
        self.progress(f"{head}: no review ({why})")
        if counts:
            self.failures_in_a_row += 1
            if self.failures_in_a_row >= FAILURES_IN_A_ROW:
                self.stopped = "failures"


def _scores_line(reviewed: Reviewed) -> str:
    human = reviewed.paper.human_mean
    rating = f" {human:.2f}" if human is not None else ""
    return (
        f"Overall {reviewed.overall:.2f} {reviewed.decision} · "
        f"human {reviewed.paper.decision}{rating}"
    )


def calibrate(
    benchmark: Benchmark,
    reviewer: Reviewer,
    *,
    n: int,
    seed: int,
    name: str = "",
    progress: Progress = lambda text: None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> dict[str, Any]:
    """Review a sample of ``n`` papers (seeded) and measure the reviewer: the calibration record
    (see ``calibration_record``). Nothing is saved here but the cached reviews."""
    chosen = sample(benchmark.papers, n, seed)
    if n > len(chosen):
        progress(f"--n {n}, but the benchmark has {len(chosen)} papers: reviewing all of them")
    run = _Run(reviewer, ReviewCache(reviewer), progress, [], [])
    start = _Spending.of(reviewer.llm)
    for number, paper in enumerate(chosen, 1):
        if run.stopped == "failures":
            break
        run.paper(number, len(chosen), paper)
    if run.cache.unwritable:
        progress(f"reviews were not cached (cannot write {run.cache.unwritable})")
    if not run.reviewed:
        raise _nothing_reviewed(run, len(chosen))
    spent = _Spending.of(reviewer.llm).since(start)
    record = calibration_record(benchmark, reviewer, run, chosen, n=n, seed=seed, spent=spent)
    record["benchmark"]["name"] = name or benchmark.default_name
    record["created"] = now().isoformat(timespec="seconds")
    progress(_ending(run, len(chosen)))
    return record


def _nothing_reviewed(run: _Run, sampled: int) -> LLMError:
    """The error of a calibration that has no review to measure: why it stopped, the last
    failure's own words, and the fix for that cause (a budget to raise, or a reviewer model
    that gives usable reviews: raising the budget does nothing for a model that cannot)."""
    if run.stopped == "budget":
        return LLMError(
            "no paper of the benchmark was reviewed: the budget was spent before the first review",
            "raise --budget (reviews already cached cost nothing again)",
        )
    tried = len(run.failed)
    if not tried:
        return LLMError("no paper of the benchmark was sampled", "give --n 1 or more")
    if run.stopped == "failures":
        why = (
            f"the reviewer gave no usable review of {FAILURES_IN_A_ROW} papers in a row, so the "
            f"calibration stopped after {tried} of {sampled} sampled papers"
        )
    else:
        why = f"none of the {tried} sampled papers got a usable review"
    return LLMError(
        f"no paper of the benchmark was reviewed: {why}; the last: {run.failed[-1]['error']}",
        "use a stronger reviewer model (--model, or [models] review in labtui.toml): a "
        "calibration counts only reviews that pass the review form's checks",
    )


def _ending(run: _Run, sampled: int) -> str:
    done = len(run.reviewed)
    if run.stopped == "budget":
        return (
            f"budget spent after {done} of {sampled} papers: run the same command with a larger "
            f"--budget to continue (the {done} reviews are cached and cost nothing again)"
        )
    if run.stopped == "failures":
        return (
            f"stopped: the reviewer gave no usable review of {FAILURES_IN_A_ROW} papers in a "
            f"row; {done} of {sampled} reviewed (cached). Check the model, then run again"
        )
    failed = f", {len(run.failed)} without a usable review" if run.failed else ""
    return f"reviewed {done} of {sampled} papers{failed}"


def calibration_record(
    benchmark: Benchmark,
    reviewer: Reviewer,
    run: _Run,
    chosen: list[BenchmarkPaper],
    *,
    n: int,
    seed: int,
    spent: _Spending,
) -> dict[str, Any]:
    """The record ``core.review.calibration_store.save_calibration`` keeps."""
    return {
        "reviewer": reviewer.facts,
        "benchmark": {
            "name": benchmark.default_name,
            "folder": str(benchmark.folder.resolve()),
            "table": benchmark.table.name,
            "format": benchmark.format,
            "rows": len(benchmark.papers),
            "left_out": {
                "unknown_decision": benchmark.unknown_decision,
                "missing_paper": benchmark.missing_paper,
                "duplicate_row": benchmark.duplicate_row,
            },
            "sampled": len(chosen),
        },
        "sample": {"n": n, "seed": seed, "paper_ids": [paper.paper_id for paper in chosen]},
        "complete": len(run.reviewed) == len(chosen),
        "stopped": run.stopped,
        "metrics": metrics(run.reviewed, seed),
        "cost": {
            "tokens_in": spent.tokens_in,
            "tokens_out": spent.tokens_out,
            "usd": spent.usd,
            "cached_papers": sum(1 for reviewed in run.reviewed if reviewed.cached),
        },
        "papers": [reviewed.row() for reviewed in run.reviewed],
        "failed": run.failed,
    }


def metrics(reviewed: list[Reviewed], seed: int) -> dict[str, Any]:
    """The measures of the reviewed papers against the human decisions and ratings."""
    human = [r.paper.accepted for r in reviewed]
    predicted = [r.decision == "Accept" for r in reviewed]
    overall = [r.overall for r in reviewed]
    rated = [r for r in reviewed if r.paper.human_mean is not None]
    scores = [r.overall for r in rated]
    ratings = [r.paper.human_mean for r in rated if r.paper.human_mean is not None]
    interval = measure.bootstrap_balanced_accuracy(human, predicted, seed)
    return {
        "papers": len(reviewed),
        "balanced_accuracy": measure.balanced_accuracy(human, predicted),
        "balanced_accuracy_ci": list(interval) if interval else None,
        "accuracy": measure.accuracy(human, predicted),
        "f1": measure.f1(human, predicted),
        "roc_auc": measure.roc_auc(human, overall),
        "pearson_r": measure.pearson(scores, ratings),
        "spearman_rho": measure.spearman(scores, ratings),
        "rated_papers": len(rated),
        "accept_rate": measure.rate(predicted),
        "human_accept_rate": measure.rate(human),
        "mean_overall": measure.mean(overall),
        "human_mean_rating": measure.mean(ratings),
        "ensemble_spread": measure.mean([r.spread for r in reviewed]),
    }
