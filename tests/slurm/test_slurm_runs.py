"""Runs as Slurm jobs, on the real single-node Slurm the test session starts (the
``slurm_cluster`` fixture; skipped with the reason where it cannot start): the same artifacts as
the local backend, failures that reach the fix loop, Slurm's own endings, stopping, re-attaching
after a crash, and parallel ideas as concurrent jobs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import TEST_API_KEY, wire_project
from support.parallel_ideas import SECOND, StopAfterExperiments, TwoIdeas
from support.research_script import IDEA, MoonsResearch, last_user_text, whole_file_edit
from support.waiting import wait_until

from labtui.core.errors import Aborted
from labtui.core.events import JobState, LogLine, Notice, RunAbandoned, StageFinished
from labtui.core.pipeline.session import Session
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.config import load_config, save_config
from labtui.core.settings.sections import ClusterSection
from labtui.core.slurm.job_request import JOBS_DIR
from labtui.core.slurm.jobs import cancel_live_jobs
from labtui.core.stages import experiments as experiments_stage
from labtui.core.stages import plots as plots_stage
from labtui.core.steps.baseline import run_baseline
from labtui.core.workspace.project import Project

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_cluster")]

SLOW_S = 600.0  # waits on a real scheduler on a busy machine: only a hang reaches this
# Small jobs: the test cluster has 8 CPUs, so several run at once.
ON_SLURM = {"backend": "slurm", "partition": "debug", "cpus": 1, "mem_gb": 0.5, "poll_s": 0.2}
TWO_RUNS = {
    "runs": [
        {"change": "Double HIDDEN_UNITS", "measure": "test accuracy vs run_0"},
        {"change": "Double HIDDEN_UNITS again", "measure": "test accuracy vs run_0"},
    ]
}


def _cluster(**changes) -> ClusterSection:
    return ClusterSection(**{**ON_SLURM, **changes})


def _moons(root: Path, llm_server, arxiv_server, backend: str, runs: int = 2) -> Session:
    """A moons project with an idea and a plan of ``runs`` runs, done by ``backend``."""
    project = Project.create(root, "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url)
    config = load_config(project.root)
    config.cluster = _cluster(backend=backend)
    config.limits.max_runs = runs
    config.limits.fix_attempts = 2
    save_config(config, project.root)
    (root / "ideas.json").write_text(json.dumps([IDEA]))
    plan = {"idea": IDEA["Name"], "runs": TWO_RUNS["runs"][:runs]}
    (root / "plan.json").write_text(json.dumps(plan))
    project.commit("test: idea and plan")
    session = Session.open(project.root)
    session.state.finished["novelty"] = StageFinished(
        stage="novelty", result={"idea": IDEA["Name"]}
    )
    session.events = []
    session.bus.subscribe(session.events.append)
    return session


def _research(session: Session, llm_server) -> None:
    """The scripted team for this project (the server answers one project at a time)."""
    MoonsResearch(session.project.root).install(llm_server)


def _baseline_runs_and_plots(session: Session, llm_server) -> None:
    _research(session, llm_server)
    assert run_baseline(session.project, session.emit).ok
    experiments_stage.run(session.context_for("experiments"))
    plots_stage.run(session.context_for("plots"))


def _final_infos(root: Path) -> dict[str, dict]:
    """Every run's final_info.json, its wall-clock timings left out (they differ run to run
    wherever it runs)."""
    return {
        path.parent.name: _untimed(json.loads(path.read_text()))
        for path in sorted(root.glob("run_*/final_info.json"))
    }


def _untimed(value):
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if "time" not in k}
    return value


def _sacct(*job_ids: str) -> list[dict[str, str]]:
    fields = ["JobID", "JobName", "State", "Start", "End"]
    listed = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o", ",".join(fields)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [dict(zip(fields, line.split("|"), strict=True)) for line in listed.splitlines()]


def _jobs(events) -> dict[str, str]:
    """run id -> the id of its (last) job, from the JobState events."""
    return {e.run_id: e.job_id for e in events if isinstance(e, JobState)}


def test_a_project_run_on_slurm_makes_the_same_artifacts_as_run_locally(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    here = _moons(tmp_path / "here", llm_server, arxiv_server, "local")
    _baseline_runs_and_plots(here, llm_server)
    assert not [e for e in here.events if isinstance(e, JobState)], "local runs are no jobs"

    there = _moons(tmp_path / "there", llm_server, arxiv_server, "slurm")
    _baseline_runs_and_plots(there, llm_server)

    root = there.project.root
    assert set(_final_infos(root)) == {"run_0", "run_1", "run_2"}
    assert _final_infos(root) == _final_infos(here.project.root)
    assert sorted(p.name for p in root.glob("*.png")) == sorted(
        p.name for p in here.project.root.glob("*.png")
    )
    for run in ("run_0", "run_1", "run_2"):
        assert sorted(p.name for p in (root / run).iterdir()) == sorted(
            p.name for p in (here.project.root / run).iterdir()
        )
    # each run and the plot was a job of its own, seen through the queue to COMPLETED
    jobs = _jobs(there.events)
    assert set(jobs) == {"run_0", "run_1", "run_2", "plot"}
    assert len(set(jobs.values())) == 4
    assert {r["State"] for r in _sacct(*jobs.values())} == {"COMPLETED"}
    states = [e.state for e in there.events if isinstance(e, JobState) and e.run_id == "run_1"]
    assert states[-1] == "COMPLETED" and ("RUNNING" in states or "COMPLETING" in states)
    record = json.loads((root / "run_1" / "labtui_run.json").read_text())
    assert record["cluster"]["job_id"] == jobs["run_1"] and record["cluster"]["node"]
    assert record["sandbox"]["mode"] in ("bwrap", "limits")
    # the job's output reached the logs as it does locally
    logged = "\n".join(
        e.text for e in there.events if isinstance(e, LogLine) and e.run_id == "run_1"
    )
    assert logged and "submitit" not in logged
    # nothing is left to re-attach to
    assert not list((root / JOBS_DIR).glob("*.json"))


CRASH = "\nraise RuntimeError('exploding')\n"


def test_a_failing_jobs_error_reaches_the_fix_loop(tmp_path, llm_server, arxiv_server, monkeypatch):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    session = _moons(tmp_path / "p", llm_server, arxiv_server, "slurm", runs=1)
    root = session.project.root
    _research(session, llm_server)
    assert run_baseline(session.project, session.emit).ok
    research = MoonsResearch(root)
    asked: list[str] = []

    def experimenter(request):
        text = last_user_text(request)
        asked.append(text)
        if "has finished" in text:
            return research.experiments(request)
        code = (
            (root / "experiment.py").read_text().replace("HIDDEN_UNITS = 32", "HIDDEN_UNITS = 64")
        )
        if len(asked) == 1:  # the planned change (the width doubled), and a crash
            return whole_file_edit("experiment.py", code + CRASH, "Widen.")
        return whole_file_edit("experiment.py", code.replace(CRASH, ""), "Fix it.")

    llm_server.default("scripted-experiments", experimenter)
    experiments_stage.run(session.context_for("experiments"))

    assert (root / "run_1" / "final_info.json").is_file(), "the fix made run_1 work"
    fix_request = next(text for text in asked[1:] if "exploding" in text)
    assert "RuntimeError" in fix_request
    assert not [e for e in session.events if isinstance(e, RunAbandoned)]
    failed = [e for e in session.events if isinstance(e, JobState) and e.state == "FAILED"]
    assert not failed, "a run that fails is a job that completes with its failure as result"


def test_a_jobs_time_limit_is_reported_as_timeout(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "experiment.py").write_text(
        "import time\nprint('training', flush=True)\ntime.sleep(600)\n", encoding="utf-8"
    )
    events = []
    result = run_experiment(
        root,
        "run_1",
        python=sys.executable,
        timeout_s=900,
        emit=events.append,
        stage="experiments",
        cluster=_cluster(time_min=1),
    )
    assert not result.ok
    assert "TIMEOUT" in result.problem and "time limit of 1 min" in result.problem
    assert "[cluster] time_min" in result.problem
    states = [e.state for e in events if isinstance(e, JobState)]
    assert states[-1] == "TIMEOUT"
    assert any(isinstance(e, LogLine) and "training" in e.text for e in events)
    record = json.loads((root / "run_1" / "labtui_run.json").read_text())
    assert record["cluster"]["state"] == "TIMEOUT" and record["problem"] == result.problem


def _sleeper(root: Path, seconds: int = 600) -> None:
    root.mkdir(exist_ok=True)
    (root / "experiment.py").write_text(
        f"import time\nprint('started', flush=True)\ntime.sleep({seconds})\n", encoding="utf-8"
    )


def test_stopping_labtui_cancels_its_queued_and_running_jobs(tmp_path):
    """The first job takes the whole node, so the second waits in the queue: stopping cancels
    both, says so, and each run ends as stopped (a resume submits them again)."""
    events: list = []
    ended: dict[str, BaseException | None] = {}
    whole_node = _cluster(cpus=8)

    def run(name: str) -> None:
        _sleeper(tmp_path / name)
        try:
            run_experiment(
                tmp_path / name, "run_1", python=sys.executable, timeout_s=900,
                emit=events.append, stage="experiments", cluster=whole_node,
            )  # fmt: skip
            ended[name] = None
        except BaseException as exc:
            ended[name] = exc

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()

    def states() -> set[str]:
        # a job just submitted waits with no reason until the scheduler has looked at it
        return {f"{e.state} {e.reason}".strip() for e in list(events) if isinstance(e, JobState)}

    wait_until(
        lambda: "RUNNING" in states() and {"PENDING Resources", "PENDING Priority"} & states(),
        "one job running, one queued for the node",
        SLOW_S,
    )
    cancelled = cancel_live_jobs(events.append, "labtui is stopping")
    for thread in threads:
        thread.join(timeout=SLOW_S)
    assert len(cancelled) == 2
    assert all(isinstance(exc, Aborted) for exc in ended.values()), ended
    assert {r["State"].split()[0] for r in _sacct(*cancelled)} == {"CANCELLED"}
    said = [e.text for e in events if isinstance(e, Notice)]
    assert any("labtui is stopping: cancelled Slurm job(s)" in text for text in said)


def test_a_session_that_stops_cancels_its_job_and_the_pipeline_says_so(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    session = _moons(tmp_path / "p", llm_server, arxiv_server, "slurm")
    root = session.project.root
    _research(session, llm_server)
    (root / "experiment.py").write_text(
        "import time\nprint('started', flush=True)\ntime.sleep(600)\n"
        + (root / "experiment.py").read_text()
    )
    session.project.commit("test: a baseline that takes its time")

    def stop_when_running(event):
        if isinstance(event, JobState) and event.state == "RUNNING":
            threading.Thread(target=session.request_stop).start()

    session.bus.subscribe(stop_when_running)
    from labtui.core.checkpoints import AutoApprove

    assert session.run(AutoApprove()) == "stopped"
    job = _jobs(session.events)["run_0"]
    assert _sacct(job)[0]["State"].split()[0] == "CANCELLED"
    said = [e.text for e in session.events if isinstance(e, Notice)]
    assert any(f"cancelled Slurm job(s) {job} (run_0)" in text for text in said)


RESUMABLE_RUN = """\
import sys
from pathlib import Path
from labtui.core.settings.sections import ClusterSection
from labtui.core.runs.runner import run_experiment

