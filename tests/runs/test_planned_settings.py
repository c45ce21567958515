"""A planned run's settings, read from the plan's words, and whether an edit set them."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.recorded_replies import replies

from labtui.core.runs.planned_settings import (
    PlannedSetting,
    changes_nothing,
    planned_change_problems,
    planned_settings,
    unmade_settings,
)

DIFFUSION = Path(__file__).resolve().parents[2] / "templates" / "diffusion_2d" / "experiment.py"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("Change BETA_SCHEDULE to 'linear' in experiment.py", [("BETA_SCHEDULE", "'linear'")]),
        (
            "Set LEARNING_RATE to 1e-3 and EPOCHS to 300.",
            [("LEARNING_RATE", "1e-3"), ("EPOCHS", "300")],
        ),
        ("Change `BETA_SCHEDULE` from `cosine` to `linear`", [("BETA_SCHEDULE", "linear")]),
        ("HIDDEN_DIM = 256; DATA_NOISE -> 0.1", [("HIDDEN_DIM", "256"), ("DATA_NOISE", "0.1")]),
        ("set USE_EMA to False", [("USE_EMA", "False")]),
        ("Increase the width to 256", []),
        ("Double HIDDEN_UNITS", []),
    ],
)
def test_the_settings_a_plan_names(change: str, named: list[tuple[str, str]]) -> None:
    assert planned_settings(change) == [PlannedSetting(*pair) for pair in named]


def test_a_setting_left_at_another_value_is_named_with_both_values() -> None:
    code = {
        "experiment.py": 'BETA_SCHEDULE = "cosine"\nLEARNING_RATE: float = 0.01\n',
        "notes.md": "x",
    }
    assert unmade_settings("Change BETA_SCHEDULE to linear and LEARNING_RATE to 1e-3", code) == [
        "experiment.py still sets BETA_SCHEDULE = 'cosine'; the planned change sets it to 'linear'",
        "experiment.py still sets LEARNING_RATE = 0.01; the planned change sets it to 0.001",
    ]
    made = {"experiment.py": 'BETA_SCHEDULE = "linear"\nLEARNING_RATE: float = 0.001\n'}
    assert unmade_settings("Change BETA_SCHEDULE to linear and LEARNING_RATE to 1e-3", made) == []


def test_what_code_cannot_compare_is_never_refused() -> None:
    code = {"experiment.py": "EPOCHS = 100\nBROKEN = (\n"}  # does not parse: nothing to compare
    assert unmade_settings("Set EPOCHS to 300", code) == []
    code = {"experiment.py": "EPOCHS = 100\n"}
    assert unmade_settings("Set EPOCHS to three hundred", code) == [], "a word is no number"
    assert unmade_settings("Set WIDTH to 64", code) == [], "a setting the code does not define"


def test_a_real_small_models_plan_that_sets_the_baselines_own_value_changes_nothing() -> None:
    # Recorded (qwen15_diffusion_2d_no_entry_experiments.jsonl): the plan's run_1 was "Change
    # BETA_SCHEDULE to 'linear' in experiment.py", "compared to a cosine schedule"; the template's
    # schedule is linear. The model's edit changed comment rules and the --out_dir default and
    # said "BETA_SCHEDULE is set to 'linear'": true, and the run would have repeated run_0.
    (reply,) = replies("qwen15_diffusion_2d_no_entry_experiments")
    assert "BETA_SCHEDULE` is set to `'linear'`" in reply
    change = "Change BETA_SCHEDULE to 'linear' in experiment.py"
    baseline = {"experiment.py": DIFFUSION.read_text(encoding="utf-8")}
    assert changes_nothing(change, baseline) == (
        "experiment.py already sets BETA_SCHEDULE = 'linear': the run would repeat the baseline"
    )
    assert changes_nothing("Change BETA_SCHEDULE to 'cosine'", baseline) == ""
    assert changes_nothing("Set BETA_SCHEDULE to linear and NUM_TIMESTEPS to 50", baseline) == ""
    assert changes_nothing("Use a cosine schedule", baseline) == "", "no setting named"
    new = reply.split("```python\n", 1)[1].split("\n```", 1)[0]
    assert unmade_settings(change, {"experiment.py": new}) == []
    assert unmade_settings("Set BETA_SCHEDULE to 'cosine'", {"experiment.py": new}) == [
        "experiment.py still sets BETA_SCHEDULE = 'linear'; the planned change sets it to 'cosine'"
    ]


def test_an_edit_that_leaves_every_named_setting_as_it_was_makes_no_planned_change() -> None:
    # The diffusion_2d bench at 7b91d34: the plan was "Modify the `BETA_START` and `BETA_END`
    # values to achieve the desired gradient flow"; the 1.5B model's edit changed comment rules
    # and the --out_dir default only, and run_1 repeated the baseline.
    change = "Modify the `BETA_START` and `BETA_END` values to achieve the desired gradient flow."
    before = {"experiment.py": DIFFUSION.read_text(encoding="utf-8")}
    comments_only = {"experiment.py": before["experiment.py"].replace("# ----", "# --")}
    assert planned_change_problems(change, before, comments_only) == [
        "the edit left BETA_START = 0.0001, BETA_END = 0.02 as it was, and the plan changes them"
    ]
    one_changed = {
        "experiment.py": before["experiment.py"].replace("BETA_END = 0.02", "BETA_END = 0.05")
    }
    assert planned_change_problems(change, before, one_changed) == []
    assert planned_change_problems("Use a wider denoiser", before, comments_only) == []
