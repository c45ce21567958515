"""A plan's "set HIDDEN_UNITS to 64" applied by code: the script's text comes back with that one
value's span rewritten and every other character as it was (comments, quotes, layout, line
endings, non-ASCII text), or a SettingError that names the setting, the file and the fix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from labtui.core.source.setting_edit import (
    Editable,
    SettingError,
    find_setting,
    python_editables,
    set_python_setting,
)

MOONS = Path(__file__).parents[2] / "templates/moons/experiment.py"

SCRIPT = '''"""A toy experiment."""
import argparse
import math
from dataclasses import dataclass, field

__version__ = "1.0"
HIDDEN_UNITS = 32  # width
EPOCHS: int = 200
WARMUP = -1
LR = 3e-4
SCHEDULE = 'cosine'
ADAM_BETAS = (0.9, 0.999)
LAYERS = [
    64,
    64,
]
SEEDS = 1
SEEDS = 5  # the last assignment is the one in force
MAX_STEPS = math.inf
WIDTH = 8
WIDTH = compute(WIDTH)
A = B = 0


@dataclass
class TrainConfig:
    lr: float = 3e-4
    warmup: int = field(default=100)
    betas: tuple = field(default_factory=lambda: (0.9, 0.99))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--out_dir")
    return parser.parse_args()
'''


def _set(code: str, name: str, value: object, file: str = "experiment.py") -> str:
    setting = find_setting(python_editables(code, file), name)
    new = set_python_setting(code, setting, value)
    ast.parse(new)
    return new


def _by_name(code: str) -> dict[str, Editable]:
    return {s.name: s for s in python_editables(code, "experiment.py")}


def test_the_settings_a_script_spells_as_literals() -> None:
    settings = _by_name(SCRIPT)
    assert list(settings) == [
        "HIDDEN_UNITS",
        "EPOCHS",
        "WARMUP",
        "LR",
        "SCHEDULE",
        "ADAM_BETAS",
        "LAYERS",
        "SEEDS",
        "lr",
        "optimizer",
        "TrainConfig.lr",
        "TrainConfig.warmup",
    ]
    assert settings["SEEDS"] == Editable("SEEDS", 5, "int", "experiment.py", "constant", line=18)
    assert settings["optimizer"].choices == ("adam", "sgd")
    assert settings["TrainConfig.lr"].kind == "field"
    assert settings["lr"].kind == "option"


def test_a_constant_with_a_comment_on_its_line() -> None:
    new = _set(SCRIPT, "HIDDEN_UNITS", 64)
    assert new == SCRIPT.replace("HIDDEN_UNITS = 32  # width", "HIDDEN_UNITS = 64  # width")


def test_an_annotated_constant() -> None:
    assert _set(SCRIPT, "EPOCHS", 50) == SCRIPT.replace("EPOCHS: int = 200", "EPOCHS: int = 50")


def test_a_negative_constant_is_one_span() -> None:
    assert _set(SCRIPT, "WARMUP", -10) == SCRIPT.replace("WARMUP = -1", "WARMUP = -10")
    assert _set(SCRIPT, "WARMUP", 5) == SCRIPT.replace("WARMUP = -1", "WARMUP = 5")


def test_a_float_in_scientific_notation_stays_in_it() -> None:
    assert _set(SCRIPT, "LR", 1e-3) == SCRIPT.replace("LR = 3e-4", "LR = 1e-3")
    assert _set(SCRIPT, "LR", 0.00025) == SCRIPT.replace("LR = 3e-4", "LR = 2.5e-4")


def test_a_string_keeps_its_quotes() -> None:
    new = _set(SCRIPT, "SCHEDULE", "linear")
    assert new == SCRIPT.replace("SCHEDULE = 'cosine'", "SCHEDULE = 'linear'")
    new = _set(SCRIPT, "SCHEDULE", "it's")
    assert new == SCRIPT.replace("SCHEDULE = 'cosine'", "SCHEDULE = 'it\\'s'")


def test_a_tuple() -> None:
    new = _set(SCRIPT, "ADAM_BETAS", (0.8, 0.99))
    assert new == SCRIPT.replace("ADAM_BETAS = (0.9, 0.999)", "ADAM_BETAS = (0.8, 0.99)")
    # a plan's JSON has no tuple: a list for a tuple is taken as one
    assert _set(SCRIPT, "ADAM_BETAS", [0.8, 0.99]) == new


def test_a_list_over_several_lines_stays_laid_out() -> None:
    new = _set(SCRIPT, "LAYERS", [128, 128, 64])
    old_list = "LAYERS = [\n    64,\n    64,\n]"
    assert new == SCRIPT.replace(old_list, "LAYERS = [\n    128,\n    128,\n    64,\n]")


def test_the_last_assignment_is_the_one_edited() -> None:
    new = _set(SCRIPT, "SEEDS", 3)
    assert new == SCRIPT.replace("SEEDS = 5  # the last", "SEEDS = 3  # the last")


def test_values_that_are_no_literal_are_no_settings() -> None:
    settings = _by_name(SCRIPT)
    # math.inf, a last assignment by a call, a value shared by two names, a dunder, a factory
    for name in ("MAX_STEPS", "WIDTH", "A", "B", "__version__", "TrainConfig.betas", "out_dir"):
        assert name not in settings


def test_an_argparse_default() -> None:
    new = _set(SCRIPT, "--lr", 1e-3)
    assert new == SCRIPT.replace(
        'add_argument("--lr", type=float, default=3e-4,',
        'add_argument("--lr", type=float, default=1e-3,',
    )


def test_an_argparse_option_refuses_what_its_choices_do_not_name() -> None:
    new = _set(SCRIPT, "optimizer", "sgd")
    assert new == SCRIPT.replace('default="adam")', 'default="sgd")')
    with pytest.raises(SettingError, match=r"optimizer in experiment.py takes 'adam' or 'sgd'"):
        _set(SCRIPT, "optimizer", "rmsprop")


def test_an_option_without_a_default_is_set_on_the_command_only() -> None:
    with pytest.raises(SettingError, match=r"experiment.py has no setting 'out_dir'"):
        _set(SCRIPT, "out_dir", "runs")


def test_a_dataclass_field_default() -> None:
    new = _set(SCRIPT, "TrainConfig.lr", 1e-3)
    assert new == SCRIPT.replace("    lr: float = 3e-4", "    lr: float = 1e-3")
    new = _set(SCRIPT, "TrainConfig.warmup", 500)
    assert new == SCRIPT.replace("field(default=100)", "field(default=500)")


def test_a_pydantic_field() -> None:
    code = "from pydantic import BaseModel, Field\n\nclass Opt(BaseModel):\n    lr: float = Field(1, gt=0)\n"
    setting = _by_name(code)["Opt.lr"]
    assert (setting.value, setting.type) == (1, "float")  # the annotation says float
    assert _set(code, "Opt.lr", 0.5) == code.replace("Field(1, gt=0)", "Field(0.5, gt=0)")


def test_a_setting_that_does_not_exist_lists_the_settings() -> None:
    with pytest.raises(SettingError) as caught:
        _set(SCRIPT, "HIDEN_UNITS", 64)
    assert str(caught.value).startswith(
        "experiment.py has no setting 'HIDEN_UNITS' (did you mean HIDDEN_UNITS?); its settings "
        "are: HIDDEN_UNITS (int, 32), EPOCHS (int, 200), WARMUP (int, -1),"
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("HIDDEN_UNITS", "sixty-four", "HIDDEN_UNITS in experiment.py is an int (now 32); "),
        ("HIDDEN_UNITS", 0.5, "HIDDEN_UNITS in experiment.py is an int (now 32); 0.5 is not"),
        ("ADAM_BETAS", (0.9, "x"), "ADAM_BETAS in experiment.py is a tuple of floats"),
        ("SCHEDULE", 3, "SCHEDULE in experiment.py is a string"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(name: str, value: object, message: str) -> None:
    with pytest.raises(SettingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _set(SCRIPT, name, value)


def test_an_int_given_as_a_whole_float_is_an_int() -> None:
    assert _set(SCRIPT, "HIDDEN_UNITS", 64.0) == _set(SCRIPT, "HIDDEN_UNITS", 64)


def test_a_bool_takes_a_bool_only() -> None:
    code = "USE_EMA = True\n"
    assert _set(code, "USE_EMA", False) == "USE_EMA = False\n"
    with pytest.raises(SettingError, match=r"USE_EMA in experiment.py is a bool"):
        _set(code, "USE_EMA", "true")


def test_choices_stated_in_the_comment() -> None:
    code = 'ACTIVATION = "tanh"  # "tanh" or "relu"\n'
    assert _set(code, "ACTIVATION", "relu") == 'ACTIVATION = "relu"  # "tanh" or "relu"\n'
    with pytest.raises(SettingError) as caught:
        _set(code, "ACTIVATION", "gelu")
    assert str(caught.value) == (
        "ACTIVATION in experiment.py takes 'tanh' or 'relu'; 'gelu' is neither"
    )


def test_non_ascii_text_and_crlf_line_endings_are_kept() -> None:
    code = (
        '"""Entraînement: réseau à deux couches."""\r\n'
        'TITRE = "modèle ünïcode"  # « titre »\r\n'
        "TAUX = 1e-3  # taux d’apprentissage → petit\r\n"
        "ÉPOQUES = 10\r\n"
    )
    new = _set(code, "TAUX", 5e-4)
    assert new == code.replace("TAUX = 1e-3  #", "TAUX = 5e-4  #")
    new = _set(code, "TITRE", "modèle ø")
    assert new == code.replace('"modèle ünïcode"', '"modèle ø"')
    assert _set(code, "ÉPOQUES", 20) == code.replace("ÉPOQUES = 10", "ÉPOQUES = 20")


def test_a_multiline_list_keeps_crlf() -> None:
    code = "SIZES = [\r\n    1,\r\n    2,\r\n]\r\nNEXT = 1\r\n"
    assert _set(code, "SIZES", [3]) == "SIZES = [\r\n    3,\r\n]\r\nNEXT = 1\r\n"


def test_a_script_that_does_not_parse_says_so() -> None:
    with pytest.raises(SettingError, match=r"broken.py does not parse \(line 1\)"):
        python_editables("X = (\n", "broken.py")


def test_a_setting_read_from_an_older_text_is_refused() -> None:
    setting = _by_name(SCRIPT)["HIDDEN_UNITS"]
    changed = SCRIPT.replace("HIDDEN_UNITS = 32", "HIDDEN_UNITS = 48")
    with pytest.raises(SettingError, match=r"is 48 now, not 32 as it was read"):
        set_python_setting(changed, setting, 64)


def test_the_moons_template() -> None:
    code = MOONS.read_text(encoding="utf-8")
    settings = _by_name(code)
    assert settings["ACTIVATION"].choices == ("tanh", "relu")
    assert settings["OPTIMIZER"].choices == ("adam", "sgd")
    assert _set(code, "HIDDEN_UNITS", 64) == code.replace(
        "HIDDEN_UNITS = 32\n", "HIDDEN_UNITS = 64\n"
    )
    assert _set(code, "ADAM_BETAS", (0.8, 0.99)) == code.replace(
        "ADAM_BETAS = (0.9, 0.999)", "ADAM_BETAS = (0.8, 0.99)"
    )
    assert _set(code, "ADAM_EPS", 1e-6) == code.replace("ADAM_EPS = 1e-8", "ADAM_EPS = 1e-6")
    assert _set(code, "ACTIVATION", "relu") == code.replace(
        'ACTIVATION = "tanh"  # "tanh" or "relu"', 'ACTIVATION = "relu"  # "tanh" or "relu"'
    )
    with pytest.raises(SettingError, match=r"takes 'tanh' or 'relu'; 'gelu' is neither"):
        _set(code, "ACTIVATION", "gelu")
    assert _set(code, "out_dir", "run_1") == code.replace('default="run_0"', 'default="run_1"')
