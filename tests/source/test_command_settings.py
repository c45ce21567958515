"""The settings a run's command line gives, edited exactly: an option's value, written after a
space or an equals sign, and a Hydra override; placeholders labtui fills in, switches and the
shell's own words are no settings."""

from __future__ import annotations

import pytest

from labtui.core.source.setting_edit import (
    Editable,
    SettingError,
    command_editables,
    find_setting,
    set_command_setting,
)

COMMAND = "python train.py --lr 3e-4 --epochs=20 --out_dir {out_dir} --amp --name 'my run'"
HYDRA = "python train.py trainer.max_steps=500 +model.depth=4 ++optim.name=adam ~logger"


def _set(command: str, name: str, value: object) -> str:
    return set_command_setting(command, find_setting(command_editables(command), name), value)


def test_the_options_with_values() -> None:
    assert command_editables(COMMAND) == [
        Editable("--lr", 3e-4, "float", "command", "command"),
        Editable("--epochs", 20, "int", "command", "command"),
        Editable("--name", "my run", "str", "command", "command"),
    ]  # not --out_dir (a placeholder labtui fills in) nor --amp (a switch)


def test_an_option_after_a_space_or_an_equals_sign() -> None:
    assert _set(COMMAND, "--lr", 1e-3) == COMMAND.replace("--lr 3e-4", "--lr 1e-3")
    assert _set(COMMAND, "lr", 1e-3) == COMMAND.replace("--lr 3e-4", "--lr 1e-3")
    assert _set(COMMAND, "epochs", 50) == COMMAND.replace("--epochs=20", "--epochs=50")
    assert _set(COMMAND, "--name", "run two") == COMMAND.replace("'my run'", "'run two'")
    assert _set(COMMAND, "--name", "plain") == COMMAND.replace("'my run'", "plain")


def test_hydra_overrides() -> None:
    settings = {s.name: s.value for s in command_editables(HYDRA)}
    assert settings == {"trainer.max_steps": 500, "model.depth": 4, "optim.name": "adam"}
    edited = _set(HYDRA, "trainer.max_steps", 1000)
    assert edited == HYDRA.replace("trainer.max_steps=500", "trainer.max_steps=1000")
    assert _set(HYDRA, "+model.depth", 8) == HYDRA.replace("+model.depth=4", "+model.depth=8")


def test_the_environment_and_the_shell_are_no_settings() -> None:
    command = "CUDA_VISIBLE_DEVICES=0 python train.py --seed -1 --bf16 true 2>&1 | tee log.txt"
    settings = {s.name: s.value for s in command_editables(command)}
    assert settings == {"--seed": -1, "--bf16": True}
    assert _set(command, "seed", 3) == command.replace("--seed -1", "--seed 3")
    assert _set(command, "bf16", False) == command.replace("--bf16 true", "--bf16 false")


def test_the_last_of_an_option_given_twice_is_the_one_in_force() -> None:
    command = "python train.py --lr 0.1 --lr 0.2"
    assert [s.value for s in command_editables(command)] == [0.2]
    assert _set(command, "lr", 0.3) == "python train.py --lr 0.1 --lr 0.3"


def test_a_command_value_is_checked() -> None:
    with pytest.raises(SettingError, match=r"--epochs on the command is an int \(now 20\)"):
        _set(COMMAND, "--epochs", "many")
    with pytest.raises(SettingError, match=r"the command has no setting '--out_dir'"):
        _set(COMMAND, "--out_dir", "runs")


def test_a_value_that_would_not_read_back_is_refused() -> None:
    with pytest.raises(SettingError, match=r"--name on the command written as .* would not read"):
        _set(COMMAND, "--name", "{out}")  # a placeholder, no setting, once written
