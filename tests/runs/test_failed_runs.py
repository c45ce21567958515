"""A run that fails every fix attempt does not end the project: its code is reverted to the last
commit that ran, the failure is in notes.md, and the next planned run goes on. Code identical to
a run already made is not run again. In co-pilot mode the researcher decides about the failure."""

from __future__ import annotations

import json
import re

import pytest
from conftest import TEST_API_KEY, wire_project
from support.research_script import MoonsResearch, fenced_json, last_user_text, whole_file_edit

from labtui.core.checkpoints import Checkpoints, Decision
from labtui.core.errors import StageFailed
from labtui.core.events import Refused, RunAbandoned, StageFinished
from labtui.core.pipeline.session import Session
from labtui.core.stage_context import StageContext
from labtui.core.stages import experiments as experiments_stage
from labtui.core.steps.baseline import run_baseline
from labtui.core.workspace.project import Project

TWO_RUNS = {
    "runs": [
        {"change": "Double HIDDEN_UNITS", "measure": "test accuracy vs run_0"},
        {"change": "Triple HIDDEN_UNITS", "measure": "test accuracy vs run_0"},
    ]
}


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    """A moons project with its baseline, an idea chosen and a plan of two runs."""
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "p", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url)
    session = Session.open(project.root)
    session.config.limits.fix_attempts = 2
    session.config.limits.max_runs = 2
    root = project.root
    run_baseline(session.project, session.emit)
    MoonsResearch(root).install(llm_server)
    idea = {
        "Name": "wider_hidden_layer",
        "Title": "Wider",
        "Experiment": "Widen the hidden layer.",
        "Interestingness": 3,
        "Feasibility": 3,
        "Novelty": 3,
    }
    (root / "ideas.json").write_text(json.dumps([idea]))
    (root / "plan.json").write_text(json.dumps({"idea": idea["Name"], **TWO_RUNS}))
    project.commit("test: idea and plan")
    session.state.finished["novelty"] = StageFinished(
        stage="novelty", result={"idea": "wider_hidden_layer"}
    )
    session.events = []
    session.bus.subscribe(session.events.append)
    return session


def widened(root, factor: int) -> str:
    """experiment.py with HIDDEN_UNITS times ``factor``."""
    code = (root / "experiment.py").read_text()
    width = int(re.search(r"^HIDDEN_UNITS = (\d+)", code, re.MULTILINE).group(1))
    return re.sub(r"^HIDDEN_UNITS = \d+", f"HIDDEN_UNITS = {width * factor}", code, flags=re.M)


def width_edit(root, factor: int, why: str = "Widen.") -> str:
    return whole_file_edit("experiment.py", widened(root, factor), why)


def crash_edit(root) -> str:
    """The planned change (the width doubled), and a crash."""
    code = widened(root, 2) + "\nraise RuntimeError('exploding')\n"
    return whole_file_edit("experiment.py", code, "Try.")


def analysis(request) -> str | None:
    if "has finished. What it changed" in last_user_text(request):
        return fenced_json(
            {
                "analysis": "The wider layer's accuracy is in the table.",
                "next": "continue",
                "why": "the plan goes on",
            }
        )
    return None


def script(llm_server, root, *edits):
    """The experimenter: each code request takes the next of ``edits`` (a function of the
    project root); analyses of finished runs are answered on the side."""
    queue = list(edits)

    def reply(request):
        return analysis(request) or queue.pop(0)(root)

    llm_server.default("scripted-experiments", reply)
    return queue


def context(session, port=None) -> StageContext:
    checkpoints = Checkpoints(port, session.emit) if port else None
    return session.context_for("experiments", checkpoints=checkpoints)


