"""The settings a script sets, read from its code by name and value: module-level constants of
any case and argparse defaults, which the paper's Experimental Setup states and its numbers
trace to."""

from __future__ import annotations

import math

from labtui.core.source.parse import parse_code
from labtui.core.source.script_settings import (
    Constant,
    Setting,
    module_constants,
    script_settings,
    without_setting_values,
)

SCRIPT = '''"""A toy experiment."""
import argparse
import math

__version__ = "1.0"
N_FEATURES = 64
n_layers: int = 3
lr = 1e-3
SCHEDULE = "cosine"
USE_EMA = True
CHECKPOINT = None
HIDDEN = (64, 64)
INFINITE = math.inf
model = build(N_FEATURES)  # no literal: no setting
seeds = 1
seeds = 5  # the last assignment wins, in the place of the first
width = 8
width = compute(width)  # a last assignment that is no literal leaves no value
a, b = 1, 2  # unpacked: no value of its own


def main():
    local = 3  # not at the module's top level
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4, help="learning rate")
    parser.add_argument("-e", "--num-epochs", type=int, default=20)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--use_amp", action="store_true")
    parser.add_argument("--resume", default=None)
    parser.add_argument("--out_dir")
    parser.add_argument("--betas", default=(0.9, 0.999))
    return parser.parse_args()
'''


def _by_name(settings: list[Setting]) -> dict[str, Setting]:
    return {s.name: s for s in settings}


def test_the_constants_of_any_case_with_their_values_and_lines() -> None:
    constants = [s for s in script_settings(SCRIPT) if s.kind == "constant"]
    assert [(s.name, s.value) for s in constants] == [
        ("N_FEATURES", 64),
        ("n_layers", 3),
        ("lr", 1e-3),
        ("SCHEDULE", "cosine"),
        ("USE_EMA", True),
        ("CHECKPOINT", None),
        ("HIDDEN", (64, 64)),
        ("INFINITE", math.inf),
        ("seeds", 5),
    ]
    found = _by_name(constants)
    assert found["N_FEATURES"].line == 6 and found["seeds"].line == 16, "the last assignment's"
    assert found["n_layers"] == Setting("n_layers", 3, "constant", 7)


def test_the_argparse_defaults_by_dest_with_the_long_flag_in_source_order() -> None:
    options = [s for s in script_settings(SCRIPT) if s.kind == "option"]
    assert [(s.name, s.value, s.flag) for s in options] == [
        ("lr", 3e-4, "--lr"),
        ("num_epochs", 20, "--num-epochs"),
        ("optimizer", "adam", "--optimizer"),
        ("use_amp", False, "--use_amp"),
        ("betas", (0.9, 0.999), "--betas"),
    ], "an option without a default, or default=None, sets nothing"
    assert options[0].line == 25 and isinstance(options[0].value, float)


def test_constants_come_before_options_and_a_setting_is_a_record() -> None:
    settings = script_settings(SCRIPT)
    kinds = [s.kind for s in settings]
    assert kinds == sorted(kinds, key=["constant", "option"].index)
    assert Setting("x", 1, "constant", 1) == Setting("x", 1, "constant", 1, "")


def test_code_that_does_not_parse_has_no_settings() -> None:
    assert script_settings("EPOCHS = 10\ndef broken(:\n") == []
    assert script_settings("") == []
    assert script_settings("\0") == []


def test_only_the_numbers_are_constants_for_the_survey() -> None:
    assert module_constants(parse_code(SCRIPT)) == [
        Constant("N_FEATURES", 64, 6),
        Constant("n_layers", 3, 7),
        Constant("lr", 1e-3, 8),
        Constant("INFINITE", math.inf, 13),
        Constant("seeds", 5, 16),
    ], "a switch is no count, a string no number"
    assert module_constants(None) == []
    [epochs] = module_constants(parse_code('epochs = float("inf")\n'))
    assert epochs.value == math.inf


def test_two_versions_that_differ_only_in_settings_compare_equal() -> None:
    changed = SCRIPT.replace("N_FEATURES = 64", "N_FEATURES = 512  # wider").replace(
        "default=3e-4", "default=1e-3"
    )
    assert without_setting_values(changed) == without_setting_values(SCRIPT)
    code_changed = SCRIPT.replace("local = 3", "local = 4\n    print(local)")
    assert without_setting_values(code_changed) != without_setting_values(SCRIPT)
    assert without_setting_values("def broken(:\n") is None
