"""What the commands that review a paper without a project share (``labtui review`` and its
``--probe``): the ``[review]`` settings given on the command line, the reviewer model, and what is
said on stderr while the reviewers work (stdout is the review's)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from labtui.core.events import Notice, Refused
from labtui.core.review.reviewer import standalone_llm
from labtui.core.settings.config import config_from_dict
from labtui.core.settings.profiles import apply_profile, profile_notice
from labtui.core.settings.sections import ReviewSection


def review_settings(overrides: dict | None) -> ReviewSection:
    """``[review]`` with what the command line gave (None: the default) in place, and the
    small-model profile's review settings where the model is served locally (one reviewer, no
    few-shot example: three reviewers at once on llama-cpp-python's one-slot server cut each
    other's replies short), said on stderr."""
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    # the environment's LABTUI_<SECTION>__<FIELD> apply as in a project ([llm] profile too)
    config = config_from_dict({"review": given}, Path("the command line"), os.environ)
    changed = [change for change in apply_profile(config) if change.startswith("review.")]
    if changed:
        notice = profile_notice(
            config,
            changed,
            kept="values given on the command line are kept",
            opt_out="set LABTUI_LLM__PROFILE=hosted",
        )
        print(f"  {notice}", file=sys.stderr)
    return config.review


def reviewer_llm(model: str, budget: float) -> Any:
    """The reviewer model (``model`` or $LABTUI_MODEL) under a ``budget`` in US dollars, saying
    its refusals and notices on stderr."""
    return standalone_llm(model, budget, emit=say_refusals_and_notices)


def who_reviews(settings: ReviewSection) -> str:
    if settings.ensemble > 1:
        return f"{settings.ensemble} reviewers and an Area Chair"
    return "one reviewer"


def progress(text: str) -> None:
    print(f"  {text} …", file=sys.stderr)


def say_refusals_and_notices(event: object) -> None:
    """While the reviewers work: each refused answer (and why) and each notice, on stderr (the
    review itself is stdout's)."""
    if isinstance(event, Refused):
        print(f"  refused {event.subject or event.what}: {event.reason}", file=sys.stderr)
    elif isinstance(event, Notice):
        print(f"  {event.text}", file=sys.stderr)
