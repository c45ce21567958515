"""The moons template: valid, fast, plots, and its paper skeleton compiles.

Everything runs in a temporary copy: the template folder itself must stay free of run outputs,
figures and LaTeX build files, since it is shipped as package data.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtui.core.templates import check_final_info, validate_template

MOONS = Path(__file__).resolve().parents[1] / "templates" / "moons"
PYTHON = sys.executable


def run(argv: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, check=False, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A copy of the template after `experiment.py --out_dir=run_0` and `plot.py` ran in it."""
    root = tmp_path_factory.mktemp("moons") / "moons"
    shutil.copytree(MOONS, root, ignore=shutil.ignore_patterns("__pycache__"))
    start = time.monotonic()
    experiment = run([PYTHON, "experiment.py", "--out_dir=run_0"], root)
    experiment_s = time.monotonic() - start
    plot = run([PYTHON, "plot.py"], root)
    return {"root": root, "experiment": experiment, "experiment_s": experiment_s, "plot": plot}


def test_template_is_valid_and_clean() -> None:
    validate_template(MOONS)
    leftovers = [
        p.relative_to(MOONS).as_posix()
        for p in MOONS.rglob("*")
        if p.name.startswith("run_")
        or p.suffix in {".png", ".pdf", ".aux", ".log", ".bbl", ".blg", ".fls", ".out"}
        or p.name in {"references.bib", "template.fdb_latexmk"}
    ]
    assert leftovers == [], f"build or run outputs inside the shipped template: {leftovers}"


def test_experiment_runs_fast_and_writes_the_contract(copy: dict) -> None:
    experiment = copy["experiment"]
    assert experiment.returncode == 0, experiment.stderr
    assert copy["experiment_s"] < 10
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
    for name in ("train_loss.png", "test_accuracy.png"):
        data = (copy["root"] / name).read_bytes()
        assert data.startswith(b"\x89PNG"), name


def test_plot_fails_clearly_without_runs(tmp_path: Path) -> None:
    shutil.copy(MOONS / "plot.py", tmp_path)
    result = run([PYTHON, "plot.py"], tmp_path)
    assert result.returncode != 0
    assert "no results to plot" in result.stderr


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk is not installed")
def test_latex_skeleton_compiles(copy: dict) -> None:
    assert copy["plot"].returncode == 0, copy["plot"].stderr
    latex = copy["root"] / "latex"
    result = run(
        ["latexmk", "-pdf", "-interaction=nonstopmode", "template.tex"], latex, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert (latex / "template.pdf").stat().st_size > 10_000
    log = (latex / "template.log").read_text(errors="replace")
    assert "train_loss.png" in log  # the figure came from the project root via \graphicspath
    bbl = (latex / "template.bbl").read_text()
    assert "kingma2015adam" in bbl and "rumelhart1986learning" in bbl
