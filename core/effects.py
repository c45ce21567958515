"""Effects: what a run changed against the baseline, computed by code, and claims checked
against it.

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

The same effects check what a model writes about the runs: :func:`check_analysis` traces the
numbers of a run's analysis (like provenance traces the paper's) and flags sentences whose claim
(an improvement, a decline, a significant effect) the verdicts contradict;
:func:`paper_contradictions` does the same for the paper's abstract and Results section, against
every run. Both are conservative: a hedged, negated or speculative sentence is not a claim, and a
claim is contradicted only when the verdicts leave no doubt.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import LabtuiError, TemplateError
from .latex import strip_comments
from .metrics import is_time_like, lower_is_better
from .provenance import (
    Contradiction,
    Source,
    Written,
    claim_spans,
    numbers_in_text,
    trace_written,
)

IDENTICAL = "identical"
WITHIN_NOISE = "within_noise"
BETTER = "better"
WORSE = "worse"
CHANGED = "changed"  # beyond noise, direction unknown
HIGHER, LOWER, UNKNOWN = "higher", "lower", "unknown"

SIGNIFICANT_DIGITS = 4  # of every value labtui prints: "identical" means these digits agree
NOISE_DIGITS = 2  # of standard errors and noise thresholds
NOISE_FACTOR = 2.0  # a difference within 2 combined standard errors is noise
FINAL_INFO = "final_info.json"
_RUN_DIR = re.compile(r"^run_(\d+)$")


# -- directions ----------------------------------------------------------------------------------

# Beyond core.metrics' lower-is-better guess: names that grow when things improve. Throughput is
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
    """The directions a template (or a project made from it) declares in its prompt.json:
    ``"metrics": {"<metric name>": "higher" | "lower"}``; {} when it declares none."""
    path = Path(root) / "prompt.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: not valid JSON ({exc})", "repair prompt.json") from None
    declared = data.get("metrics") if isinstance(data, dict) else None
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
    se = base_se if se is None else se
    base_se = se if base_se is None else base_se
    return NOISE_FACTOR * math.sqrt(se**2 + base_se**2)


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


# -- a run's final_info.json ---------------------------------------------------------------------


def read_results(run_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{"means", "stderrs", "per_seed"} of a run folder's final_info.json, each keyed by dataset
    (The AI Scientist's shape: dataset -> {"means", "stderrs", "final_info_dict"})."""
    path = Path(run_dir) / FINAL_INFO
    where = f"{Path(run_dir).name}/{FINAL_INFO}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabtuiError(f"{where}: missing", f"run {Path(run_dir).name} again") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabtuiError(f"{where}: unreadable ({exc})", "run it again") from None
    if not isinstance(data, dict):
        raise LabtuiError(
            f'{where}: must be an object of dataset -> {{"means": {{...}}}}', "run it again"
        )
    results: dict[str, dict[str, dict[str, Any]]] = {"means": {}, "stderrs": {}, "per_seed": {}}
    for dataset, entry in data.items():
        if not isinstance(entry, dict):
            continue
        for group, key in (
            ("means", "means"),
            ("stderrs", "stderrs"),
            ("per_seed", "final_info_dict"),
        ):
            if isinstance(entry.get(key), dict):
                results[group][dataset] = entry[key]
    return results


def effects_of_runs(
    run_dir: Path, baseline_dir: Path, directions: Mapping[str, str] | None = None
) -> list[Effect]:
    """The effects of the run in ``run_dir`` against the one in ``baseline_dir``, from their
    final_info.json files."""
    run, base = read_results(run_dir), read_results(baseline_dir)
    return effects(
        run["means"],
        base["means"],
        stderrs=run["stderrs"],
        base_stderrs=base["stderrs"],
        per_seed=run["per_seed"],
        base_per_seed=base["per_seed"],
        directions=directions,
        run=Path(run_dir).name,
        baseline_run=Path(baseline_dir).name,
    )


def project_effects(root: Path, baseline: str = "run_0") -> dict[str, list[Effect]]:
    """The effects of each finished run of a project against its baseline, by run name (runs
    whose final_info.json cannot be read are left out, as provenance leaves them out)."""
    root = Path(root)
    base_dir = root / baseline
    if not (base_dir / FINAL_INFO).is_file():
        return {}
    directions = metric_directions(root)
    runs = sorted(
        (p for p in root.iterdir() if _RUN_DIR.match(p.name) and (p / FINAL_INFO).is_file()),
        key=lambda p: int(_RUN_DIR.match(p.name).group(1)),
    )
    found: dict[str, list[Effect]] = {}
    for run_dir in runs:
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


