"""Claims about time and speed ("faster training", "the training time increased") held against
the runs' time-like metrics (``core.machine.metric_lines.is_time_like``: train_time_s_mean, wall
time, step time …) and their rates (throughput, tokens per second).

Times are reported, not judged (``Effect.primary``), but a sentence that says a change made
training faster is a claim about them all the same. Timings jitter from run to run and few runs
report their noise, so a time claim is contradicted only when the numbers leave no doubt: the
time moved the other way beyond noise, or, with no noise known, by more than
``UNKNOWN_NOISE_TOLERANCE``; or it did not change at all. ``core/provenance/claims.py`` reads
the claims; this module says which metrics a speed word is about and what they must show.
"""

from __future__ import annotations

import re

from ..machine.metric_lines import is_time_like
from ..runs.effect_text import describe, fmt_difference, fmt_signed
from ..runs.effects import IDENTICAL, NOISE_DIGITS, WITHIN_NOISE, Effect, fmt

FASTER = "faster"
SLOWER = "slower"
SPEED_KINDS = (FASTER, SLOWER)

# A wall-clock time measured twice on one machine commonly differs by a few percent (other
# processes, clocks, caches, the GPU's boost), and a run that reports no standard error for its
# time gives no noise to hold a claim against. Without one, only a difference larger than this
# share of the baseline in the other direction contradicts "faster" or "slower": a 1 % slower
# run does not make "faster" false beyond doubt, an 8 % slower one does.
UNKNOWN_NOISE_TOLERANCE = 0.05

# What a clause says about speed. "shorter"/"longer" count only next to a time the clause
# names ("a shorter training time"; "longer sequences" is no claim about time).
FASTER_WORDS = (
    r"faster|quicker|speed(?:s|ing)?[- ]?ups?|speedups?|sped[- ]up|shorter"
    r"|(?:took|takes|take|taking)\s+less\s+time|less(?=\s+(?:[\w-]+\s+)?time\b)"
)
SLOWER_WORDS = (
    r"slower|slow(?:s|ed|ing)?[- ]down|slowdowns?|longer"
    r"|(?:took|takes|take|taking)\s+(?:longer|more\s+time)|more(?=\s+(?:[\w-]+\s+)?time\b)"
)
_NEEDS_NAMED_TIME = re.compile(r"shorter|longer", re.I)

# Speed that is not the run's wall-clock time: how fast something learns, converges or decays,
# how fast a value moves ("the loss falls faster"), the hardware it ran on ("a faster GPU"),
# the researcher's time ("we spent more time tuning it").
_OTHER_SPEED = re.compile(
    r"\b(?:converg\w*|learn\w*|decay\w*|warm-?ups?|schedul\w*|anneal\w*|adapt\w*|mix\w*"
    r"|fit(?:s|ting)?|rate)\b"
    r"|\b(?:rises?|rising|rose|falls?|falling|fell|drops?|dropp\w*|grows?|grew|declin\w*"
    r"|decreas\w*|increas\w*|improv\w*)\s+(?:\w+\s+)?(?:faster|quicker|slower)\b"
    r"|\b(?:faster|quicker|slower)\s+(?:gpus?|cpus?|hardware|machines?|nodes?|disks?|devices?"
    r"|accelerators?|clusters?)\b|\b(?:spen[dt]|spending|budget\w*)\b",
    re.I,
)
# Rates: the higher, the faster ("tokens_per_s_mean" ends like a time, "_s").
_RATE = re.compile(r"throughput|per_s(?:ec(?:ond)?)?(?:_|$)|_per_sec|tokens_per|samples_per", re.I)

# Which of a run's times a stage named in the sentence means: its own, or for training any
# time the run reports (a run's time is its training unless it says otherwise).
_STAGES = (
    (re.compile(r"\btrain(?:s|ed|ing)?\b", re.I), ("train",), True),
    (
        re.compile(r"\b(?:inference|sampling|generation|decoding|evaluation|eval)\b", re.I),
        ("infer", "sampl", "generat", "decod", "eval", "test"),
        False,
    ),
)


def is_rate(metric: str) -> bool:
    """A speed measured as work per time (throughput): higher is faster."""
    return bool(_RATE.search(metric))


def is_duration(metric: str) -> bool:
    """A time taken (train_time_s_mean, wall time, step time): lower is faster."""
    return is_time_like(metric) and not is_rate(metric)


def is_speed_metric(metric: str) -> bool:
    """Any metric a claim about speed is about: the times and the rates."""
    return is_time_like(metric) or is_rate(metric)


def needs_named_time(word: str) -> bool:
    """Whether a speed word claims about time only next to a time the clause names."""
    return bool(_NEEDS_NAMED_TIME.fullmatch(word.strip()))


def other_speed(clause: str) -> bool:
    """Whether a clause's speed is of learning, convergence or a schedule, not of the clock."""
    return bool(_OTHER_SPEED.search(clause))


def by_stage(text: str, keys: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The time metrics of ``keys`` that the stage ``text`` names means (training, inference);
    all of them when it names none; none when it names a stage the run does not time."""
    for pattern, prefixes, falls_back in _STAGES:
        if pattern.search(text):
            kept = frozenset(
                k for k in keys if any(p.startswith(prefixes) for p in k[1].lower().split("_"))
            )
            return kept or (keys if falls_back else frozenset())
    return keys


def speed_move(kind: str, metric: str) -> str:
    """The move ('up'/'down') of a time-like metric's value that "faster" or "slower" claims."""
    faster = "up" if is_rate(metric) else "down"
    if kind == FASTER:
        return faster
    return "down" if faster == "up" else "up"


def time_contradicts(move: str, e: Effect) -> bool:
    """Whether a time-like effect leaves no doubt that a claimed move of its value is false: it
    did not change, or it moved the other way beyond noise (by more than
    ``UNKNOWN_NOISE_TOLERANCE`` of the baseline when the noise is unknown). A move within noise
    refutes nothing: timings jitter."""
    if e.verdict == IDENTICAL:
        return True
    if e.moved == move or e.verdict == WITHIN_NOISE:
        return False
    if e.noise is None:
        return abs(e.difference) > UNKNOWN_NOISE_TOLERANCE * abs(e.baseline)
    return True


def describe_time(e: Effect, several_datasets: bool = False) -> str:
    """A time-like effect in words, as a move rather than a verdict (times are not judged):
    "run_1's train_time_s_mean is 1.509 against 1.388 for run_0: up by 0.121 (+8.718%, noise
    unknown)"."""
    if e.verdict in (IDENTICAL, WITHIN_NOISE):
        return describe(e, several_datasets)
    label = f"{e.dataset} {e.metric}" if several_datasets else e.metric
    head = f"{e.run}'s {label} is {fmt(e.value)} against {fmt(e.baseline)} for {e.baseline_run}"
    move = "up" if e.difference > 0 else "down"
    relative = f"{fmt_signed(e.relative)}%, " if e.relative is not None else ""
    noise = "noise unknown" if e.noise is None else f"beyond noise ±{fmt(e.noise, NOISE_DIGITS)}"
    return f"{head}: {move} by {fmt_difference(abs(e.difference))} ({relative}{noise})"
