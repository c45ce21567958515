"""Experiment scripts for the run and sandbox tests: a project folder with labtui's state in it,
and an ``experiment.py`` that runs a given body, then writes its results as a template's does
(``final_info.json`` in the ``--out_dir=`` folder its command line names)."""

from __future__ import annotations

import textwrap
from pathlib import Path

EXPERIMENT = """
import json, os, signal, subprocess, sys, time
out = sys.argv[-1].split("=", 1)[1]
os.makedirs(out, exist_ok=True)
{body}
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({{"toy": {{"means": {{"acc": 0.9}}}}}}, f)
"""


def bare_project(tmp_path: Path) -> Path:
    """A project folder holding only labtui's own state folder."""
    root = tmp_path / "project"
    (root / ".labtui").mkdir(parents=True)
    return root


def write_experiment(root: Path, body: str) -> None:
    """``experiment.py`` in ``root``: ``body`` (dedented), then the results."""
    code = EXPERIMENT.format(body=textwrap.dedent(body).strip())
    (root / "experiment.py").write_text(code, encoding="utf-8")