run_experiment(
    Path(sys.argv[1]), "run_1", python=sys.executable, timeout_s=900, emit=print,
    stage="experiments", commit="c1", cluster=ClusterSection(**{cluster}),
)
"""


def _labtui_killed_while_its_job_runs(root: Path) -> str:
    """A labtui process that submits run_1, SIGKILLed once its job runs: the job's id."""
    script = RESUMABLE_RUN.replace("{cluster}", repr(ON_SLURM))
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    record = root / JOBS_DIR / "run_1.json"
    try:
        wait_until(record.is_file, "run_1's job submitted", SLOW_S)
        job_id = json.loads(record.read_text())["job_id"]
        out = root / JOBS_DIR / job_id / f"{job_id}_0_log.out"
        wait_until(
            lambda: out.is_file() and "started" in out.read_text(), "the job running", SLOW_S
        )
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    return job_id


def _reporter(root: Path, acc: float, sleep_s: float) -> Path:
    """A project whose run says it started, takes ``sleep_s`` and reports ``acc``."""
    root.mkdir()
    (root / "experiment.py").write_text(
        "import json, os, pathlib, time\n"
        "print('started', flush=True)\n"
        f"time.sleep({sleep_s})\n"
        "out = pathlib.Path(os.environ['LABTUI_OUT_DIR'])\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        f"(out / 'final_info.json').write_text(json.dumps({{'d': {{'means': {{'acc': {acc}}}}}}}))\n",
        encoding="utf-8",
    )
    return root


