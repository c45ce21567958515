"""The char_lm template: valid, its smoke run is fast, plots, and its paper skeleton compiles.

Everything runs in a temporary copy with LABTUI_SMOKE=1 (a tiny model, one seed, a few seconds on
a CPU): the template folder itself must stay free of run outputs, figures and LaTeX build files,
since it is shipped as package data.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from support.template_checks import (
    PYTHON,
    TEMPLATES,
    assert_plot_fails_without_runs,
    assert_pngs,
    assert_shipped_clean,
    compile_latex,
    run,
    run_copy,
)

from labtui.core.templates import check_final_info

pytest.importorskip("torch")

CHAR_LM = TEMPLATES / "char_lm"
METRICS = (
    "final_train_loss",
    "final_val_loss",
    "best_val_loss",
    "val_bpc",
    "train_time_s",
    "tokens_per_s",
)
SMOKE = {"LABTUI_SMOKE": "1"}


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after a smoke `experiment.py --out_dir=run_0` and `plot.py`."""
    return run_copy(CHAR_LM, tmp_path_factory, env=SMOKE, timeout=180)


def test_template_is_valid_clean_and_listed() -> None:
    assert_shipped_clean(CHAR_LM, "samples.txt")


def test_corpus_is_shipped_and_sized() -> None:
    text = (CHAR_LM / "genesis_kjv.txt").read_text(encoding="utf-8")
    assert 50_000 <= len(text.encode("utf-8")) <= 150_000
    assert text.startswith("The First Book of Moses, called Genesis")
    assert "1:1 In the beginning God created the heaven and the earth." in text


def test_smoke_run_is_fast_and_writes_the_contract(copy: dict) -> None:
    experiment = copy["experiment"]
    assert experiment.returncode == 0, experiment.stderr
    assert "smoke 1" in experiment.stdout
    lines = experiment.stdout.splitlines()
    progress = [line for line in lines if " iter " in line and "val_loss" in line]
    assert progress and progress[-1].startswith("seed 0 iter 100/100 train_loss ")
    assert lines[-1].startswith("final ") and "best_val_loss_mean" in lines[-1]

    root = copy["root"]
    final_info = json.loads((root / "run_0" / "final_info.json").read_text())
    assert check_final_info(final_info, "final_info.json") == []
    entry = final_info["kjv_genesis"]
    assert set(entry["means"]) == {f"{m}_mean" for m in METRICS}
    assert set(entry["stderrs"]) == {f"{m}_stderr" for m in METRICS}
    assert all(len(values) == 1 for values in entry["final_info_dict"].values())
    means = entry["means"]
    # Uniform guessing over the 70 characters costs ln 70 = 4.25 nats; the smoke run must learn.
    assert means["best_val_loss_mean"] < math.log(70) - 0.5
    assert means["val_bpc_mean"] == pytest.approx(means["best_val_loss_mean"] / math.log(2))
    assert means["tokens_per_s_mean"] > 0

    curves = json.loads((root / "run_0" / "all_results.json").read_text())["kjv_genesis"]
    assert curves["iters"][0] == 0 and curves["iters"][-1] == 100
    assert len(curves["train_loss"]) == len(curves["val_loss"]) == 1
    assert all(len(c) == len(curves["iters"]) for c in curves["train_loss"] + curves["val_loss"])
    assert curves["val_loss"][0][-1] < curves["val_loss"][0][0]

    sample = (root / "run_0" / "samples.txt").read_text(encoding="utf-8")
    assert sample.startswith("=== seed 0") and len(sample) > 200


def test_smoke_run_is_deterministic(copy: dict, tmp_path: Path) -> None:
    assert copy["experiment"].returncode == 0, copy["experiment"].stderr
    out_dir = f"--out_dir={tmp_path / 'run_1'}"
    again = run([PYTHON, "experiment.py", out_dir], copy["root"], timeout=180, env=SMOKE)
    assert again.returncode == 0, again.stderr
    first = json.loads((copy["root"] / "run_0" / "final_info.json").read_text())
    second = json.loads((tmp_path / "run_1" / "final_info.json").read_text())
    key = "best_val_loss"
    assert (
        first["kjv_genesis"]["final_info_dict"][key]
        == second["kjv_genesis"]["final_info_dict"][key]
    )


def test_plot_writes_both_figures(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    assert_pngs(copy["root"], ["train_loss.png", "val_loss.png"])


def test_plot_fails_clearly_without_runs(tmp_path: Path) -> None:
    assert_plot_fails_without_runs(CHAR_LM, tmp_path)


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    compile_latex(
        copy["root"],
        "val_loss.png",
        ["vaswani2017attention", "radford2019language", "karpathy2022nanogpt", "kingma2015adam"],
    )