def test_a_failed_run_is_reverted_recorded_and_the_next_planned_run_goes_on(session, llm_server):
    root = session.project.root
    baseline_code = (root / "experiment.py").read_text()
    script(llm_server, root, crash_edit, crash_edit, lambda r: width_edit(r, 3))
    output = experiments_stage.run(context(session))

    assert output.result.runs == ["run_2"]
    abandoned = [e for e in session.events if isinstance(e, RunAbandoned)]
    assert [(e.run_id, e.attempts) for e in abandoned] == [("run_1", 2)]
    assert "exploding" in abandoned[0].problem
    log = session.project.repo.git.log("--format=%s")
    assert "experiments: run_1 abandoned after 2 attempt(s); experiment.py reverted to " in log
    # run_2 started from the reverted code: only its own change is in it
    code = (root / "experiment.py").read_text()
    assert "exploding" not in code and "HIDDEN_UNITS = 96" in code
    assert code.replace("HIDDEN_UNITS = 96", "HIDDEN_UNITS = 32") == baseline_code
    notes = (root / "notes.md").read_text()
    assert "## run_1: failed, abandoned" in notes and "reverted to the code of run_0" in notes
    assert notes.count("attempt ") >= 2 and "exploding" in notes
    assert "## run_2" in notes
    # the failed run's folder is kept out of the root (plot.py reads every run_*/)
    assert not (root / "run_1").exists()
    assert (root / ".labtui" / "failed_runs" / "run_1" / "labtui_run.json").is_file()
    assert output.result.abandoned == {"run_1": abandoned[0].problem}


def test_when_no_planned_run_succeeds_the_stage_fails_with_the_notebook_telling_why(
    session, llm_server
):
    root = session.project.root
    script(llm_server, root, *[crash_edit] * 4)
    with pytest.raises(StageFailed, match="no planned run of wider_hidden_layer succeeded"):
        experiments_stage.run(context(session))
    notes = (root / "notes.md").read_text()
    assert "## run_1: failed, abandoned" in notes and "## run_2: failed, abandoned" in notes
    assert "exploding" not in (root / "experiment.py").read_text()
    assert session.project.repo.is_dirty() is False


def test_code_identical_to_an_earlier_run_is_not_run_again_and_the_model_is_told(
    session, llm_server
):
    root = session.project.root
    baseline_code = (root / "experiment.py").read_text()

    def back_to_baseline(root):
        return whole_file_edit("experiment.py", baseline_code, "Use the baseline settings.")

    script(
        llm_server, root, lambda r: width_edit(r, 2), back_to_baseline, lambda r: width_edit(r, 3)
    )
    output = experiments_stage.run(context(session))

    assert output.result.runs == ["run_1", "run_2"]
    refused = [e for e in session.events if isinstance(e, Refused) and e.what == "run"]
    assert [(e.subject, e.reason) for e in refused] == [
        ("run_2", "experiment.py is the very code run_0 already ran")
    ]
    told = [last_user_text(r) for r in llm_server.requests_for("scripted-experiments")]
    assert any("exactly as it was when run_0 ran" in text for text in told)
    started = [e.run_id for e in session.events if type(e).__name__ == "RunStarted"]
    assert started == ["run_1", "run_2"]


class FailedRunPort:
    """TEST-ONLY: answers the failed-run checkpoint from a list; approves the others."""

    def __init__(self, *decisions):
        self.decisions = list(decisions)
        self.asked = []

    def ask(self, request):
        self.asked.append(request)
        if "failed" in request.title:
            return self.decisions.pop(0)
        return Decision("approve")


def test_copilot_retry_with_a_note_reaches_the_coder_and_the_run_is_made(session, llm_server):
    root = session.project.root
    session.config.limits.max_runs = 1
    (root / "plan.json").write_text(
        json.dumps({"idea": "wider_hidden_layer", "runs": TWO_RUNS["runs"][:1]})
    )
    script(llm_server, root, crash_edit, crash_edit, lambda r: width_edit(r, 2))
    port = FailedRunPort(Decision("revise", "keep the network small, just widen it"))
    output = experiments_stage.run(context(session, port))

    failed = [r for r in port.asked if "failed" in r.title]
    assert len(failed) == 1 and set(failed[0].options) == {"revise", "edit", "skip", "abort"}
    assert "exploding" in failed[0].body
    assert output.result.runs == ["run_1"]
    last_code_prompt = [
        last_user_text(r)
        for r in llm_server.requests_for("scripted-experiments")
        if "has finished" not in last_user_text(r)
    ][-1]
    assert "keep the network small, just widen it" in last_code_prompt


