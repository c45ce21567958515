"""A researcher's own repository as a labtui project: its command runs through the same runner
and sandbox as a template's, its numbers are read from where it writes them into the same
final_info.json, its protected files stay as they are, labtui commits only on its own branch,
and results from before labtui are imported as evidence that provenance traces numbers to."""

from __future__ import annotations

import json
import sys

import pytest
from support.research_repo import git, make_repository

from labtui.core.errors import LabtuiError
from labtui.core.runs.runner import configured, run_experiment
from labtui.core.settings.config import Config, save_config
from labtui.core.workspace.project import Project

PYTHON = sys.executable


def repo_project(tmp_path, **results) -> Project:
    """The research repository with a labtui.toml of its own, on labtui's branch."""
    root = make_repository(tmp_path / "repo")
    config = Config()
    config.project.origin = "repository"
    config.project.branch = "labtui/research"
    config.project.task = "Learning rates for logistic regression on a synthetic boundary."
    config.experiment.command = "{python} train.py --output_dir {out_dir} --max_steps 100"
    config.experiment.edit = ["train.py", "model.py"]
    config.experiment.protect = ["evaluate.py"]
    config.experiment.python = PYTHON
    config.results = config.results.model_validate(
        results
        or {
            "source": "json",
            "path": "{out_dir}/metrics.json",
            "metrics": {"eval.accuracy": "higher", "eval.loss": "lower"},
        }
    )
    config.sandbox.mode = "limits"
    git(root, "checkout", "-q", "-b", "labtui/research")
    save_config(config, root)
    project = Project(root, config)
    project.exclude_locally([".labtui/"])
    project.commit("labtui init")
    return project


def run(project: Project, run_id: str = "run_1", **overrides):
    events: list = []
    settings = {**configured(project.config), **overrides}
    result = run_experiment(
        project.root, run_id, emit=events.append, stage="experiments", commit=project.head(),
        **settings,
    )  # fmt: skip
    return result, events


def test_a_repository_run_is_read_from_its_own_json_into_final_info(tmp_path):
    project = repo_project(tmp_path)
    result, _ = run(project)
    assert result.ok, result.problem
    final_info = json.loads((project.root / "run_1" / "final_info.json").read_text())
    means = final_info["main"]["means"]
    assert set(means) == {"eval.accuracy", "eval.loss"} and 0.7 < means["eval.accuracy"] <= 1
    assert result.means == {"main": means}
    record = json.loads((project.root / "run_1" / "labtui_run.json").read_text())
    assert record["argv"][1:] == ["train.py", "--output_dir", "run_1", "--max_steps", "100"]
    assert record["results"] == {"source": "json", "files": ["run_1/metrics.json"]}


def test_metric_lines_on_stdout_are_a_source(tmp_path):
    project = repo_project(tmp_path, source="stdout", metrics={"train_loss": "lower"}, reduce="min")
    result, events = run(project)
    assert result.ok, result.problem
    printed = [
        p["values"]["train_loss"]
        for e in events
        if type(e).__name__ == "MetricsReported"
        for p in e.points
    ]
    assert len(printed) == 2 and result.means["main"]["train_loss"] == pytest.approx(min(printed))


def test_a_metric_the_run_did_not_write_fails_the_run_with_the_fix(tmp_path):
    project = repo_project(
        tmp_path, source="json", path="{out_dir}/metrics.json", metrics={"eval.acc": "higher"}
    )
    result, _ = run(project)
    assert not result.ok
    assert "eval.acc" in result.problem and "run_1/metrics.json" in result.problem
    assert "[results] metrics" in result.problem and "eval.accuracy" in result.problem


