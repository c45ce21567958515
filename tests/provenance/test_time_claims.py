"""Claims about time and speed held against the runs' times, and changes a sentence states with
numbers that contradict them: what a real 1.5B model's papers wrote ("training time also
increased from 1.509 to 1.388 (+1149%)", "faster training" for a run that took longer) and
nothing caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtui.core.provenance.checks import check_analysis, paper_contradictions
from labtui.core.provenance.claims import contradictions
from labtui.core.runs.effects import effects

BASE = {"moons": {"test_accuracy_mean": 0.9367, "train_time_s_mean": 1.388}}
BASE_SE = {"moons": {"test_accuracy_stderr": 0.0041, "train_time_s_stderr": 0.012}}
SE = {"moons": {"test_accuracy_stderr": 0.0041, "train_time_s_stderr": 0.011}}


def _run(train_time: float, *, noise: bool = True, **more: float):
    """run_1's effects against BASE with its training time (and any other metric) changed."""
    means = {"moons": {**BASE["moons"], "train_time_s_mean": train_time, **more}}
    base = {"moons": {**BASE["moons"], **{k: 1000.0 for k in more}}}
    if not noise:
        return effects(means, base, run="run_1")
    return effects(means, base, stderrs=SE, base_stderrs=BASE_SE, run="run_1")


def _contradicted(text: str, found) -> list[str]:
    return [c.problem for c in check_analysis(text, found, []).contradicted]


# -- speed words ---------------------------------------------------------------------------------


def test_faster_training_for_a_run_that_took_longer_is_contradicted():
    found = _run(1.509)  # beyond the noise (±0.033)
    [problem] = _contradicted("Run_1 gives faster training than the baseline.", found)
    assert problem == (
        "You wrote that run_1 ran faster than the baseline, but run_1's train_time_s_mean is "
        "1.509 against 1.388 for run_0: up by 0.121 (+8.718%, beyond noise ±0.033)."
    )
    for text in (
        "The change led to a shorter training time.",
        "Run_1 took less time to train.",
        "Training time decreased.",
        "Run_1 speeds up training.",
    ):
        assert _contradicted(text, found), text
    assert _contradicted("Run_1 took longer to train.", found) == []
    assert _contradicted("Training time increased.", found) == []


def test_faster_for_a_run_that_took_less_time_beyond_noise_is_fine():
    found = _run(1.2)
    for text in (
        "Run_1 gives faster training.",
        "Run_1 is faster than the baseline.",
        "The wall-clock time per step is shorter.",
        "Training speed increased.",
    ):
        assert _contradicted(text, found) == [], text
    assert _contradicted("Run_1 is slower than the baseline.", found)
    assert _contradicted("Training speed decreased.", found), "a speed goes down as times go up"


@pytest.mark.parametrize(
    "text",
    [
        "Run_1 may be slightly faster.",
        "Run_1 is not faster than the baseline.",
        "We expect faster training with a larger batch.",
        "Run_1 converges faster.",  # steps, not the clock
        "The test loss falls faster in run_1.",  # how fast a metric moved
        "We used longer sequences in run_1.",
        "Run_1 ran on a faster GPU.",
        "We repeated run_1 two more times.",
        "We spent more time tuning run_1.",
        "Run_1 took less memory.",
        "Inference is faster in run_1.",  # no inference time recorded
        "The baseline is faster.",
    ],
)
def test_hedged_negated_and_other_speeds_are_not_time_claims(text: str):
    assert _contradicted(text, _run(1.509)) == []


def test_a_time_that_moved_the_other_way_within_noise_refutes_nothing():
    assert _contradicted("Run_1 trains faster.", _run(1.40)) == [], "within ±0.033"


def test_without_noise_only_a_difference_beyond_five_percent_contradicts():
    assert _contradicted("Run_1 trains faster.", _run(1.43, noise=False)) == [], "+3%: jitter"
    [problem] = _contradicted("Run_1 trains faster.", _run(1.509, noise=False))
    assert problem.endswith("up by 0.121 (+8.718%, noise unknown).")


