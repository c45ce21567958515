"""Effects computed by code: each metric of a run against the baseline, with a verdict, and the
model's words checked against them (the two real analyses of issue 13 among them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtui.core.errors import TemplateError
from labtui.core.provenance.checks import check_analysis
from labtui.core.provenance.claims import contradictions
from labtui.core.provenance.numbers import Source, numbers_in_text
from labtui.core.runs.effect_text import effects_markdown
from labtui.core.runs.effects import (
    BETTER,
    CHANGED,
    IDENTICAL,
    WITHIN_NOISE,
    WORSE,
    direction_of,
    effects,
    effects_of_runs,
    metric_directions,
    overall,
)

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"

BASE = {"moons": {"test_accuracy_mean": 0.9367, "train_loss_mean": 0.1930}}
BASE_SE = {"moons": {"test_accuracy_stderr": 0.0041, "train_loss_stderr": 0.0027}}
FELL = {"moons": {"test_accuracy_mean": 0.8047, "train_loss_mean": 0.3512}}
FELL_SE = {"moons": {"test_accuracy_stderr": 0.0052, "train_loss_stderr": 0.0031}}


def _by_metric(found):
    return {e.metric: e for e in found}


def _moons_run(root: Path, name: str, means: dict, stderrs: dict, per_seed: dict) -> Path:
    """A run folder in The AI Scientist's shape, as templates/moons/experiment.py writes it."""
    run = root / name
    run.mkdir(parents=True)
    entry = {"means": means, "stderrs": stderrs, "final_info_dict": per_seed}
    (run / "final_info.json").write_text(json.dumps({"moons": entry}))
    return run


# -- verdicts ------------------------------------------------------------------------------------


