"""Claims in prose checked against the computed effects (``core/runs/effects.py``).

A model's analysis of a run and the paper's abstract and Results section say things about the
runs: an improvement, a decline, a significant effect. This module reads those claims out of
sentences (the claim words, the metrics a clause names, negation, speculation and hedges) and
flags the ones the verdicts contradict (core/provenance/checks.py applies it to a run's analysis and
to the paper). It is conservative: a hedged, negated or speculative sentence is not a claim, and
a claim is contradicted only when the verdicts leave no doubt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..runs.effect_text import describe
from ..runs.effects import (
    BETTER,
    HIGHER,
    IDENTICAL,
    UNKNOWN,
    WITHIN_NOISE,
    WORSE,
    Effect,
    Overall,
    overall,
)
from .numbers import Contradiction

# -- claims in sentences -------------------------------------------------------------------------

# What a clause may claim. "better"/"worse" judge quality; "up"/"down" move a value, which is
# better or worse by the metric's direction ("lower loss" improves).
_CLAIM_WORDS = {
    BETTER: r"improv\w*|better|outperform\w*|gains?|gained|enhanc\w*|boost\w*|superior",
    WORSE: r"wors\w*|degrad\w*|deteriorat\w*|hurts?|harm(?:s|ed|ful)?|underperform\w*|inferior",
    "up": r"increas\w*|higher|rais(?:e|es|ed|ing)|rose|rises?|rising|grew|grows?|larger",
    "down": r"decreas\w*|lower(?:s|ed|ing)?|drops?|dropp\w*|declin\w*|fell|falls?|falling"
    r"|reduc\w*|smaller",
    "significant": r"significant(?:ly)?|significance",
}
_CLAIM = re.compile(
    "|".join(rf"\b(?P<{kind}>{words})\b" for kind, words in _CLAIM_WORDS.items()), re.I
)
# A clause that negates ("no improvement", "did not improve", "not significant").
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|neither|nor|cannot|none|non|hardly|barely|lack(?:s|ed|ing)?"
    r"|fail(?:s|ed)?\s+to|rather\s+than|instead\s+of|absence|insignificant)\b|n[’']t\b",
    re.I,
)
# A clause that speculates or states a purpose rather than a result.
_SPECULATION = re.compile(
    r"\b(?:may|might|could|would|should|will|shall|expect\w*|hope\w*|hypothes\w*|whether|if)\b"
    r"|\bto\s+(?:further\s+)?(?:improv|increas|decreas|reduc|boost|enhanc|lower|rais)\w*",
    re.I,
)
# A sentence that admits the effect may be noise excuses a small claim within noise.
_HEDGE = re.compile(
    r"\bnoise\b|standard errors?|error bars?|not\s+(?:statistically\s+)?significant"
    r"|insignificant|non-?significant|indistinguishable|\bslight(?:ly)?\b|marginal(?:ly)?"
    r"|negligibl\w*|\bsmall\b|\bminor\b|\bmodest(?:ly)?\b",
    re.I,
)
_CLAUSE_BREAK = re.compile(
    r"[,;:()]|\s[-–—]+\s|—|\s(?:but|while|whereas|although|though|however|yet)\s", re.I
)
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'*])|\n\s*\n|\n\s*(?:[-*•]|\d+[.)])\s+")
_RUN_NAME = re.compile(r"\brun[ _\\]*_?(\d+)\b", re.I)
_BASELINE = re.compile(r"\bbaseline\b|\brun[ \\]*_?0\b", re.I)
_COMPARES = re.compile(
    r"(?:than|to|over|with|against|from|vs\.?|versus|relative|on|of|and)\s+(?:the\s+)?$", re.I
)
_GENERIC = re.compile(r"\b(?:performance|results?|generali[sz]ation|quality)\b", re.I)
CITATION = "[citation]"
MAX_WORDS_APART = 3  # between a value word ("lower") and the metric it moves

# Words in prose -> what a metric's name holds.
_MEASURES = (
    (r"accurac(?:y|ies)|acc", r"acc"),
    (r"loss(?:es)?|nll|cross[- ]entropy", r"loss|nll"),
    (r"error(?:s| rates?)?", r"err"),
    (r"perplexit(?:y|ies)|ppl", r"ppl|perplex"),
    (r"f1(?:[- ]scores?)?", r"f1"),
    (r"auc", r"auc"),
    (r"rewards?|returns?", r"reward|return"),
    (r"bits per char(?:acter)?|bpc", r"bpc"),
    (r"kl(?: divergence)?", r"kl"),
    (r"energy distance", r"energy"),
    (r"throughput|tokens per second|tokens/s", r"per_s|throughput"),
    (
        r"(?:training|train|wall[- ]clock|inference|sampling|run|running) times?|run-?times?",
        r"time",
    ),
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

Key = tuple[str, str]  # (dataset, metric)


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    phrase: str
    keys: frozenset[Key]


@dataclass(frozen=True)
class _Claim:
    kind: str  # better | worse | up | down | significant
    keys: frozenset[Key] | None  # the metrics it is about; None: the run as a whole
    phrase: str  # the metric as the sentence names it, or ""

    def words(self, run: str) -> str:
        if self.kind == "significant":
            where = f" in {self.phrase}" if self.phrase else ""
            return f"the change{where} is significant"
        if not self.phrase:
            return f"{run} did {self.kind} than the baseline"
        verb = {BETTER: "improved", WORSE: "got worse", "up": "increased", "down": "decreased"}
        return f"{self.phrase} {verb[self.kind]}"


def sentences(text: str) -> list[str]:
    """A text's sentences (and list items), whitespace collapsed."""
    parts = SENTENCE_BREAK.split(text)
    return [" ".join(p.split()) for p in parts if p and p.strip()]


