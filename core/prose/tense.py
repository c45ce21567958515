"""The future tense where finished work is reported: a Results section, a conclusion, an abstract,
a method or a setup describe runs that ran, so "we will show" and "the experiment will be
performed as follows" (Qwen2.5-Coder-1.5B's whole Method) promise what the paper should report.
A sentence about future work may use the future tense."""

from __future__ import annotations

import re

from .defect import PROMISE, Defect, clipped, sentences_at

_FUTURE = re.compile(
    r"\b(?:we|this (?:paper|section|work|study)|the (?:paper|section|study|experiments?|runs?"
    r"|evaluation|training|analysis|results?))\s+(?:will|shall|are going to|is going to|plan to"
    r"|intend to|would like to)\b",
    re.I,
)
_FUTURE_WORK = re.compile(r"\bfuture\b|\bnext step|\bfollow-up\b", re.I)


def promises(text: str) -> list[Defect]:
    """The first sentence of ``text`` that promises what will be done (not about future
    work), as a defect; []."""
    for at, sentence in sentences_at(text):
        if _FUTURE.search(sentence) and not _FUTURE_WORK.search(sentence):
            quoted = clipped(sentence)
            return [
                Defect(
                    PROMISE,
                    at,
                    quoted,
                    f"“{quoted}” promises what will be done.",
                    "Report what was done and what the runs showed, in the past or present tense.",
                )
            ]
    return []
