"""Issue 43, the wrong script's metrics: with several candidate scripts labtui chooses one by
stated rules (the README's link or command, the name, the newest results) and says why; the
metrics are that script's own, and printed settings (``Depth: 3``) or a data split's name
(``Accuracy on test set: 97.7%`` read as test_set) are no metrics."""

from __future__ import annotations

import os
import tomllib

from conftest import run_labtui
from support.research_repo import commit_as_researcher, write_files

from labtui.core.onboarding.repo_scan import propose_setup, survey
from labtui.core.workspace.run_folder import read_final_info

# trains in a fraction of a second and prints the metric it is judged by
LINKED = """\
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()
loss = 1.0
for step in range(args.steps):
    loss *= 0.9
    print(f"step {step} val_loss {loss:.4f}")
"""
# a sweep over a setting that prints its label, and an accuracy "on test set"
OTHER = """\
from sklearn.tree import DecisionTreeClassifier

X, y = [[0], [1]], [0, 1]
for depth in range(1, 4):
    clf = DecisionTreeClassifier(max_depth=depth).fit(X, y)
    print("Depth: {}".format(depth))
    print("Accuracy on test set: {:.1f}%".format(100 * clf.score(X, y)))

if __name__ == "__main__":
    pass
"""
README = """\
# Two scripts

The example to start from is [the training script](examples/linked_example.py); the other one
is a sketch.
"""


def test_yes_runs_the_script_the_readme_links_with_its_own_metrics(tmp_path):
    files = {
        "README.md": README,
        "examples/linked_example.py": LINKED,
        "examples/depth_sweep.py": OTHER,
    }
    root = commit_as_researcher(write_files(tmp_path / "repo", files))
    env = {**os.environ, "LABTUI_LIMITS__RUN_TIMEOUT_S": "60", "COLUMNS": "300"}
    done = run_labtui("init", "--yes", "--no-model", cwd=root, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    proposal = " ".join((root / ".labtui/init/labtui.toml").read_text().split())
    assert "the README links examples/linked_example.py" in proposal
    assert "examples/depth_sweep.py besides examples/linked_example.py" in proposal
    config = tomllib.loads((root / "labtui.toml").read_text())
    assert config["experiment"]["command"].split()[1] == "examples/linked_example.py"
    assert config["results"]["metrics"] == {"val_loss": "lower"}
    assert set(read_final_info(root / "run_0").means()["main"]) == {"val_loss"}


def test_printed_settings_and_a_split_name_are_no_metrics(tmp_path):
    script = OTHER.replace("X, y", 'LR = 0.01\nprint(f"lr: {LR}")\nprint(f"seed: {3}")\nX, y')
    draft = propose_setup(survey(write_files(tmp_path, {"sweep.py": script})))
    assert "metrics" not in draft.values["results"]
    assert any("Which metric names does a run print" in q for q in draft.open_questions)


def test_a_swept_label_beside_a_measure_leaves_only_the_measure(tmp_path):
    script = OTHER.replace(
        '"Accuracy on test set: {:.1f}%"', '"Test accuracy: {:.3f}, depth {}"'
    ).replace("clf.score(X, y))", "clf.score(X, y), depth)")
    draft = propose_setup(survey(write_files(tmp_path, {"sweep.py": script})))
    assert draft.values["results"]["metrics"] == {"test_accuracy": "higher"}


def test_without_a_readme_the_name_then_the_newest_results_choose(tmp_path):
    plain = "if __name__ == '__main__':\n    print('hello')\n"
    writes = (
        "import json\nif __name__ == '__main__':\n    json.dump({}, open('results.json', 'w'))\n"
    )
    named = write_files(tmp_path / "named", {"a.py": plain, "b/train.py": plain})
    draft = propose_setup(survey(named))
    assert draft.values["experiment"]["command"] == "{python} b/train.py"
    assert "b/train.py is named like an experiment's script" in draft.reasons["experiment.command"]
    results = write_files(
        tmp_path / "results", {"a.py": plain, "b.py": writes, "results.json": '{"acc": 1}'}
    )
    draft = propose_setup(survey(results))
    assert draft.values["experiment"]["command"] == "{python} b.py"
    assert (
        "b.py names results.json, the newest earlier result" in draft.reasons["experiment.command"]
    )
    undecided = propose_setup(
        survey(write_files(tmp_path / "none", {"b.py": plain, "a.py": plain}))
    )
    assert undecided.values["experiment"]["command"] == "{python} a.py"
    assert any("labtui chose a.py because no README" in q for q in undecided.open_questions)