def test_an_identical_time_contradicts_much_faster():
    found = _run(1.388)
    [problem] = _contradicted("Run_1 is much faster than the baseline.", found)
    assert problem.endswith(
        "run_1's train_time_s_mean is 1.388 against 1.388 for run_0: identical."
    )
    [significant] = _contradicted("Run_1 trains significantly faster.", found)
    assert "the change is significant and run_1 ran faster" in significant


def test_faster_means_more_throughput():
    slower = _run(1.388, tokens_per_s_mean=900.0)
    [problem] = _contradicted("Run_1 is faster than the baseline.", slower)
    assert "tokens_per_s_mean is 900.0 against 1000 for run_0: down by 100" in problem
    assert _contradicted("Throughput increased.", slower)
    assert _contradicted("Run_1 is slower.", slower) == [], "fewer tokens per second: slower"
    quicker = _run(1.2, tokens_per_s_mean=1150.0, noise=False)
    assert _contradicted("Run_1 trains faster, with a higher throughput.", quicker) == []


# -- numbers a sentence quotes -------------------------------------------------------------------


def test_a_stated_change_its_own_numbers_contradict_is_flagged_whatever_the_runs():
    sentence = "Training time also increased from 1.509 to 1.388 (+1149%)."
    [flagged] = check_analysis(sentence, _run(1.509), []).contradicted  # it did increase
    assert flagged.problem == (
        "You wrote that training time also increased from 1.509 to 1.388 (+1149%), but 1.388 "
        "is lower than 1.509 (−8.0%)."
    )
    assert contradictions(sentence, {}, None) is not None, "no run needed to see it"


def test_a_percentage_that_is_not_the_quoted_change_is_flagged():
    flagged = contradictions("Accuracy rose from 0.80 to 0.85 (+12%).", {}, None)
    assert flagged is not None and flagged.problem == (
        "You wrote that accuracy rose from 0.80 to 0.85 (+12%), but 0.85 against 0.80 is "
        "+6.2%, not +12%."
    )
    assert contradictions("Loss decreased from 0.50 to 0.40, a +20% change.", {}, None)


@pytest.mark.parametrize(
    "text",
    [
        "Accuracy rose from 0.80 to 0.85 (+6.25%).",
        "Accuracy rose from 0.80 to 0.85 (+5%).",  # in points
        "Accuracy rose from 80% to 85% (+5%).",
        "Test accuracy dropped from 0.9367 to 0.8047 (-0.132, or -14.1%).",
        "Test accuracy rose from 0.9367 to 0.9401 (0.4%).",
        "The loss decreased by 12% from 1.00 to 0.88.",
        "The learning rate was reduced from 0.01 to 0.001 (95% CI omitted).",
        "If the loss fell from 0.5 to 0.6, the run would be wrong.",
        "Training time went up from 90 s to 2 min.",
    ],
)
def test_numbers_that_agree_with_the_stated_change_pass(text: str):
    assert contradictions(text, {}, None) is None


# -- the paper ----------------------------------------------------------------------------------


def test_the_papers_results_are_held_to_the_runs_times(tmp_path: Path):
    for run, seconds in (("run_0", 1.388), ("run_1", 1.509)):
        (tmp_path / run).mkdir()
        means = {"test_accuracy_mean": 0.9367, "train_time_s_mean": seconds}
        (tmp_path / run / "final_info.json").write_text(json.dumps({"moons": {"means": means}}))
    tex = (
        "\\section{Results}\nWith the change, run\\_1 keeps test accuracy at 0.9367 and gives "
        "faster training.\nIts training time also increased from 1.388 to 1.509 "
        "(+8.7\\%).\n"
    )
    [claim] = paper_contradictions(tmp_path, tex)
    assert claim.line == 2 and claim.claims == "run_1 ran faster than the baseline"
    assert "train_time_s_mean is 1.509 against 1.388 for run_0: up by 0.121" in claim.says
