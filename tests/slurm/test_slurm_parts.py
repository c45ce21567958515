"""The Slurm backend's parts that need no cluster: settings, queue answers, messages, following
a job's files, and the record a resume finds its job by. The real cluster's tests are in
tests/slurm/test_slurm_runs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtui.core.errors import ConfigError
from labtui.core.events import GpuSample, LogLine, MetricsReported, Notice
from labtui.core.settings.config import config_from_dict, load_config
from labtui.core.settings.sections import ClusterSection
from labtui.core.slurm.follow import JobFollower
from labtui.core.slurm.job_end import slurm_end
from labtui.core.slurm.job_request import job_key, job_minutes
from labtui.core.slurm.node import NodeRun
from labtui.core.slurm.queue import QueueState, parse_elapsed


def test_cluster_settings_default_to_local_and_refuse_bad_values(tmp_path):
    config = config_from_dict({}, tmp_path / "labtui.toml")
    assert config.cluster.backend == "local"
    with pytest.raises(ConfigError) as bad:
        config_from_dict({"cluster": {"backend": "pbs"}}, tmp_path / "labtui.toml")
    assert "[cluster] backend" in bad.value.message or "backend" in bad.value.message
    with pytest.raises(ConfigError) as gres:
        config_from_dict({"cluster": {"gres": "--gres=gpu:1"}}, tmp_path / "labtui.toml")
    assert "gpu:1" in f"{gres.value.message} {gres.value.hint}"


def _with_site_file(tmp_path: Path, own: str, site_text: str) -> tuple[Path, Path]:
    """A project with ``own`` as its labtui.toml and the researcher's site file (in the test's
    home, ~/.config/labtui/labtui.toml) with ``site_text``."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "labtui.toml").write_text(own, encoding="utf-8")
    site = tmp_path / "home" / "config" / "labtui" / "labtui.toml"
    site.parent.mkdir(parents=True)
    site.write_text(site_text, encoding="utf-8")
    return project, site


def test_the_environment_and_the_site_file_set_the_cluster(tmp_path, monkeypatch):
    project, _ = _with_site_file(
        tmp_path,
        '[cluster]\npartition = "gpu"\n',
        '[cluster]\npartition = "cpu"\naccount = "lab"\ncpus = 8\n',
    )
    monkeypatch.setenv("LABTUI_CLUSTER__BACKEND", "slurm")
    config = load_config(project)
    # the project overrides the site key by key; the environment overrides both
    assert (config.cluster.backend, config.cluster.partition) == ("slurm", "gpu")
    assert (config.cluster.account, config.cluster.cpus) == ("lab", 8)


def test_a_bad_site_file_is_named_with_its_fix(tmp_path):
    project, site = _with_site_file(tmp_path, "", "[cluster]\ncpus = 0\n")
    with pytest.raises(ConfigError) as bad:
        load_config(project)
    assert str(site) in bad.value.message and "cpus" in bad.value.message
    site.write_text('[models]\ndefault = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as other:
        load_config(project)
    assert str(site) in other.value.message and "[cluster]" in other.value.hint


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("42", 42), ("1:23", 83), ("1:02:03", 3723), ("2-01:02:03", 2 * 86400 + 3723), ("", 0)],
)
def test_squeue_elapsed_times_are_read(text, seconds):
    assert parse_elapsed(text) == seconds


def test_slurm_endings_say_what_to_change():
    settings = ClusterSection(backend="slurm", mem_gb=2)
    timeout = slurm_end(QueueState("TIMEOUT", node="n1"), "12", settings, 90)
    assert "time limit of 7 min" in timeout and "[cluster] time_min" in timeout
    assert "n1" in timeout and "TIMEOUT" in timeout
    memory = slurm_end(QueueState("OUT_OF_MEMORY"), "12", settings, 90)
    assert "[cluster] mem_gb = 2" in memory and "OUT_OF_MEMORY" in memory
    cancelled = slurm_end(QueueState("CANCELLED", reason="admin"), "12", settings, 90)
    assert "outside labtui" in cancelled and "admin" in cancelled
    assert slurm_end(QueueState("COMPLETED"), "12", settings, 90) == ""
    assert slurm_end(QueueState("FAILED"), "12", settings, 90) == ""  # the run's own failure


def test_the_jobs_time_limit_is_the_runs_own_plus_a_margin_unless_set():
    assert job_minutes(ClusterSection(), 1800) == 35
    assert job_minutes(ClusterSection(), 61) == 7
    assert job_minutes(ClusterSection(time_min=90), 1800) == 90


def _node_run(**changes) -> NodeRun:
    fields = {
        "argv": ["python", "experiment.py", "--out_dir=run_1"],
        "cwd": "/p",
        "env": {"LABTUI_RUN_ID": "run_1"},
        "timeout_s": 60.0,
        "run_id": "run_1",
        "stage": "experiments",
        "sandbox": None,
    }
    return NodeRun(**{**fields, **changes})


def test_a_job_is_the_same_run_only_with_the_same_command_and_code():
    key = job_key(_node_run(), "abc")
    assert key == job_key(_node_run(), "abc")
    assert key != job_key(_node_run(), "abd")
    assert key != job_key(_node_run(argv=["python", "experiment.py", "--out_dir=run_2"]), "abc")
    assert key != job_key(_node_run(env={"LABTUI_SEED": "1"}), "abc")


