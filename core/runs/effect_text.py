"""Effects written out: numbers printed with the significant digits every other part of labtui
reads back (provenance traces them), a run's effects as a Markdown table against the baseline
and one sentence per effect (the effects as sources a claim may cite are read in claim_checks).
"""

from __future__ import annotations

from .effects import (
    CHANGED,
    IDENTICAL,
    NOISE_DIGITS,
    NOISE_FACTOR,
    SIGNIFICANT_DIGITS,
    WITHIN_NOISE,
    Effect,
    fmt,
    overall,
    several_datasets,
)

# -- numbers as printed --------------------------------------------------------------------------


def fmt_difference(value: float) -> str:
    """A difference, without the trailing zeros that would claim digits it does not have."""
    text = fmt(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_signed(value: float) -> str:
    text = fmt_difference(value)
    return text if text.startswith("-") or text == "0" else f"+{text}"


def _noise_band(e: Effect) -> str:
    """The noise threshold as printed ("±0.0203"), "" when unknown."""
    return f"±{fmt(e.noise, NOISE_DIGITS)}" if e.noise is not None else ""


def _beyond_noise(e: Effect) -> str:
    """How a change beyond noise stands against it: "beyond noise ±0.0203" or "noise unknown"."""
    return "noise unknown" if e.noise is None else f"beyond noise {_noise_band(e)}"


def _verdict_cell(e: Effect) -> str:
    if e.verdict == IDENTICAL:
        return IDENTICAL
    if e.verdict == WITHIN_NOISE:
        return f"within noise ({_noise_band(e)})"
    if e.verdict == CHANGED:
        return f"changed ({_beyond_noise(e)}; direction unknown)"
    return f"{e.verdict} ({_beyond_noise(e)})"


def _value_cell(value: float, stderr: float | None) -> str:
    return fmt(value) + (f" ± {fmt(stderr, NOISE_DIGITS)}" if stderr is not None else "")


def _difference_cell(e: Effect) -> str:
    if e.value == e.baseline:
        return "0"
    relative = f" ({fmt_signed(e.relative)}%)" if e.relative is not None else ""
    return fmt_signed(e.difference) + relative


def effects_markdown(found: list[Effect]) -> str:
    """A compact Markdown table of the effects, for notes.md and for the model's prompt; every
    number in it is one provenance traces back to the runs."""
    if not found:
        return "No metric that both the run and the baseline report."
    several = several_datasets(found)
    run, base = found[0].run, found[0].baseline_run
    rows = [
        f"Effects of {run} against {base} (computed by labtui; values ± standard error):",
        "",
        "| metric | this run | baseline | difference | verdict |",
        "|---|---|---|---|---|",
    ]
    for e in found:
        rows.append(
            f"| {e.name(several)} | {_value_cell(e.value, e.stderr)} | "
            f"{_value_cell(e.baseline, e.base_stderr)} | {_difference_cell(e)} | "
            f"{_verdict_cell(e)} |"
        )
    rows += [
        "",
        f"Overall: {overall(found).text}{_times_note(found)}. "
        f"Identical: equal to {SIGNIFICANT_DIGITS} significant digits; "
        f"within noise: |difference| ≤ {NOISE_FACTOR:g}·√(se_run² + se_baseline²).",
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
        f"{e.run}'s {e.name(several_datasets)} is {fmt(e.value)} against "
        f"{fmt(e.baseline)} for {e.baseline_run}"
    )
    if e.verdict == IDENTICAL:
        return f"{head}: identical"
    if e.verdict == WITHIN_NOISE:
        difference = fmt_signed(e.difference)
        return f"{head}: within noise (difference {difference}, noise {_noise_band(e)})"
    beyond = _beyond_noise(e)
    if e.verdict == CHANGED:
        return f"{head}: changed by {fmt_signed(e.difference)} ({beyond}, direction unknown)"
    return f"{head}: {e.verdict} by {fmt_difference(abs(e.difference))} ({beyond})"
