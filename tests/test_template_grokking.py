"""The grokking template: valid, its smoke run is fast, plots, and its paper skeleton compiles.

Everything runs in a temporary copy with LABTUI_SMOKE=1 (two operations modulo a small prime,
one seed, a hundred steps on a CPU).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from support.template_checks import (
    TEMPLATES,
    assert_plot_fails_without_runs,
    assert_pngs,
    assert_shipped_clean,
    compile_latex,
    run_copy,
)

from labtui.core.templates import check_final_info

pytest.importorskip("torch")

GROKKING = TEMPLATES / "grokking"
METRICS = (
    "final_train_acc",
    "final_val_acc",
    "final_train_loss",
    "final_val_loss",
    "step_val_acc_99",
    "grokked",
    "train_time_s",
)
SMOKE_OPERATIONS = ("x_plus_y", "x_div_y")


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after a smoke `experiment.py --out_dir=run_0` and `plot.py`."""
    return run_copy(GROKKING, tmp_path_factory, env={"LABTUI_SMOKE": "1"}, timeout=180)


def test_template_is_valid_clean_and_listed() -> None:
    assert_shipped_clean(GROKKING)


def test_smoke_run_writes_the_contract(copy: dict) -> None:
    experiment = copy["experiment"]
    assert experiment.returncode == 0, experiment.stderr
    assert "smoke 1" in experiment.stdout
    assert "step 100/100 train_loss" in experiment.stdout and "val_acc" in experiment.stdout

    root = copy["root"]
    final_info = json.loads((root / "run_0" / "final_info.json").read_text())
    assert check_final_info(final_info, "final_info.json") == []
    assert tuple(final_info) == SMOKE_OPERATIONS
    for entry in final_info.values():
        means = entry["means"]
        assert set(means) == {f"{m}_mean" for m in METRICS}
        assert set(entry["stderrs"]) == {f"{m}_stderr" for m in METRICS}
        assert all(math.isfinite(v) for v in means.values())
        assert 0 <= means["final_train_acc_mean"] <= 1 and 0 <= means["final_val_acc_mean"] <= 1
        assert 0 < means["step_val_acc_99_mean"] <= 100
        assert means["grokked_mean"] in (0.0, 1.0)
        # the training set is being fitted: far better than chance (1/23) after 100 steps
        assert means["final_train_acc_mean"] > 0.2

    curves = json.loads((root / "run_0" / "all_results.json").read_text())
    for operation in SMOKE_OPERATIONS:
        entry = curves[operation]
        for key in ("train_acc", "train_loss", "val_acc", "val_loss"):
            assert len(entry[key]) == 1 and len(entry[key][0]) == len(entry["steps"])


def test_plot_writes_the_figures(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    assert_pngs(
        copy["root"],
        [f"{figure}_{op}.png" for op in SMOKE_OPERATIONS for figure in ("accuracy", "loss")],
    )


def test_plot_fails_clearly_without_runs(tmp_path: Path) -> None:
    assert_plot_fails_without_runs(GROKKING, tmp_path)


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    compile_latex(
        copy["root"],
        "accuracy_x_plus_y.png",
        ["power2022grokking", "vaswani2017attention", "loshchilov2019decoupled"],
    )