def _mentions(clause: str, keys: list[Key]) -> list[_Mention]:
    """Where a clause names a metric, and which metrics (of ``keys``) each mention can be."""
    lowered = clause.lower()
    found: list[_Mention] = []
    for metric in sorted({m for _, m in keys}, key=len, reverse=True):
        stem = metric.removesuffix("_mean")
        for phrase in dict.fromkeys((metric, stem, stem.replace("_", " "))):
            if len(phrase) < 3:
                continue
            for match in re.finditer(rf"(?<![\w]){re.escape(phrase.lower())}(?![\w])", lowered):
                if not _overlaps(found, match.start(), match.end()):
                    found.append(_mention(match, frozenset(k for k in keys if k[1] == metric)))
    for words, name_part in _MEASURES:
        for match in re.finditer(rf"\b(?:{words})\b", lowered):
            if _overlaps(found, match.start(), match.end()):
                continue
            matching = {k for k in keys if re.search(name_part, k[1], re.I)}
            narrowed = _narrowed(matching, lowered[: match.start()])
            start = narrowed[1] if narrowed[0] else match.start()
            if narrowed[0] or matching:
                found.append(
                    _Mention(start, match.end(), lowered[start : match.end()],
                             frozenset(narrowed[0] or matching))
                )  # fmt: skip
    return sorted(found, key=lambda m: m.start)


def _mention(match: re.Match, keys: frozenset[Key]) -> _Mention:
    return _Mention(match.start(), match.end(), match.group(0), keys)


def _overlaps(found: list[_Mention], start: int, end: int) -> bool:
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


def _datasets_named(sentence: str, keys: list[Key]) -> set[str]:
    datasets = {d for d, _ in keys}
    if len(datasets) < 2:
        return set()
    return {d for d in datasets if re.search(rf"\b{re.escape(d)}\b", sentence, re.I)}


def _claims_in(sentence: str, keys: list[Key], run: str | None) -> list[_Claim]:
    """The claims a sentence makes about the run against the baseline."""
    if CITATION in sentence:
        return []  # about someone else's work
    datasets = _datasets_named(sentence, keys)
    if datasets:
        keys = [k for k in keys if k[0] in datasets]
    sentence_metrics: dict[frozenset[Key], str] = {}
    for mention in _mentions(sentence, keys):
        sentence_metrics.setdefault(mention.keys, mention.phrase)
    claims: list[_Claim] = []
    for clause in _CLAUSE_BREAK.split(sentence):
        if not clause.strip() or _NEGATION.search(clause) or _SPECULATION.search(clause):
            continue
        if _about_other_runs(clause, run):
            continue
        mentions = _mentions(clause, keys)
        for match in _CLAIM.finditer(clause):
            if _baseline_is_subject(clause[: match.start()]):
                continue
            claim = _claim(match, clause, mentions, sentence_metrics)
            if claim is not None and claim not in claims:
                claims.append(claim)
    return claims


def _claim(
    match: re.Match,
    clause: str,
    mentions: list[_Mention],
    sentence_metrics: dict[frozenset[Key], str],
) -> _Claim | None:
    kind = match.lastgroup or ""
    nearest = min(mentions, key=lambda m: _words_between(clause, m, match), default=None)
    if kind in ("up", "down") and nearest is not None:
        # "lower loss", "accuracy increased", "a decrease in the test loss": a value word moves
        # the metric next to it, not one further on ("a higher learning rate lowers the loss").
        if _words_between(clause, nearest, match) > MAX_WORDS_APART:
            nearest = None
    if nearest is not None:
        return _Claim(kind, nearest.keys, nearest.phrase)
    if kind in ("up", "down"):
        # A value that moves with no metric named may be the setting the run changed ("we
        # reduced the learning rate"): only "performance" and the like make it a result.
        if not _GENERIC.search(clause):
            return None
        return _Claim(BETTER if kind == "up" else WORSE, None, "")
    if len(sentence_metrics) == 1:
        [(keys, phrase)] = sentence_metrics.items()
        return _Claim(kind, keys, phrase)
    return _Claim(kind, None, "")


