"""The command line: clear messages for bad input, never a bare traceback."""

from __future__ import annotations

import shutil

import pytest
from conftest import run_labtui

from labtui.core.settings.templates import builtin_templates_dir


def _assert_clear_error(result, *needles: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_help_lists_commands():
    # How fast it answers is the bench's to measure (tests/bench/bench.py, help_ms), not a test's.
    result = run_labtui("--help")
    assert result.returncode == 0
    for command in ("new", "run", "doctor", "templates"):
        assert command in result.stdout


def test_run_help_says_its_exit_statuses(capsys):
    from labtui.tui.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    said = capsys.readouterr().out
    assert "exit status:" in said
    for line in ("0  the pipeline finished: every stage done", "2  a usage error",
                 "3  the pipeline finished, but the paper is incomplete"):  # fmt: skip
        assert f"\n  {line}" in said, line


def test_templates_lists_moons():
    assert "moons" in run_labtui("templates").stdout.split()


def test_new_with_a_broken_template_names_each_problem(tmp_path):
    template = tmp_path / "tpl"
    shutil.copytree(builtin_templates_dir() / "moons", template)
    (template / "plot.py").unlink()
    (template / "prompt.json").write_text("{not json")
    result = run_labtui("new", str(tmp_path / "p"), "--template", str(template))
    _assert_clear_error(result, "plot.py: missing", "prompt.json: invalid JSON", "fix:")
    assert not (tmp_path / "p").exists()


def test_new_with_an_unknown_template(tmp_path):
    result = run_labtui("new", str(tmp_path / "p"), "--template", "nope")
    _assert_clear_error(result, "template 'nope' not found", "moons")


def test_baseline_that_exits_non_zero_is_reported_and_the_project_kept(tmp_path):
    template = tmp_path / "tpl"
    shutil.copytree(builtin_templates_dir() / "moons", template)
    code = (template / "experiment.py").read_text()
    (template / "experiment.py").write_text(
        code.replace(
            "import numpy as np",
            "import numpy as np\nraise SystemExit('dataset missing: moons.npz')",
            1,
        )
    )
    result = run_labtui("new", str(tmp_path / "p"), "--template", str(template))
    _assert_clear_error(result, "baseline run_0 failed", "dataset missing")
    assert (tmp_path / "p" / "labtui.toml").exists()


def test_run_without_a_model_explains_how_to_configure_one(tmp_path):
    assert run_labtui("new", str(tmp_path / "p"), "--no-baseline").returncode == 0
    result = run_labtui("run", "--headless", "--auto", cwd=tmp_path / "p")
    _assert_clear_error(result, "no model is configured", "LABTUI_MODEL", "LABTUI_API_BASE")


def test_run_outside_a_project(tmp_path):
    result = run_labtui("run", "--headless", cwd=tmp_path)
    _assert_clear_error(result, "not a labtui project", "labtui new")


def test_headless_without_a_terminal_needs_auto(tmp_path, monkeypatch):
    monkeypatch.setenv("LABTUI_MODEL", "openai/x")
    monkeypatch.setenv("LABTUI_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LABTUI_API_KEY", "sk-local-not-a-real-key-000")
    assert run_labtui("new", str(tmp_path / "p"), "--no-baseline").returncode == 0
    result = run_labtui("run", "--headless", cwd=tmp_path / "p")
    _assert_clear_error(result, "stdin is not one", "--auto")


def test_doctor_reports_tools_and_never_prints_keys(tmp_path, monkeypatch, network_guard):
    # network_guard: the doctor's one-word request to the model must not leave this machine.
    monkeypatch.setenv("LABTUI_MODEL", "anthropic/claude-3-5-sonnet-20241022")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-that-must-not-show")
    result = run_labtui("doctor", cwd=tmp_path)
    out = result.stdout
    for name in (
        "python",
        "git",
        "latexmk",
        "chktex",
        "sandbox",
        "gpu",
        "experiment python",
        "model (ideas)",
    ):
        assert name in out
    assert "sk-ant-secret" not in out + result.stderr
    assert "key present" in out
    assert "bubblewrap works" in out  # bwrap is installed and runs on this machine
    assert "model answer" in out and "FAIL" in out  # the model could not be reached: it says so


def test_doctor_says_when_experiments_will_not_be_isolated(monkeypatch):
    from labtui.core.doctor import _sandbox
    from labtui.core.machine import bubblewrap
    from labtui.core.settings.config import Config

    monkeypatch.setattr(bubblewrap, "bwrap_problem", lambda: "bwrap cannot create a namespace")
    check = _sandbox(Config())
    assert not check.ok and not check.required and "NOT isolated" in check.detail
    strict = Config()
    strict.sandbox.mode = "bwrap"
    assert _sandbox(strict).required and "refuse to start" in _sandbox(strict).detail


def test_run_with_an_unknown_model_says_how_to_write_one(tmp_path, monkeypatch):
    monkeypatch.setenv("LABTUI_MODEL", "nonsense-model")
    assert run_labtui("new", str(tmp_path / "p"), "--no-baseline").returncode == 0
    result = run_labtui("run", "--headless", "--auto", cwd=tmp_path / "p")
    _assert_clear_error(result, "'nonsense-model' is not a litellm model string", "openai/")


def test_a_full_disk_met_by_a_write_to_an_open_file_names_the_projects_folder(
    tmp_path, monkeypatch, capsys
):
    """ENOSPC from a write to a file already open names no file: the folder worked in is named."""
    import errno

    from labtui.tui import cli

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli, "dispatch", full)
    assert cli.main(["-C", str(tmp_path), "status"]) == 1
    said = capsys.readouterr().err
    assert f"error: the disk is full (the disk of {tmp_path.resolve()})" in said
