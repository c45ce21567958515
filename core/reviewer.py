"""The reviewer, with or without a project: a paper's text reviewed on the NeurIPS form by any
litellm model (chosen independently of the writer's), validated by ``core.review``.

``labtui review PAPER.pdf`` uses it without a project; the review stage uses it on the compiled
paper. The PDF is read with PyMuPDF; an unreadable, encrypted, scanned-only or empty PDF is a
clear error (``core.latex.pdf_text``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .events import Event
from .review import Review, parse_review

MAX_PAPER_CHARS = 40_000  # ~10k tokens: a conference paper without its appendix


def read_paper(pdf: Path) -> str:
    """The paper's text; LabtuiError saying why when there is none to review."""
    from .errors import LabtuiError
    from .latex import pdf_text

    if not Path(pdf).is_file():
        raise LabtuiError(f"PDF not found: {pdf}", "check the path to the paper")
    return pdf_text(Path(pdf))


def review_text(llm: Any, prompt: Callable[..., str], paper: str, notes: str = "") -> Review:
    """One review of ``paper`` by ``llm`` (a core.llm.LLM); invalid fields are asked again."""
    messages = [
        {"role": "system", "content": prompt("review_system")},
        {"role": "user", "content": prompt("review", paper=paper[:MAX_PAPER_CHARS], notes=notes)},
    ]
    return llm.ask_json(messages, parse_review, json_mode=True)


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
