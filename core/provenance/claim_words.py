"""The words of a claim about the runs, and the metrics a clause names.

``core/provenance/claims.py`` reads claims out of sentences with these: the claim words (better,
worse, up, down, significant, faster, slower), the words that take a clause's claim back
(negation, speculation) or soften it (hedges), where clauses break, and which of a run's
metrics ("test accuracy", "training time", "speed") a clause names. ``quoted_change.py`` reads
the same words for a change a sentence states with its numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..runs.effects import BETTER, WORSE
from .time_claims import (
    FASTER,
    FASTER_WORDS,
    SLOWER,
    SLOWER_WORDS,
    by_stage,
    is_duration,
    is_rate,
    is_speed_metric,
)

EFFECT = "effect"  # an effect of the change at all, in either direction
SLIGHT = "slight"  # a change called small
SLIGHT_PERCENT = 5.0  # beyond noise and at least this far from the baseline is no slight change
# What a clause may claim. "better"/"worse" judge quality; "up"/"down" move a value, which is
# better or worse by the metric's direction ("lower loss" improves); "faster"/"slower" move
# the times and rates the run reports (time_claims.py).
CLAIM_WORDS = {
    BETTER: r"improv\w*|better|outperform\w*|gains?|gained|enhanc\w*|boost\w*|superior",
    WORSE: r"wors\w*|degrad\w*|deteriorat\w*|hurts?|harm(?:s|ed|ful)?|underperform\w*|inferior",
    "up": r"increas\w*|higher|rais(?:e|es|ed|ing)|rose|rises?|rising|grew|grows?|larger",
    "down": r"decreas\w*|lower(?:s|ed|ing)?|drops?|dropp\w*|declin\w*|fell|falls?|falling"
    r"|reduc\w*|smaller",
    "significant": r"significant(?:ly)?|significance",
    # "the schedule does have an impact on training time and energy distance" (a 1.5B model's
    # conclusion of a run identical to its baseline): a change beyond noise, in each metric named
    # "only a slight difference in test accuracy" of a drop of 9 % (a 1.5B model's limitations)
    # (the adjective alone: the noun may make a claim of its own, "a slight improvement")
    SLIGHT: r"(?:slight|small|marginal|negligible|minor|tiny)(?=\s+(?:\w+\s+)?(?:differences?"
    r"|changes?|drops?|decreases?|increases?|gains?|improvements?|declines?|variations?)\b)",
    EFFECT: r"ha(?:s|ve|d|ving)\s+(?:a|an)\s+(?:\w+\s+)?(?:impact|effect|influence)"
    r"|affect(?:s|ed)|impacted|influenced",
    FASTER: FASTER_WORDS,
    SLOWER: SLOWER_WORDS,
}
CLAIM = re.compile(
    "|".join(rf"\b(?P<{kind}>{words})\b" for kind, words in CLAIM_WORDS.items()), re.I
)
# A clause that negates ("no improvement", "did not improve", "not significant").
NEGATION = re.compile(
    r"\b(?:not|no|never|without|neither|nor|cannot|none|non|hardly|barely|lack(?:s|ed|ing)?"
    r"|fail(?:s|ed)?\s+to|rather\s+than|instead\s+of|absence|insignificant)\b|n[’']t\b",
    re.I,
)
# A clause that speculates or states a purpose rather than a result.
SPECULATION = re.compile(
    r"\b(?:may|might|could|would|should|will|shall|expect\w*|hope\w*|hypothes\w*|whether|if)\b"
    r"|\bto\s+(?:further\s+)?(?:improv|increas|decreas|reduc|boost|enhanc|lower|rais)\w*",
    re.I,
)
# A sentence that admits the effect may be noise excuses a small claim within noise.
HEDGE = re.compile(
    r"\bnoise\b|standard errors?|error bars?|not\s+(?:statistically\s+)?significant"
    r"|insignificant|non-?significant|indistinguishable|\bslight(?:ly)?\b|marginal(?:ly)?"
    r"|negligibl\w*|\bsmall\b|\bminor\b|\bmodest(?:ly)?\b",
    re.I,
)
CLAUSE_BREAK = re.compile(
    r"[,;:()]|\s[-–—]+\s|—|\s(?:but|while|whereas|although|though|however|yet)\s", re.I
)
CITATION = "[citation]"
MAX_WORDS_APART = 3  # between a value word ("lower") and the metric it moves

Key = tuple[str, str]  # (dataset, metric)


def _named(part: str) -> Callable[[str], bool]:
    """Metrics whose name holds ``part``."""
    return lambda metric: re.search(part, metric, re.I) is not None


# Words in prose -> which metrics they name; the last flag marks a speed ("training speed"),
# which goes up when the times go down.
_TIMED = (
    r"training|train|inference|sampling|evaluation|eval|generation|wall[- ]?clock|wall|run"
    r"|running|step|epoch|iteration|total|elapsed|compute|computation|execution|gpu|cpu"
    r"|per[- ](?:step|epoch|iteration)"
)
_MEASURES: tuple[tuple[str, Callable[[str], bool], bool], ...] = (
    (r"accurac(?:y|ies)|acc", _named(r"acc"), False),
    (r"loss(?:es)?|nll|cross[- ]entropy", _named(r"loss|nll"), False),
    (r"error(?:s| rates?)?", _named(r"err"), False),
    (r"perplexit(?:y|ies)|ppl", _named(r"ppl|perplex"), False),
    (r"f1(?:[- ]scores?)?", _named(r"f1"), False),
    (r"auc", _named(r"auc"), False),
    (r"rewards?|returns?", _named(r"reward|return"), False),
    (r"bits per char(?:acter)?|bpc", _named(r"bpc"), False),
    (r"kl(?: divergence)?", _named(r"kl"), False),
    (r"energy distance", _named(r"energy"), False),
    (r"throughput|tokens per second|tokens/s|samples per second", is_rate, False),
    (
        rf"(?:{_TIMED})[- ]times?|run-?times?|time per (?:step|epoch|iteration|batch|sample|token)"
        r"|(?:training |inference )?(?:durations?|latenc(?:y|ies))|wall[- ]?clock",
        is_duration,
        False,
    ),
    (r"(?:training |inference |sampling )?speeds?", is_speed_metric, True),
)
# A word before the measure that narrows it: "test accuracy", "validation loss".
_QUALIFIERS = {
    "test": "test",
    "validation": "val",
    "val": "val",
    "training": "train",
    "train": "train",
    "evaluation": "eval",
    "eval": "eval",
    "best": "best",
    "final": "final",
    "inference": "inference",
}


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    phrase: str
    keys: frozenset[Key]
    speed: bool = False  # a speed ("training speed"): up is faster, whatever the metric

    @property
    def timed(self) -> bool:
        """Whether every metric it can be is a time or a rate."""
        return all(is_speed_metric(metric) for _, metric in self.keys)


def mentions(clause: str, keys: list[Key]) -> list[Mention]:
    """Where a clause names a metric, and which metrics (of ``keys``) each mention can be."""
    lowered = clause.lower()
    found: list[Mention] = []
    for metric in sorted({m for _, m in keys}, key=len, reverse=True):
        stem = metric.removesuffix("_mean")
        for phrase in dict.fromkeys((metric, stem, stem.replace("_", " "))):
            if len(phrase) < 3:
                continue
            for match in re.finditer(rf"(?<![\w]){re.escape(phrase.lower())}(?![\w])", lowered):
                if not _overlaps(found, match.start(), match.end()):
                    named = frozenset(k for k in keys if k[1] == metric)
                    found.append(Mention(match.start(), match.end(), match.group(0), named))
    for words, names, speed in _MEASURES:
        for match in re.finditer(rf"\b(?:{words})\b", lowered):
            if _overlaps(found, match.start(), match.end()):
                continue
            matching = {k for k in keys if names(k[1])}
            if speed or names is is_duration:
                matching = set(by_stage(match.group(0), frozenset(matching)))
            narrowed = _narrowed(matching, lowered[: match.start()])
            start = narrowed[1] if narrowed[0] else match.start()
            if narrowed[0] or matching:
                found.append(
                    Mention(start, match.end(), lowered[start : match.end()],
                            frozenset(narrowed[0] or matching), speed)
                )  # fmt: skip
    return sorted(found, key=lambda m: m.start)


def _overlaps(found: list[Mention], start: int, end: int) -> bool:
    return any(m.start < end and start < m.end for m in found)


def _narrowed(keys: set[Key], before: str) -> tuple[set[Key], int]:
    """The metrics a qualifier right before the measure word ("test", "validation") keeps, and
    where the qualifier starts; (empty, 0) without one that narrows."""
    qualifier = re.search(r"\b([a-z]+)[\s-]+$", before)
    if qualifier is None or qualifier.group(1) not in _QUALIFIERS:
        return set(), 0
    part = _QUALIFIERS[qualifier.group(1)]
    kept = {k for k in keys if part in k[1].lower().split("_")}
    return kept, qualifier.start(1)


def words_between(clause: str, mention: Mention, match: re.Match) -> int:
    """How many words stand between a metric's mention and a claim word."""
    if mention.end <= match.start():
        return len(clause[mention.end : match.start()].split())
    return len(clause[match.end() : mention.start].split())
