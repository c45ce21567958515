"""Faults, injected into a real headless engine (`labtui run --headless --auto`, a subprocess):
SIGKILL at 20 seeded points of a scripted run then resume, each ending exactly where an
uninterrupted run ends; SIGHUP; the LLM server dying mid-stream; a stale git index.lock; a torn
journal line; a full disk; an arXiv server answering garbage.

The harness is tests/support/fault_run.py; the kill points are drawn (seed ``fault_run.SEED``)
from the recorded journal of a reference run, tests/recorded/fault_reference.json (re-record with
tests/bench/fault_bench.py --record), and located in this session's own reference run by stage.
Every wait is on a condition (a journal line, a process's end) with a generous deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import fault_run

from labtui.core.journal import read_events

pytestmark = pytest.mark.slow

RECORDED = json.loads(
    (Path(__file__).parents[1] / "recorded" / "fault_reference.json").read_text(encoding="utf-8")
)
KILL_POINTS = fault_run.choose_kill_points(RECORDED["profile"], RECORDED["start"], fault_run.SEED)


@dataclass
class Reference:
    fresh: Path  # the just-created project every case copies
    start: int  # journal lines `labtui new` wrote
    profile: list[list[str]]  # [stage, event type] of each later journal line
    state: fault_run.EndState


@pytest.fixture(scope="session")
def reference(session_folder) -> Reference:
    """The fresh project and the uninterrupted run, made once for the session by whichever
    worker comes first."""
    shared = session_folder / "faults"
    shared.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as env:
        isolate(env, shared / "home")
        return _reference(shared)


def isolate(env: pytest.MonkeyPatch, home: Path) -> None:
    """What conftest's autouse fixture does for each test, for the session's own runs."""
    for name in list(os.environ):
        if name.startswith("LABTUI_") or name.endswith("_API_KEY"):
            env.delenv(name)
    env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env.setenv("LABTUI_MODELS__LOCAL", "false")
    home.mkdir(parents=True, exist_ok=True)
    env.setenv("HOME", str(home))


def _reference(shared: Path) -> Reference:
    from support.fake_arxiv import FakeArxiv
    from support.scripted_llm import ScriptedLLMServer

    fresh = fault_run.fresh_project(shared)
    root = shared / "reference"
    with fault_run.locked(shared / "reference.lock"):
        if not (shared / "reference.done").exists():
            shutil.rmtree(root, ignore_errors=True)
            with ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
                fault_run.prepare(fresh, root, llm, arxiv)
                code = fault_run.run_to_end(root, shared / "reference.log")
                assert code == 0, (shared / "reference.log").read_text()[-3000:]
                assert llm.errors == []
            (shared / "reference.done").touch()
    start = fault_run.journal_lines(fresh)
    return Reference(
        fresh, start, fault_run.journal_profile(root, start), fault_run.end_state(root)
    )


@pytest.fixture
def fresh_copy(reference, tmp_path, llm_server, arxiv_server, network_guard) -> Path:
    """A copy of the fresh project, wired to this test's servers."""
    return fault_run.prepare(reference.fresh, tmp_path / "p", llm_server, arxiv_server)


@pytest.mark.parametrize("point", KILL_POINTS, ids=[p.id for p in KILL_POINTS])
def test_a_killed_engine_resumes_to_the_end_of_an_uninterrupted_run(
    point, reference, fresh_copy, llm_server, network_guard
):
    outcome = fault_run.kill_and_resume(fresh_copy, point, reference.profile, reference.start)
    assert outcome.resume_code == 0, outcome.resume_log[-4000:]
    assert "pipeline finished" in outcome.resume_log
    differences = fault_run.differences(reference.state, fault_run.end_state(fresh_copy))
    assert differences == [], f"{outcome.summary()}:\n" + "\n".join(differences)
    assert fault_run.lost_commits(fresh_copy, outcome.history) == []
    read_events(fresh_copy / fault_run.JOURNAL)  # every line readable
    assert llm_server.errors == []
    assert network_guard.read_text() == ""


# -- other faults -------------------------------------------------------------------------------


def _resume_and_compare(root: Path, reference: Reference, log_name: str = "resume") -> str:
    """Resume to the end; the project must end as the uninterrupted run did. The log."""
    log = root.parent / f"{log_name}.log"
    code = fault_run.run_to_end(root, log)
    text = log.read_text(errors="replace")
    assert code == 0, text[-4000:]
    differences = fault_run.differences(reference.state, fault_run.end_state(root))
    assert differences == [], "\n".join(differences)
    return text


def _point(reference: Reference, stage: str, event: str) -> int:
    """The journal position of the first ``event`` of ``stage`` in the reference run."""
    index = reference.profile.index([stage, event])
    return reference.start + index + 1


def test_sighup_stops_a_headless_engine_and_it_resumes(reference, fresh_copy, network_guard):
    """A terminal that goes away sends SIGHUP to its foreground group: the headless engine
    stops there, leaves no process behind, and the project resumes to the same end."""
    position = _point(reference, "experiments", "LogLine")  # the experiment is running
    process = fault_run.start_engine(fresh_copy, fresh_copy.parent / "hup.log")
    try:
        fault_run.wait_for(lambda: fault_run.journal_lines(fresh_copy) >= position, "the run")
        os.killpg(process.pid, signal.SIGHUP)
        process.wait(timeout=fault_run.DEADLINE_S)
    finally:
        if process.poll() is None:
            fault_run.kill_group(process)
    assert process.returncode == 130  # the Ctrl-C path: runs stopped, journal closed
    assert "resumable" in (fresh_copy.parent / "hup.log").read_text(errors="replace")
    fault_run.wait_for(
        lambda: not fault_run.leftover_processes(fresh_copy), "the run's processes to end", 60
    )
    read_events(fresh_copy / fault_run.JOURNAL)
    _resume_and_compare(fresh_copy, reference)


