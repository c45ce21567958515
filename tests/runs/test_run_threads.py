"""A run's thread budget (issue 43): ``[experiment] threads``, else the cores the run is given,
sets $OMP_NUM_THREADS and $MKL_NUM_THREADS for every run and is kept in its labtui_run.json
(torch's default pool on a shared 2-core machine made single steps 25-60x slower)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from labtui.core.machine.host_limits import Containment, usable_cpus
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.sections import ExperimentSection

PRINTS_THREADS = """\
import json, os, sys
out = sys.argv[-1].split("=", 1)[1]
os.makedirs(out, exist_ok=True)
print("threads", os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"))
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({"toy": {"means": {"acc": 0.5}}}, f)
"""


def _run(root: Path, experiment: ExperimentSection) -> tuple[list[str], dict]:
    """The run's printed lines and its record."""
    (root / "experiment.py").write_text(textwrap.dedent(PRINTS_THREADS), encoding="utf-8")
    lines: list[str] = []
    result = run_experiment(
        root, "run_1", python=sys.executable, timeout_s=60, stage="experiments",
        emit=lambda event: lines.extend(getattr(event, "text", "").split("\n")),
        sandbox=None, experiment=experiment,
    )  # fmt: skip
    assert result.ok, result.problem
    record = json.loads((root / "run_1" / "labtui_run.json").read_text(encoding="utf-8"))
    return lines, record


def test_threads_set_the_thread_variables_of_a_run_and_its_record(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "16")  # labtui's own shell's: the budget wins
    lines, record = _run(tmp_path, ExperimentSection(threads=1))
    assert "threads 1 1" in lines
    assert record["threads"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_without_threads_a_run_gets_the_cores_it_is_given(tmp_path):
    lines, record = _run(tmp_path, ExperimentSection())
    cores = str(usable_cpus())  # no sandbox here: every usable core
    assert f"threads {cores} {cores}" in lines
    assert record["threads"] == {"OMP_NUM_THREADS": cores, "MKL_NUM_THREADS": cores}


def test_the_researchers_own_thread_variable_wins(tmp_path):
    experiment = ExperimentSection(threads=2, env={"OMP_NUM_THREADS": "3"})
    lines, record = _run(tmp_path, experiment)
    assert "threads 3 2" in lines
    assert record["threads"] == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "2"}


def test_the_cores_a_run_is_given_are_its_cpu_quotas_where_a_cgroup_enforces_one():
    assert Containment(mechanism="systemd-scope", cpu_quota_pct=100).cores() == 1
    assert Containment(mechanism="cgroup", cpu_quota_pct=350).cores() == 3
    # rlimits cannot cap the CPU: the run has every core this process may use
    assert Containment(mechanism="rlimits", cpu_quota_pct=100).cores() == usable_cpus()
    assert Containment(mechanism="cgroup").cores() == usable_cpus()
