"""The run lengths `labtui init` proposes: a baseline that ends within [limits] run_timeout_s and a
smoke run long enough to write every metric once.

``bounded_commands`` takes what core/onboarding/run_length.py found (the option that sets a run's
length, the intervals, when each metric is first written) and gives the tokens of the main
command and of the smoke command, each with the one-line reason the proposal shows. Before
anything ran, the baseline's count is a guess at the pace (GUESSED_PACE_S); ``fit_to_pace``
sizes it again from the smoke run's measured wall time, and ``set_count`` writes it into the
command, before anything is committed.

An option whose value has no end (-1, None, inf, a count beyond UNBOUNDED) is never left so in
the baseline; a count that already fits is left as the script has it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..settings.sections import LimitsSection
from .run_length import (
    SMOKE_COUNT,
    SMOKE_INTERVAL,
    UNBOUNDED,
    FirstWrite,
    IntervalOption,
    LengthOption,
    no_end,
    number,
)

# Before anything ran the pace is unknown: a guess sizes the baseline to BUDGET_SHARE of the run
# timeout (2000 steps at 0.45 s a step, 10 epochs at 90 s one, in the default 1800 s), and the
# smoke run's measurement (fit_to_pace) replaces it.
GUESSED_PACE_S = {"step": 0.45, "epoch": 90.0}
BUDGET_SHARE = 0.5  # of the budget: start-up, evaluation and a slower machine take the rest
# A smoke run sized to the metric writes goes on this long after the last one first comes: its
# pace after start-up is measured there. Not SMOKE_COUNT's 10 steps: at 37 s a step those were
# most of a 15-step script's run.
PACE_AFTER = {"step": 2, "epoch": 0}


@dataclass(frozen=True)
class LengthProposal:
    """The commands with their lengths set, and why, as the proposal file shows them."""

    command: tuple[str, ...]
    command_reason: str
    smoke: tuple[str, ...]  # () when nothing shortens a run
    smoke_reason: str
    count: int | None = None  # the baseline's count of the length's unit (None: the script's)
    smoke_count: int | None = None
    every: int | None = None  # the baseline's metric interval: fit_to_pace rounds to it
    at_least: int = 1  # below this count a metric is never written: fit_to_pace keeps to it


def baseline_cap(unit: str, timeout_s: float) -> int:
    """The most steps (epochs) a baseline is given before the pace is measured: a round number."""
    return _round_down(max(1, int(timeout_s * BUDGET_SHARE / GUESSED_PACE_S[unit])))


def _round_down(count: int) -> int:
    """The largest of 1, 2, 5 × 10^k not above ``count``: a number a researcher reads at once."""
    power = 10 ** int(math.log10(count))
    return max(m * power for m in (1, 2, 5) if m * power <= count)


def bounded_commands(
    command_tokens: Sequence[str],
    smoke_tokens: Sequence[str] | None,
    length: LengthOption | None,
    intervals: Sequence[IntervalOption],
    first_writes: Sequence[FirstWrite],
    limits: LimitsSection,
    *,
    others: Sequence[LengthOption] = (),
    all_written: bool = False,
) -> LengthProposal:
    """The baseline's and the smoke run's tokens. ``length`` is run_length_option's answer,
    ``others`` the rest of run_length_options (one with no end is bounded too, unless it is a
    "no limit" beside a bounded ``length``); ``first_writes`` are first_write's answers for the
    metric writes found (empty: only the metric intervals by name are turned down).
    ``all_written``: they are the writes of every proposed metric, so the smoke run is sized to
    them (PACE_AFTER past the last first write) rather than SMOKE_COUNT."""
    timeout = limits.run_timeout_s
    smoke_in = list(smoke_tokens) if smoke_tokens else None
    if length is None:
        why = (
            "no option or constant sets how long a run trains: the baseline runs as long as the "
            f"script does, until [limits] run_timeout_s = {timeout:g} s stops it"
        )
        smoke, smoke_why = _turn_down(smoke_in, intervals, first_writes)
        smoke_why = (
            smoke_why.lstrip(", ") if smoke else "no smoke command: no option shortens a run"
        )
        return LengthProposal(tuple(command_tokens), why, tuple(smoke or ()), smoke_why)
    writes = [w for w in first_writes if w.unit == length.unit]
    # a write at the run's end (i == max_iters - 1) comes whatever the count: no lower bound
    at_least = max(
        [w.needed for w in writes if w.needed is not None and not w.follows_length], default=1
    )
    every = _metric_every(length.unit, intervals, first_writes)
    command, count, why = _baseline(list(command_tokens), length, timeout, every, at_least)
    command, also = _bound_others(
        command, length, others, count is not None, _baseline_value(timeout)
    )
    why += f"; likewise {also.lstrip(', ')}" if also else ""
    if not length.settable:
        smoke, smoke_why = _turn_down(smoke_in, intervals, first_writes)
        if smoke is None:
            smoke_why = f"no smoke command: {length.dest} is a module constant, not an option"
        return LengthProposal(tuple(command), why, tuple(smoke or ()), smoke_why, None, None, every)
    given = given_count(command_tokens, length)
    sized = all_written and _all_in_smoke(first_writes, length.unit)
    smoke_count, needed = _smoke_count(length, given, writes, sized)
    smoke = set_count(smoke_in or list(command_tokens), length, smoke_count)
    smoke, also = _bound_others(smoke, length, others, True, lambda unit: SMOKE_COUNT[unit])
    smoke, turned = _turn_down(smoke, intervals, first_writes)
    smoke_why = (
        f"{length.flag} {smoke_count}{also}{turned}: a short run that writes every metric once"
    )
    if needed is not None:
        held = f"at {needed.at} as the script stands" if needed.at != needed.smoke_at else ""
        smoke_why += (
            f" (`{needed.condition}` first holds at {length.unit} {needed.smoke_at}"
            f"{'; ' + held if held else ', and no option turns it down'})"
        )
    if sized and PACE_AFTER[length.unit]:
        smoke_why += f", and {PACE_AFTER[length.unit]} {length.unit}s after, to measure the pace"
    return LengthProposal(
        tuple(command), why, tuple(smoke or ()), smoke_why, count, smoke_count, every, at_least
    )


def _baseline(
    tokens: list[str], length: LengthOption, timeout: float, every: int | None, at_least: int
) -> tuple[list[str], int | None, str]:
    """The main command with the baseline's count, the count, and why."""
    given = given_count(tokens, length)
    value = given if given is not None else length.default
    source = "in the command" if given is not None else "by default"
    name, unit = length.flag or length.dest, length.unit
    endless = no_end(value, length.dest.split(".")[-1].lower(), unit)
    cap = baseline_cap(unit, timeout)
    said = endless or _about(number(value) or 0, unit)
    if not length.settable:
        fits = not endless and (number(value) or 0) <= cap
        tail = "" if fits else f" ({said}), and a baseline runs it whole"
        return tokens, None, length.why + tail
    if not endless and (number(value) or 0) <= cap:
        return tokens, int(number(value) or 0), f"{name} {value!r} {source} already fits ({said})"
    count = cap - cap % every if every and every <= cap else cap
    count = max(count, at_least)
    why = (
        f"{name} is {value!r} {source} ({said}): {count} here, so a baseline fits [limits] "
        f"run_timeout_s = {timeout:g} s at a guessed {_pace(unit)} "
        "(the smoke run measures the pace and labtui sizes it again); change it here"
    )
    if count == at_least and at_least > cap:
        why += f" (a run writes its first metric only after {at_least} {unit}s)"
    return set_count(tokens, length, count), count, why