def _resume(root: Path, events: list, commit: str = "c1"):
    return run_experiment(
        root, "run_1", python=sys.executable, timeout_s=900, emit=events.append,
        stage="experiments", commit=commit, cluster=_cluster(),
    )  # fmt: skip


def test_a_resumed_labtui_reattaches_to_the_job_it_left_running(tmp_path):
    root = _reporter(tmp_path / "p", acc=0.9, sleep_s=4)
    job_id = _labtui_killed_while_its_job_runs(root)
    events: list = []
    result = _resume(root, events)

    assert result.ok, result.problem
    assert result.means == {"d": {"acc": 0.9}}
    states = [e for e in events if isinstance(e, JobState)]
    assert {e.job_id for e in states} == {job_id} and all(e.reattached for e in states)
    said = " ".join(e.text for e in events if isinstance(e, Notice))
    assert f"re-attached to Slurm job {job_id}" in said and "not submitted again" in said
    assert _submitted(root) == [job_id], "the run was not submitted again"


def test_a_job_that_finished_while_labtui_was_away_is_collected(tmp_path):
    root = _reporter(tmp_path / "p", acc=0.8, sleep_s=0)
    job_id = _labtui_killed_while_its_job_runs(root)
    wait_until(lambda: _sacct(job_id)[0]["State"] == "COMPLETED", "the job finishing", SLOW_S)
    events: list = []
    result = _resume(root, events)
    assert result.ok and result.means == {"d": {"acc": 0.8}}
    said = " ".join(e.text for e in events if isinstance(e, Notice))
    assert f"re-attached to Slurm job {job_id} (COMPLETED" in said and "collected" in said
    assert _submitted(root) == [job_id], "the run was not submitted again"


