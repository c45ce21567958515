"""A project started from a topic alone: the agents write prepare.py (run: it must build data/),
experiment.py (the baseline, run as run_0; its numbers must come from running it) and plot.py
(run: it must draw a figure), each a commit, each failure sent back with its error."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from support.research_script import whole_file_edit
from support.research_topic import CODER, TopicCoder

from labtui.core.errors import StageFailed
from labtui.core.pipeline.session import Session
from labtui.core.steps.scaffold import scaffold, written_markdown
from labtui.core.workspace.project import Project


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
