"""A project started from a topic alone: the agents write prepare.py (run: it must build data/),
experiment.py (the baseline, run as run_0; its numbers must come from running it) and plot.py
(run: it must draw a figure), each a commit, each failure sent back with its error."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from support.research_script import last_user_text, whole_file_edit

from labtui.core.errors import StageFailed
from labtui.core.pipeline import Session
from labtui.core.project import Project
from labtui.core.scaffold import scaffold, written_markdown
from labtui.core.templates import default_paper

CODER = "scripted-experiments"

PREPARE = """\
import os
import numpy as np

rng = np.random.default_rng(0)
x = np.concatenate([rng.normal(-1, 1, (200, 2)), rng.normal(1, 1, (200, 2))])
y = np.array([0] * 200 + [1] * 200)
os.makedirs("data", exist_ok=True)
np.savez("data/blobs.npz", x=x, y=y)
print("data/blobs.npz", x.shape)
"""

EXPERIMENT = """\
import argparse
import json
import os

import numpy as np

RIDGE = 0.1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", required=True)
    out = parser.parse_args().out_dir
    data = np.load("data/blobs.npz")
    x = np.c_[data["x"], np.ones(len(data["x"]))]
    w = np.linalg.solve(x.T @ x + RIDGE * np.eye(3), x.T @ (2 * data["y"] - 1))
    accuracy = float(((x @ w > 0) == (data["y"] == 1)).mean())
    print(f"test_accuracy {accuracy:.4f}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "final_info.json"), "w") as handle:
        json.dump({"blobs": {"means": {"test_accuracy": accuracy}}}, handle)


main()
"""

# What a small model does when told the shape of final_info.json: it writes the numbers itself.
TYPED = """\
import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
out = parser.parse_args().out_dir
os.makedirs(out, exist_ok=True)
json.dump({"blobs": {"means": {"test_accuracy": 0.875}}}, open(os.path.join(out, "final_info.json"), "w"))
"""

PLOT = """\
import glob
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

labels = {"run_0": "Baseline"}
runs = [r for r in labels if glob.glob(f"{r}/final_info.json")]
values = [json.load(open(f"{r}/final_info.json"))["blobs"]["means"]["test_accuracy"] for r in runs]
plt.bar([labels[r] for r in runs], values)
plt.savefig("accuracy.png")
"""


def skeletons() -> list[str]:
    """The first drops a placeholder (refused); the second adds a section and a package."""
    bundled = default_paper().read_text()
    lost = bundled.replace("RESULTS HERE", "")
    adapted = bundled.replace("\\usepackage{amsmath}", "\\usepackage{amsmath}\n\\usepackage{bm}")
    adapted = adapted.replace(
        "\\section{Method}", "\\section{Problem Setting}\nPROBLEM SETTING HERE\n\n\\section{Method}"
    )
    return [lost, adapted]


class TopicCoder:
    """TEST-ONLY: a coder that writes the file each prompt asks for, the first experiment.py
    with typed-in results (as small models do), the next computed; the first paper skeleton
    without a placeholder, the next adapted."""

    def __init__(self) -> None:
        self.experiments = [TYPED, EXPERIMENT]
        self.skeletons = skeletons()

    def __call__(self, request):
        text = last_user_text(request)
        if "skeleton of the paper" in text or ("latex/template.tex" in text and "Fix" in text):
            tex = self.skeletons.pop(0) if len(self.skeletons) > 1 else self.skeletons[0]
            return whole_file_edit("latex/template.tex", tex, "The skeleton:")
        if "Write prepare.py" in text:
            return whole_file_edit("prepare.py", PREPARE, "The data step:")
        if "Write plot.py" in text:
            return whole_file_edit("plot.py", PLOT, "The plots:")
        if "experiment.py" in text:
            code = self.experiments.pop(0) if len(self.experiments) > 1 else self.experiments[0]
            return whole_file_edit("experiment.py", code, "The baseline:")
        raise AssertionError(f"unexpected prompt: {text[:200]}")


def topic_project(tmp_path, llm_server, monkeypatch) -> Project:
    monkeypatch.setenv("LABTUI_API_KEY", "sk-test")
    project = Project.create_from_topic(tmp_path / "blobs", "Linear classifiers on 2-D blobs")
    config = project.config
    config.models.api_base = llm_server.url
    config.models.experiments = f"openai/{CODER}"
    config.models.edit_format = "whole"
    config.llm.profile = "hosted"
    config.sandbox.mode = "limits"
    config.limits.fix_attempts = 3
    return project


IDEA = SimpleNamespace(
    name="ridge_strength",
    title="How Much Ridge Does a Linear Classifier on Blobs Need?",
    experiment="Vary RIDGE and compare test accuracy with the baseline.",
)


def test_a_topic_gets_its_data_step_baseline_and_plots_written_run_and_committed(
    tmp_path, llm_server, monkeypatch
):
    project = topic_project(tmp_path, llm_server, monkeypatch)
    llm_server.default(CODER, TopicCoder())
    session = Session(project)
    events: list = []
    session.bus.subscribe(events.append)
    written = scaffold(session.context_for("plan"), IDEA)
    names = ["prepare.py", "experiment.py", "latex/template.tex", "plot.py"]
    assert [w.name for w in written] == names
    root = project.root
    assert (root / "data/blobs.npz").is_file()
    final_info = json.loads((root / "run_0/final_info.json").read_text())
    assert 0.8 < final_info["blobs"]["means"]["test_accuracy"] <= 1.0
    assert (root / "accuracy.png").is_file()
    notices = " ".join(e.text for e in events if type(e).__name__ == "Notice")
    assert "are written in experiment.py itself: they must be computed by the run" in notices
    refused = " ".join(e.reason for e in events if type(e).__name__ == "Refused")
    assert "it lost the placeholders RESULTS HERE" in notices, refused
    tex = (root / "latex/template.tex").read_text()
    assert "PROBLEM SETTING HERE" in tex and "RESULTS HERE" in tex
    assert "Problem Setting" in written[2].shown and "compiles" in written[2].shown
    log = project.repo.git.log("--format=%s")
    for message in (
        "plan: write prepare.py (attempt 1)",
        "baseline: run_0 results",
        "plan: write experiment.py (attempt 2)",
        "plan: figures of run_0",
    ):
        assert message in log  # fmt: skip
    assert "data/" not in project.repo.git.ls_files()  # made again by prepare.py, not versioned
    shown = written_markdown(written)
    assert "`experiment.py`" in shown and "the baseline run_0 ran" in shown
    # The prompts told the agents what the machine has, and no network.
    prompts = json.dumps(llm_server.requests_for(CODER))
    assert "numpy" in prompts and "no network" in prompts
    # Asked again (a revised plan), the scaffold lists what was written and writes nothing.
    again = scaffold(session.context_for("plan"), IDEA)
    assert [w.name for w in again] == names
    assert len(llm_server.requests_for(CODER)) == len(json.loads(prompts))


def test_a_data_step_that_never_works_fails_the_stage_with_the_way_on(
    tmp_path, llm_server, monkeypatch
):
    project = topic_project(tmp_path, llm_server, monkeypatch)
    project.config.limits.fix_attempts = 2
    broken = whole_file_edit("prepare.py", "raise SystemExit('no data here')\n", "Try:")
    llm_server.default(CODER, lambda request: broken)
    with pytest.raises(StageFailed) as caught:
        scaffold(Session(project).context_for("plan"), IDEA)
    assert "no working prepare.py after 2 attempt(s)" in caught.value.message
    assert "write prepare.py yourself" in caught.value.hint
    assert "no data here" in json.dumps(llm_server.requests_for(CODER)[-1]["messages"])


def test_a_project_with_its_code_is_not_scaffolded(project):
    assert scaffold(Session(project).context_for("plan"), IDEA) == []


def test_a_real_small_model_that_writes_no_code_fails_the_plan_clearly(
    tmp_path, llm_server, monkeypatch
):
    """Replays SmolLM2-135M's real replies to the topic's data step (tests/recorded/real_model/
    smollm2_topic.jsonl): chat about aider's rules instead of a file, four times. The step fails
    with what to do, the empty prepare.py is never committed, and nothing is run."""
    from support.recorded_replies import replies

    project = topic_project(tmp_path, llm_server, monkeypatch)
    project.config.limits.fix_attempts = 2
    recorded = replies("smollm2_topic")
    assert len(recorded) == 4
    llm_server.script(CODER, *recorded)
    with pytest.raises(StageFailed) as caught:
        scaffold(Session(project).context_for("plan"), IDEA)
    assert (
        caught.value.message
        == "no working prepare.py after 2 attempt(s): prepare.py is still empty"
    )
    assert llm_server.remaining(CODER) == 0
    assert "prepare.py" not in project.repo.git.ls_files()
    assert not (project.root / "prepare.py").exists()
    assert not (project.root / "data").exists()