def _words_between(clause: str, mention: _Mention, match: re.Match) -> int:
    if mention.end <= match.start():
        return len(clause[mention.end : match.start()].split())
    return len(clause[match.end() : mention.start].split())


def _about_other_runs(clause: str, run: str | None) -> bool:
    """A clause comparing runs other than this one with each other is not about this run."""
    named = {f"run_{n}" for n in _RUN_NAME.findall(clause)} - {"run_0"}
    if run is None:
        return len(named) > 1
    return bool(named - {run})


def _baseline_is_subject(before: str) -> bool:
    """A clause like "the baseline performs better" claims the opposite of "better than the
    baseline": such clauses are left alone."""
    for match in _BASELINE.finditer(before):
        if not _COMPARES.search(before[: match.start()]):
            return True
    return False


# -- claims against effects ----------------------------------------------------------------------


def _expected_move(claim: _Claim, e: Effect) -> str | None:
    """The move of the value the claim asserts for this effect ('up'/'down'), None when the
    metric's direction is unknown."""
    if claim.kind in ("up", "down"):
        return claim.kind
    if e.direction == UNKNOWN:
        return None
    improves = "up" if e.direction == HIGHER else "down"
    return improves if claim.kind == BETTER else ("down" if improves == "up" else "up")


def _contradicts(claim: _Claim, e: Effect, hedged: bool) -> bool:
    if claim.kind == "significant":
        return e.verdict in (IDENTICAL, WITHIN_NOISE)
    if e.verdict == IDENTICAL:
        return True  # no change of any kind
    move = _expected_move(claim, e)
    if move is None:
        return False
    if e.verdict == WITHIN_NOISE:
        # "Loss rose to 0.235" describes the numbers; "loss got worse" judges them, and within
        # noise only a sentence that admits the noise may.
        describes = claim.kind in ("up", "down")
        return e.moved != move or not (hedged or describes)
    return e.moved != move


def _overall_contradicts(claim: _Claim, summary: Overall, hedged: bool) -> bool:
    if claim.kind == "significant":
        return summary.verdict in (IDENTICAL, WITHIN_NOISE)
    opposite = WORSE if claim.kind == BETTER else BETTER
    if summary.verdict in (IDENTICAL, opposite):
        return True
    return summary.verdict == WITHIN_NOISE and not hedged


def _run_says(claim: _Claim, found: list[Effect], hedged: bool) -> str | None:
    """What this run's effects say against the claim, or None when they do not contradict it."""
    several = len({e.dataset for e in found}) > 1
    if claim.keys is None:
        summary = overall(found)
        if not _overall_contradicts(claim, summary, hedged):
            return None
        primary = [e for e in found if e.primary] or found
        details = "; ".join(describe(e, several) for e in primary[:3])
        return f"{summary.text}: {details}"
    concerned = [e for e in found if (e.dataset, e.metric) in claim.keys]
    if not concerned or not all(_contradicts(claim, e, hedged) for e in concerned):
        return None
    shown = "; ".join(describe(e, several) for e in concerned[:3])
    more = f"; and {len(concerned) - 3} more" if len(concerned) > 3 else ""
    return shown + more


def contradictions(
    sentence: str, runs: Mapping[str, list[Effect]], analysed: str | None, line: int = 0
) -> Contradiction | None:
    """The sentence's claims that every run's effects contradict, as one Contradiction."""
    keys = list(dict.fromkeys((e.dataset, e.metric) for found in runs.values() for e in found))
    hedged = bool(_HEDGE.search(sentence))
    claimed: list[str] = []
    said: list[str] = []
    subject = analysed or (next(iter(runs)) if len(runs) == 1 else "the changed runs")
    for claim in _claims_in(sentence, keys, analysed):
        per_run = [_run_says(claim, found, hedged) for found in runs.values() if found]
        if per_run and all(per_run):
            claimed.append(claim.words(subject))
            said.append("; ".join(s for s in per_run if s))
    if not claimed:
        return None
    return Contradiction(sentence, " and ".join(claimed), "; ".join(dict.fromkeys(said)), line)