def test_a_run_identical_to_the_last_digit_is_identical_whatever_the_noise():
    found = effects(BASE, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    assert {e.verdict for e in found} == {IDENTICAL}
    accuracy = _by_metric(found)["test_accuracy_mean"]
    assert accuracy.difference == 0 and accuracy.relative == 0 and not accuracy.noise_unknown
    assert overall(found).verdict == IDENTICAL
    unrounded = {"moons": {"test_accuracy_mean": 0.93671, "train_loss_mean": 0.19302}}
    assert {e.verdict for e in effects(unrounded, BASE)} == {IDENTICAL}, (
        "equal to the printed digits, even with no noise information"
    )


def test_a_difference_within_the_combined_standard_error_is_noise():
    moved = {"moons": {"test_accuracy_mean": 0.9301, "train_loss_mean": 0.1950}}
    found = _by_metric(effects(moved, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE))
    accuracy = found["test_accuracy_mean"]
    assert accuracy.verdict == WITHIN_NOISE
    assert accuracy.noise == pytest.approx(2 * (0.0041**2 + 0.0041**2) ** 0.5)
    assert overall(list(found.values())).verdict == WITHIN_NOISE


def test_better_and_worse_follow_the_direction_guessed_from_the_name():
    found = _by_metric(effects(FELL, BASE, stderrs=FELL_SE, base_stderrs=BASE_SE, run="run_1"))
    accuracy, loss = found["test_accuracy_mean"], found["train_loss_mean"]
    assert (accuracy.direction, accuracy.verdict) == ("higher", WORSE)
    assert (loss.direction, loss.verdict) == ("lower", WORSE), "a higher loss is worse"
    assert accuracy.difference == pytest.approx(-0.132)
    assert accuracy.relative == pytest.approx(-14.09, abs=0.01)
    improved = {"moons": {"test_accuracy_mean": 0.9712, "train_loss_mean": 0.1203}}
    found = effects(improved, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE)
    assert {e.verdict for e in found} == {BETTER}, "a lower loss is better"
    assert overall(found).verdict == BETTER


def test_directions_by_name():
    assert direction_of("val_loss") == direction_of("error_rate") == "lower"
    assert direction_of("perplexity") == direction_of("train_time_s_mean") == "lower"
    assert direction_of("test_accuracy_mean") == direction_of("f1") == "higher"
    assert direction_of("auc") == direction_of("episode_reward") == "higher"
    assert direction_of("tokens_per_s_mean") == "higher", "throughput, not a time"
    assert direction_of("widgets_mean") == "unknown"


def test_a_declared_direction_wins_over_the_name_and_an_unknown_one_only_changes():
    grok = {"mod": {"step_val_acc_99_mean": 2400.0, "widgets_mean": 5.0}}
    base = {"mod": {"step_val_acc_99_mean": 3600.0, "widgets_mean": 4.0}}
    guessed = _by_metric(effects(grok, base))
    assert guessed["step_val_acc_99_mean"].verdict == WORSE, "'acc' in the name reads as higher"
    widgets = guessed["widgets_mean"]
    assert widgets.direction_unknown and widgets.verdict == CHANGED and widgets.noise_unknown
    declared = _by_metric(effects(grok, base, directions={"step_val_acc_99": "lower"}))
    step = declared["step_val_acc_99_mean"]
    assert step.direction == "lower" and step.verdict == BETTER, "grokking sooner is better"


def test_per_seed_values_give_the_noise_when_no_standard_errors_are_reported():
    base_seeds = {"moons": {"test_accuracy": [0.930, 0.940, 0.940]}}
    close_seeds = {"moons": {"test_accuracy": [0.935, 0.945, 0.950]}}
    means = lambda seeds: {"moons": {"test_accuracy_mean": sum(seeds) / 3}}  # noqa: E731
    [within] = effects(
        means(close_seeds["moons"]["test_accuracy"]),
        means(base_seeds["moons"]["test_accuracy"]),
        per_seed=close_seeds,
        base_per_seed=base_seeds,
    )
    assert within.stderr == pytest.approx(0.004409, abs=1e-6), "sample std / sqrt(n)"
    assert within.verdict == WITHIN_NOISE and not within.noise_unknown
    far_seeds = {"moons": {"test_accuracy": [0.990, 0.992, 0.991]}}
    [beyond] = effects(
        means(far_seeds["moons"]["test_accuracy"]),
        means(base_seeds["moons"]["test_accuracy"]),
        per_seed=far_seeds,
        base_per_seed=base_seeds,
    )
    assert beyond.verdict == BETTER


def test_with_no_noise_information_any_change_is_better_or_worse_and_flagged():
    found = _by_metric(effects(FELL, BASE))
    accuracy = found["test_accuracy_mean"]
    assert accuracy.verdict == WORSE and accuracy.noise_unknown and accuracy.noise is None
    assert "noise unknown" in effects_markdown(list(found.values()))


def test_the_runs_final_info_files_in_the_ai_scientists_shape(tmp_path: Path):
    seeds = {"test_accuracy": [0.93, 0.94, 0.94], "train_loss": [0.19, 0.2, 0.19]}
    base = _moons_run(tmp_path, "run_0", BASE["moons"], BASE_SE["moons"], seeds)
    run = _moons_run(tmp_path, "run_1", FELL["moons"], FELL_SE["moons"], seeds)
    found = _by_metric(effects_of_runs(run, base))
    accuracy = found["test_accuracy_mean"]
    assert (accuracy.run, accuracy.baseline_run) == ("run_1", "run_0")
    assert accuracy.stderr == 0.0052 and accuracy.base_stderr == 0.0041, "reported, not computed"
    assert accuracy.verdict == WORSE


def test_the_table_quotes_numbers_provenance_traces_back():
    found = effects(FELL, BASE, stderrs=FELL_SE, base_stderrs=BASE_SE, run="run_1")
    table = effects_markdown(found)
    assert "| metric | this run | baseline | difference | verdict |" in table
    assert "| test_accuracy_mean | 0.8047 ± 0.0052 | 0.9367 ± 0.0041 | -0.132 (-14.09%) |" in table
    assert "worse (beyond noise ±0.013)" in table
    assert "run_1 is worse than run_0" in table
    check = check_analysis(table.replace("|", " "), found, [])
    assert check.untraced == [], "every number of the table traces to the effects"
    assert numbers_in_text(table), "and there are numbers to trace"


# -- the directions a template declares ----------------------------------------------------------


def test_each_builtin_template_declares_the_direction_of_every_metric_it_reports():
    expected = {
        "moons": {"test_accuracy_mean", "train_loss_mean", "train_time_s_mean"},
        "char_lm": {"best_val_loss_mean", "val_bpc_mean", "tokens_per_s_mean"},
        "diffusion_2d": {"energy_distance_mean", "kl_divergence_mean", "inference_time_s_mean"},
        "grokking": {"final_val_acc_mean", "step_val_acc_99_mean", "grokked_mean"},
    }
    for template, some in expected.items():
        declared = metric_directions(TEMPLATES / template)
        assert some <= set(declared), template
        code = (TEMPLATES / template / "experiment.py").read_text()
        for metric in declared:
            assert metric.removesuffix("_mean") in code, f"{template}: {metric} is reported"
    moons = metric_directions(TEMPLATES / "moons")
    assert moons == {
        "test_accuracy_mean": "higher",
        "train_loss_mean": "lower",
        "train_time_s_mean": "lower",
    }
    assert metric_directions(TEMPLATES / "grokking")["step_val_acc_99_mean"] == "lower"


def test_a_bad_declaration_names_the_file_the_field_and_the_fix(tmp_path: Path):
    assert metric_directions(tmp_path) == {}, "no prompt.json, no declaration"
    (tmp_path / "prompt.json").write_text(json.dumps({"system": "s", "task_description": "t"}))
    assert metric_directions(tmp_path) == {}
    (tmp_path / "prompt.json").write_text(json.dumps({"metrics": {"acc_mean": "up"}}))
    with pytest.raises(TemplateError) as caught:
        metric_directions(tmp_path)
    text = str(caught.value)
    assert "prompt.json" in text and '"metrics"' in text and "'acc_mean': 'up'" in text
    assert '"higher" or "lower"' in text


# -- the model's analysis ------------------------------------------------------------------------

# Written by hand around the two analyses of a 1.5B model that issue 13 quotes: its words where the
# issue quotes them, ours where it cuts them with '…'; the exchanges were never recorded.
HAND_WRITTEN_IDENTICAL_ANALYSIS = (
    "The results of run_1 show an improvement in accuracy compared to the baseline. "
    "Increasing the number of hidden units led to a significant change."
)
HAND_WRITTEN_MOONS_ANALYSIS = (
    "The results of run_1 show a slight improvement in test accuracy from 0.8047 to 0.8367, "
    "but the difference is not statistically significant given the small standard errors "
    "(both at 0.02)."
)


def test_an_improvement_claimed_for_identical_runs_is_contradicted():
    found = effects(BASE, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    check = check_analysis(HAND_WRITTEN_IDENTICAL_ANALYSIS, found, [])
    assert not check.ok and check.untraced == []
    improvement, significance = check.contradicted
    assert improvement.sentence.startswith("The results of run_1 show an improvement")
    assert improvement.claims == "accuracy improved"
    assert improvement.problem == (
        "You wrote that accuracy improved, but run_1's test_accuracy_mean is 0.9367 against "
        "0.9367 for run_0: identical."
    )
    assert significance.claims == "the change is significant"
    assert "identical to run_0 on every primary metric" in significance.says


def test_an_effect_claimed_on_each_metric_named_is_held_to_each():
    """A 1.5B model's conclusion of a diffusion_2d run identical to its baseline (issue 40): "an
    impact on training time and energy distance" claims an effect on both, and the energy
    distance did not move; a time that did move does not excuse it."""
    base = {"spiral": {"energy_distance_mean": 0.001713, "train_time_s_mean": 38.13}}
    base_se = {"spiral": {"energy_distance_stderr": 0.00041, "train_time_s_stderr": 2.1}}
    run = {"spiral": {"energy_distance_mean": 0.001713, "train_time_s_mean": 32.24}}
    run_se = {"spiral": {"energy_distance_stderr": 0.00041, "train_time_s_stderr": 0.37}}
    runs = {"run_1": effects(run, base, stderrs=run_se, base_stderrs=base_se, run="run_1")}
    said = contradictions(
        "The experiments show that the Beta Schedule and Number of Diffusion Steps do have an "
        "impact on training time and energy distance.",
        runs,
        None,
    )
    assert said is not None and said.claims == "the change had an effect on energy distance"
    assert "energy_distance_mean is 0.001713 against 0.001713" in said.says
    for holds in (
        "The schedule does not affect the energy distance.",  # negated
        "The effect of the schedule on the energy distance is within noise.",  # no claim of one
        "The change affected the training time.",  # it did: faster beyond noise
    ):
        assert contradictions(holds, runs, None) is None, holds


def test_a_change_called_slight_is_held_to_its_size():
    """A 1.5B model's limitations of a moons run 9 % worse in accuracy (issue 40): "only a
    slight difference in test accuracy and train loss"."""
    runs = {"run_1": effects(FELL, BASE, stderrs=FELL_SE, base_stderrs=BASE_SE, run="run_1")}
    said = contradictions(
        "The results only showed a slight difference in test accuracy and train loss between the "
        "runs, but did not provide a more comprehensive analysis.",
        runs,
        None,
    )
    assert said is not None
    assert said.claims == (
        "the change in test accuracy is slight and the change in train loss is slight"
    )
    close = {"moons": {"test_accuracy_mean": 0.9301, "train_loss_mean": 0.1950}}
    within = {"run_1": effects(close, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")}
    assert contradictions("A slight decrease in test accuracy.", within, None) is None
    assert contradictions("Not a slight drop in test accuracy.", runs, None) is None


def test_the_moons_analysis_has_the_wrong_direction_and_two_invented_numbers():
    found = effects(FELL, BASE, stderrs=FELL_SE, base_stderrs=BASE_SE, run="run_1")
    sources = [Source(0.01, "run_1", "LEARNING_RATE", kind="config")]
    check = check_analysis(HAND_WRITTEN_MOONS_ANALYSIS, found, sources)
    assert [w.text for w in check.untraced] == ["0.8367", "0.02"]
    assert [w.text for w, _ in check.traced] == ["0.8047"], "run_1 is not a number"
    [wrong] = check.contradicted
    # "a slight improvement": slight it is not (14 % away), nor an improvement
    assert wrong.claims == "the change in test accuracy is slight and test accuracy improved"
    assert wrong.problem == (
        "You wrote that the change in test accuracy is slight and test accuracy improved, but "
        "run_1's test_accuracy_mean is 0.8047 against 0.9367 for run_0: worse by 0.132 (beyond "
        "noise ±0.013)."
    )
    problems = check.problems()
    assert len(problems) == 3 and "0.8367" in problems[0] and "0.02" in problems[1]
    assert "Contradicted" in check.markdown()


@pytest.mark.parametrize(
    "text",
    [
        "There was no improvement in test accuracy over the baseline.",
        "Run_1 did not improve test accuracy.",
        "The change is not significant.",
        "We see no significant change in any metric.",
        "Test accuracy didn't increase, and the training loss did not decrease.",
        "Doubling the width might improve accuracy in a longer run.",
        "The next run tries to improve accuracy with weight decay.",
        "We reduced the learning rate to 0.01 for run_1.",
        "The baseline achieved better accuracy than run_1.",
    ],
)
def test_negated_speculative_and_baseline_sentences_are_not_claims(text: str):
    found = effects(BASE, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    assert check_analysis(text, found, [Source(0.01, "run_1", "LEARNING_RATE", kind="config")]).ok


def test_a_correct_analysis_passes():
    found = effects(FELL, BASE, stderrs=FELL_SE, base_stderrs=BASE_SE, run="run_1")
    text = (
        "Run_1 is clearly worse: test accuracy dropped from 0.9367 to 0.8047 (-0.132, or "
        "-14.1%), far beyond the standard errors of 0.0052 and 0.0041, and the training loss "
        "rose to 0.3512. This decline is significant across the 3 seeds, so the change hurts."
    )
    check = check_analysis(text, found, [])
    assert check.ok, check.problems()
    assert "agrees with the effects" in check.markdown()


def test_lower_loss_is_an_improvement_and_higher_loss_is_not():
    improved = {"moons": {"test_accuracy_mean": 0.9367, "train_loss_mean": 0.1203}}
    found = effects(improved, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    assert check_analysis("Run_1 reaches a lower training loss.", found, []).ok
    assert check_analysis("The training loss improved.", found, []).ok
    [wrong] = check_analysis("The training loss increased.", found, []).contradicted
    assert "train_loss_mean is 0.1203 against 0.1930" in wrong.problem
    [identical] = check_analysis("Test accuracy increased.", found, []).contradicted
    assert identical.says.endswith("identical")


def test_a_small_claim_within_noise_passes_only_when_the_sentence_admits_the_noise():
    moved = {"moons": {"test_accuracy_mean": 0.9401, "train_loss_mean": 0.1930}}
    found = effects(moved, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    assert not check_analysis("Test accuracy improved.", found, []).ok
    assert check_analysis("Test accuracy improved slightly, within the noise.", found, []).ok
    [significant] = check_analysis("Test accuracy improved significantly.", found, []).contradicted
    assert "within noise" in significant.says
    assert not check_analysis("Test accuracy dropped slightly.", found, []).ok, (
        "hedging does not excuse the wrong direction"
    )


def test_values_described_within_noise_are_facts_and_percentages_are_traced():
    moved = {"moons": {"test_accuracy_mean": 0.9401, "train_loss_mean": 0.1930}}
    found = effects(moved, BASE, stderrs=BASE_SE, base_stderrs=BASE_SE, run="run_1")
    assert check_analysis("Test accuracy rose from 0.9367 to 0.9401 (0.4%).", found, []).ok
    assert not check_analysis("Test accuracy fell to 0.9401.", found, []).ok, "wrong direction"
    check = check_analysis("Test accuracy rose by 7% over 3 seeds.", found, [])
    assert [w.text for w in check.untraced] == ["7%"], "a percentage is a result, 3 a count"
