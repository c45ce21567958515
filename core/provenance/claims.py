"""Claims in prose checked against the computed effects (``core/runs/effects.py``).

A model's analysis of a run and the paper's abstract and Results section say things about the
runs: an improvement, a decline, a significant effect, a faster or slower run. This module reads
those claims out of sentences (the claim words, the metrics a clause names, negation,
speculation and hedges: ``claim_words.py``) and flags the ones the verdicts contradict
(core/provenance/checks.py applies it to a run's analysis and to the paper); claims about time
and speed are held to the run's times as ``time_claims.py`` says. It is conservative: a hedged,
negated or speculative sentence is not a claim, and a claim is contradicted only when the
verdicts leave no doubt. A change a sentence states with numbers that contradict it
(``quoted_change.py``) is reported with them, whatever the runs say.
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
    several_datasets,
)
from .claim_words import (
    CITATION,
    CLAIM,
    CLAUSE_BREAK,
    EFFECT,
    HEDGE,
    MAX_WORDS_APART,
    NEGATION,
    SLIGHT,
    SLIGHT_PERCENT,
    SPECULATION,
    Key,
    Mention,
    mentions,
    words_between,
)
from .numbers import Contradiction
from .quoted_change import quoted_changes
from .time_claims import (
    FASTER,
    SLOWER,
    SPEED_KINDS,
    by_stage,
    describe_time,
    is_speed_metric,
    needs_named_time,
    other_speed,
    speed_move,
    time_contradicts,
)

# -- claims in sentences -------------------------------------------------------------------------

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'*])|\n\s*\n|\n\s*(?:[-*•]|\d+[.)])\s+")
_RUN_NAME = re.compile(r"\brun[ _\\]*_?(\d+)\b", re.I)
_BASELINE = re.compile(r"\bbaseline\b|\brun[ \\]*_?0\b", re.I)
_COMPARES = re.compile(
    r"(?:than|to|over|with|against|from|vs\.?|versus|relative|on|of|and)\s+(?:the\s+)?$", re.I
)
_GENERIC = re.compile(r"\b(?:performance|results?|generali[sz]ation|quality)\b", re.I)


@dataclass(frozen=True)
class _Claim:
    kind: str  # better | worse | up | down | significant | effect | faster | slower
    keys: frozenset[Key] | None  # the metrics it is about; None: the run as a whole
    phrase: str  # the metric as the sentence names it, or ""

    def words(self, run: str) -> str:
        if self.kind == "significant":
            where = f" in {self.phrase}" if self.phrase else ""
            return f"the change{where} is significant"
        if self.kind == EFFECT:
            where = f" on {self.phrase}" if self.phrase else ""
            return f"the change had an effect{where}"
        if self.kind == SLIGHT:
            where = f" in {self.phrase}" if self.phrase else ""
            return f"the change{where} is slight"
        if self.kind in SPEED_KINDS:
            where = f" in {self.phrase}" if self.phrase else ""
            return f"{run} ran {self.kind} than the baseline{where}"
        if not self.phrase:
            return f"{run} did {self.kind} than the baseline"
        verb = {BETTER: "improved", WORSE: "got worse", "up": "increased", "down": "decreased"}
        return f"{self.phrase} {verb[self.kind]}"


def sentences(text: str) -> list[str]:
    """A text's sentences (and list items), whitespace collapsed."""
    parts = SENTENCE_BREAK.split(text)
    return [" ".join(p.split()) for p in parts if p and p.strip()]


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
    for mention in mentions(sentence, keys):
        sentence_metrics.setdefault(mention.keys, mention.phrase)
    claims: list[_Claim] = []
    for clause in CLAUSE_BREAK.split(sentence):
        if not clause.strip() or NEGATION.search(clause) or SPECULATION.search(clause):
            continue
        if _about_other_runs(clause, run):
            continue
        for claim in _clause_claims(clause, keys, sentence_metrics):
            if claim not in claims:
                claims.append(claim)
    return claims