def overall(found: list[Effect]) -> Overall:
    if not found:
        return Overall("none", "no metric that both the run and the baseline report")
    primary = [e for e in found if e.primary] or found
    run, base = found[0].run, found[0].baseline_run
    verdicts = {e.verdict for e in primary}
    named = lambda verdict: ", ".join(e.metric for e in primary if e.verdict == verdict)  # noqa: E731
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


# -- numbers as printed --------------------------------------------------------------------------


def fmt(value: float, digits: int = SIGNIFICANT_DIGITS) -> str:
    """``digits`` significant digits in fixed-point notation (never 1e-05: a number a model
    quotes is read back by provenance, which takes exponents for settings)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{value:.{min(max(decimals, 0), 12)}f}"
    return "0" if float(text) == 0 else text


def fmt_difference(value: float) -> str:
    """A difference, without the trailing zeros that would claim digits it does not have."""
    text = fmt(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_signed(value: float) -> str:
    text = fmt_difference(value)
    return text if text.startswith("-") or text == "0" else f"+{text}"


def _verdict_cell(e: Effect) -> str:
    if e.verdict == IDENTICAL:
        return IDENTICAL
    noise = f"±{fmt(e.noise, NOISE_DIGITS)}" if e.noise is not None else ""
    if e.verdict == WITHIN_NOISE:
        return f"within noise ({noise})"
    unknown = "noise unknown" if e.noise is None else f"beyond noise {noise}"
    if e.verdict == CHANGED:
        return f"changed ({unknown}; direction unknown)"
    return f"{e.verdict} ({unknown})"


def _value_cell(value: float, stderr: float | None) -> str:
    return fmt(value) + (f" ± {fmt(stderr, NOISE_DIGITS)}" if stderr is not None else "")


def _difference_cell(e: Effect) -> str:
    if e.value == e.baseline:
        return "0"
    relative = f" ({fmt_signed(e.relative)}%)" if e.relative is not None else ""
    return fmt_signed(e.difference) + relative


def _label(e: Effect, several_datasets: bool) -> str:
    return f"{e.dataset} {e.metric}" if several_datasets else e.metric


def effects_markdown(found: list[Effect]) -> str:
    """A compact Markdown table of the effects, for notes.md and for the model's prompt; every
    number in it is one provenance traces back to the runs."""
    if not found:
        return "No metric that both the run and the baseline report."
    several = len({e.dataset for e in found}) > 1
    run, base = found[0].run, found[0].baseline_run
    rows = [
        f"Effects of {run} against {base} (computed by labtui; values ± standard error):",
        "",
        "| metric | this run | baseline | difference | verdict |",
        "|---|---|---|---|---|",
    ]
    for e in found:
        rows.append(
            f"| {_label(e, several)} | {_value_cell(e.value, e.stderr)} | "
            f"{_value_cell(e.baseline, e.base_stderr)} | {_difference_cell(e)} | "
            f"{_verdict_cell(e)} |"
        )
    rows += [
        "",
        f"Overall: {overall(found).text}{_times_note(found)}. Identical: equal to {SIGNIFICANT_DIGITS} significant "
        f"digits; within noise: |difference| ≤ {NOISE_FACTOR:g}·√(se_run² + se_baseline²).",
    ]
    return "\n".join(rows)


def _times_note(found: list[Effect]) -> str:
    if all(e.primary for e in found) or not any(e.primary for e in found):
        return ""
    return " (times are reported, not judged)"


def describe(e: Effect, several_datasets: bool = False) -> str:
    """One effect in words: "run_1's test_accuracy_mean is 0.8047 against 0.9367 for run_0:
    worse by 0.1320 (beyond noise ±0.0203)"."""
    head = (
        f"{e.run}'s {_label(e, several_datasets)} is {fmt(e.value)} against "
        f"{fmt(e.baseline)} for {e.baseline_run}"
    )
    if e.verdict == IDENTICAL:
        return f"{head}: identical"
    noise = f"±{fmt(e.noise, NOISE_DIGITS)}" if e.noise is not None else ""
    if e.verdict == WITHIN_NOISE:
        return f"{head}: within noise (difference {fmt_signed(e.difference)}, noise {noise})"
    beyond = "noise unknown" if e.noise is None else f"beyond noise {noise}"
    if e.verdict == CHANGED:
        return f"{head}: changed by {fmt_signed(e.difference)} ({beyond}, direction unknown)"
    return f"{head}: {e.verdict} by {fmt_difference(abs(e.difference))} ({beyond})"