def test_results_written_outside_the_run_folder_are_copied_into_it(tmp_path):
    project = repo_project(
        tmp_path, source="json", path="outputs/*/metrics.json", metrics={"eval.accuracy": "higher"}
    )
    project.config.experiment.command = "{python} train.py --output_dir outputs/latest"
    result, _ = run(project)
    assert result.ok, result.problem
    record = json.loads((project.root / "run_1" / "labtui_run.json").read_text())
    assert record["results"]["files"] == ["run_1/results/metrics.json"]
    # The earlier outputs/lr05/metrics.json is older than the run: not this run's numbers.
    kept = json.loads((project.root / "run_1" / "results" / "metrics.json").read_text())
    assert kept["eval"]["accuracy"] == result.means["main"]["eval.accuracy"] != 0.97


def test_a_run_that_changes_a_protected_file_is_undone_and_fails(tmp_path):
    project = repo_project(tmp_path)
    evaluate = project.root / "evaluate.py"
    original = evaluate.read_text()
    (project.root / "train.py").write_text(
        "open('evaluate.py', 'a').write('# always right\\n')\n"
        + (project.root / "train.py").read_text()
    )
    result, _ = run(project)
    assert not result.ok
    assert "changed evaluate.py, which [experiment] protect keeps from any change" in result.problem
    assert evaluate.read_text() == original


@pytest.mark.skipif(
    not __import__("labtui.core.machine.bubblewrap", fromlist=["available"]).available(),
    reason="bubblewrap does not work here",
)
def test_under_bubblewrap_a_protected_file_is_read_only(tmp_path):
    project = repo_project(tmp_path)
    project.config.sandbox.mode = "bwrap"
    (project.root / "train.py").write_text(
        "open('evaluate.py', 'a').write('# always right\\n')\n"
        + (project.root / "train.py").read_text()
    )
    result, _ = run(project)
    assert not result.ok and "Read-only file system" in result.stderr_tail
    record = json.loads((project.root / "run_1" / "labtui_run.json").read_text())
    assert "evaluate.py" in record["sandbox"]["read_only_in_project"]


def test_files_too_large_to_commit_stay_on_disk_and_out_of_git(tmp_path):
    project = repo_project(tmp_path)
    project.config.experiment.commit_file_mb = 1
    (project.root / "train.py").write_text(
        (project.root / "train.py").read_text()
        + "\nimport os\nos.makedirs('run_1', exist_ok=True)\n"
        + "open('run_1/model.ckpt', 'wb').write(b'0' * 2_000_000)\n"
    )
    result, _ = run(project)
    assert result.ok, result.problem
    info = project.commit("experiments: run_1", ["run_1"])
    assert info is not None and "run_1/model.ckpt" not in info.files
    assert "run_1/metrics.json" in info.files and (project.root / "run_1" / "model.ckpt").is_file()
    record = json.loads((project.root / "run_1" / "labtui_run.json").read_text())
    assert record["not_committed"] == ["model.ckpt"]


def test_labtui_never_commits_on_the_researchers_branch(tmp_path):
    project = repo_project(tmp_path)
    git(project.root, "checkout", "-q", "main")
    (project.root / "model.py").write_text("# changed\n")
    with pytest.raises(LabtuiError) as caught:
        project.commit("experiments: run_1 code")
    assert "is on main" in caught.value.message and "labtui/research" in caught.value.message
    assert "git checkout labtui/research" in caught.value.hint
    assert git(project.root, "log", "-1", "--format=%s", "main") == "my research so far"


def test_keeping_uncommitted_work_leaves_what_runs_left_behind_alone(tmp_path):
    project = repo_project(tmp_path)
    (project.root / "wandb").mkdir()
    (project.root / "wandb" / "run.log").write_text("big\n")
    (project.root / "model.py").write_text("# edited by hand\n")
    (project.root / "helpers.py").write_text("# new, but no file the agents edit\n")
    info = project.commit("labtui: keep changes made since the last session")
    assert info is not None and info.files == ["model.py"]
    project.config.experiment.edit = ["train.py", "model.py", "helpers.py"]
    assert project.commit("labtui: keep").files == ["helpers.py"]


# -- evidence: results from before labtui ---------------------------------------------------------