def _clause_claims(
    clause: str, keys: list[Key], sentence_metrics: dict[frozenset[Key], str]
) -> list[_Claim]:
    named = mentions(clause, keys)
    found = []
    for match in CLAIM.finditer(clause):
        if _baseline_is_subject(clause[: match.start()]):
            continue
        if match.lastgroup in (EFFECT, SLIGHT):
            found += _claims_on_named(match, clause, named)
            continue
        if match.lastgroup in SPEED_KINDS:
            claim = _speed_claim(match, clause, named, keys)
        else:
            claim = _claim(match, clause, named, sentence_metrics)
        if claim is not None:
            found.append(claim)
    return _significance_of_speed(found)


def _claim(
    match: re.Match,
    clause: str,
    named: list[Mention],
    sentence_metrics: dict[frozenset[Key], str],
) -> _Claim | None:
    kind = match.lastgroup or ""
    nearest = min(named, key=lambda m: words_between(clause, m, match), default=None)
    if kind in ("up", "down") and nearest is not None:
        # "lower loss", "accuracy increased", "a decrease in the test loss": a value word moves
        # the metric next to it, not one further on ("a higher learning rate lowers the loss").
        if words_between(clause, nearest, match) > MAX_WORDS_APART:
            nearest = None
    if nearest is not None and nearest.speed and kind != "significant":
        # "training speed increased", "speed improved": a speed goes up as the times go down.
        if other_speed(clause):
            return None  # "convergence speed"
        faster = kind in ("up", BETTER)
        return _Claim(FASTER if faster else SLOWER, nearest.keys, nearest.phrase)
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


def _claims_on_named(match: re.Match, clause: str, named: list[Mention]) -> list[_Claim]:
    """An impact on A and B, a slight difference in A and B: the claim on each metric named
    after the words; on the run as a whole when the clause names none."""
    kind = match.lastgroup or ""
    after = [m for m in named if m.end > match.start()]
    if not after:
        return [_Claim(kind, None, "")] if _GENERIC.search(clause) else []
    return [_Claim(kind, m.keys, m.phrase) for m in after]


def _speed_claim(
    match: re.Match, clause: str, named: list[Mention], keys: list[Key]
) -> _Claim | None:
    """What "faster", "took longer" and the like claim: the times (or rates) the clause names
    next to the word, else every time the run reports for the stage the clause names ("faster
    training"); nothing when the speed is another metric's ("accuracy rises faster") or of
    learning or convergence, which the clock does not measure."""
    kind = match.lastgroup or ""
    near = [m for m in named if words_between(clause, m, match) <= MAX_WORDS_APART]
    timed = [m for m in near if m.timed]
    if timed:
        nearest = min(timed, key=lambda m: words_between(clause, m, match))
        return _Claim(kind, nearest.keys, nearest.phrase)
    if needs_named_time(match.group(0)) or other_speed(clause) or _of_a_metric(clause, near, match):
        return None
    times = by_stage(clause, frozenset(k for k in keys if is_speed_metric(k[1])))
    return _Claim(kind, times, "") if times else None


def _of_a_metric(clause: str, near: list[Mention], match: re.Match) -> bool:
    """Whether a speed word tells how fast a metric named right before it moved ("the loss
    falls faster"), not how fast the run ran ("higher accuracy and faster training")."""
    return any(
        m.end <= match.start() and not m.timed
        and not re.search(r"\b(?:and|with|plus|but)\b", clause[m.end : match.start()], re.I)
        for m in near
    )  # fmt: skip


def _significance_of_speed(claims: list[_Claim]) -> list[_Claim]:
    """A clause's "significantly faster" says the speed-up is significant, not the run's
    results."""
    speed = next((c for c in claims if c.kind in SPEED_KINDS), None)
    if speed is None:
        return claims
    return [
        _Claim(c.kind, speed.keys, speed.phrase)
        if c.kind == "significant" and c.keys is None
        else c
        for c in claims
    ]


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
    if claim.kind in SPEED_KINDS:
        return speed_move(claim.kind, e.metric)
    if e.direction == UNKNOWN:
        return None
    improves = "up" if e.direction == HIGHER else "down"
    return improves if claim.kind == BETTER else ("down" if improves == "up" else "up")


def _far(e: Effect) -> bool:
    """Beyond noise and far from the baseline: no slight change."""
    far = e.relative is None or abs(e.relative) >= SLIGHT_PERCENT
    return e.verdict in (BETTER, WORSE) and far


