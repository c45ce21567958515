"""Settings changed by code across a project: a setting of the code, of a config file, or given
on the run's command in labtui.toml, each rewritten in place; nothing written when one fails."""

from __future__ import annotations

import pytest

from labtui.core.runs.setting_changes import (
    SettingError,
    apply_settings,
    commit_message,
    project_settings,
    read_command,
    written_files,
)

TRAIN = 'LR = 3e-4  # the step size\nparser.add_argument("--epochs", type=int, default=20)\n'
CONFIG = "trainer:\n  max_steps: 500  # steps\n  precision: 32\nmodel:\n  depth: 4\n"
TOML = (
    '[project]\nname = "p"\n\n[experiment]\n# one run\n'
    'command = "{python} train.py --lr 3e-4 trainer.max_steps=500 --out {out_dir}"\n'
)
COMMAND = "{python} train.py --lr 3e-4 trainer.max_steps=500 --out {out_dir}"


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "train.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\n" + TRAIN
    )
    (tmp_path / "conf.yaml").write_text(CONFIG)
    (tmp_path / "labtui.toml").write_text(TOML)
    return tmp_path


def test_the_command_comes_first_then_the_files_in_order(repo):
    names = [s.name for s in project_settings(repo, ["train.py", "conf.yaml"], COMMAND)]
    assert names[:2] == ["--lr", "trainer.max_steps"]
    assert {"LR", "epochs", "model.depth"} <= set(names)


def test_a_code_setting_and_a_config_key_are_rewritten_in_place(repo):
    changes = apply_settings(
        repo, ["train.py", "conf.yaml"], {"LR": 1e-3, "model.depth": 8}, COMMAND
    )
    assert commit_message(changes) == "settings: LR 0.0003 → 0.001, model.depth 4 → 8"
    assert written_files(changes) == ["conf.yaml", "train.py"]
    assert (repo / "train.py").read_text().endswith(TRAIN.replace("3e-4", "1e-3"))
    assert (repo / "conf.yaml").read_text() == CONFIG.replace("depth: 4", "depth: 8")
    assert (repo / "labtui.toml").read_text() == TOML


def test_a_flag_and_a_hydra_override_on_the_command_are_rewritten_in_labtui_toml(repo):
    changes = apply_settings(repo, ["train.py"], {"--lr": 0.001, "trainer.max_steps": 800}, COMMAND)
    assert written_files(changes) == ["labtui.toml"]
    new = COMMAND.replace("--lr 3e-4", "--lr 1e-3").replace("=500", "=800")
    assert (repo / "labtui.toml").read_text() == TOML.replace(COMMAND, new)
    assert read_command(repo, "") == new
    assert (repo / "train.py").read_text().endswith(TRAIN), "the code's default is not the run's"


def test_nothing_is_written_when_one_setting_fails(repo):
    with pytest.raises(SettingError, match="no setting 'EPOCH'"):
        apply_settings(repo, ["train.py"], {"LR": 1e-3, "EPOCH": 5}, COMMAND)
    with pytest.raises(SettingError, match="epochs"):
        apply_settings(repo, ["train.py"], {"epochs": "many"}, COMMAND)
    assert (repo / "train.py").read_text().endswith(TRAIN)
    assert apply_settings(repo, ["train.py"], {"LR": 3e-4}, COMMAND) == [], "its own value"