def test_a_job_left_for_code_that_has_changed_since_is_cancelled_not_reattached(tmp_path):
    root = _reporter(tmp_path / "p", acc=0.9, sleep_s=600)
    old = _labtui_killed_while_its_job_runs(root)
    quicker = (root / "experiment.py").read_text().replace("time.sleep(600)", "")
    (root / "experiment.py").write_text(quicker)
    events: list = []
    result = _resume(root, events, commit="c2")  # the code was committed anew meanwhile
    assert result.ok and result.means == {"d": {"acc": 0.9}}
    said = " ".join(e.text for e in events if isinstance(e, Notice))
    assert f"cancelled Slurm job {old}, left by an earlier session" in said
    wait_until(
        lambda: _sacct(old)[0]["State"].startswith("CANCELLED"), "the old job cancelled", SLOW_S
    )
    assert len(_submitted(root)) == 2 and old in _submitted(root)


def _submitted(root: Path) -> list[str]:
    """The jobs submitted for the project: submitit makes a folder per job."""
    return sorted(path.name for path in (root / JOBS_DIR).iterdir() if path.is_dir())


MEET = """\
import os, pathlib, time
if os.environ.get("LABTUI_RUN_ID", "run_0") != "run_0":
    # TEST-ONLY: each idea's run waits here for the other's: both end only if both run at once
    meet = pathlib.Path(os.environ["LABTUI_TEST_MEET"])
    (meet / str(os.getpid())).touch()
    deadline = time.monotonic() + 300
    while len(list(meet.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    if len(list(meet.iterdir())) < 2:
        raise SystemExit("the other idea's job never ran at the same time as this one")
"""


