"""Several ideas at once: lanes in git worktrees, run beside the chosen idea, stopped with it,
reported per idea; runs stoppable mid-way; runs that queue for a GPU say so."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from conftest import processes_in
from support.parallel_ideas import SECOND, StopAfterExperiments, TwoIdeas
from support.waiting import wait_until

from labtui.core.errors import Aborted, StageFailed
from labtui.core.events import AgentMessage, CodeDiff, LogLine, Notice, RunStarted
from labtui.core.journal import read_events
from labtui.core.machine.gpu import GpuInfo, GpuPool
from labtui.core.machine.processes import run_process
from labtui.core.pipeline.session import Session
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.config import load_config, save_config
from labtui.core.stage_context import labelled
from labtui.core.steps.lanes import FORK_TAG, comparison_markdown, lane_ideas, run_alongside
from labtui.core.workspace.ideas import Idea


def _idea(name: str, status: str = "proposed") -> Idea:
    return Idea(name, name.title(), "e", 5, 5, 5, status=status)


# -- the pieces -------------------------------------------------------------------------------


def test_lanes_take_the_next_ranked_ideas_but_not_the_chosen_or_not_novel_ones():
    archive = [_idea("a"), _idea("b", "not_novel"), _idea("c"), _idea("d")]
    ranked = ["a", "b", "c", "d", "ghost"]
    assert [i.name for i in lane_ideas(archive, ranked, "a", 5)] == ["c", "d"]
    assert [i.name for i in lane_ideas(archive, ranked, "c", 1)] == ["a"]
    assert lane_ideas(archive, ranked, "a", 0) == []


def test_lanes_run_at_the_same_time_as_the_chosen_idea():
    # Each of the three waits for the other two: this only ends if all run at once.
    meet = threading.Barrier(3, timeout=10)
    value, ended = run_alongside(
        lambda: (meet.wait(), "main")[1], {"x": meet.wait, "y": meet.wait}, threading.Event()
    )
    assert value == "main" and ended == {"x": None, "y": None}


def test_a_failing_lane_is_reported_and_the_chosen_idea_goes_on():
    def broken():
        raise StageFailed("run_1 did not succeed in 1 attempt(s)", "read the log")

    value, ended = run_alongside(lambda: 7, {"bad": broken}, threading.Event())
    assert value == 7 and isinstance(ended["bad"], StageFailed)


def test_when_the_chosen_idea_is_aborted_the_lanes_are_told_to_stop_and_waited_for():
    stop = threading.Event()
    lane_saw_stop = threading.Event()

    def lane():
        assert stop.wait(10), "the lane was never told to stop"
        time.sleep(0.2)  # winding down: the abort must wait for this
        lane_saw_stop.set()

    def main():
        raise Aborted("stopped between runs")

    with pytest.raises(Aborted):
        run_alongside(main, {"x": lane}, stop)
    assert lane_saw_stop.is_set(), "the abort went on before the lane had stopped"


def test_events_from_a_lane_name_their_idea():
    assert labelled(LogLine(run_id="run_1", stream="stdout", text="x"), "b").run_id == "b/run_1"
    assert labelled(AgentMessage(role="coder", text="t"), "b").role == "coder · b"
    assert labelled(Notice(text="run_1 failed"), "b").text == "[b] run_1 failed"
    diff = CodeDiff(commit="abc", message="experiments: run_1", files=[], diff="")
    assert labelled(diff, "b").message == "[b] experiments: run_1"


def test_the_comparison_has_a_row_per_idea_and_a_column_per_baseline_metric():
    baseline = {"moons": {"acc": 0.8, "loss": 0.5}}
    table = comparison_markdown(baseline, {"a": {"moons": {"acc": 0.9}}, "b": baseline})
    lines = table.splitlines()
    assert lines[0] == "| idea | moons acc | moons loss |"
    assert lines[2] == "| baseline (run_0) | 0.8 | 0.5 |"
    assert lines[3] == "| a | 0.9 | — |"


# -- runs that must end early, runs that must wait ---------------------------------------------


FOREVER_WITH_A_GRANDCHILD = """\
import subprocess, time
subprocess.Popen(["sleep", "600"])
print("up", flush=True)
time.sleep(600)
"""


def test_a_stop_ends_a_running_child_and_its_group_promptly(tmp_path):
    stop = threading.Event()

    def stop_once_up(event) -> None:
        if isinstance(event, LogLine) and "up" in event.text:
            stop.set()

    result = run_process(
        [sys.executable, "-c", FOREVER_WITH_A_GRANDCHILD],
        cwd=tmp_path,
        timeout_s=600,
        run_id="run_1",
        emit=stop_once_up,
        stage="experiments",
        stop=stop,
    )
    # It returned, with neither the 600 s child nor the 600 s timeout over: the stop ended it.
    assert result.stopped and not result.timed_out
    wait_until(lambda: processes_in(tmp_path) == [], "the end of the child and its grandchild")


SLEEPY_EXPERIMENT = """\
import argparse, json, os, pathlib, time
parser = argparse.ArgumentParser()
parser.add_argument("--out_dir")
out = pathlib.Path(parser.parse_args().out_dir)
out.mkdir(exist_ok=True)
print("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
time.sleep(float(os.environ.get("SLEEP", "0")))
(out / "final_info.json").write_text(json.dumps({"d": {"means": {"m": 1.0}}}))
"""


def _gpu(index: int) -> GpuInfo:
    return GpuInfo(index, "Fake GPU", util=0, mem_used_mb=0, mem_total_mb=80_000, temp_c=40)


def test_a_run_that_must_queue_for_a_gpu_says_so_and_runs_when_one_is_free(tmp_path):
    (tmp_path / "experiment.py").write_text(SLEEPY_EXPERIMENT)
    polls: list[int] = []

    def read_the_only_gpu() -> list[GpuInfo]:
        polls.append(1)
        return [_gpu(0)]

    pool = GpuPool(read=read_the_only_gpu, poll_s=0.05)
    held = pool.acquire()  # another idea's run holds the only GPU
    events = []
    finished = {}

    def second_run():
        finished["result"] = run_experiment(
            tmp_path,
            "run_2",
            python=sys.executable,
            timeout_s=60,
            emit=events.append,
            stage="experiments",
            sandbox=None,
            gpus=pool,
        )

    thread = threading.Thread(target=second_run)
    thread.start()
    wait_until(lambda: any(isinstance(e, Notice) for e in events), "the waiting notice")
    waiting = [e.text for e in events if isinstance(e, Notice)]
    assert waiting == ["run_2 waits for a free GPU (all are busy)"]
    looked = len(polls)
    wait_until(lambda: len(polls) >= looked + 2, "the queued run looking again")
    assert not any(isinstance(e, LogLine) for e in events), "it ran without a GPU of its own"
    pool.release(held)
    thread.join(30)
    result = finished["result"]
    assert result.ok, result.problem
    record = json.loads((tmp_path / "run_2" / "labtui_run.json").read_text())
    assert record["CUDA_VISIBLE_DEVICES"] == "0"
    assert any("CUDA_VISIBLE_DEVICES 0" in e.text for e in events if isinstance(e, LogLine))


def test_parallel_must_be_a_whole_number_of_ideas():
    from conftest import run_labtui

    result = run_labtui("run", "--parallel", "0")
    assert result.returncode == 2
    assert "--parallel: K must be a whole number of ideas, 1 or more, not '0'" in result.stderr


# -- the real experiments stage with two ideas --------------------------------------------------


def _parallel_project(project, llm_server, **limits) -> StopAfterExperiments:
    config = load_config(project.root)
    config.ideas.count = 2
    config.experiment.parallel = 2
    for key, value in limits.items():
        setattr(config.limits, key, value)
    save_config(config, project.root)
    TwoIdeas(project.root).install(llm_server)
    return StopAfterExperiments()


def _git(root, *args) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def test_two_ideas_run_at_once_and_their_results_stay_apart(project, llm_server):
    port = _parallel_project(project, llm_server)
    session = port.session = Session.open(project.root)
    assert session.run(port) == "stopped"

    root, name = project.root, SECOND["Name"]
    lane = root / ".labtui" / "worktrees" / name
    # The chosen idea in the project, the other in its worktree, each with its own code.
    assert "HIDDEN_UNITS = 64" in (root / "experiment.py").read_text()
    assert "EPOCHS = 150" in (root / "experiment.py").read_text()
    assert "EPOCHS = 300" in (lane / "experiment.py").read_text()
    assert "HIDDEN_UNITS = 32" in (lane / "experiment.py").read_text()
    assert (root / "run_1" / "final_info.json").exists()
    assert (lane / "run_1" / "final_info.json").exists()
    # Its own plan and notebook, on its own branch, tagged; nothing of it on the main branch.
    assert json.loads((lane / "plan.json").read_text())["idea"] == name
    assert (lane / "notes.md").read_text().startswith(f"# {SECOND['Title']}")
    assert "## run_1" in (lane / "notes.md").read_text()
    assert _git(root, "branch", "--show-current").strip() != f"labtui/idea/{name}"
    assert f"labtui/{name}/run_1" in _git(root, "tag")
    assert _git(root, "log", "--format=%s", f"labtui/idea/{name}").count("experiments:") >= 2
    assert "EPOCHS = 300" not in _git(root, "log", "-p", "HEAD", "--", "experiment.py")
    assert (
        _git(root, "merge-base", "HEAD", f"labtui/idea/{name}").strip()
        == _git(root, "rev-list", "-n1", FORK_TAG).strip()
    ), "the lane must branch from where the experiments started"

    # Events name the idea they come from.
    events = read_events(root / ".labtui" / "journal.jsonl")
    assert any(isinstance(e, RunStarted) and e.run_id == f"{name}/run_1" for e in events)
    assert any(isinstance(e, RunStarted) and e.run_id == "run_1" for e in events)
    assert any(isinstance(e, AgentMessage) and e.role == f"planner · {name}" for e in events)

    # The researcher judges both at the stage's checkpoint; the journal keeps both.
    body = port.experiments.body
    assert "Ideas run in parallel" in body and f"| {name} (run_1) |" in body
    assert f"branch `labtui/idea/{name}`" in body and "done" in body
    result = session.state.result("experiments")
    assert result["parallel"][name]["status"] == "done"
    assert set(result["parallel"][name]["runs"]) == {"run_1"}


def test_a_lane_that_fails_is_reported_and_the_chosen_idea_is_unharmed(project, llm_server):
    port = _parallel_project(project, llm_server, fix_attempts=1)
    research = TwoIdeas(project.root)

    def lane_cannot_edit(request):
        text = json.dumps(request["messages"])
        if SECOND["Title"] in text and "Plan the experiment" not in text:
            return "I would rather not change anything."
        return research.experiments(request)

    llm_server.default("scripted-experiments", lane_cannot_edit)
    session = port.session = Session.open(project.root)
    assert session.run(port) == "stopped"
    assert (project.root / "run_1" / "final_info.json").exists()
    lane = session.state.result("experiments")["parallel"][SECOND["Name"]]
    assert lane["status"] == "failed" and lane["runs"] == {}
    assert "no planned run of longer_training succeeded" in lane["problem"]
    assert "did not change experiment.py" in lane["problem"]
    assert "failed: no planned run of longer_training succeeded" in port.experiments.body
