"""The diffusion_2d template: valid, its smoke run is fast, plots, and its paper skeleton compiles.

Everything runs in a temporary copy with LABTUI_SMOKE=1 (two data sets, one seed, a few hundred
steps on a CPU).
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

DIFFUSION = TEMPLATES / "diffusion_2d"
METRICS = (
    "train_loss",
    "eval_loss",
    "energy_distance",
    "kl_divergence",
    "train_time_s",
    "inference_time_s",
)
SMOKE_DATASETS = {"moons", "circles"}


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after a smoke `experiment.py --out_dir=run_0` and `plot.py`."""
    return run_copy(DIFFUSION, tmp_path_factory, env={"LABTUI_SMOKE": "1"}, timeout=180)


def test_template_is_valid_clean_and_listed() -> None:
    assert_shipped_clean(DIFFUSION)


def test_smoke_run_writes_the_contract(copy: dict) -> None:
    experiment = copy["experiment"]
    assert experiment.returncode == 0, experiment.stderr
    assert "smoke 1" in experiment.stdout
    assert "step 200/200 train_loss" in experiment.stdout
    assert "final moons" in experiment.stdout

    root = copy["root"]
    final_info = json.loads((root / "run_0" / "final_info.json").read_text())
    assert check_final_info(final_info, "final_info.json") == []
    assert set(final_info) == SMOKE_DATASETS
    for entry in final_info.values():
        assert set(entry["means"]) == {f"{m}_mean" for m in METRICS}
        assert set(entry["stderrs"]) == {f"{m}_stderr" for m in METRICS}
        assert all(len(v) == 1 for v in entry["final_info_dict"].values())
        assert all(math.isfinite(v) for v in entry["means"].values())
        assert 0 < entry["means"]["eval_loss_mean"] < 1.5  # noise MSE starts near 1
        assert entry["means"]["energy_distance_mean"] >= 0

    curves = json.loads((root / "run_0" / "all_results.json").read_text())
    assert set(curves) == SMOKE_DATASETS
    for entry in curves.values():
        assert len(entry["train_loss"][0]) == len(entry["steps"])
        assert len(entry["generated"]) == len(entry["real"]) > 0


def test_smoke_run_is_deterministic(copy: dict, tmp_path_factory: pytest.TempPathFactory) -> None:
    again = run_copy(DIFFUSION, tmp_path_factory, env={"LABTUI_SMOKE": "1"}, timeout=180)
    assert again["experiment"].returncode == 0, again["experiment"].stderr
    first = json.loads((copy["root"] / "run_0" / "final_info.json").read_text())
    second = json.loads((again["root"] / "run_0" / "final_info.json").read_text())
    for dataset, entry in first.items():
        for metric in ("train_loss", "eval_loss", "energy_distance", "kl_divergence"):
            assert entry["final_info_dict"][metric] == second[dataset]["final_info_dict"][metric]


def test_plot_writes_the_figures(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    assert_pngs(copy["root"], ["train_loss.png", "generated_samples.png"])


def test_plot_fails_clearly_without_runs(tmp_path: Path) -> None:
    assert_plot_fails_without_runs(DIFFUSION, tmp_path)


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    compile_latex(
        copy["root"],
        "generated_samples.png",
        ["ho2020denoising", "sohl2015deep", "nichol2021improved", "szekely2013energy"],
    )