def test_an_earlier_result_file_is_imported_as_evidence_and_traced(tmp_path):
    from labtui.core.onboarding.evidence import import_file
    from labtui.core.provenance.record import run_sources

    project = repo_project(tmp_path)
    earlier = git(project.root, "rev-parse", "main")
    imported = import_file(project, project.root / "outputs/lr05/metrics.json", commit=earlier)
    assert imported.folder == "imported_1" and imported.commit == earlier
    assert imported.means == {"main": {"eval.accuracy": 0.97, "eval.loss": 0.21}}
    record = json.loads((project.root / "imported_1" / "labtui_run.json").read_text())
    assert record["imported_from"] == "outputs/lr05/metrics.json"
    assert record["commit_from"] == "given" and len(record["sha256"]) == 64
    assert "evidence: imported_1 imported from outputs/lr05/metrics.json" in git(
        project.root, "log", "-1", "--format=%s"
    )
    traced = [s for s in run_sources(project.root) if s.run == "imported_1" and s.value == 0.97]
    assert traced and traced[0].commit == earlier


def test_a_results_table_becomes_one_imported_run_per_row(tmp_path):
    from labtui.core.onboarding.evidence import import_table

    project = repo_project(tmp_path)
    imported = import_table(
        project, project.root / "results.csv", "lr", metrics={"accuracy": "higher"}
    )
    assert [(i.folder, i.row) for i in imported] == [("imported_1", "0.5"), ("imported_2", "0.05")]
    assert imported[1].means == {"main": {"accuracy": 0.91}}
    assert imported[0].commit_from == "the file's last commit"


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("missing.json", {}, "not found"),
        ("outputs/lr05/metrics.json", {"metrics": {"eval.f1": "higher"}}, "eval.f1"),
        ("outputs/lr05/metrics.json", {"commit": "deadbeef"}, "names no commit"),
    ],
)
def test_an_import_that_cannot_be_done_says_why_and_writes_nothing(tmp_path, name, kwargs, message):
    from labtui.core.onboarding.evidence import import_file

    project = repo_project(tmp_path)
    with pytest.raises(LabtuiError) as caught:
        import_file(project, project.root / name, **kwargs)
    assert message in caught.value.message
    assert not (project.root / "imported_1").exists() or message == "names no commit"


# -- the researcher's own draft -----------------------------------------------------------------------


def test_parts_of_a_draft_are_its_sections_or_its_files(tmp_path):
    from labtui.core.errors import StageFailed
    from labtui.core.writeup.draft_parts import Part, draft_parts

    root = make_repository(tmp_path / "repo")
    (root / "paper" / "results.tex").write_text("Results.\n")
    parts = draft_parts(root, "paper/main.tex", ["experiments", "results.tex"])
    assert parts == [
        Part("experiments", "paper/main.tex", "experiments"),
        Part("results.tex", "paper/results.tex"),
    ]
    with pytest.raises(StageFailed) as caught:
        draft_parts(root, "paper/main.tex", ["Results"])
    assert "[paper] sections names 'Results'" in caught.value.message
    assert "Introduction, Experiments, Conclusion" in caught.value.hint


def test_an_edit_that_reaches_outside_its_section_is_caught():
    from support.research_repo import PAPER

    from labtui.core.writeup.draft_parts import Part, _touched_elsewhere

    part = Part("Experiments", "paper/main.tex", "Experiments")
    inside = PAPER.replace("TO BE WRITTEN.", "We ran gradient descent.")
    assert _touched_elsewhere(part, PAPER, inside) == ""
    outside = inside.replace("simplest learner", "best learner")
    assert (
        _touched_elsewhere(part, PAPER, outside) == "changed text outside the section Experiments"
    )
    gone = PAPER.replace("\\section{Experiments}\nTO BE WRITTEN.\n", "")
    assert "removed the section" in _touched_elsewhere(part, PAPER, gone)
