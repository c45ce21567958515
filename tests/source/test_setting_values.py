"""A setting's new value checked against its type and choices, a setting found by the name a
plan gives it, and a value written in the old literal's style."""

from __future__ import annotations

from typing import Any

import pytest

from labtui.core.source.setting_edit import (
    Editable,
    SettingError,
    check_value,
    find_setting,
    literal_text,
)


def _setting(value: Any, kind: Any, choices: tuple[Any, ...] = ()) -> Editable:
    return Editable("X", value, kind, "experiment.py", "constant", choices, 1)


@pytest.mark.parametrize(
    ("setting", "given", "taken"),
    [
        (_setting(32, "int"), 64, 64),
        (_setting(32, "int"), 64.0, 64),
        (_setting(0.1, "float"), 1, 1.0),
        (_setting(True, "bool"), False, False),
        (_setting("a", "str"), "b", "b"),
        (_setting([1, 2], "list"), (3,), [3]),
        (_setting((0.9, 0.999), "tuple"), [1, 0.99], (1.0, 0.99)),
        (_setting({"a": 1}, "dict"), {"b": 2}, {"b": 2}),
        (_setting(None, "none"), [1, "a"], [1, "a"]),
    ],
)
def test_a_value_is_taken_as_the_settings_type(setting: Editable, given: Any, taken: Any) -> None:
    checked = check_value(setting, given)
    assert checked == taken and type(checked) is type(taken)


@pytest.mark.parametrize(
    ("setting", "given"),
    [
        (_setting(32, "int"), "64"),
        (_setting(32, "int"), 0.5),
        (_setting(32, "int"), True),
        (_setting(0.1, "float"), float("inf")),
        (_setting(True, "bool"), "true"),
        (_setting(True, "bool"), 1),
        (_setting("a", "str"), 3),
        (_setting([1, 2], "list"), "1,2"),
        (_setting([1, 2], "list"), [1, "x"]),
        (_setting("adam", "str", ("adam", "sgd")), "rmsprop"),
    ],
)
def test_a_value_of_another_type_is_refused(setting: Editable, given: Any) -> None:
    with pytest.raises(SettingError, match=r"^X in experiment.py "):
        check_value(setting, given)


def test_three_choices_are_named() -> None:
    setting = _setting("a", "str", ("a", "b", "c"))
    with pytest.raises(SettingError, match=r"takes 'a', 'b' or 'c'; 'd' is none of them"):
        check_value(setting, "d")


def test_a_setting_is_found_by_the_name_a_plan_gives() -> None:
    lr = Editable("lr", 0.1, "float", "train.py", "option")
    flag = Editable("--n-layers", 2, "int", "command", "command")
    width = Editable("Width", 8, "int", "train.py", "constant")
    settings = [lr, flag, width]
    assert find_setting(settings, "--lr") is lr
    assert find_setting(settings, "n_layers") is flag
    assert find_setting(settings, "WIDTH") is width
    twice = [width, Editable("WIDTH", 9, "int", "train.py", "constant", line=4)]
    assert find_setting(twice, "WIDTH") is twice[1]
    with pytest.raises(SettingError, match=r"'width' names several settings"):
        find_setting(twice, "width")


@pytest.mark.parametrize(
    ("value", "like", "syntax", "text"),
    [
        (0.001, "0.01", "python", "0.001"),
        (0.0005, "1e-3", "python", "5e-4"),
        (2.5e-5, "1E-3", "python", "2.5E-5"),
        (100000.0, "1e+3", "python", "1e+5"),
        ("x", "'a'", "python", "'x'"),
        ('say "hi"', '"a"', "python", '"say \\"hi\\""'),
        ("a\nb", '"a"', "python", '"a\\nb"'),
        ((1,), "(2, 3)", "python", "(1,)"),
        (1_000_000, "10_000", "python", "1_000_000"),
        (None, "0", "python", "None"),
        (0.0005, "1.0e-3", "yaml", "5.0e-4"),
        (True, "yes", "yaml", "true"),
        ("on", "plain", "yaml", '"on"'),
        (None, "1", "json", "null"),
        (["a", "b"], "[]", "toml", '["a", "b"]'),
        ("a b", "x", "command", "'a b'"),
        (True, "False", "command", "True"),
    ],
)
def test_a_value_is_written_as_the_old_literal_was(
    value: Any, like: str, syntax: Any, text: str
) -> None:
    assert literal_text(value, like, syntax) == text


def test_toml_has_no_null() -> None:
    with pytest.raises(SettingError, match="TOML has no null"):
        literal_text(None, "1", "toml")
