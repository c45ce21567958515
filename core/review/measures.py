"""How a reviewer's decisions compare with human ones: the measures The AI Scientist reported for
its reviewer (balanced accuracy, accuracy, F1, ROC AUC) and a few more, computed exactly.

Every function takes plain lists and returns a float, or None when the measure is undefined on
that data (one class only, no variance, nothing to measure) rather than a number that would
mislead. Counting measures are computed with fractions, so that a hand-computed value such as
17/24 is reproduced to the last bit. "Positive" is always Accept.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction

BOOTSTRAP_RESAMPLES = 1000
CONFIDENCE = 0.95


def _ratio(part: int, whole: int) -> Fraction | None:
    return Fraction(part, whole) if whole else None


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


def _confusion(human: Sequence[bool], predicted: Sequence[bool]) -> tuple[int, int, int, int]:
    """(true positives, false negatives, true negatives, false positives)."""
    pairs = list(zip(human, predicted, strict=True))
    tp = sum(1 for h, p in pairs if h and p)
    fn = sum(1 for h, p in pairs if h and not p)
    tn = sum(1 for h, p in pairs if not h and not p)
    fp = sum(1 for h, p in pairs if not h and p)
    return tp, fn, tn, fp


def _balanced(tp: int, fn: int, tn: int, fp: int) -> Fraction | None:
    recall, specificity = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    if recall is None or specificity is None:
        return None  # one class only: half of the measure is undefined
    return (recall + specificity) / 2


def balanced_accuracy(human: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    """The mean of the accept recall and the reject recall; None unless both classes occur."""
    return _float(_balanced(*_confusion(human, predicted)))


def accuracy(human: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    tp, fn, tn, fp = _confusion(human, predicted)
    return _float(_ratio(tp + tn, tp + fn + tn + fp))


def f1(human: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    """F1 of Accept: 2TP / (2TP + FP + FN); None when there is no Accept on either side."""
    tp, fn, _, fp = _confusion(human, predicted)
    return _float(_ratio(2 * tp, 2 * tp + fp + fn))


def rate(decisions: Sequence[bool]) -> float | None:
    """The share of Accept."""
    return _float(_ratio(sum(1 for d in decisions if d), len(decisions)))


def roc_auc(human: Sequence[bool], scores: Sequence[float]) -> float | None:
    """The chance that an accepted paper scores above a rejected one (Mann–Whitney U over all
    pairs, a tie counting 1/2); None unless both classes occur."""
    accepted = [s for h, s in zip(human, scores, strict=True) if h]
    rejected = [s for h, s in zip(human, scores, strict=True) if not h]
    if not accepted or not rejected:
        return None
    doubled_wins = sum(2 if a > r else 1 if a == r else 0 for a in accepted for r in rejected)
    return float(Fraction(doubled_wins, 2 * len(accepted) * len(rejected)))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None for fewer than two pairs or when either side does not vary."""
    if len(xs) != len(ys):
        raise ValueError(f"pearson: {len(xs)} x values against {len(ys)} y values")
    if len(xs) < 2:
        return None
    # sums taken exactly over the values given: only the final square root rounds
    fx, fy = [Fraction(x) for x in xs], [Fraction(y) for y in ys]
    mx, my = sum(fx) / len(fx), sum(fy) / len(fy)
    sxy = sum((x - mx) * (y - my) for x, y in zip(fx, fy, strict=True))
    sxx = sum((x - mx) ** 2 for x in fx)
    syy = sum((y - my) ** 2 for y in fy)
    if sxx == 0 or syy == 0:
        return None
    r = float(sxy) / math.sqrt(float(sxx) * float(syy))
    return max(-1.0, min(1.0, r))


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1
        for position in range(start, end + 1):
            result[order[position]] = shared
        start = end + 1
    return result


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the ranks (ties averaged)."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman: {len(xs)} x values against {len(ys)} y values")
    return pearson(ranks(xs), ranks(ys))


def mean(values: Sequence[float]) -> float | None:
    return float(sum(Fraction(v) for v in values) / len(values)) if values else None


def quantile(sorted_values: Sequence[float], share: float) -> float:
    """The ``share`` quantile, linear between order statistics (numpy's default)."""
    position = share * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    weight = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * weight


def bootstrap_balanced_accuracy(
    human: Sequence[bool],
    predicted: Sequence[bool],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float] | None:
    """The 95% percentile interval of balanced accuracy over ``resamples`` resamples of the
    papers with replacement, drawn from ``random.Random(seed)`` (the same seed, the same
    interval). Resamples that hold one class only are skipped; None when every one does."""
    pairs = list(zip(human, predicted, strict=True))
    if not pairs:
        return None
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(resamples):
        drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        value = _balanced(*_confusion([h for h, _ in drawn], [p for _, p in drawn]))
        if value is not None:
            values.append(float(value))
    if not values:
        return None
    values.sort()
    tail = (1 - CONFIDENCE) / 2
    return quantile(values, tail), quantile(values, 1 - tail)