def test_parallel_ideas_are_concurrent_jobs(project, llm_server, tmp_path, monkeypatch):
    meet = tmp_path / "meet"
    meet.mkdir()
    monkeypatch.setenv("LABTUI_TEST_MEET", str(meet))
    root = project.root
    code = (root / "experiment.py").read_text()
    main = 'if __name__ == "__main__":'
    (root / "experiment.py").write_text(code.replace(main, MEET + main, 1))
    project.commit("test: runs that meet")
    config = load_config(root)
    config.ideas.count = 2
    config.experiment.parallel = 2
    config.cluster = _cluster()
    # both runs touch one folder outside their checkouts: limits only, no bubblewrap
    config.sandbox.mode = "limits"
    config.sandbox.pass_env = ["LABTUI_TEST_MEET"]  # the environment is an allowlist
    save_config(config, root)
    TwoIdeas(root).install(llm_server)
    port = StopAfterExperiments()
    session = port.session = Session.open(root)
    events: list = []
    session.bus.subscribe(events.append)
    outcome = session.run(port)
    assert outcome == "stopped", [e for e in events if type(e).__name__ == "ErrorEvent"]

    lane_run = f"{SECOND['Name']}/run_1"
    jobs = _jobs(events)
    assert {"run_1", lane_run} <= set(jobs)
    assert (root / "run_1" / "final_info.json").is_file()
    lane = root / ".labtui" / "worktrees" / SECOND["Name"]
    assert (lane / "run_1" / "final_info.json").is_file()
    assert len(list(meet.iterdir())) == 2
    both = _sacct(jobs["run_1"], jobs[lane_run])
    assert [r["State"] for r in both] == ["COMPLETED", "COMPLETED"]
    assert max(r["Start"] for r in both) < min(r["End"] for r in both), "they overlapped"


def test_the_doctor_reports_the_cluster_and_a_test_jobs_round_trip():
    from labtui.core.slurm.doctor_check import cluster_findings

    findings = {f.name: f for f in cluster_findings(_cluster())}
    assert all(f.ok for f in findings.values()), findings
    assert "22.05" in findings["slurm"].detail  # "slurm-wlm 22.05.8" from Debian
    assert findings["slurm partitions"].detail.startswith("debug* up, 1 node(s)")
    assert findings["slurm accounting"].detail == "sacct answers"
    trip = findings["slurm test job"].detail
    assert f"on {socket.gethostname()}: running after" in trip and "result after" in trip
    assert "bubblewrap works there" in trip


def test_the_doctor_names_a_partition_the_cluster_lacks():
    from labtui.core.slurm.doctor_check import cluster_findings

    findings = {f.name: f for f in cluster_findings(_cluster(partition="gpu"))}
    assert not findings["slurm partitions"].ok
    assert "[cluster] partition = 'gpu' is not one of debug" in findings["slurm partitions"].detail


