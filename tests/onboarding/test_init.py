"""`labtui init` in a researcher's own repository: a proposal read off the repository by code,
checked when approved (a wrong value named with its fix, nothing lost), a smoke run, then
labtui.toml committed on labtui's own branch and the baseline run through the same runner as
every run; and `labtui import` of earlier results as evidence."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib

from conftest import labtui_bin, run_labtui
from support.research_repo import commit_as_researcher, git, make_repository


def init(root, *args: str):
    return run_labtui("init", *args, cwd=root)


def init_answering(root, answers: str, editor_command: str) -> subprocess.CompletedProcess:
    """`labtui init` at a terminal: ``answers`` typed at its checkpoint, $EDITOR for `e`."""
    return subprocess.run(
        [labtui_bin(), "init", "--no-model"],
        cwd=root,
        env={**os.environ, "EDITOR": editor_command},
        input=answers,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_init_proposes_checks_commits_on_its_branch_and_runs_the_baseline(tmp_path):
    root = make_repository(tmp_path / "repo")
    main_before = git(root, "rev-parse", "main")
    done = init(root, "--yes", "--no-model", "--idea", "Learning rate schedules")
    assert done.returncode == 0, done.stderr + done.stdout
    # The proposal, as the researcher saw it.
    assert "checkpoint init: how labtui runs repo" in done.stdout
    proposal = (root / ".labtui/init/labtui.toml").read_text()
    assert "train.py declares" in proposal or "README" in proposal
    # Committed on labtui's branch; main is exactly as it was.
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "labtui/learning-rate-schedules"
    assert git(root, "rev-parse", "main") == main_before
    assert "labtui works on the branch labtui/learning-rate-schedules" in done.stdout
    config = tomllib.loads((root / "labtui.toml").read_text())
    assert config["project"]["origin"] == "repository"
    assert config["project"]["branch"] == "labtui/learning-rate-schedules"
    assert config["experiment"]["command"] == "{python} train.py --output_dir {out_dir} --lr 0.5"
    assert "--max_steps" in config["experiment"]["smoke_command"]
    assert config["results"]["source"] == "json"
    assert config["results"]["path"] == "{out_dir}/metrics.json"
    assert set(config["results"]["metrics"]) == {"eval.accuracy", "eval.loss"}
    assert "train.py" in config["experiment"]["edit"]
    assert "evaluate.py" in config["experiment"]["protect"]
    assert config["paper"]["tex"] == "paper/main.tex"
    # The smoke run checked the set-up, then the baseline ran and was committed.
    assert "smoke run ok" in done.stdout
    final_info = json.loads((root / "run_0/final_info.json").read_text())
    assert 0.7 < final_info["main"]["means"]["eval.accuracy"] <= 1.0
    log = git(root, "log", "--format=%s", "main..HEAD")
    assert log.splitlines() == ["baseline: run_0 results", "labtui init: labtui.toml on " +
                                "labtui/learning-rate-schedules"]  # fmt: skip
    # labtui's state stays out of the researcher's git, without touching their .gitignore.
    assert git(root, "status", "--porcelain") == ""
    assert ".labtui/" in (root / ".git/info/exclude").read_text()
    # Back on their own branch, labtui says where its work is instead of "no project here".
    git(root, "checkout", "-q", "main")
    elsewhere = run_labtui("run", "--headless", "--auto", cwd=root)
    assert "labtui's work is on labtui/learning-rate-schedules" in elsewhere.stderr
    assert "git checkout labtui/learning-rate-schedules" in elsewhere.stderr


def test_earlier_results_are_offered_and_imported_as_evidence(tmp_path):
    root = make_repository(tmp_path / "repo")
    assert init(root, "--yes", "--no-model", "--no-baseline").returncode == 0
    earlier = git(root, "rev-parse", "main")
    done = run_labtui("import", "outputs/lr05/metrics.json", "--commit", earlier, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "imported_1: outputs/lr05/metrics.json" in done.stdout and earlier[:8] in done.stdout
    table = run_labtui("import", "results.csv", "--table", "lr", "--metric", "accuracy=higher",
                       cwd=root)  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert "imported_2: results.csv (row 0.5)" in table.stdout
    assert "assumed to be HEAD" not in table.stderr  # the table is tracked: its commit is known


def test_a_dirty_tree_is_refused_with_what_is_dirty_and_the_ways_out(tmp_path):
    root = make_repository(tmp_path / "repo")
    (root / "model.py").write_text("# half-done change\n")
    (root / "notes.txt").write_text("scratch\n")
    done = init(root, "--yes", "--no-model")
    assert done.returncode == 2
    assert "uncommitted changes" in done.stderr and "model.py" in done.stderr
    assert "notes.txt" in done.stderr and "--commit-dirty" in done.stderr
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (root / "labtui.toml").exists()


def test_commit_dirty_keeps_the_work_on_labtuis_branch_not_on_main(tmp_path):
    root = make_repository(tmp_path / "repo")
    (root / "model.py").write_text((root / "model.py").read_text() + "# my change\n")
    done = init(root, "--yes", "--no-model", "--no-baseline", "--commit-dirty")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "# my change" not in git(root, "show", "main:model.py")
    assert "# my change" in git(root, "show", "HEAD:model.py")
    assert "labtui init: your uncommitted work, as it was" in git(root, "log", "--format=%s")


def test_init_where_it_cannot_work_says_why(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not a git repository" in init(plain, "--yes").stderr
    root = make_repository(tmp_path / "repo")
    inside = init(root / "paper", "--yes")  # a folder of the repository with no experiment
    assert "holds no script" in inside.stderr and f"run `labtui init` in {root}" in inside.stderr
    assert init(root, "--yes", "--no-model", "--no-baseline").returncode == 0
    again = init(root, "--yes")
    assert "is a labtui project already" in again.stderr


def test_a_repository_without_latex_gets_the_bundled_paper(tmp_path):
    root = make_repository(tmp_path / "repo", with_paper=False)
    done = init(root, "--yes", "--no-model", "--no-baseline")
    assert done.returncode == 0, done.stderr + done.stdout
    paper = (root / "paper/main.tex").read_text()
    assert "TITLE HERE" in paper and "\\bibliography{references}" in paper
    assert "labtui's bundled paper is at paper/main.tex" in done.stdout
    assert "paper/main.tex" in git(root, "show", "--name-only", "--format=", "HEAD")


def editor(tmp_path, python_code: str) -> str:
    """An $EDITOR that changes the file it is given with ``python_code`` (``text`` in, out)."""
    script = tmp_path / "edit.py"
    script.write_text(
        "import sys\npath = sys.argv[1]\ntext = open(path).read()\n"
        + python_code
        + "\nopen(path, 'w').write(text)\n"
    )
    wrapper = tmp_path / "editor"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$1"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def test_a_wrong_edit_is_named_with_its_fix_and_asked_again_losing_nothing(tmp_path):
    root = make_repository(tmp_path / "repo")
    wrong = editor(
        tmp_path,
        "import re\ntext = re.sub(r'(?m)^edit = .*$', 'edit = [\"trian.py\"]', text)",
    )
    done = init_answering(root, "e\na\nq\n", wrong)
    assert done.returncode == 1, done.stdout
    assert "[experiment] edit = ['trian.py'] names no file" in done.stdout
    assert "labtui.toml" in done.stdout.split("names no file")[0]  # names the proposal file
    assert "nothing was committed; the proposal stays in .labtui/init/labtui.toml" in done.stdout
    assert 'edit = ["trian.py"]' in (root / ".labtui/init/labtui.toml").read_text()
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (root / "labtui.toml").exists()
    # Run again, the edited proposal is what is asked about: nothing of the edit is lost.
    again = init_answering(root, "q\n", editor(tmp_path, ""))
    assert "continuing with the proposal in .labtui/init/labtui.toml" in again.stdout
    assert 'edit = ["trian.py"]' in again.stdout


def test_a_failing_smoke_run_is_said_before_anything_is_committed(tmp_path):
    root = make_repository(tmp_path / "repo")
    bad_metric = editor(tmp_path, "text = text.replace('eval.accuracy', 'eval.acc')")
    done = init_answering(root, "e\na\nq\n", bad_metric)
    assert "the smoke run failed" in done.stdout and "eval.acc" in done.stdout
    assert not (root / "labtui.toml").exists() and not (root / "labtui_smoke").exists()
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_labtui_new_from_a_topic_writes_no_code_and_checks_the_data(tmp_path):
    data = tmp_path / "spectra.csv"
    data.write_text("a,b\n1,2\n")
    root = tmp_path / "topic"
    done = run_labtui("new", str(root), "--idea", "Denoising 1-D spectra with small CNNs",
                      "--data", str(data))  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((root / "labtui.toml").read_text())
    assert config["project"]["origin"] == "topic"
    assert config["project"]["task"] == "Denoising 1-D spectra with small CNNs"
    assert config["project"]["data"] == [str(data)]
    assert not (root / "experiment.py").exists() and (root / "latex/template.tex").is_file()
    assert "data/" in (root / ".gitignore").read_text()
    missing = run_labtui("new", str(tmp_path / "t2"), "--idea", "x", "--data", "/no/such/file")
    assert missing.returncode == 2 and "data not found: /no/such/file" in missing.stderr


SLOW_STEPS = """\
import argparse
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    for step in range(args.steps):
        time.sleep(0.9)  # far slower than the 0.45 s a step guessed before anything ran
        print(f"step {step} loss {1.0 / (step + 1):.4f}")


