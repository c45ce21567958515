"""Whether a search's best change held when its code ran again with fresh seeds: one sentence of
the paper's Results, every number from the search's journaled summary.

A hill-climb keeps the change whose single run beat the best by more than the noise; picked as
the best of many attempts, that run is likely lucky. The best code is therefore run again with
seeds no attempt used (core/search/climb.py), and the paper says whether the gain over the
baseline survived them: the fresh mean against the baseline's value, beyond the threshold the
search used.
"""

from __future__ import annotations

from ..workspace.stage_results import SearchSummary

NAMES = {"climb": "hill-climb", "tree": "tree search"}


def gain_held(summary: SearchSummary) -> str:
    """The sentence ('' when the search kept no change or ran no fresh seeds)."""
    best, noise = summary.best, summary.noise
    seeds, mean = best.get("seeds") or [], best.get("mean")
    baseline = (noise.get("values") or [None])[0]
    threshold = noise.get("threshold")
    if not best.get("step") or mean is None or baseline is None or threshold is None:
        return ""
    sign = 1.0 if summary.direction != "lower" else -1.0
    gain = sign * (float(mean) - float(baseline))
    single = sign * (float(best.get("value", mean)) - float(baseline))
    spread = f" $\\pm$ {best['std']:.4g}" if best.get("std") is not None else ""
    metric = summary.metric.replace("_", "\\_")
    said = (
        f"The best step of the {NAMES.get(summary.strategy, summary.strategy)} "
        f"(step {best['step']}) ran again with {len(seeds)} fresh seed(s): its mean {metric} is "
        f"{float(mean):.4g}{spread}, against {float(baseline):.4g} for the baseline, a gain of "
        f"{gain:+.4g} (its single run during the search: {single:+.4g}). "
    )
    if gain > float(threshold):
        return said + f"The gain held: it is beyond the search's noise threshold ({threshold:.4g})."
    return said + (
        f"The gain did not hold: it is within the search's noise threshold ({threshold:.4g}), "
        "so the search's best run was at least partly luck."
    )
