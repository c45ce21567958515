"""Effects: what a run changed against the baseline, computed by code, and how they print.

Per dataset and metric, an :class:`Effect` holds the run's value, the baseline's, the difference
(absolute and in percent) and a verdict:

- ``identical``: the two values print the same (``SIGNIFICANT_DIGITS`` significant digits, the
  precision of every table labtui writes), exactly equal floats included;
- ``within_noise``: the difference is no larger than twice the combined standard error,
  ``|run - baseline| <= 2 * sqrt(se_run**2 + se_baseline**2)``, where each standard error is the
  one the run reports (``<m>_stderr`` for ``<m>_mean``) or, when only per-seed values are given,
  ``stdev(values) / sqrt(n)`` with the sample standard deviation (n - 1); when only one side
  reports noise the other is taken to be as noisy;
- ``better`` or ``worse``: beyond noise, in the direction the metric improves (declared by the
  template in ``prompt.json`` under ``"metrics"``, else guessed from the name: losses, errors,
  perplexities and times shrink, accuracies, F1, AUC and rewards grow). With no noise
  information at all, any change is better or worse and flagged ``noise_unknown``;
- ``changed``: beyond noise, but the metric's direction is unknown.

This module holds the computation (:func:`effects`, :func:`effects_of_runs` from final_info.json
files, :func:`project_effects` for every run of a project, :func:`overall` for a run as a whole)
and the printing (:func:`effects_markdown`, :func:`describe`; the effects as sources for
provenance). Checking what a model writes about the runs against these effects is
``core/provenance/claims.py``.
"""

from __future__ import annotations

import math
import re
import statistics
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError, TemplateError
from ..machine.metric_lines import is_time_like, lower_is_better
from ..settings.contract import prompt_json
from ..workspace.run_folder import finished_runs, has_results, read_final_info

IDENTICAL = "identical"
WITHIN_NOISE = "within_noise"
BETTER = "better"
WORSE = "worse"
CHANGED = "changed"  # beyond noise, direction unknown
HIGHER, LOWER, UNKNOWN = "higher", "lower", "unknown"

SIGNIFICANT_DIGITS = 4  # of every value labtui prints: "identical" means these digits agree
NOISE_DIGITS = 2  # of standard errors and noise thresholds
NOISE_FACTOR = 2.0  # a difference within 2 combined standard errors is noise


# -- directions ----------------------------------------------------------------------------------

# Beyond core.machine.metric_lines' lower-is-better guess: names that grow when things improve. Throughput is
# read first, since "tokens_per_s" ends like a time ("_s").
_THROUGHPUT = re.compile(r"throughput|per_s(?:ec)?$|_per_sec|tokens_per|samples_per", re.I)
_HIGHER_IS_BETTER = re.compile(
    r"acc|f1|auc|reward|return|precision|recall|bleu|rouge|score|iou", re.I
)
_LOWER_EXTRA = re.compile(r"bpc|bpd|diverg|distance|regret|fid(?:$|_)", re.I)


def direction_of(metric: str, directions: Mapping[str, str] | None = None) -> str:
    """'higher' or 'lower' (is better), or 'unknown': the template's declaration for the metric
    (under its full name, or without the ``_mean`` suffix) wins over the name."""
    declared = directions or {}
    for name in (metric, metric.removesuffix("_mean")):
        if name in declared:
            return declared[name]
    if _THROUGHPUT.search(metric):
        return HIGHER
    if lower_is_better(metric) or is_time_like(metric) or _LOWER_EXTRA.search(metric):
        return LOWER
    if _HIGHER_IS_BETTER.search(metric):
        return HIGHER
    return UNKNOWN


def metric_directions(root: Path) -> dict[str, str]:
    """The directions a project declares: its template's prompt.json (``"metrics": {"<metric
    name>": "higher" | "lower"}``), then labtui.toml's ``[results] metrics``, which wins (a
    repository set up by ``labtui init`` says them there); {} when neither declares any."""
    return {**_prompt_json_directions(Path(root)), **_configured_directions(Path(root))}