def effect_sources(found: Iterable[Effect]) -> list[Source]:
    """The numbers an effects table shows, as provenance sources (a model may quote them)."""
    sources = []
    for e in found:
        what = f"{e.dataset} {e.metric}"
        sources += [
            Source(e.value, e.run, what),
            Source(e.baseline, e.baseline_run, what),
            Source(e.difference, e.run, f"{what} − {e.baseline_run}", kind="derived"),
        ]
        if e.relative is not None:
            sources.append(
                Source(e.relative, e.run, f"{what} vs {e.baseline_run} (%)", kind="derived")
            )
        for value, run in ((e.stderr, e.run), (e.base_stderr, e.baseline_run)):
            if value is not None:
                sources.append(Source(value, run, f"{what} standard error"))
        if e.noise is not None:
            sources.append(Source(e.noise, e.run, f"{what} noise threshold", kind="derived"))
    return sources


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
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'*])|\n\s*\n|\n\s*(?:[-*•]|\d+[.)])\s+")
_RUN_NAME = re.compile(r"\brun[ _\\]*_?(\d+)\b", re.I)
_BASELINE = re.compile(r"\bbaseline\b|\brun[ \\]*_?0\b", re.I)
_COMPARES = re.compile(
    r"(?:than|to|over|with|against|from|vs\.?|versus|relative|on|of|and)\s+(?:the\s+)?$", re.I
)
_GENERIC = re.compile(r"\b(?:performance|results?|generali[sz]ation|quality)\b", re.I)
_CITATION = "[citation]"
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
    parts = _SENTENCE_BREAK.split(text)
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
    if _CITATION in sentence:
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


def _contradictions(
    sentence: str, runs: Mapping[str, list[Effect]], analysed: str | None, line: int = 0
) -> Contradiction | None:
    """The sentence's claims that every run's effects contradict, as one Contradiction."""
    keys = list(dict.fromkeys((e.dataset, e.metric) for found in runs.values() for e in found))
    hedged = bool(_HEDGE.search(sentence))
    claimed, said = [], []
    subject = analysed or (next(iter(runs)) if len(runs) == 1 else "the changed runs")
    for claim in _claims_in(sentence, keys, analysed):
        per_run = [_run_says(claim, found, hedged) for found in runs.values() if found]
        if per_run and all(per_run):
            claimed.append(claim.words(subject))
            said.append("; ".join(per_run))
    if not claimed:
        return None
    return Contradiction(sentence, " and ".join(claimed), "; ".join(dict.fromkeys(said)), line)


# -- a run's analysis ----------------------------------------------------------------------------


@dataclass
class AnalysisCheck:
    """What :func:`check_analysis` found in a model's analysis of a run."""

    traced: list[tuple[Written, Source]] = field(default_factory=list)
    untraced: list[Written] = field(default_factory=list)
    contradicted: list[Contradiction] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.untraced and not self.contradicted

    def problems(self) -> list[str]:
        """One sentence per problem, for a re-ask."""
        numbers = [
            f"The number {w.text} (in “{w.context}”) is no value a run recorded, no difference "
            "between the runs and no setting of the experiment: quote the effects table or "
            "leave it out."
            for w in self.untraced
        ]
        return numbers + [c.problem for c in self.contradicted]

    def markdown(self) -> str:
        """For the checkpoint: each untraced number and each contradicted claim."""
        if self.ok:
            return f"The analysis agrees with the effects ({len(self.traced)} number(s) traced)."
        lines = []
        if self.untraced:
            listed = ", ".join(f"`{w.text}`" for w in self.untraced)
            lines.append(f"**{len(self.untraced)} number(s) match no run**: {listed}")
        for c in self.contradicted:
            lines.append(f"**Contradicted**: “{c.sentence}” — {c.problem}")
        return "\n\n".join(lines)