def _about(value: float, unit: str) -> str:
    seconds = value * GUESSED_PACE_S[unit]
    span = f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(1, round(seconds / 60))} min"
    return f"about {span} at a guessed {_pace(unit)}"


def _pace(unit: str, seconds: float | None = None) -> str:
    """ "0.45 s a step", "90 s an epoch" """
    value = GUESSED_PACE_S[unit] if seconds is None else seconds
    return f"{value:.3g} s {'an' if unit[0] in 'aeiou' else 'a'} {unit}"


def _baseline_value(timeout: float) -> Any:
    return lambda unit: baseline_cap(unit, timeout)


def _bound_others(
    tokens: list[str],
    length: LengthOption,
    others: Sequence[LengthOption],
    bounded: bool,
    value: Any,
) -> tuple[list[str], str]:
    """Every other length option with no end given ``value(unit)``: a "no limit" (-1) beside a
    ``length`` that bounds the run is left, as it means "as many as that one takes". With
    ", max_iters 2000" for the reason."""
    said = ""
    for other in others:
        given = given_count(tokens, other)
        current = given if given is not None else other.default
        endless = no_end(current, other.dest.split(".")[-1].lower(), other.unit)
        big = (number(current) or 0) > UNBOUNDED[other.unit]
        if other.settable and other.dest != length.dest and endless and (big or not bounded):
            tokens = set_count(tokens, other, value(other.unit))
            said += f", {other.flag} {value(other.unit)}"
    return tokens, said