def _configured_directions(root: Path) -> dict[str, str]:
    try:
        data = tomllib.loads((root / "labtui.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}  # no project here, or a file the project's loading reports already
    declared = data.get("results", {}).get("metrics", {})
    if not isinstance(declared, dict):
        return {}
    return {str(k): v for k, v in declared.items() if v in (HIGHER, LOWER)}


def _prompt_json_directions(root: Path) -> dict[str, str]:
    path = root / "prompt.json"
    declared = prompt_json(root).get("metrics")
    if declared is None:
        return {}
    fix = 'write "metrics": {"<metric name as in final_info.json>": "higher" or "lower"}'
    if not isinstance(declared, dict):
        raise TemplateError(f'{path}: field "metrics" must be an object', fix)
    wrong = [f"{k!r}: {v!r}" for k, v in declared.items() if v not in (HIGHER, LOWER)]
    if wrong:
        raise TemplateError(
            f'{path}: field "metrics" has directions other than "higher" or "lower": '
            + ", ".join(wrong),
            fix,
        )
    return dict(declared)


# -- effects ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Effect:
    """One metric of one dataset: the run against the baseline."""

    dataset: str
    metric: str
    value: float
    baseline: float
    stderr: float | None  # of the run's mean; None when unknown
    base_stderr: float | None
    noise: float | None  # the threshold: NOISE_FACTOR * combined standard error
    direction: str  # higher | lower | unknown
    verdict: str  # identical | within_noise | better | worse | changed
    run: str = "this run"
    baseline_run: str = "run_0"

    @property
    def difference(self) -> float:
        return self.value - self.baseline

    @property
    def relative(self) -> float | None:
        """The difference in percent of the baseline; None when the baseline is 0."""
        return self.difference / abs(self.baseline) * 100 if self.baseline else None

    def name(self, several_datasets: bool) -> str:
        """The metric as said where the runs span several data sets (diffusion's four each
        report a 'train_loss_mean'): with its data set."""
        return f"{self.dataset} {self.metric}" if several_datasets else self.metric

    @property
    def noise_unknown(self) -> bool:
        return self.noise is None and self.verdict != IDENTICAL

    @property
    def direction_unknown(self) -> bool:
        return self.direction == UNKNOWN

    @property
    def primary(self) -> bool:
        """Results, not costs: times are reported but do not make a run better or worse."""
        return not is_time_like(self.metric)

    @property
    def moved(self) -> str | None:
        """'up' or 'down' (the value, whatever its direction), None when identical."""
        if self.verdict == IDENTICAL or self.value == self.baseline:
            return None
        return "up" if self.value > self.baseline else "down"


def effects(
    means: Mapping[str, Mapping[str, Any]],
    baseline: Mapping[str, Mapping[str, Any]],
    *,
    stderrs: Mapping[str, Mapping[str, Any]] | None = None,
    base_stderrs: Mapping[str, Mapping[str, Any]] | None = None,
    per_seed: Mapping[str, Mapping[str, Any]] | None = None,
    base_per_seed: Mapping[str, Mapping[str, Any]] | None = None,
    directions: Mapping[str, str] | None = None,
    run: str = "this run",
    baseline_run: str = "run_0",
) -> list[Effect]:
    """Every metric the run and the baseline both report, per dataset (all dicts are keyed by
    dataset first, as final_info.json is): see the module's docstring for the verdicts."""
    found = []
    for dataset, values in means.items():
        base_values = baseline.get(dataset) or {}
        for metric, value in (values or {}).items():
            base = base_values.get(metric)
            if not (_is_number(value) and _is_number(base)):
                continue
            assert value is not None and base is not None  # numbers, as _is_number said
            se = _stderr_of(metric, dataset, stderrs, per_seed)
            base_se = _stderr_of(metric, dataset, base_stderrs, base_per_seed)
            noise = _noise(se, base_se)
            direction = direction_of(metric, directions)
            found.append(
                Effect(
                    dataset=dataset,
                    metric=metric,
                    value=float(value),
                    baseline=float(base),
                    stderr=se,
                    base_stderr=base_se,
                    noise=noise,
                    direction=direction,
                    verdict=_verdict(float(value), float(base), noise, direction),
                    run=run,
                    baseline_run=baseline_run,
                )
            )
    return found


def _verdict(value: float, base: float, noise: float | None, direction: str) -> str:
    if value == base or fmt(value) == fmt(base):
        return IDENTICAL
    if noise is not None and abs(value - base) <= noise:
        return WITHIN_NOISE
    if direction == UNKNOWN:
        return CHANGED
    return BETTER if (value > base) == (direction == HIGHER) else WORSE


def _noise(se: float | None, base_se: float | None) -> float | None:
    if se is None and base_se is None:
        return None
    # One side without noise information is taken to be as noisy as the other: the same
    # experiment with another setting, so its seeds vary alike.
    first = base_se if se is None else se
    second = first if base_se is None else base_se
    assert first is not None and second is not None  # at least one was known
    return NOISE_FACTOR * math.sqrt(first**2 + second**2)


def _stderr_of(
    metric: str,
    dataset: str,
    stderrs: Mapping[str, Mapping[str, Any]] | None,
    per_seed: Mapping[str, Mapping[str, Any]] | None,
) -> float | None:
    """The standard error the run reports for ``metric`` (under ``<m>_stderr`` for
    ``<m>_mean``, or the metric's own name), else one computed from its per-seed values."""
    stem = metric.removesuffix("_mean")
    reported = (stderrs or {}).get(dataset) or {}
    for name in (f"{stem}_stderr", f"{metric}_stderr", metric):
        if _is_number(reported.get(name)):
            return abs(float(reported[name]))
    seeds = (per_seed or {}).get(dataset) or {}
    for name in (stem, metric):
        values = seeds.get(name)
        if isinstance(values, list | tuple):
            numbers = [float(v) for v in values if _is_number(v)]
            if len(numbers) >= 2:
                return statistics.stdev(numbers) / math.sqrt(len(numbers))
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def effects_of_runs(
    run_dir: Path, baseline_dir: Path, directions: Mapping[str, str] | None = None
) -> list[Effect]:
    """The effects of the run in ``run_dir`` against the one in ``baseline_dir``, from their
    final_info.json files (a RunFolderError when either cannot be read)."""
    run, base = read_final_info(run_dir), read_final_info(baseline_dir)
    return effects(
        run.means(),
        base.means(),
        stderrs=run.stderrs(),
        base_stderrs=base.stderrs(),
        per_seed=run.per_seed(),
        base_per_seed=base.per_seed(),
        directions=directions,
        run=Path(run_dir).name,
        baseline_run=Path(baseline_dir).name,
    )


def project_effects(root: Path, baseline: str = "run_0") -> dict[str, list[Effect]]:
    """The effects of each finished run of a project against its baseline, by run name (runs
    whose final_info.json cannot be read are left out, as provenance leaves them out)."""
    root = Path(root)
    base_dir = root / baseline
    if not has_results(base_dir):
        return {}
    directions = metric_directions(root)
    found: dict[str, list[Effect]] = {}
    for run_dir in finished_runs(root):
        if run_dir.name == baseline:
            continue
        try:
            found[run_dir.name] = effects_of_runs(run_dir, base_dir, directions)
        except LabtuiError:
            continue
    return found


# -- a run as a whole ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Overall:
    """A run's verdict on its primary metrics (every metric but times, unless there are only
    times): identical, within_noise, better, worse, mixed, changed; 'none' without metrics."""

    verdict: str
    text: str
    noise_unknown: bool = False


def several_datasets(found: Iterable[Effect]) -> bool:
    """Whether the effects span more than one data set: then each metric is said with its own."""
    return len({e.dataset for e in found}) > 1


def overall(found: list[Effect]) -> Overall:
    if not found:
        return Overall("none", "no metric that both the run and the baseline report")
    primary = [e for e in found if e.primary] or found
    run, base = found[0].run, found[0].baseline_run
    verdicts = {e.verdict for e in primary}

    several = several_datasets(primary)

    def named(verdict: str) -> str:
        chosen = [e for e in primary if e.verdict == verdict]
        return ", ".join(e.name(several) for e in chosen)

    unknown = any(e.noise_unknown for e in primary)
    if verdicts == {IDENTICAL}:
        return Overall(IDENTICAL, f"{run} is identical to {base} on every primary metric")
    if verdicts <= {IDENTICAL, WITHIN_NOISE}:
        text = f"{run} differs from {base} only within noise on every primary metric"
        return Overall(WITHIN_NOISE, text)
    if BETTER in verdicts and WORSE in verdicts:
        text = f"{run} is mixed against {base}: better on {named(BETTER)}, worse on {named(WORSE)}"
        return Overall("mixed", text, unknown)
    for verdict in (BETTER, WORSE):
        if verdict in verdicts:
            rest = (
                " (the other primary metrics within noise or identical)"
                if len(verdicts) > 1
                else ""
            )
            text = f"{run} is {verdict} than {base} on {named(verdict)}{rest}"
            return Overall(verdict, text, unknown)
    text = f"{run} changed {named(CHANGED)} against {base}, in a direction no one declared"
    return Overall(CHANGED, text, unknown)


# -- numbers as labtui prints them ---------------------------------------------------------------


def fmt(value: float, digits: int = SIGNIFICANT_DIGITS) -> str:
    """``digits`` significant digits in fixed-point notation (never 1e-05: a number a model
    quotes is read back by provenance, which takes exponents for settings)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{value:.{min(max(decimals, 0), 12)}f}"
    return "0" if float(text) == 0 else text