def _small_count(written: Written) -> bool:
    """Whole numbers below 10 that are not percentages: "3 seeds", "2 runs", "step 1"."""
    return written.decimals == 0 and abs(written.value) < 10 and not written.percent


def check_analysis(text: str, found: list[Effect], sources: list[Source]) -> AnalysisCheck:
    """Trace the numbers of a model's analysis of a run to ``sources`` (see
    ``provenance.run_sources``; the effects' own numbers count too) and check its claims
    against the run's effects ``found``. Whole numbers below 10 (seed counts, list items) are
    not checked, unless they are percentages."""
    written = [w for w in numbers_in_text(text) if not _small_count(w)]
    report = trace_written(written, [*sources, *effect_sources(found)])
    run = found[0].run if found else "this run"
    analysed = run if _RUN_DIR.match(run) else None  # other runs named are then comparisons
    contradicted = [
        c
        for sentence in sentences(text)
        if (c := _contradictions(sentence, {run: found}, analysed)) is not None
    ]
    return AnalysisCheck(report.traced, report.untraced, contradicted)


# -- the paper -----------------------------------------------------------------------------------

_FLOATS = r"table\*?|tabular\*?|figure\*?|equation\*?|align\*?"
_LATEX_DROPS = (
    (re.compile(r"\\cite[tp]?\*?(?:\[[^\]]*\])*\{[^}]*\}"), f" {_CITATION} "),
    (re.compile(r"\\label\{[^}]*\}"), " "),
    (re.compile(r"\\(?:ref|eqref|autoref|cref|Cref)\{[^}]*\}"), "X"),
    (re.compile(r"\\(?:begin|end)\{[^}]*\}"), " "),
    (re.compile(r"\\(?:section|subsection|subsubsection|paragraph)\*?\{[^}]*\}"), " "),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\_"), "_"),
    (re.compile(r"\\pm"), "±"),
    (re.compile(r"\\\\|\\[,;!: ]"), " "),
    (re.compile(r"\\[a-zA-Z]+\*?"), ""),
    (re.compile(r"[{}$~]"), " "),
)


def paper_sentences(tex_text: str) -> list[tuple[str, int]]:
    """The sentences of the abstract and the Results section (tables, figures and equations
    aside), LaTeX markup removed, each with the line it starts on."""
    lines = tex_text.splitlines()
    found: list[tuple[str, int]] = []
    for start, end in claim_spans(tex_text):
        text, starts, numbers = "", [], []
        depth = 0
        for index in range(start, end):
            line = strip_comments(lines[index])
            opened = len(re.findall(rf"\\begin\{{(?:{_FLOATS})\}}", line))
            closed = len(re.findall(rf"\\end\{{(?:{_FLOATS})\}}", line))
            skip = depth > 0 or opened > 0
            depth = max(depth + opened - closed, 0)
            if skip or re.match(r"\s*\\(?:sub)*section", line):
                text += "\n\n"
                continue
            starts.append(len(text))
            numbers.append(index + 1)
            text += (_plain(line) or "\n") + "\n"
        found += _located_sentences(text, starts, numbers)
    return found


def _plain(line: str) -> str:
    for pattern, replacement in _LATEX_DROPS:
        line = pattern.sub(replacement, line)
    return line.strip()


def _located_sentences(text: str, starts: list[int], numbers: list[int]) -> list[tuple[str, int]]:
    located = []
    position = 0
    for part in _SENTENCE_BREAK.split(text):
        at = text.find(part, position) if part else position
        position = at + len(part)
        sentence = " ".join(part.split())
        if len(sentence) < 12 or not starts:
            continue
        offset = at + (len(part) - len(part.lstrip()))
        line = numbers[max(bisect.bisect_right(starts, offset) - 1, 0)]
        located.append((sentence, line))
    return located


def paper_contradictions(root: Path, tex_text: str) -> list[Contradiction]:
    """The sentences of the abstract and Results whose claims every run's effects against the
    baseline contradict (a paper does not say which run it means, so it must be wrong for all
    of them to be flagged)."""
    runs = project_effects(root)
    if not runs:
        return []
    return [
        c
        for sentence, line in paper_sentences(tex_text)
        if (c := _contradictions(sentence, runs, None, line)) is not None
    ]