def _all_in_smoke(first_writes: Sequence[FirstWrite], unit: str) -> bool:
    """Whether each write is first made within a smoke run's count of ``unit``: none counted
    in another unit or never made; one at the run's end is made whatever the count."""
    return bool(first_writes) and all(
        w.unit == unit and (w.follows_length or w.smoke_needed is not None) for w in first_writes
    )


def _smoke_count(
    length: LengthOption, given: Any, writes: Sequence[FirstWrite], sized: bool
) -> tuple[int, FirstWrite | None]:
    """``sized``: as long as the metrics take to be written once, and PACE_AFTER more (a write
    at the run's end comes whatever the count); else SMOKE_COUNT, or longer where a metric is
    first written later. Never above a bounded count the script (or command) already has. With
    the write first written last, if any."""
    timed = [w for w in writes if not (sized and w.follows_length)]
    later = [w for w in timed if (w.smoke_needed or 0) > 1]  # after the first step: say when
    needed = max(later, key=lambda w: w.smoke_needed or 0, default=None)
    last = (needed.smoke_needed or 0) if needed else 0
    count = max(last, 1) + PACE_AFTER[length.unit] if sized else max(SMOKE_COUNT[length.unit], last)
    value = given if given is not None else length.default
    if not no_end(value, length.dest.lower(), length.unit) and number(value):
        count = min(count, int(number(value) or count))
    return count, needed


def _metric_every(
    unit: str, intervals: Sequence[IntervalOption], first_writes: Sequence[FirstWrite]
) -> int | None:
    """The interval a baseline's metrics are written at: the smallest one in the metric
    writes' conditions, else the smallest metric interval by name."""
    used = [i for w in first_writes for i in w.intervals]
    for group in (used, [i for i in intervals if i.metric]):
        values = [i.default for i in group if i.unit == unit and _positive_int(i.default)]
        if values:
            return min(values)
    return None


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _turn_down(
    tokens: list[str] | None, intervals: Sequence[IntervalOption], writes: Sequence[FirstWrite]
) -> tuple[list[str] | None, str]:
    """The smoke tokens with every settable metric interval (and every interval a metric
    write's condition divides by) at SMOKE_INTERVAL; with ", --eval_interval 5" for the reason."""
    if tokens is None:
        return None, ""
    chosen = {i.dest: i for i in intervals if i.metric}
    chosen.update({i.dest: i for w in writes for i in w.intervals})
    said = ""
    for interval in chosen.values():
        low = SMOKE_INTERVAL[interval.unit]
        if interval.settable and _positive_int(interval.default) and interval.default > low:
            tokens = _set(tokens, interval.flag, interval.flags, low, interval.joined)
            said += f", {interval.flag} {low}"
    return tokens, said


# -- tokens ---------------------------------------------------------------------------------------


