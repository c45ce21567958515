"""The moons template: valid, fast, plots, and its paper skeleton compiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.template_checks import (
    TEMPLATES,
    assert_plot_fails_without_runs,
    assert_pngs,
    compile_latex,
    leftovers,
    run_copy,
)

from labtui.core.templates import check_final_info, validate_template

MOONS = TEMPLATES / "moons"


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after `experiment.py --out_dir=run_0` and `plot.py` ran in it."""
    return run_copy(MOONS, tmp_path_factory)


def test_template_is_valid_and_clean() -> None:
    validate_template(MOONS)
    found = leftovers(MOONS)
    assert found == [], f"build or run outputs inside the shipped template: {found}"


def test_experiment_runs_fast_and_writes_the_contract(copy: dict) -> None:
    experiment = copy["experiment"]
    assert experiment.returncode == 0, experiment.stderr
    assert "epoch" in experiment.stdout and "test_accuracy" in experiment.stdout

    root = copy["root"]
    final_info = json.loads((root / "run_0" / "final_info.json").read_text())
    assert check_final_info(final_info, "final_info.json") == []
    moons = final_info["moons"]
    assert set(moons["means"]) == {"test_accuracy_mean", "train_loss_mean", "train_time_s_mean"}
    assert set(moons["stderrs"]) == {
        "test_accuracy_stderr",
        "train_loss_stderr",
        "train_time_s_stderr",
    }
    assert all(len(values) == 3 for values in moons["final_info_dict"].values())
    assert 0.8 < moons["means"]["test_accuracy_mean"] <= 1.0

    curves = json.loads((root / "run_0" / "all_results.json").read_text())["moons"]
    epochs = len(curves["epochs"])
    assert len(curves["train_loss"]) == len(curves["test_accuracy"]) == 3
    assert all(len(c) == epochs for c in curves["train_loss"] + curves["test_accuracy"])


def test_plot_writes_both_figures(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    assert_pngs(copy["root"], ["train_loss.png", "test_accuracy.png"])


def test_plot_fails_clearly_without_runs(tmp_path: Path) -> None:
    assert_plot_fails_without_runs(MOONS, tmp_path)


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    compile_latex(copy["root"], "train_loss.png", ["kingma2015adam", "rumelhart1986learning"])
