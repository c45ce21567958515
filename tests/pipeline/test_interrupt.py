"""The interrupt (Escape): a streamed LLM call or a run step stops at once and a checkpoint asks
what next; nothing happens with nothing under way. And the journal survives a write that a kill
cut short (resumed twice). Every wait is on a condition, never on the clock."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
from support.pilot import wait_for
from support.ports import ScriptedPort, _journal
from support.scripted_llm import Slow
from support.tui_scenes import FakeSession

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import CheckpointRequested, Event, StageInterrupted, StageStarted
from labtui.core.journal import Journal, read_events
from labtui.core.llm.streaming import Interrupt, Interrupted, Limits, consume_stream, interruptible
from labtui.core.pipeline.session import Session
from labtui.core.stage_context import StageContext, StageOutput


def until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait for a condition (the deadline is a backstop for a broken test, not a timing)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def test_an_interrupt_wakes_a_stream_waiting_for_its_next_chunk():
    release = threading.Event()
    closed = threading.Event()

    def chunks():
        try:
            yield _chunk("first ")
            release.wait(60)  # the model goes quiet: only the interrupt can end the wait
            yield _chunk("never read")
        finally:
            closed.set()

    interrupt = Interrupt()
    with interruptible(interrupt), pytest.raises(Interrupted, match="interrupted"):
        consume_stream(chunks, Limits(0, 0), lambda _piece: interrupt.set(), what="m")
    release.set()
    until(closed.is_set)  # the reader let the stream go
    # set before a call: the next call is not even sent
    with interruptible(interrupt), pytest.raises(Interrupted, match="before the request"):
        consume_stream(chunks, Limits(0, 0))
    # outside interruptible() nothing is watched
    interrupt.clear()
    assert consume_stream(lambda: iter([_chunk("ok")]), Limits(0, 0)).text == "ok"


def _chunk(text: str):
    from types import SimpleNamespace

    delta = SimpleNamespace(content=text)
    return SimpleNamespace(choices=[SimpleNamespace(delta=delta)], usage=None)


class InterruptingPort(ScriptedPort):
    """TEST-ONLY: records the interrupted checkpoints; tries an interrupt while asked (which
    must do nothing)."""

    def __init__(self, session: Session, *decisions: Decision) -> None:
        super().__init__(*decisions)
        self.session = session
        self.interrupt_while_asked: list[bool] = []

    def ask(self, request: CheckpointRequest) -> Decision:
        self.interrupt_while_asked.append(self.session.interrupt())
        return super().ask(request)


def interrupt_when(session: Session, ready: Callable[[], bool]) -> threading.Thread:
    def press_escape() -> None:
        until(ready)
        until(session.interrupt)

    thread = threading.Thread(target=press_escape, daemon=True)
    thread.start()
    return thread


def test_escape_stops_the_llm_call_and_retry_runs_the_stage_again(project, llm_server):
    # The first ideas request never gets a first token; the server watches the connection.
    llm_server.script("scripted-ideas", Slow("{}", first_token_s=120, cancellable=True))
    session = Session.open(project.root)
    port = InterruptingPort(session, Decision("retry"), Decision("abort"))
    presser = interrupt_when(session, lambda: llm_server.in_flight("scripted-ideas") > 0)
    assert session.run(port) == "stopped"
    presser.join(10)
    assert not any(port.interrupt_while_asked), "an interrupt at a checkpoint does nothing"
    interrupted = port.asked[0]
    assert (interrupted.kind, interrupted.stage) == ("interrupted", "ideas")
    assert interrupted.options[:4] == ("retry", "revise", "skip", "abort")
    assert "the LLM call" in interrupted.body
    until(lambda: "scripted-ideas" in llm_server.cancelled)  # the server saw the client leave
    assert port.asked[1].stage == "ideas" and port.asked[1].kind != "interrupted"
    events = _journal(project)
    assert [(e.stage, e.what) for e in events if isinstance(e, StageInterrupted)] == [
        ("ideas", "the LLM call")
    ]
    assert [e.stage for e in events if isinstance(e, StageStarted)].count("ideas") == 2
    assert session.interrupt() is False, "with no pipeline running, nothing to interrupt"


def test_escape_stops_a_run_step_and_nothing_committed_is_lost(project, monkeypatch, tmp_path):
    """A stage whose work is a long process (as a run): the run's stop event ends it."""
    from labtui.core.machine.processes import run_process
    from labtui.core.pipeline import session as pipeline

    started = tmp_path / "started"
    script = (
        f"import pathlib, time; pathlib.Path({str(started)!r}).write_text('x'); time.sleep(120)"
    )

    class LongRun:
        def run(self, ctx: StageContext) -> StageOutput:
            (ctx.project.root / "before.txt").write_text("kept\n")
            ctx.commit("literature: a commit made before the run", ["before.txt"])
            result = run_process(
                [sys.executable, "-c", script],
                cwd=ctx.project.root,
                timeout_s=300,
                run_id="run_9",
                emit=ctx.emit,
                stage=ctx.stage,
                stop=ctx.stop,
            )
            ctx.check_stop()  # as the experiments stage does after a run
            return StageOutput(f"returned {result.returncode}")

    monkeypatch.setattr(pipeline, "load_stage", lambda name: LongRun())
    session = Session.open(project.root)
    port = ScriptedPort(Decision("abort"), passing=())
    presser = interrupt_when(session, started.exists)
    assert session.run(port) == "stopped"
    presser.join(10)
    asked = port.asked[0]
    assert (asked.kind, asked.stage) == ("interrupted", "literature")
    assert "rewind" not in asked.options, "no stage before the first"
    events = _journal(project)
    assert [e.what for e in events if isinstance(e, StageInterrupted)] == ["the run"]
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=project.root, capture_output=True, text=True
    ).stdout
    assert "literature: a commit made before the run" in log
    assert (project.root / "before.txt").read_text() == "kept\n"