def test_slurm_refusing_a_job_is_a_clear_error_naming_the_settings(tmp_path):
    from labtui.core.errors import LabtuiError

    _sleeper(tmp_path / "p", 1)
    with pytest.raises(LabtuiError) as refused:
        run_experiment(
            tmp_path / "p", "run_1", python=sys.executable, timeout_s=60, emit=lambda e: None,
            stage="experiments", cluster=_cluster(partition="gpu"),
        )  # fmt: skip
    assert "Slurm refused run_1's job" in refused.value.message
    assert "[cluster] partition" in refused.value.hint


def _run_in_threads(root: Path, count: int, array) -> tuple[list, list]:
    """Runs run_1…run_<count> of ``root`` at once, each in a thread, as ``array``'s tasks."""
    events: list = []
    results: list = [None] * count

    def run(index: int) -> None:
        results[index] = run_experiment(
            root, f"run_{index + 1}", python=sys.executable, timeout_s=600,
            emit=events.append, stage="experiments", cluster=_cluster(), array=array,
        )  # fmt: skip

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SLOW_S)
    return results, events


def test_runs_known_together_go_as_one_job_array(tmp_path):
    from labtui.core.slurm.jobs import JobArray

    root = _reporter(tmp_path / "p", acc=0.5, sleep_s=0)
    results, events = _run_in_threads(root, 3, JobArray(3))
    assert [r.problem for r in results] == ["", "", ""]
    assert [r.means for r in results] == [{"d": {"acc": 0.5}}] * 3
    jobs = {e.job_id for e in events if isinstance(e, JobState)}
    arrays = {job.split("_")[0] for job in jobs}
    assert len(jobs) == 3 and len(arrays) == 1, jobs  # '<array>_<task>': one array, 3 tasks
    assert {r["State"] for r in _sacct(*jobs)} == {"COMPLETED"}


def test_an_array_run_that_never_comes_does_not_hold_the_others(tmp_path, monkeypatch):
    from labtui.core.slurm import jobs as slurm_jobs

    monkeypatch.setattr(slurm_jobs, "GATHER_S", 0.5)
    root = _reporter(tmp_path / "p", acc=0.5, sleep_s=0)
    results, _ = _run_in_threads(root, 1, slurm_jobs.JobArray(2))
    assert results[0].ok and results[0].means == {"d": {"acc": 0.5}}


def test_a_climb_on_slurm_sends_its_seeds_as_job_arrays(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    from support.search_script import ScriptedSearcher, score_change, toy_session

    from labtui.core.events import SearchEnded
    from labtui.core.settings.sections import ClimbSection

    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    monkeypatch.setenv("LABTUI_CLUSTER__BACKEND", "slurm")
    # The baseline is submitted before the session's [cluster] is set: it asks what the test
    # node surely has, not the default 16 GB (more than a small machine's node holds).
    monkeypatch.setenv("LABTUI_CLUSTER__MEM_GB", "0.5")
    climb = ClimbSection(
        metric="score", direction="higher", run_budget_s=60, max_runs=1, baseline_repeats=2,
        seeds=2,
    )  # fmt: skip
    session = toy_session(tmp_path / "p", llm_server.url, arxiv_server.url, "climb", climb)
    session.config.cluster = _cluster()
    ScriptedSearcher(session.project.root, [score_change(0.6)]).install(llm_server)
    experiments_stage.run(session.context_for("experiments"))

    assert [e.best for e in session.events if isinstance(e, SearchEnded)] == [0.6]
    jobs = _jobs(session.events)
    noise = {jobs[f"noise_{seed}"] for seed in range(3)}
    seeds = {job for run, job in jobs.items() if run.startswith("seed_")}
    # each batch of seeds is one array: '<array>_<task>' ids sharing the array's id
    assert len({job.split("_")[0] for job in noise}) == 1 and len(noise) == 3
    assert len({job.split("_")[0] for job in seeds}) == 1 and len(seeds) == 2