def test_copilot_edit_runs_the_researchers_code_as_the_run(session, llm_server):
    root = session.project.root
    script(llm_server, root, crash_edit, crash_edit, lambda r: width_edit(r, 3))

    class EditingPort(FailedRunPort):
        def ask(self, request):
            if "failed" in request.title:
                code = (root / "experiment.py").read_text()
                (root / "experiment.py").write_text(
                    code.replace("HIDDEN_UNITS = 32", "HIDDEN_UNITS = 40")
                )
            return super().ask(request)

    output = experiments_stage.run(context(session, EditingPort(Decision("edit", "experiment.py"))))
    assert output.result.runs == ["run_1", "run_2"]
    record = json.loads((root / "run_1" / "labtui_run.json").read_text())
    assert "HIDDEN_UNITS = 40" in session.project.file_at(record["commit"], "experiment.py")
    assert "researcher edited experiment.py" in session.project.repo.git.log("--format=%s")


def test_copilot_skip_goes_on_with_the_next_planned_run(session, llm_server):
    root = session.project.root
    script(llm_server, root, crash_edit, crash_edit, lambda r: width_edit(r, 3))
    output = experiments_stage.run(context(session, FailedRunPort(Decision("skip"))))
    assert output.result.runs == ["run_2"]


# Written by hand, not recorded, after issue 13 (failure 2): the analysis a real model gave of a
# run identical to run_0, as the issue describes it; it was kept in notes.md, and the write-up
# reads notes.md.
HAND_WRITTEN_FALSE_CLAIM = (
    "The change gave an improvement in accuracy compared to the baseline, a significant change."
)


def comment_edit(root) -> str:
    """A change that does not change what the run computes: its results equal run_0's."""
    code = (root / "experiment.py").read_text()
    return whole_file_edit("experiment.py", "# tidied\n" + code, "Tidy the header.")


def test_an_analysis_the_effects_contradict_is_asked_again_then_kept_out_of_the_notebook(
    session, llm_server
):
    root = session.project.root
    session.config.limits.max_runs = 1
    (root / "plan.json").write_text(
        json.dumps({"idea": "wider_hidden_layer", "runs": TWO_RUNS["runs"][:1]})
    )
    tidy = {"change": "Tidy the header of experiment.py", "measure": "test accuracy vs run_0"}
    (root / "plan.json").write_text(json.dumps({"idea": "wider_hidden_layer", "runs": [tidy]}))
    analyses = []

    def reply(request):
        if "has finished. What it changed" in last_user_text(request) or analyses:
            analyses.append(last_user_text(request))
            return fenced_json(
                {"analysis": HAND_WRITTEN_FALSE_CLAIM, "next": "finish", "why": "It is done."}
            )
        return comment_edit(root)

    llm_server.default("scripted-experiments", reply)
    output = experiments_stage.run(context(session))

    assert output.result.runs == ["run_1"]
    assert "identical" in analyses[0], "the computed verdicts are in the prompt as fact"
    assert len(analyses) == 1 + session.config.llm.reasks
    assert "does not agree with the computed effects" in analyses[1]
    claims = [e for e in session.events if isinstance(e, Refused) and e.what == "claim"]
    assert claims and all(e.subject == "run_1" for e in claims)
    notes = (root / "notes.md").read_text()
    assert "improvement" not in notes and "significant change" not in notes
    assert "labtui withheld 1 sentence(s)" in notes
    assert "identical" in notes, "the effects table is in the notebook"
    assert HAND_WRITTEN_FALSE_CLAIM in output.checkpoint_body, (
        "the checkpoint shows what was withheld"
    )


