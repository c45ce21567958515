"""A config file's settings edited exactly: a Hydra-like YAML config, a JSON file and a TOML
file, each value found by its dotted key path and replaced in the style it was written in, the
comments and layout around it kept."""

from __future__ import annotations

import json
import tomllib

import pytest
import yaml

from labtui.core.source.setting_edit import (
    SettingError,
    config_editables,
    find_setting,
    set_config_setting,
)

HYDRA = """# @package _global_
defaults:
  - model: mlp
  - optimizer: adam
  - _self_

seed: 42
trainer:
  max_steps: 500  # the paper's 5k is too slow on a laptop
  lr: 1e-3
  precision: "bf16-mixed"
  gradient_clip_val: 0.5
  devices: [0, 1]
  log_every_n_steps: 50
  enable_progress_bar: true
  run_name: baseline run
model:
  depth: &depth 4
  head_depth: *depth
  width: ${trainer.max_steps}
  dataset_path: ???
  activation: 'gelu'
  checkpoint:
  schedule:
    - warmup
    - cosine
"""

JSON = """{
  "model": {
    "depth": 4,
    "dims": [64, 64],
    "name": "mlp"
  },
  "optimizer": {"lr": 3e-4, "betas": [0.9, 0.999]},
  "epochs": 20
}
"""

TOML = """# the project's training settings
name = "moons"

[train]
lr = 3e-4  # Adam's default is 1e-3
steps = 10_000
tags = ["baseline", 'cpu']

[model]
depth = 4
activation = 'tanh'
sizes = [
    64,  # the first layer
    64,
]
"""


def _set(text: str, file: str, name: str, value: object) -> str:
    return set_config_setting(text, find_setting(config_editables(text, file), name), value)


def test_the_leaves_of_a_hydra_config() -> None:
    settings = {s.name: s for s in config_editables(HYDRA, "conf/config.yaml")}
    assert {name: s.value for name, s in settings.items()} == {
        "seed": 42,
        "trainer.max_steps": 500,
        "trainer.lr": 1e-3,  # a float, as OmegaConf reads it (PyYAML alone reads a string)
        "trainer.precision": "bf16-mixed",
        "trainer.gradient_clip_val": 0.5,
        "trainer.devices": [0, 1],
        "trainer.log_every_n_steps": 50,
        "trainer.enable_progress_bar": True,
        "trainer.run_name": "baseline run",
        "model.activation": "gelu",
    }  # not: the defaults list, an anchor and its alias, ${…}, ???, an empty value, a block list
    assert settings["trainer.max_steps"].line == 9
    assert settings["trainer.max_steps"].kind == "config"
    assert settings["trainer.max_steps"].where == "conf/config.yaml"


@pytest.mark.parametrize(
    ("name", "value", "old", "new"),
    [
        ("trainer.max_steps", 1000, "max_steps: 500  # the", "max_steps: 1000  # the"),
        ("trainer.lr", 5e-4, "lr: 1e-3\n", "lr: 5e-4\n"),
        ("trainer.precision", "16-mixed", 'precision: "bf16-mixed"', 'precision: "16-mixed"'),
        ("trainer.devices", [0], "devices: [0, 1]", "devices: [0]"),
        ("trainer.enable_progress_bar", False, "bar: true", "bar: false"),
        ("trainer.run_name", "ablation run", "name: baseline run", "name: ablation run"),
        ("trainer.run_name", "yes", "name: baseline run", 'name: "yes"'),  # not a bool
        ("model.activation", "relu", "activation: 'gelu'", "activation: 'relu'"),
        ("seed", 7, "seed: 42", "seed: 7"),
    ],
)
def test_a_yaml_value_is_replaced_in_its_style(
    name: str, value: object, old: str, new: str
) -> None:
    edited = _set(HYDRA, "conf/config.yaml", name, value)
    assert edited == HYDRA.replace(old, new, 1)


def test_a_yaml_float_is_written_so_pyyaml_reads_a_float() -> None:
    text = "optim:\n  lr: 0.001  # tuned\n  eps: 1.0e-08\n"
    assert _set(text, "c.yml", "optim.lr", 1e-5) == text.replace("0.001", "1.0e-5")
    assert yaml.safe_load(_set(text, "c.yml", "optim.lr", 1e-5))["optim"]["lr"] == 1e-5
    assert _set(text, "c.yml", "optim.eps", 1e-6) == text.replace("1.0e-08", "1.0e-6")
    assert yaml.safe_load(_set(text, "c.yml", "optim.eps", 1e-6))["optim"]["eps"] == 1e-6


def test_a_nested_json_key() -> None:
    edited = _set(JSON, "config.json", "optimizer.lr", 1e-3)
    assert edited == JSON.replace('{"lr": 3e-4,', '{"lr": 1e-3,')
    edited = _set(JSON, "config.json", "model.dims", [128, 64])
    assert edited == JSON.replace('"dims": [64, 64]', '"dims": [128, 64]')
    assert json.loads(_set(JSON, "config.json", "model.name", 'a "b"'))["model"]["name"] == 'a "b"'


def test_a_toml_key_in_a_table() -> None:
    edited = _set(TOML, "pyproject.toml", "train.lr", 1e-3)
    assert edited == TOML.replace("lr = 3e-4  #", "lr = 1e-3  #")
    edited = _set(TOML, "pyproject.toml", "train.steps", 20000)
    assert edited == TOML.replace("steps = 10_000", "steps = 20_000")
    edited = _set(TOML, "pyproject.toml", "model.activation", "relu")
    assert edited == TOML.replace("activation = 'tanh'", "activation = 'relu'")
    assert tomllib.loads(edited)["model"]["activation"] == "relu"


def test_a_toml_array_over_several_lines() -> None:
    edited = _set(TOML, "pyproject.toml", "model.sizes", [32, 16, 8])
    old = "sizes = [\n    64,  # the first layer\n    64,\n]"
    assert edited == TOML.replace(old, "sizes = [\n    32,\n    16,\n    8,\n]")


def test_config_values_are_checked_as_python_ones() -> None:
    with pytest.raises(SettingError, match=r"trainer.max_steps in conf/config.yaml is an int"):
        _set(HYDRA, "conf/config.yaml", "trainer.max_steps", "many")
    with pytest.raises(SettingError, match=r"no setting 'trainer.maxsteps' \(did you mean"):
        _set(HYDRA, "conf/config.yaml", "trainer.maxsteps", 1)


def test_a_file_of_another_kind_or_broken_is_named() -> None:
    with pytest.raises(SettingError, match=r"conf.ini is not a YAML, JSON or TOML file"):
        config_editables("[a]\nb = 1\n", "conf.ini")
    with pytest.raises(SettingError, match=r"c.json does not read as JSON"):
        config_editables("{", "c.json")


def test_crlf_and_non_ascii_in_yaml_are_kept() -> None:
    text = "# entraînement « rapide »\r\ntrain:\r\n  nom: 'modèle'  # é\r\n  pas: 10\r\n"
    assert _set(text, "c.yaml", "train.pas", 20) == text.replace("pas: 10", "pas: 20")
    assert _set(text, "c.yaml", "train.nom", "ø") == text.replace("'modèle'", "'ø'")