if __name__ == "__main__":
    main()
"""


def test_a_slow_default_count_left_off_the_command_is_refitted_before_the_baseline(tmp_path):
    """Issue 43: a --steps default that fits the guessed pace is left off the command; the
    smoke run, sized to the first metric line, measures the real pace, and the baseline is
    refitted to it with --steps written into the command, so run_0 ends before the timeout
    (20 steps at 0.9 s would not: 18 s is the whole of [limits] run_timeout_s here)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "train.py").write_text(SLOW_STEPS)
    commit_as_researcher(root)
    env = {**os.environ, "LABTUI_LIMITS__RUN_TIMEOUT_S": "18", "COLUMNS": "400"}
    done = run_labtui("init", "--yes", "--no-model", cwd=root, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    said = " ".join(done.stdout.split())
    assert "the baseline's length, --steps" in said
    config = tomllib.loads((root / "labtui.toml").read_text())
    assert config["experiment"]["smoke_command"].endswith("--steps 3")  # not 10 of its 20
    command = config["experiment"]["command"].split()
    assert command[:-2] == ["{python}", "train.py", "--out_dir", "{out_dir}"]
    assert command[-2] == "--steps" and 5 <= int(command[-1]) <= 10  # 9 s fit at 0.9 s a step
    final_info = json.loads((root / "run_0/final_info.json").read_text())
    assert 0 < final_info["main"]["means"]["loss"] < 1