def set_count(tokens: Sequence[str], length: LengthOption, count: int) -> list[str]:
    """The tokens with ``length`` set to ``count``: its value replaced where they give one
    (``--steps 5``, ``--steps=5``, Hydra's ``trainer.max_epochs=5``), else appended."""
    return _set(list(tokens), length.flag, length.flags, count, length.joined)


def _set(
    tokens: list[str], flag: str, flags: tuple[str, ...], value: int, joined: bool = False
) -> list[str]:
    names, text, out = set(flags or (flag,)), str(value), list(tokens)
    at, key = _find(out, names)
    if at >= 0:
        out[at] = f"{key}={text}" if key else text
        return out
    spaced = flag.startswith("-") and not joined
    return [*out, flag, text] if spaced else [*out, f"{flag}={text}"]


def _find(tokens: Sequence[str], names: set[str]) -> tuple[int, str]:
    """Where the tokens give one of ``names`` a value: its index, and the name when the token
    is name=value (Hydra's +key= and ++key= too); -1 when they give none."""
    for i, token in enumerate(tokens):
        name, eq, _ = token.partition("=")
        if eq and name.lstrip("+") in names:
            return i, name
        if token in names and token.startswith("-") and i + 1 < len(tokens):
            return i + 1, ""
    return -1, ""


def given_count(tokens: Sequence[str], length: LengthOption) -> Any:
    """The value the tokens give ``length``, as a number where it is one; None when none."""
    if not length.settable:
        return None
    at, key = _find(tokens, set(length.flags or (length.flag,)))
    if at < 0:
        return None
    text = tokens[at].partition("=")[2] if key else tokens[at]
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# -- after the smoke run ---------------------------------------------------------------------------


def fit_to_pace(
    length: LengthOption,
    smoke_count: int,
    smoke_wall_s: float,
    budget_s: float,
    *,
    every: int | None = None,
    at_least: int = 1,
    after_first: tuple[float, float] | None = None,
) -> tuple[int, str]:
    """The baseline's count at the pace the smoke run measured: what fits BUDGET_SHARE of
    ``budget_s``, rounded down to a multiple of ``every`` (the metric interval) so the last
    evaluation falls at the end, never below ``at_least``, never above a bounded default.

    ``after_first``: the smoke run's units after its first metric line and the seconds they
    took; their pace leaves start-up out (imports, data loading: often most of a smoke run),
    and the start-up is paid once. Without it the pace counts start-up in, which errs short."""
    unit = length.unit
    steps_after, seconds_after = after_first or (0.0, 0.0)
    if steps_after > 0 and seconds_after > 0:
        pace = seconds_after / steps_after
        start_up = max(smoke_wall_s - smoke_count * pace, 0.0)
        fits = max(int((budget_s * BUDGET_SHARE - start_up) / pace), 1)
        measured = (
            f"{steps_after:g} {unit}s of the smoke run after its first metric line took "
            f"{seconds_after:.2f} s ({_pace(unit, pace)}; its {start_up:.1f} s of start-up "
            "left out)"
        )
    else:
        pace = smoke_wall_s / max(smoke_count, 1)
        fits = int(budget_s * BUDGET_SHARE / pace) if pace > 0 else UNBOUNDED[unit]
        measured = (
            f"the smoke run took {smoke_wall_s:.1f} s for {smoke_count} {unit}s "
            f"({_pace(unit, pace)}, start-up included)"
        )
    default = number(length.default)
    name = length.flag or length.dest
    if default is not None and not length.unbounded and 0 < default <= fits:
        return int(default), f"{name} {default:g}, the script's own, fits: {measured}"
    count = fits - fits % every if every and fits >= every else fits
    count = max(count, at_least, 1)
    why = f"{name} {count}: {measured}, so {fits} fit half of the {budget_s:g} s budget"
    if count != fits and every and count >= every and count < fits:
        why += f", rounded down to a multiple of the metric interval {every}"
    if count > fits:
        why += f"; {count} because a run writes its first metric only after {at_least} {unit}s, "
        why += "so it may not fit"
    return count, why
