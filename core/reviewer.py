"""The reviewer, with or without a project: a paper's text reviewed on the NeurIPS form by any
litellm model (chosen independently of the writer's), validated by ``core.review``.

``labtui review PAPER.pdf`` uses it without a project; the review stage uses it on the compiled
paper. The PDF is read with PyMuPDF; an unreadable, encrypted, scanned-only or empty PDF is a
clear error (``core.latex.pdf_text``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .events import Event
from .review import SCORE_RANGES, Review, parse_review

MAX_PAPER_CHARS = 40_000  # ~10k tokens: a conference paper without its appendix


def read_paper(pdf: Path) -> str:
    """The paper's text; LabtuiError saying why when there is none to review."""
    from .errors import LabtuiError
    from .latex import pdf_text

    if not Path(pdf).is_file():
        raise LabtuiError(f"PDF not found: {pdf}", "check the path to the paper")
    return pdf_text(Path(pdf))


def review_text(
    llm: Any,
    prompt: Callable[..., str],
    paper: str,
    notes: str = "",
    temperature: float | None = None,
) -> Review:
    """One review of ``paper`` by ``llm`` (a core.llm.LLM); invalid fields are asked again."""
    messages = [
        {"role": "system", "content": prompt("review_system")},
        {"role": "user", "content": prompt("review", paper=paper[:MAX_PAPER_CHARS], notes=notes)},
    ]
    return llm.ask_json(messages, parse_review, json_mode=True, temperature=temperature)


def standalone_llm(model: str, budget_usd: float, emit: Callable[[Event], None]) -> Any:
    """A reviewer model outside any project: ``model`` (or $LABTUI_MODEL), $LABTUI_API_BASE
    for a local server, its key in $LABTUI_API_KEY or the provider's usual variable."""
    from .config import LLMSection, ModelSpec
    from .llm import LLM, Ledger, check_model

    name = model or os.environ.get("LABTUI_MODEL", "")
    if not name:
        raise ConfigError(
            "no reviewer model given",
            "pass --model (any litellm model string, e.g. openai/gpt-4o) or set LABTUI_MODEL",
        )
    spec = ModelSpec(name=name, api_base=os.environ.get("LABTUI_API_BASE", ""))
    problems = check_model(spec)
    if problems:
        raise ConfigError(problems[0], "see `labtui doctor` for what the model needs")
    return LLM(spec, LLMSection(), Ledger(budget_usd, emit), emit, "review", role="reviewer")


# -- an ensemble and its Area Chair ---------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    """Reviews of one paper: each reviewer's, and the Area Chair's meta-review of them."""

    reviews: list[Review]
    meta: Review

    def scores(self) -> dict[str, tuple[float, float]]:
        """Each score as the ensemble's mean and spread (standard deviation, 0 for one)."""
        return {
            name: _mean_and_spread([r.fields[name] for r in self.reviews]) for name in SCORE_RANGES
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "meta_review": self.meta.fields,
            "reviews": [r.fields for r in self.reviews],
            "scores": {name: {"mean": m, "spread": s} for name, (m, s) in self.scores().items()},
        }


def _mean_and_spread(values: list[int]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return round(mean, 2), round(spread, 2)


def review_panel(
    llm: Any, prompt: Callable[..., str], paper: str, *, ensemble: int, temperature: float = 0.75
) -> Panel:
    """``ensemble`` independent reviews sampled at ``temperature``, and the Area Chair's
    meta-review of them (the reviews themselves when there is only one)."""
    if ensemble < 1:
        raise ConfigError(f"an ensemble of {ensemble} reviewers reviews nothing", "use 1 or more")
    reviews = [
        review_text(llm, prompt, paper, temperature=temperature if ensemble > 1 else None)
        for _ in range(ensemble)
    ]
    if ensemble == 1:
        return Panel(reviews, reviews[0])
    listing = "\n\n".join(
        f"Review {i}:\n{json.dumps(r.fields, indent=1)}" for i, r in enumerate(reviews, 1)
    )
    messages = [
        {"role": "system", "content": prompt("review_system")},
        {"role": "user", "content": prompt("review_meta", count=ensemble, reviews=listing)},
    ]
    meta = llm.ask_json(messages, parse_review, json_mode=True)
    return Panel(reviews, meta)
