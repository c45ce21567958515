"""Which settings a search may change, and the settings steps labtui proposes by itself when the
model gives none it can use (core/search/search_settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.core.answers.setting_answers import offered
from labtui.core.runs.setting_changes import project_settings
from labtui.core.search.search_settings import (
    block_headings,
    defines_the_measure,
    heading_above,
    labtui_proposal,
    nearby_values,
)
from labtui.core.source.setting_edit import python_editables

CODE = """\
HIDDEN_UNITS = 32
LEARNING_RATE = 1e-3
MOMENTUM = 0.9
DROPOUT = 0.1
WEIGHT_DECAY = 0.0
WARMUP = 0
USE_BN = True
ACTIVATION = "relu"  # "relu" or "tanh"
NAME = "mlp"
N_TEST = 1000
DATA_SEED = 0
LOG_EVERY = 10
"""


@pytest.fixture
def settings():
    return {s.name: s for s in python_editables(CODE, "experiment.py")}


@pytest.mark.parametrize(
    "name",
    ["N_TEST", "N_SEEDS", "DATA_SEED", "DATA_NOISE", "LOG_EVERY", "evalEvery", "output_dir",
     "eval.batch_size", "val_fraction", "CURVE_EVERY"],
)  # fmt: skip
def test_settings_that_define_the_measurement_are_not_a_searchs(name):
    assert defines_the_measure(name)


@pytest.mark.parametrize(
    "name",
    ["HIDDEN_UNITS", "lr", "DROPOUT", "trainer.max_steps", "BATCH_SIZE", "N_TRAIN",
     "BETA_SCHEDULE", "outer_lr", "NOISE_SCHEDULE"],
)  # fmt: skip
def test_settings_of_the_method_are_a_searchs(name):
    assert not defines_the_measure(name)


def test_nearby_values_nearest_first_and_of_the_settings_kind(settings):
    assert nearby_values(settings["HIDDEN_UNITS"])[:6] == [64, 16, 48, 24, 128, 8]
    assert nearby_values(settings["HIDDEN_UNITS"])[-4:] == [33, 31, 34, 30], "then beside it"
    assert nearby_values(settings["LEARNING_RATE"])[:4] == [0.002, 0.0005, 0.0015, 0.00075]
    # a fraction near 1 moves by its distance to 1, and stays a fraction
    assert nearby_values(settings["MOMENTUM"])[:4] == [0.8, 0.95, 0.85, 0.925]
    assert all(0 < v < 1 for v in nearby_values(settings["MOMENTUM"]))
    assert all(0 < v < 1 for v in nearby_values(settings["DROPOUT"]))
    assert nearby_values(settings["WEIGHT_DECAY"]) == [0.1, 0.01, 0.3, 0.001]
    assert nearby_values(settings["WARMUP"]) == [1, 2, 4, 8, 16]
    assert nearby_values(settings["USE_BN"]) == [False]
    assert nearby_values(settings["ACTIVATION"]) == ["tanh"]
    assert nearby_values(settings["NAME"]) == [], "a text without choices has no neighbour"


def test_labtuis_step_moves_the_setting_changed_least_to_its_nearest_new_value(settings):
    offered = [settings["HIDDEN_UNITS"], settings["DROPOUT"]]
    ran = [{"HIDDEN_UNITS": 64}, {"DROPOUT": 0.2}]
    proposal = labtui_proposal(
        offered,
        "settings: HIDDEN_UNITS = 64; settings: HIDDEN_UNITS = 128; settings: DROPOUT = 0.2",
        lambda wanted: wanted not in ran,
        "step 3 already tried it",
    )
    assert proposal is not None
    assert proposal.chosen_settings == {"DROPOUT": 0.05}
    assert proposal.description == "Set DROPOUT from 0.1 to 0.05 (labtui's step)"
    assert "step 3 already tried it" in proposal.change


def test_no_step_when_every_nearby_value_has_run(settings):
    assert labtui_proposal([settings["USE_BN"]], "", lambda wanted: False, "why") is None
    assert labtui_proposal([settings["NAME"]], "", lambda wanted: True, "why") is None


@pytest.mark.parametrize(
    ("template", "method"),
    [
        ("moons", ["HIDDEN_UNITS", "ACTIVATION", "OPTIMIZER", "LEARNING_RATE", "MOMENTUM",
                   "BATCH_SIZE", "EPOCHS", "WEIGHT_DECAY", "ADAM_BETAS", "ADAM_EPS"]),
        ("diffusion_2d", ["NUM_TIMESTEPS", "BETA_SCHEDULE", "BETA_START", "BETA_END",
                          "EMBEDDING_DIM", "INPUT_EMBEDDING_SCALE", "HIDDEN_DIM", "HIDDEN_LAYERS",
                          "TRAIN_STEPS", "BATCH_SIZE", "LEARNING_RATE", "WEIGHT_DECAY",
                          "LR_SCHEDULE", "GRAD_CLIP", "EMA_DECAY"]),
    ],
)  # fmt: skip
def test_a_templates_data_evaluation_and_seed_blocks_are_not_searched(template, method):
    # labtui's own steps in the first real climb set N_TRAIN, NOISE and LABEL_NOISE (under
    # "# Data"): a climb must not make the task easier
    root = Path(__file__).parents[2] / "templates" / template
    found = offered(project_settings(root, ["experiment.py"]))
    headings = block_headings(root, found)
    kept = [s.name for s in found if not defines_the_measure(s.name, headings.get(s.name, ""))]
    assert kept == method


def test_a_heading_closes_at_a_blank_line_or_a_rule():
    lines = ["# Data", "N = 1", "", "LR = 0.1", "# ----", "X = 2", "# Model", "# wide", "W = 3"]
    assert heading_above(lines, 1) == "Data"
    assert heading_above(lines, 3) == "", "a blank line ends the block"
    assert heading_above(lines, 5) == "", "a rule of dashes ends it too"
    assert heading_above(lines, 8) == "wide", "the nearest comment line heads it"