def test_a_jobs_files_are_followed_as_they_grow(tmp_path):
    out, err, gpus = tmp_path / "1_0_log.out", tmp_path / "1_0_log.err", tmp_path / "g.jsonl"
    events = []
    follower = JobFollower(out, err, gpus, emit=events.append, stage="experiments", run_id="r")
    follower.poll()  # nothing written yet: the job has not started
    assert events == []
    out.write_text("epoch 1 loss=0.5\npart", encoding="utf-8")
    err.write_text(
        "submitit INFO (2026-11-26 10:00:00,000) - Starting with JobEnvironment\n"
        "labtui: Slurm says the job's time limit is near\n"
        "warning: slow\n",
        encoding="utf-8",
    )
    gpus.write_text(
        json.dumps({"host": "n7", "job_id": "1", "gpus": [{"index": 0, "util": 50}]})
        + '\n{"host": "n7", "gpus": [',  # a line the node was still writing
        encoding="utf-8",
    )
    follower.poll()
    with out.open("a", encoding="utf-8") as handle:
        handle.write("ial\n")
    follower.finish()
    lines = [(e.stream, e.text) for e in events if isinstance(e, LogLine)]
    assert lines == [
        ("stdout", "epoch 1 loss=0.5"),
        ("stderr", "warning: slow"),
        ("stdout", "partial"),
    ]
    assert any(isinstance(e, MetricsReported) for e in events)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == ["r on the cluster: Slurm says the job's time limit is near"]
    samples = [e for e in events if isinstance(e, GpuSample)]
    assert [(s.host, s.job_id, s.gpus[0]["util"]) for s in samples] == [("n7", "1", 50)]
    assert follower.stdout_tail == "epoch 1 loss=0.5\npartial"
    assert "submitit" not in follower.stderr_tail


def test_the_cli_flag_sets_the_backend_for_the_session(monkeypatch, tmp_path):
    from labtui.tui import cli

    monkeypatch.setattr(cli, "dispatch", lambda args: 0)
    monkeypatch.delenv("LABTUI_CLUSTER__BACKEND", raising=False)
    assert cli.main(["--cluster", "slurm", "run", str(tmp_path)]) == 0
    import os

    assert os.environ["LABTUI_CLUSTER__BACKEND"] == "slurm"
    monkeypatch.delenv("LABTUI_CLUSTER__BACKEND")
    assert cli.main(["run", "--cluster", "slurm", str(tmp_path)]) == 0
    assert os.environ["LABTUI_CLUSTER__BACKEND"] == "slurm"


def test_no_slurm_on_path_is_said_plainly(monkeypatch):
    from labtui.core.slurm import queue as slurm_queue
    from labtui.core.slurm.doctor_check import cluster_findings

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(slurm_queue.SlurmUnavailable) as missing:
        slurm_queue.version()
    assert "sinfo is not on PATH" in str(missing.value)
    findings = cluster_findings(ClusterSection(backend="slurm"))
    assert [f.ok for f in findings] == [False]
    assert 'backend = "local"' in findings[0].detail
    assert cluster_findings(ClusterSection())[0].ok


def test_a_job_slurm_forgot_counts_as_done_only_once_its_result_is_there(tmp_path):
    from types import SimpleNamespace

    from labtui.core.slurm.job_watch import UNANSWERED_WARN_S, forgotten_but_done

    quiet = SimpleNamespace(silent_s=lambda: UNANSWERED_WARN_S)
    talking = SimpleNamespace(silent_s=lambda: 0.0)
    assert forgotten_but_done(quiet, tmp_path, "7") is None  # no result: keep following
    (tmp_path / "7_0_result.pkl").write_bytes(b"x")
    assert forgotten_but_done(talking, tmp_path, "7") is None  # Slurm still answers
    state = forgotten_but_done(quiet, tmp_path, "7")
    assert state is not None and state.state == "COMPLETED" and state.ended


def test_a_new_project_takes_the_sessions_cluster_so_its_baseline_is_a_job(tmp_path, monkeypatch):
    from labtui.core.workspace.project import Project

    monkeypatch.setenv("LABTUI_CLUSTER__BACKEND", "slurm")
    project = Project.create(tmp_path / "p", "moons")
    assert project.config.cluster.backend == "slurm"
    assert 'backend = "local"' in (project.root / "labtui.toml").read_text()  # the file's own


def test_the_doctor_on_slurm_says_the_login_nodes_gpus_are_not_the_runs(tmp_path, monkeypatch):
    from labtui.core.doctor import run_checks
    from labtui.core.workspace.project import Project

    project = Project.create(tmp_path / "p", "moons")
    monkeypatch.setenv("LABTUI_CLUSTER__BACKEND", "slurm")
    monkeypatch.setattr("shutil.which", lambda name, *a, **k: None if name == "sinfo" else "/x")
    gpu = [check for check in run_checks(project.root) if check.name == "gpu"]
    assert len(gpu) == 1 and gpu[0].detail.startswith("runs get their GPUs from Slurm")
