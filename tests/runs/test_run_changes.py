"""What a run changed against the baseline, from git and the runs' records: the settings it set
(in the code or on its command line) by name, old and new value, then the rest of the code it
changed; and the baseline's own settings. What cannot be known is an empty record, never an
error."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from labtui.core.runs.code_changes import FileChange, numstat
from labtui.core.runs.run_changes import (
    RunChanges,
    SettingChange,
    baseline_settings,
    run_changes,
)
from labtui.core.source.script_settings import Setting
from labtui.core.workspace.run_folder import ImportRecord, RunRecord, write_run_record

BASELINE = """import argparse

n_features = 64


def train(data):
    return data * n_features


def evaluate(model):
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--out_dir", default="run_0")
    parser.add_argument("--no_ema", action="store_true")
    return parser.parse_args()
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


Commit = Callable[[dict[str, str]], str]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@x.org"], ["config", "user.name", "t"]):
        _git(root, *args)
    return root


@pytest.fixture
def commit(root: Path) -> Commit:
    """Write the files and commit them; the commit's hash."""

    def make(files: dict[str, str]) -> str:
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        _git(root, "add", *files)
        _git(root, "commit", "-qm", "a change")
        return _git(root, "rev-parse", "HEAD")

    return make


def _run(root: Path, name: str, sha: str, *options: str) -> Path:
    argv = ["python", "experiment.py", f"--out_dir={name}", *options]
    write_run_record(root / name, RunRecord(run_id=name, argv=argv, commit=sha))
    return root / name


@pytest.fixture
def baseline(root: Path, commit: Commit) -> str:
    sha = commit({"experiment.py": BASELINE})
    _run(root, "run_0", sha)
    return sha


def test_a_changed_constant_is_a_setting_and_not_again_a_code_change(
    root: Path, commit: Commit, baseline: str
) -> None:
    sha = commit({"experiment.py": BASELINE.replace("n_features = 64", "n_features = 512")})
    changes = run_changes(root, _run(root, "run_1", sha), root / "run_0")
    assert changes == RunChanges(
        "run_1", "run_0", sha, (SettingChange("n_features", 64, 512, "code"),), ()
    )
    assert changes.summary() == "sets n_features from 64 to 512"


def test_a_changed_default_is_said_by_its_flag(root: Path, commit: Commit, baseline: str) -> None:
    sha = commit({"experiment.py": BASELINE.replace("default=3e-4", "default=1e-3")})
    changes = run_changes(root, _run(root, "run_1", sha), root / "run_0")
    assert changes.summary() == "sets --lr from 0.0003 to 0.001"


def test_a_changed_function_is_named_with_the_lines_counted(
    root: Path, commit: Commit, baseline: str
) -> None:
    body = "    return data * n_features\n"
    code = BASELINE.replace(body, "    scaled = data / 2\n    return scaled * n_features\n")
    sha = commit({"experiment.py": code.replace("= 64", "= 128"), "helpers.py": "X = 1\n"})
    changes = run_changes(root, _run(root, "run_1", sha), root / "run_0")
    assert changes.files == (
        FileChange("experiment.py", 3, 2, ("train",)),
        FileChange("helpers.py", 1, 0, ()),
    ), "evaluate and main are as they were; a new file counts its lines"
    assert changes.summary() == (
        "sets n_features from 64 to 128; changes experiment.py (+3/−2 lines in train); "
        "changes helpers.py (+1/−0 lines)"
    )


def test_what_runs_and_labtui_write_is_no_change_of_the_code(
    root: Path, commit: Commit, baseline: str
) -> None:
    sha = commit(
        {
            "run_0/final_info.json": "{}",
            "run_1/plot.py": "print(1)\n",
            "latex/template.tex": "x",
            ".labtui/state.txt": "x",
            "notes.md": "# notes\n",
            "figures/loss.png": "png",
            "results.json": "{}",
        }
    )
    changes = run_changes(root, _run(root, "run_1", sha), root / "run_0")
    assert changes.settings == () and changes.files == ()
    assert changes.summary() == "changes nothing against run_0"


def test_an_option_its_command_line_gives(root: Path, baseline: str) -> None:
    changes = run_changes(root, _run(root, "run_1", baseline, "--epochs", "20"), root / "run_0")
    assert changes.settings == (SettingChange("--epochs", 10, 20, "command"),)
    assert changes.summary() == "sets --epochs from 10 to 20", "each run's --out_dir is its own"


def test_a_command_lines_switches_and_undeclared_options(root: Path, baseline: str) -> None:
    run = _run(root, "run_1", baseline, "--no_ema", "--optimizer", "sgd", "trainer.steps=500")
    changes = run_changes(root, run, root / "run_0")
    assert changes.settings == (
        SettingChange("--no_ema", False, True, "command"),
        SettingChange("--optimizer", None, "sgd", "command"),
        SettingChange("trainer.steps", None, 500, "command"),
    )
    assert changes.summary().startswith("sets --no_ema from False to True; sets --optimizer to")


def test_an_import_an_unreadable_record_or_a_missing_commit_is_empty(
    root: Path, baseline: str
) -> None:
    imported = root / "imported_1"
    write_run_record(imported, ImportRecord(run_id="imported_1", commit=baseline))
    unreadable = root / "run_2"
    unreadable.mkdir()
    (unreadable / "labtui_run.json").write_text("{not json")
    gone = _run(root, "run_3", "0123456789abcdef0123456789abcdef01234567")
    no_commit = _run(root, "run_4", "")
    for run in (imported, unreadable, gone, no_commit, root / "run_5"):
        changes = run_changes(root, run, root / "run_0")
        assert changes == RunChanges(run.name, "run_0", ""), run.name
        assert changes.summary() == f"what {run.name} changed against run_0 is not recorded"
    assert run_changes(root, root / "run_0", imported).commit == ""


def test_the_baselines_settings_with_its_command_line_over_the_defaults(
    root: Path, baseline: str
) -> None:
    write_run_record(
        root / "run_0",
        RunRecord(argv=["python", "experiment.py", "--epochs=20", "--seed", "3"], commit=baseline),
    )
    assert baseline_settings(root, root / "run_0") == [
        Setting("n_features", 64, "constant", 3),
        Setting("lr", 3e-4, "option", 16, "--lr"),
        Setting("epochs", 20, "option", 17, "--epochs"),
        Setting("out_dir", "run_0", "option", 18, "--out_dir"),
        Setting("no_ema", False, "option", 19, "--no_ema"),
        Setting("seed", 3, "option", 0, "--seed"),
    ]


def test_git_counts_a_binary_file_as_no_lines() -> None:
    assert numstat("3\t1\ta.py\0-\t-\tb.bin\0") == [("a.py", 3, 1), ("b.bin", 0, 0)]
