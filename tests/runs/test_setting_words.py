"""Settings said in words are read by code only when the words say nothing else."""

from pathlib import Path

import pytest

from labtui.core.runs.setting_changes import project_settings
from labtui.core.runs.setting_words import settings_in_words

MOONS = Path(__file__).parents[2] / "templates" / "moons"


@pytest.mark.parametrize(
    ("words", "settings"),
    [
        ("HIDDEN_UNITS = 128", {"HIDDEN_UNITS": 128}),  # the 1.5B model's plan, issue 42
        (
            "Set LEARNING_RATE to 0.1 and HIDDEN_UNITS to 64",
            {"LEARNING_RATE": 0.1, "HIDDEN_UNITS": 64},
        ),
        ("Increase HIDDEN_UNITS from 32 to 128.", {"HIDDEN_UNITS": 128}),
        ("ACTIVATION: relu", {"ACTIVATION": "relu"}),
        ("`ADAM_BETAS` = (0.8, 0.99)", {"ADAM_BETAS": (0.8, 0.99)}),
        ("Change HIDDEN_UNITS to 8 and add dropout with p=0.1", {}),  # more than settings
        ("Set ACTIVATION to 'gelu'", {}),  # not one of its choices: the coder's
        ("Set HIDDEN_UNITS to 64.5", {}),  # not an int
        ("Use a cosine learning-rate schedule", {}),
    ],
)
def test_words_that_are_only_settings_are_those_settings(words, settings):
    assert settings_in_words(words, project_settings(MOONS, ["experiment.py"])) == settings


def test_a_setting_named_in_words_as_the_1_5b_model_writes_it():
    # its climb proposal's description (issue 42's bench): the setting by its words
    settings = project_settings(MOONS, ["experiment.py"])
    assert settings_in_words("Change the number of hidden units to 64.", settings) == {
        "HIDDEN_UNITS": 64
    }
    assert settings_in_words("Set the learning rate to 0.05", settings) == {"LEARNING_RATE": 0.05}
    why = "Decrease the number of hidden units to 64. This can reduce the capacity"
    assert settings_in_words(why, settings) == {}, "its change says more than the setting"
