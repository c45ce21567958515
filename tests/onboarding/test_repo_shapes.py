"""`labtui init --yes` on four repositories in the shapes researchers' own have (tests/repo_shapes/),
each unedited: the proposal runs as written, to a committed baseline run_0 with the metrics the
code writes and a bounded run length.

Each shape once failed as first proposed (issue 30): a step count that trains forever, a metric
first written at step 500 after a 10-step smoke run, a metric only in a coloured log line, W&B
with no network, modules beside the script taken for missing packages, six example scripts."""

from __future__ import annotations

import os
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
from conftest import run_labtui
from support.research_repo import commit_as_researcher, git

from labtui.core.workspace.run_folder import read_final_info

SHAPES = Path(__file__).parents[1] / "repo_shapes"
RUN_TIMEOUT_S = 40  # the baseline fits half of it ([limits] run_timeout_s, from the environment)

pytestmark = pytest.mark.slow


def _repository(tmp_path: Path, shape: str) -> Path:
    root = tmp_path / shape
    shutil.copytree(SHAPES / shape, root)
    return commit_as_researcher(root)


def _init_yes(root: Path, tmp_path: Path) -> tuple[dict, dict]:
    """`labtui init --yes --no-model` as a new user runs it; labtui.toml and run_0's means."""
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),  # W&B and friends keep their settings there
        "LABTUI_LIMITS__RUN_TIMEOUT_S": str(RUN_TIMEOUT_S),
        "COLUMNS": "200",
    }
    done = run_labtui("init", "--yes", "--no-model", cwd=root, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert git(root, "status", "--porcelain") == "", "the run left the tree as it found it"
    assert git(root, "log", "-1", "--format=%s") == "baseline: run_0 results"
    config = tomllib.loads((root / "labtui.toml").read_text())
    return config, read_final_info(root / "run_0").means()["main"]


def _option(command: str, flag: str) -> int:
    """The value the command gives ``flag`` (--flag V, --flag=V or key=V)."""
    words = shlex.split(command)
    for i, word in enumerate(words):
        if word.startswith(f"{flag}="):
            return int(word.split("=", 1)[1])
        if word == flag:
            return int(words[i + 1])
    raise AssertionError(f"{command!r} does not set {flag}")


def test_a_tensorboard_script_that_trains_forever_gets_a_bound_and_a_smoke_run_to_step_500(
    tmp_path,
):
    root = _repository(tmp_path, "char_tensorboard")
    config, means = _init_yes(root, tmp_path)
    experiment, results = config["experiment"], config["results"]
    assert results["source"] == "tensorboard"
    assert results["metrics"]["Loss/test"] == "lower"
    assert 0 < _option(experiment["command"], "--max-steps") < 100_000
    assert "Loss/test" in means and 1.0 < means["Loss/test"] < 4.0


def test_a_hydra_app_whose_metric_is_a_coloured_log_line(tmp_path):
    root = _repository(tmp_path, "hydra_colour")
    config, means = _init_yes(root, tmp_path)
    assert config["results"] == {
        **config["results"],
        "source": "stdout",
        "metrics": {"validation_accuracy": "higher"},
    }
    assert "hydra.run.dir={out_dir}" in config["experiment"]["command"]
    assert 0 < _option(config["experiment"]["command"], "trainer.max_epochs") < 100_000
    assert 0.5 < means["validation_accuracy"] <= 1.0


def test_a_wandb_project_runs_offline_with_its_modules_beside_the_script(tmp_path):
    root = _repository(tmp_path, "grokking_wandb")
    config, means = _init_yes(root, tmp_path)
    experiment, results = config["experiment"], config["results"]
    assert experiment["env"]["WANDB_MODE"] == "offline"
    assert results["source"] == "wandb"
    assert results["metrics"]["validation/accuracy"] == "higher"  # sweep.yaml's goal
    assert 0 < _option(experiment["command"], "--num_steps") < 100_000
    assert 0.0 <= means["validation/accuracy"] <= 1.0
    assert (root / "run_0/labtui_run.json").is_file()


def test_a_library_with_six_examples_runs_the_one_its_readme_runs(tmp_path):
    root = _repository(tmp_path, "tinynn_library")
    config, means = _init_yes(root, tmp_path)
    command = config["experiment"]["command"]
    assert shlex.split(command)[1] == "examples/classify_blobs.py"
    assert config["results"]["source"] == "stdout"
    assert config["results"]["metrics"]["val_acc"] == "higher"
    assert "tests/*" in config["experiment"]["protect"]
    assert 0.25 < means["val_acc"] <= 1.0
