"""Checks shared by the template tests: run a copy of a template, keep the shipped folder clean,
compile the paper skeleton.

Everything runs in a temporary copy: a template folder itself must stay free of run outputs,
figures and LaTeX build files, since it is shipped as package data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from labtui.core.settings.templates import copy_template

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
PYTHON = sys.executable
BUILD_SUFFIXES = {".png", ".pdf", ".aux", ".log", ".bbl", ".blg", ".fls", ".out"}


def run(
    argv: list[str], cwd: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )


def leftovers(folder: Path) -> list[str]:
    """Run outputs, figures and LaTeX build files inside a shipped template folder."""
    return [
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.name.startswith("run_")
        or p.suffix in BUILD_SUFFIXES
        or p.name in {"references.bib", "template.fdb_latexmk"}
    ]


def assert_shipped_clean(folder: Path, *extra_outputs: str) -> None:
    """The template follows the contract, holds no build or run outputs (nor ``extra_outputs``,
    file names a run writes), and is listed by `labtui templates`."""
    from labtui.core.settings.templates import list_templates, validate_template

    validate_template(folder)
    found = leftovers(folder) + [p.name for name in extra_outputs for p in folder.rglob(name)]
    assert found == [], f"build or run outputs inside the shipped template: {found}"
    assert folder.name in list_templates()


def run_copy(
    template: Path,
    tmp_path_factory,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> dict:
    """Copy a template, run `experiment.py --out_dir=run_0` and `plot.py` in the copy."""
    root = tmp_path_factory.mktemp(template.name) / template.name
    copy_template(template, root)
    # How fast a template runs is the bench script's business and the READMEs' figures.
    experiment = run([PYTHON, "experiment.py", "--out_dir=run_0"], root, timeout=timeout, env=env)
    plot = run([PYTHON, "plot.py"], root, timeout=timeout)
    return {"root": root, "experiment": experiment, "plot": plot}


def assert_pngs(root: Path, names: list[str]) -> None:
    for name in names:
        data = (root / name).read_bytes()
        assert data.startswith(b"\x89PNG"), name


def assert_plot_fails_without_runs(template: Path, tmp_path: Path) -> None:
    shutil.copy(template / "plot.py", tmp_path)
    result = run([PYTHON, "plot.py"], tmp_path)
    assert result.returncode != 0
    assert "no results to plot" in result.stderr


def compile_latex(root: Path, figure: str, citations: list[str]) -> None:
    """latexmk the skeleton in `root/latex`; the figure must come from the project root."""
    latex = root / "latex"
    result = run(
        ["latexmk", "-pdf", "-interaction=nonstopmode", "template.tex"], latex, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert (latex / "template.pdf").stat().st_size > 10_000
    log = (latex / "template.log").read_text(errors="replace")
    assert figure in log  # the figure came from the project root via \graphicspath
    bbl = (latex / "template.bbl").read_text()
    missing = [key for key in citations if key not in bbl]
    assert missing == [], f"citations missing from the bibliography: {missing}"