def test_a_stale_git_index_lock_is_removed_with_a_notice(reference, fresh_copy, network_guard):
    """A git killed mid-commit leaves .git/index.lock: with no git running, labtui removes it,
    says so, and goes on."""
    history = fault_run.commits(fresh_copy)
    position = _point(reference, "ideas", "StageFinished")
    fault_run.kill_at(fresh_copy, fresh_copy.parent / "kill.log", position)
    (fresh_copy / ".git" / "index.lock").write_text("")
    text = _resume_and_compare(fresh_copy, reference)
    flat = text.replace("\n", "")  # the printer wraps a long path anywhere, even mid-word
    assert "index.lock" in flat and "removed" in flat
    assert fault_run.lost_commits(fresh_copy, history) == []


def test_a_torn_journal_line_resumes_twice(reference, fresh_copy, network_guard):
    """A write cut short (the engine killed mid-line) leaves a fragment at the journal's end:
    the next session repairs it, and the one after that still reads every line."""
    position = _point(reference, "novelty", "StageFinished")
    fault_run.kill_at(fresh_copy, fresh_copy.parent / "kill.log", position)
    journal = fresh_copy / fault_run.JOURNAL
    with journal.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "AgentChunk", "stage": "plan", "role": "assis')
    _resume_and_compare(fresh_copy, reference)
    events = read_events(journal)
    again = fault_run.run_to_end(fresh_copy, fresh_copy.parent / "again.log")
    assert again == 0, (fresh_copy.parent / "again.log").read_text()[-3000:]
    assert len(read_events(journal)) >= len(events)


ARXIV_GARBAGE = (
    (200, "<!DOCTYPE html><html><body><h1>Rate limited</h1></body></html>"),
    (200, '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><title>Cut'),
    (500, "Internal Server Error"),
)


@pytest.mark.parametrize("status, body", ARXIV_GARBAGE, ids=["html", "truncated-xml", "500"])
def test_an_arxiv_server_answering_garbage_is_said_and_the_pipeline_goes_on(
    status, body, reference, fresh_copy, arxiv_server, network_guard
):
    arxiv_server.fail_next(status=status, times=1000, body=body)
    log = fresh_copy.parent / "run.log"
    code = fault_run.run_to_end(fresh_copy, log)
    text = log.read_text(errors="replace")
    assert code == 0, text[-4000:]
    assert "arXiv" in text
    assert arxiv_server.hits, "the stages asked the (broken) arXiv"
    read_events(fresh_copy / fault_run.JOURNAL)


@pytest.fixture
def cutting_copy(reference, tmp_path, arxiv_server, network_guard):
    """A fresh copy wired to a scripted server whose answers can break off."""
    with fault_run.CuttingLLMServer() as server:
        root = fault_run.prepare(reference.fresh, tmp_path / "p", server, arxiv_server)
        yield root, server


def test_an_answer_cut_mid_stream_is_asked_again(reference, cutting_copy, network_guard):
    root, server = cutting_copy
    server.script("scripted-writeup", fault_run.Cut())
    log = root.parent / "run.log"
    code = fault_run.run_to_end(root, log)
    assert code == 0, log.read_text()[-4000:]
    assert server.abandoned == ["scripted-writeup"] and server.errors == []
    assert fault_run.differences(reference.state, fault_run.end_state(root)) == []


def test_a_model_server_that_dies_mid_stream_stops_the_run_resumably(
    reference, cutting_copy, arxiv_server, network_guard
):
    root, server = cutting_copy
    history_before = fault_run.commits(root)
    server.script("scripted-writeup", fault_run.Cut(die=True))
    log = root.parent / "run.log"
    code = fault_run.run_to_end(root, log)
    text = log.read_text(errors="replace")
    assert code != 0 and "internal error" not in text, text[-4000:]
    assert "pipeline failed" in text and server.url.removesuffix("/v1") in text, text[-3000:]
    read_events(root / fault_run.JOURNAL)
    history = fault_run.commits(root)
    with fault_run.CuttingLLMServer(port=server.port) as again:
        fault_run.LeanResearch(root, fault_run.template_width(root)).install(again)
        _resume_and_compare(root, reference)
    assert fault_run.lost_commits(root, history) == []
    assert fault_run.lost_commits(root, history_before) == []


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 2 MB tmpfs: room for the fresh project (about 0.4 MB), not for the whole run (2.5)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root (and mount); the disk-full test needs one")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"could not mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_stops_the_run_with_a_clear_error(
    reference, small_disk, llm_server, arxiv_server, network_guard
):
    root = fault_run.prepare(reference.fresh, small_disk / "p", llm_server, arxiv_server)
    log = small_disk.parent / "run.log"
    code = fault_run.run_to_end(root, log)
    text = log.read_text(errors="replace")
    assert code != 0, text[-3000:]
    assert "disk is full" in text and str(small_disk) in text, text[-3000:]
    assert "internal error" not in text, text[-3000:]
    lines = (root / fault_run.JOURNAL).read_text(encoding="utf-8").splitlines()
    for line in lines[:-1]:  # a last line the full disk cut is repaired by the next session
        json.loads(line)