def test_escape_in_the_tui_interrupts_and_in_a_modal_closes_it() -> None:
    from labtui.tui.app import LabtuiApp
    from labtui.tui.screens import NoteScreen

    class Interruptible(FakeSession):
        def __init__(self) -> None:
            super().__init__(ask=None, wait_for_stop=True)
            self.interrupts = 0

        def interrupt(self) -> bool:
            self.interrupts += 1
            return True

        def request_rewind(self, stage: str) -> None:
            pass

    session = Interruptible()
    app = LabtuiApp(session)

    async def steps() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(pilot, lambda: session.scripted.is_set() and not app.pending_events)
            await pilot.press("escape")
            await wait_for(pilot, lambda: session.interrupts == 1)
            await pilot.press("n")
            assert isinstance(app.screen, NoteScreen)
            await pilot.press("escape")
            assert not isinstance(app.screen, NoteScreen)
            assert session.interrupts == 1, "escape closed the note and interrupted nothing"
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert "Interrupt" in titles and "Rewind to experiments" in titles
            assert "Rewind to plots" not in titles, "a stage not reached is not offered"
            session.request_stop()

    asyncio.run(steps())


# -- a journal write cut short by a kill --------------------------------------------------------

WRITER = """
import json, os, signal, sys
sys.path[:0] = {paths!r}
from labtui.core.events import StageStarted
from labtui.core.journal import Journal
journal = Journal(sys.argv[1])
journal.append(StageStarted(stage="ideas", head="abc"))
line = json.dumps(StageStarted(stage="novelty", head="def").to_dict())
with open(journal.path, "a") as handle:  # the write the kill cuts short
    handle.write(line[: line.index('novelty') + 7])  # cut after the stage: the ts varies
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_write_cut_short_by_a_kill_is_repaired_and_resume_works_twice(tmp_path):
    state = tmp_path / ".labtui"
    done = subprocess.run(
        [sys.executable, "-c", WRITER.format(paths=sys.path), str(state)], capture_output=True
    )
    assert done.returncode == -9
    path = state / "journal.jsonl"
    assert not path.read_bytes().endswith(b"\n"), "the kill left a torn last line"
    for resume in ("first", "second"):
        journal = Journal(state)  # each resume opens the journal and appends
        journal.append(CheckpointRequested(stage="ideas", checkpoint_id=resume, title="", body=""))
        journal.close()
    events: list[Event] = read_events(path)  # a torn middle line would raise here
    assert [e.type for e in events] == [
        "StageStarted",
        "CheckpointRequested",
        "CheckpointRequested",
    ]
    assert '"stage": "novelty' in (state / "journal.torn").read_text(), "kept aside"


def test_a_last_event_that_only_lacks_its_line_end_is_kept(tmp_path):
    path = tmp_path / "journal.jsonl"
    whole = json.dumps(StageStarted(stage="ideas").to_dict())
    path.write_text(whole)
    journal = Journal(tmp_path)
    assert "added" in journal.repaired
    journal.append(StageStarted(stage="novelty"))
    journal.close()
    assert [e.stage for e in read_events(path)] == ["ideas", "novelty"]
    assert not (tmp_path / "journal.torn").exists()
    assert Journal(tmp_path).repaired == ""  # a whole journal is left alone
