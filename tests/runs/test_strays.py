"""What a failed or stopped run leaves outside its run folder (core/runs/strays.py), and the cap on
how many files a run creates (``[sandbox] max_files``, core/machine/watch.py): a flood of files is
stopped by name and removed, a file stopped at the size cap is removed with the disk given back
said, small strays are moved aside to ``.labtui/failed/<run_id>/``, and tracked files, files that
were there before, ignored ones and other runs' files are never touched. Real runs, real files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.experiment_scripts import write_experiment
from support.git_history import commit, init_repo

from labtui.core.events import Event, Notice
from labtui.core.machine import bubblewrap
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.runs import strays
from labtui.core.runs.runner import RunResult, run_experiment

PYTHON = sys.executable
MODES = [
    "limits",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(not bubblewrap.available(), reason="no bubblewrap here"),
    ),
]

FILE_FLOOD = """
os.makedirs("junk", exist_ok=True)
for i in range(3000):
    open(f"junk/{i}.txt", "w").close()
print("made 3000 files", flush=True)
time.sleep(60)
"""

FAST_FILLER = """
with open("big.bin", "wb") as f:
    while True:
        f.write(b"x" * 2**20)
"""

CARELESS = """
os.makedirs("notes/deep", exist_ok=True)
open("notes/deep/out.txt", "w").write("a failed run's note")
open("stray.log.txt", "w").write("log")
os.makedirs("cache", exist_ok=True)
open("cache/download.bin", "w").write("ignored: a download")
open("tracked.txt", "a").write(" and the run's line")
open("mine.txt", "a").write(" and the run's line")
raise SystemExit("the run failed")
"""


class Recorder(list[Event]):
    def notices(self) -> list[str]:
        return [e.text for e in self if isinstance(e, Notice)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project: a tracked file, an ignored folder, and an untracked file of the
    researcher's that was there before any run."""
    root = tmp_path / "project"
    root.mkdir()
    repo = init_repo(root)
    commit(repo, "start", {"tracked.txt": "tracked", ".gitignore": "/cache/\n.labtui/\n"})
    (root / ".labtui").mkdir()
    (root / "mine.txt").write_text("the researcher's")
    return root


def run(root: Path, body: str, events: Recorder, mode: str = "limits", **fields) -> RunResult:
    write_experiment(root, body)
    return run_experiment(
        root,
        "run_1",
        python=PYTHON,
        timeout_s=30,
        emit=events.append,
        stage="experiments",
        sandbox=SandboxSpec(mode=mode, root=root.resolve(), **fields),
        project_cap_mb=fields.pop("project_cap_mb", 0),
    )


def left_outside(root: Path) -> dict:
    return json.loads((root / "run_1" / "labtui_run.json").read_text())["left_outside"]


def assert_researchers_files_untouched(root: Path) -> None:
    assert (root / "tracked.txt").read_text().startswith("tracked")
    assert (root / "mine.txt").read_text().startswith("the researcher's")


@pytest.mark.parametrize("mode", MODES)
def test_a_flood_of_files_is_stopped_by_name_and_removed(project: Path, mode: str) -> None:
    events = Recorder()
    result = run(project, FILE_FLOOD, events, mode, max_files=500)
    assert not result.ok and not result.timed_out
    assert "run_1 was stopped by the sandbox: file count exceeded" in result.problem
    assert "more than [sandbox] max_files = 500" in result.problem
    assert not (project / "junk").exists(), "the files and the folder the run made are gone"
    made = left_outside(project)["removed_count"]
    assert 500 < made <= 3000, "stopped soon after it passed the cap"
    told = [n for n in events.notices() if n.startswith("run_1 failed:")]
    assert told and f"the {made:,} files it wrote outside run_1/" in told[0]
    assert "were removed: over [sandbox] max_files" in told[0]
    assert_researchers_files_untouched(project)


def test_a_file_stopped_at_the_size_cap_is_removed_and_the_disk_given_back_said(
    project: Path,
) -> None:
    events = Recorder()
    result = run(project, FAST_FILLER, events, max_file_mb=4)
    assert "[sandbox] max_file_mb = 4 MB" in result.problem
    assert not (project / "big.bin").exists()
    told = [n for n in events.notices() if n.startswith("run_1 failed:")]
    assert told == [
        "run_1 failed: the 1 file it wrote outside run_1/ (4.0 MB, big.bin) was removed: over "
        "[sandbox] max_file_mb = 4 MB; 4.0 MB given back"
    ]
    record = left_outside(project)
    assert record["removed"] == ["big.bin"] and record["freed_bytes"] == 4 * 2**20
    assert_researchers_files_untouched(project)


def test_a_failed_runs_small_strays_are_moved_aside_and_nothing_else_is_touched(
    project: Path,
) -> None:
    events = Recorder()
    result = run(project, CARELESS, events)
    assert "the run failed" in result.problem
    aside = project / ".labtui" / "failed" / "run_1"
    assert (aside / "notes" / "deep" / "out.txt").read_text() == "a failed run's note"
    assert (aside / "stray.log.txt").is_file()
    assert not (project / "notes").exists() and not (project / "stray.log.txt").exists()
    assert (project / "cache" / "download.bin").is_file(), "an ignored download stays"
    assert (project / "tracked.txt").read_text() == "tracked and the run's line"
    assert (project / "mine.txt").read_text() == "the researcher's and the run's line"
    assert (project / "run_1" / "labtui_run.json").is_file(), "the run folder stays as it is"
    told = [n for n in events.notices() if n.startswith("run_1 failed:")]
    assert told and "the 2 files it wrote outside run_1/" in told[0]
    assert "notes/deep/out.txt, stray.log.txt) were moved to .labtui/failed/run_1/" in told[0]
    assert "given back" not in told[0]
    assert left_outside(project)["moved"] == ["notes/deep/out.txt", "stray.log.txt"]


def test_a_run_that_worked_keeps_what_it_wrote(project: Path) -> None:
    events = Recorder()
    result = run(project, 'open("summary.txt", "w").write("kept")', events)
    assert result.ok, result.problem
    assert (project / "summary.txt").read_text() == "kept"
    assert left_outside(project)["moved"] == []


def test_while_another_run_goes_on_its_files_are_not_taken_for_strays(project: Path) -> None:
    (project / "run_0").mkdir()  # a run done before: its folder has its record
    (project / "run_0" / "labtui_run.json").write_text("{}")
    body = """
    os.makedirs("run_2", exist_ok=True)
    open("run_2/partial.txt", "w").write("run_2's, going on")
    open("shared.txt", "w").write("whose?")
    open("run_0/late.txt", "w").write("run_0's")
    raise SystemExit("the run failed")
    """
    with strays.running(project.resolve(), "run_2"):
        result = run(project, body, Recorder())
    assert not result.ok
    assert (project / "run_2" / "partial.txt").is_file()
    assert (project / "shared.txt").is_file(), "with another run going on, nothing is moved"
    assert (project / "run_0" / "late.txt").is_file()
    assert not (project / ".labtui" / "failed").exists()