def test_a_real_small_models_replies_that_never_edit_end_in_an_abandoned_run_and_a_clear_failure(
    session, llm_server
):
    """Replays SmolLM2-135M's real aider replies (tests/recorded/real_model/
    smollm2_moons_experiments.jsonl): chat instead of an edit, eight times. Nothing is run,
    nothing of the model's is committed, and the notebook says what was tried."""
    from support.recorded_replies import replies

    root = session.project.root
    session.config.limits.max_runs = 1
    (root / "plan.json").write_text(
        json.dumps({"idea": "wider_hidden_layer", "runs": TWO_RUNS["runs"][:1]})
    )
    recorded = replies("smollm2_moons_experiments", "experiments")
    assert len(recorded) == 8 and not any("```" in reply for reply in recorded)
    session.config.limits.fix_attempts = 4  # as the bench ran it: 4 attempts of 2 tries each
    llm_server.script("scripted-experiments", *recorded)
    before = (root / "experiment.py").read_text()

    with pytest.raises(StageFailed, match="no planned run of wider_hidden_layer succeeded"):
        experiments_stage.run(context(session))

    assert llm_server.remaining("scripted-experiments") == 0
    assert not [e for e in session.events if type(e).__name__ == "RunStarted"]
    assert [(e.run_id, e.attempts) for e in session.events if isinstance(e, RunAbandoned)] == [
        ("run_1", 4)
    ]
    assert (root / "experiment.py").read_text() == before
    notes = (root / "notes.md").read_text()
    assert "## run_1: failed, abandoned" in notes and "did not change experiment.py" in notes
    assert "You're welcome" not in notes, "a model's chat is not the notebook's"


def test_copilot_edit_that_changes_nothing_asks_again_without_running_the_agent_again(
    session, llm_server
):
    root = session.project.root
    script(llm_server, root, crash_edit, crash_edit, lambda r: width_edit(r, 3))
    port = FailedRunPort(Decision("edit", "experiment.py"), Decision("skip"))
    output = experiments_stage.run(context(session, port))
    assert [r.title for r in port.asked if "failed" in r.title] == [
        "experiments: run_1 failed 2 attempt(s)"
    ] * 2
    assert output.result.runs == ["run_2"]
    code_requests = [
        r
        for r in llm_server.requests_for("scripted-experiments")
        if "has finished" not in last_user_text(r)
    ]
    assert len(code_requests) == 3, "two attempts for run_1, one for run_2: nothing redone"


def test_an_edit_that_leaves_a_planned_setting_unmade_is_sent_back_unrun(session, llm_server):
    root = session.project.root
    plan = {
        "idea": "wider_hidden_layer",
        "runs": [{"change": "Set HIDDEN_UNITS to 64", "measure": "test accuracy vs run_0"}],
    }
    (root / "plan.json").write_text(json.dumps(plan))
    session.project.commit("test: a plan that names a setting")
    script(llm_server, root, comment_edit, lambda r: width_edit(r, 2))
    output = experiments_stage.run(context(session))

    assert output.result.runs == ["run_1"]
    refused = [e for e in session.events if isinstance(e, Refused) and e.what == "run"]
    unmade = (
        "the edit did not make the planned change: experiment.py still sets HIDDEN_UNITS = 32; "
        "the planned change sets it to 64"
    )
    assert [(e.subject, e.reason) for e in refused] == [("run_1", unmade)]
    told = [last_user_text(r) for r in llm_server.requests_for("scripted-experiments")]
    assert any("does not make the change the plan asks for" in text for text in told)
    started = [e.run_id for e in session.events if type(e).__name__ == "RunStarted"]
    assert started == ["run_1"], "the unmade edit was never run"
    assert "HIDDEN_UNITS = 64" in (root / "experiment.py").read_text()