def _contradicts(claim: _Claim, e: Effect, hedged: bool) -> bool:
    if claim.kind == SLIGHT:
        return _far(e)
    if claim.kind == EFFECT:
        return e.verdict == IDENTICAL or (e.verdict == WITHIN_NOISE and not hedged)
    if claim.kind == "significant":
        return e.verdict in (IDENTICAL, WITHIN_NOISE)
    if e.verdict == IDENTICAL:
        return True  # no change of any kind
    move = _expected_move(claim, e)
    if move is None:
        return False
    if not e.primary:
        return time_contradicts(move, e)
    if e.verdict == WITHIN_NOISE:
        # "Loss rose to 0.235" describes the numbers; "loss got worse" judges them, and within
        # noise only a sentence that admits the noise may.
        describes = claim.kind in ("up", "down")
        return e.moved != move or not (hedged or describes)
    return e.moved != move


def _overall_contradicts(claim: _Claim, summary: Overall, hedged: bool) -> bool:
    if claim.kind == SLIGHT:
        return False  # a run as a whole: held per metric only, where the metric is named
    if claim.kind == EFFECT:
        return summary.verdict == IDENTICAL or (summary.verdict == WITHIN_NOISE and not hedged)
    if claim.kind == "significant":
        return summary.verdict in (IDENTICAL, WITHIN_NOISE)
    opposite = WORSE if claim.kind == BETTER else BETTER
    if summary.verdict in (IDENTICAL, opposite):
        return True
    return summary.verdict == WITHIN_NOISE and not hedged


def _described(e: Effect, several: bool) -> str:
    return describe(e, several) if e.primary else describe_time(e, several)


def _run_says(claim: _Claim, found: list[Effect], hedged: bool) -> str | None:
    """What this run's effects say against the claim, or None when they do not contradict it."""
    several = several_datasets(found)
    if claim.keys is None:
        summary = overall(found)
        if not _overall_contradicts(claim, summary, hedged):
            return None
        primary = [e for e in found if e.primary] or found
        details = "; ".join(_described(e, several) for e in primary[:3])
        return f"{summary.text}: {details}"
    concerned = [e for e in found if (e.dataset, e.metric) in claim.keys]
    if not concerned or not all(_contradicts(claim, e, hedged) for e in concerned):
        return None
    shown = "; ".join(_described(e, several) for e in concerned[:3])
    more = f"; and {len(concerned) - 3} more" if len(concerned) > 3 else ""
    return shown + more


NOTHING_MEASURED = "only the baseline (run_0) finished in this project: no run measured a change"


def unmeasured_claims(sentence: str, keys: list[Key], line: int = 0) -> Contradiction | None:
    """The sentence's claims of an effect when the baseline is the only run: nothing can
    support them (a climb that kept nothing; the 1.5B model's abstract said "Increasing the
    number of hidden units significantly improves the test accuracy" and then "Only the
    baseline run_0 ran"). Hedged and speculative sentences are not claims."""
    if HEDGE.search(sentence):
        return None
    claims = [c for c in _claims_in(sentence, keys, None) if c.kind not in SPEED_KINDS]
    if not claims:
        return None
    said = " and ".join(dict.fromkeys(c.words("the change") for c in claims))
    return Contradiction(sentence, said, NOTHING_MEASURED, line)


def contradictions(
    sentence: str, runs: Mapping[str, list[Effect]], analysed: str | None, line: int = 0
) -> Contradiction | None:
    """The sentence's claims that every run's effects contradict, and the changes it states
    that the very numbers it quotes contradict (quoted_change.py), as one Contradiction."""
    claimed: list[str] = []
    said: list[str] = []
    for change in quoted_changes(sentence):
        claimed.append(change.claims)
        said.append(change.says)
    keys = list(dict.fromkeys((e.dataset, e.metric) for found in runs.values() for e in found))
    hedged = bool(HEDGE.search(sentence))
    subject = analysed or (next(iter(runs)) if len(runs) == 1 else "the changed runs")
    for claim in _claims_in(sentence, keys, analysed):
        per_run = [_run_says(claim, found, hedged) for found in runs.values() if found]
        if per_run and all(per_run):
            claimed.append(claim.words(subject))
            said.append("; ".join(s for s in per_run if s))
    if not claimed:
        return None
    return Contradiction(sentence, " and ".join(claimed), "; ".join(dict.fromkeys(said)), line)
