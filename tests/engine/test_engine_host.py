"""The run survives the terminal: a background engine per project, front ends attached to it over
a unix socket (core/engine/host.py, core/engine/front_ends.py, core/engine/wire.py,
tui/remote_session.py).

Engines here are real processes on a co-pilot moons project wired to the scripted LLM and arXiv
servers; front ends are RemoteSessions (and the app) in this process. Every wait is on a
condition with a deadline, never a sleep.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import labtui_bin, run_labtui
from support.waiting import wait_until

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.engine import files as engine_files
from labtui.core.engine.front_ends import AttachedClient, Outbox
from labtui.core.engine.host import EngineHost, start_engine
from labtui.core.engine.wire import (
    CLIENT_KINDS,
    ENGINE_KINDS,
    PROTOCOL,
    LineReader,
    answer_message,
    decode,
    encode,
)
from labtui.core.errors import Aborted, LabtuiError
from labtui.core.events import AgentChunk, CheckpointDecided, Event, LogLine, StageFinished
from labtui.core.journal import read_events
from labtui.core.pipeline.session import Session
from labtui.tui.remote_session import RemoteSession

DEADLINE_S = 90.0


@pytest.fixture(autouse=True)
def _own_engine_registry(tmp_path, monkeypatch):
    """Engines started here register in the test's folder, never in the researcher's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)


class ManualPort:
    """A front end's checkpoint port that the test answers by hand."""

    def __init__(self) -> None:
        self.asked: queue.Queue[tuple[CheckpointRequest, queue.Queue[Decision | None]]] = (
            queue.Queue()
        )

    def ask(self, request: CheckpointRequest) -> Decision:
        answer: queue.Queue[Decision | None] = queue.Queue(maxsize=1)
        self.asked.put((request, answer))
        decision = answer.get()
        if decision is None:
            raise Aborted("closed by the test")
        return decision

    def next(self, timeout: float = DEADLINE_S):
        return self.asked.get(timeout=timeout)


class Follower:
    """A RemoteSession followed in a thread: what it saw (replay, then live) and its outcome."""

    def __init__(self, root: Path) -> None:
        self.session = RemoteSession.attach(root)
        self.seen: list[Event] = self.session.history()
        self.session.bus.subscribe(self.seen.append)
        self.port = ManualPort()
        self.outcome: queue.Queue[str | BaseException] = queue.Queue()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        try:
            self.outcome.put(self.session.run(self.port))
        except BaseException as exc:
            self.outcome.put(exc)

    def result(self, timeout: float = DEADLINE_S) -> str | BaseException:
        return self.outcome.get(timeout=timeout)


class Engine:
    def __init__(self, root: Path, auto: bool) -> None:
        self.info, self.process = start_engine(root, auto=auto)
        self.socket = self.info.socket

    def ended(self) -> int:
        """Wait for the engine to end by itself (its files cleaned); its exit code."""
        return self.process.wait(timeout=DEADLINE_S)


@contextmanager
def running_engine(root: Path, *, auto: bool = False) -> Iterator[Engine]:
    engine = Engine(root, auto)
    process = engine.process
    try:
        yield engine
    finally:
        if process.poll() is None:
            engine_files.kill_engine_tree(process.pid)
        process.wait(timeout=DEADLINE_S)


def as_json(events: list[Event]) -> list[dict]:
    return [json.loads(json.dumps(e.to_dict(), default=str)) for e in events]


def journal(root: Path) -> list[Event]:
    return read_events(root / ".labtui" / "journal.jsonl")


def raw_client(path: str) -> tuple[socket.socket, LineReader]:
    """A bare wire client (no RemoteSession), attached without the replay."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(encode("attach", protocol=PROTOCOL, replay=False))
    return sock, LineReader(sock, ENGINE_KINDS)


def next_of_kind(reader: LineReader, kind: str) -> dict:
    for message in reader:
        if message["kind"] == kind:
            return message
    raise AssertionError(f"the engine closed the connection before a {kind} message")


@pytest.mark.slow  # a real engine process: it imports litellm (seconds)
def test_two_front_ends_see_the_same_events_and_only_the_first_answer_counts(project):
    root = project.root
    with running_engine(root) as engine:
        first = Follower(root)
        request, answer_first = first.port.next()
        assert request.stage == "literature"
        second = Follower(root)  # attaches while the question waits: it is asked too
        request_again, answer_second = second.port.next()
        assert request_again.checkpoint_id == request.checkpoint_id

        answer_first.put(Decision("approve"))
        wait_until(
            lambda: any(isinstance(e, CheckpointDecided) for e in second.seen),
            what="the second front end to see the decision",
            timeout_s=DEADLINE_S,
        )
        answer_second.put(Decision("skip"))  # too late: not sent, the question was answered
        late, reader = raw_client(engine.socket)
        late.sendall(answer_message(request.checkpoint_id, Decision("skip")))
        assert "already answered" in next_of_kind(reader, "error")["message"]
        late.close()

        ideas, _ = first.port.next()
        assert ideas.stage == "ideas"
        _, answer_there = second.port.next()
        answer_there.put(Decision("abort", "enough for the test"))
        assert first.result() == second.result() == "stopped"
        assert engine.ended() == 0

    on_disk = journal(root)
    decided = [(e.stage, e.action) for e in on_disk if isinstance(e, CheckpointDecided)]
    assert decided == [("literature", "approve"), ("ideas", "abort")]
    # Replay then live, in order, nothing lost or repeated: each front end saw the journal, and
    # live the chunks of each streamed reply too (the journal keeps the whole message only).
    assert any(isinstance(e, AgentChunk) for e in first.seen)
    assert as_json(unchunked(first.seen)) == as_json(on_disk) == as_json(unchunked(second.seen))
    assert not engine_files.info_path(root).exists() and not Path(engine.socket).exists()
    assert engine_files.read_last_outcome(root)["outcome"] == "stopped"


@pytest.mark.slow  # a real engine process: it imports litellm (seconds)
def test_the_app_detaches_and_the_run_goes_on(project):
    """The app and a second front end on one engine: the app's modal closes when the other
    answers; ctrl+q then offers detach, and after it the run still waits for its answer."""
    import asyncio

    from support.pilot import wait_for

    from labtui.tui.app import LabtuiApp
    from labtui.tui.screens import CheckpointScreen
    from labtui.tui.screens.detach import DetachScreen

    root = project.root
    with running_engine(root) as engine:
        app = LabtuiApp(RemoteSession.attach(root))
        other = Follower(root)

        def asking(stage: str) -> Callable[[], bool]:
            return lambda: (
                isinstance(app.screen, CheckpointScreen) and (app.screen.request.stage == stage)
            )

        async def steps() -> None:
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_for(pilot, asking("literature"), DEADLINE_S)
                _, answer = other.port.next()
                answer.put(Decision("approve"))
                await wait_for(pilot, asking("ideas"), DEADLINE_S)  # literature's modal went
                await pilot.press("ctrl+q")
                await wait_for(pilot, lambda: isinstance(app.screen, DetachScreen))
                await pilot.press("d")
                await wait_for(pilot, lambda: not app.is_running)

        asyncio.run(steps())
        assert app.return_code == 0
        assert engine_files.engine_running(root), "detaching leaves the run going"
        request, answer = other.port.next()
        assert request.stage == "ideas"
        answer.put(Decision("abort"))
        assert other.result() == "stopped"
        assert engine.ended() == 0
    decided = [(e.stage, e.action) for e in journal(root) if isinstance(e, CheckpointDecided)]
    assert decided == [("literature", "approve"), ("ideas", "abort")]


@pytest.mark.slow  # a real engine process: it imports litellm (seconds)
def test_run_detach_auto_status_and_a_safe_stop_from_the_command_line(project):
    root = project.root
    started = run_labtui("run", "--detach", "--auto", str(root))
    assert started.returncode == 0, started.stderr
    assert "the run goes on in the background" in started.stdout
    info = engine_files.find_engine(root)
    assert info is not None and info.auto, "labtui run --detach returned with its engine serving"
    try:
        assert stat.S_IMODE(os.stat(info.socket).st_mode) == 0o600
        assert engine_files.registered_roots() == [root]
        watcher, reader = raw_client(info.socket)
        hello = next_of_kind(reader, "hello")
        assert hello["auto"] is True and hello["project_name"] == "p"
        # Nobody is attached to answer: --auto approves the first checkpoint by itself.
        decided = next(
            event
            for message in reader
            if message["kind"] == "events"
            for event in message["events"]
            if event["type"] == "CheckpointDecided"
        )
        assert decided["action"] == "approve"

        status = run_labtui("status", str(root))
        assert f"running (engine pid {info.pid}, --auto)" in status.stdout, status.stdout
        assert "of $" in status.stdout and "last event" in status.stdout
        stopped = run_labtui("stop", str(root))
        assert stopped.returncode == 0, stopped.stderr
        assert "engine ended: stopped" in stopped.stdout
        assert next_of_kind(reader, "ended")["outcome"] == "stopped"
        watcher.close()
        wait_until(
            lambda: not engine_files.engine_running(root),
            what="the engine to end",
            timeout_s=DEADLINE_S,
        )
    finally:
        if engine_files.engine_running(root):
            engine_files.kill_engine_tree(info.pid)

    after = run_labtui("status", cwd=root)
    assert "not running, last run stopped" in after.stdout, after.stdout
    assert engine_files.registered_roots() == []
    assert not engine_files.info_path(root).exists() and not Path(info.socket).exists()
    again = run_labtui("stop", str(root))
    assert "no engine runs" in again.stdout and "nothing to stop" in again.stdout


@pytest.mark.slow  # a real engine process: it imports litellm (seconds)
def test_stop_now_kills_the_engine_and_leaves_the_project_resumable(project):
    root = project.root
    with running_engine(root) as engine:
        follower = Follower(root)
        follower.port.next()  # the literature checkpoint waits
        killed = run_labtui("stop", "--now", str(root))
        assert killed.returncode == 0, killed.stderr
        assert f"killed the engine (pid {engine.info.pid})" in killed.stdout
        lost = follower.result()
        assert isinstance(lost, LabtuiError) and "lost the connection" in lost.message
    assert not engine_files.engine_running(root) and not Path(engine.socket).exists()
    status = run_labtui("status", str(root)).stdout
    assert "last run killed" in status and "next: literature" in status
    assert Session.open(root).state.next_stage == "literature"


def test_a_foreign_uid_is_refused_and_a_silent_front_end_is_dropped(project, monkeypatch):
    host = EngineHost(Session.open(project.root), auto=False)
    monkeypatch.setattr(engine_files, "peer_uid", lambda conn: os.getuid() + 1)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    host.greet(ours)
    refused = decode(LineReader(theirs, ENGINE_KINDS).read_line() or b"", ENGINE_KINDS)
    assert refused["kind"] == "refused" and f"uid {os.getuid() + 1}" in refused["message"]
    assert engine_files.refusal(os.getuid(), os.getuid()) == ""

    # A front end that never reads: its outbox fills, it is dropped, the engine never waits.
    monkeypatch.setattr("labtui.core.engine.front_ends.OUTBOX_LIMIT", 50)
    silent, _far_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    host.attach(silent, LineReader(silent, frozenset({"attach"})), replay=False)
    for n in range(5000):
        host.session.emit(LogLine(run_id="run_0", stream="stdout", text=f"line {n} " + "x" * 200))
    assert not host._clients, "the front end that fell behind was dropped"
    host.session.journal.close()


def test_what_a_front_end_said_before_leaving_is_read_though_sending_to_it_failed():
    """`labtui rewind` says one thing and closes without reading. The engine's send to it then
    fails; the socket must stay open until the reader has read what was said (CI lost a rewind
    this way on a loaded machine)."""
    engine_end, front_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    front_end.sendall(encode("rewind", stage="literature"))
    front_end.close()
    handled: list[str] = []
    send_failed = threading.Event()

    class Host:  # what an AttachedClient uses of its EngineHost
        journal_path = Path("unused")

        def handle(self, client, message):
            handled.append(message["kind"])

        def forget(self, client):
            send_failed.set()  # the reader waits below: the first to forget is the sender

    def read_after_the_send_failed():
        assert send_failed.wait(DEADLINE_S)
        yield from LineReader(engine_end, CLIENT_KINDS)

    client = AttachedClient(engine_end, Host())  # type: ignore[arg-type]
    client.start(encode("hello"), None, read_after_the_send_failed())
    assert client.wait_closed(DEADLINE_S), "the socket is closed once both sides are done"
    assert handled == ["rewind"]


def test_an_outbox_batches_events_and_refuses_past_its_limit():
    outbox = Outbox(limit=3)
    assert outbox.offer({"type": "LogLine"}) and outbox.offer({"type": "LogLine"})
    assert outbox.offer(encode("answered", checkpoint_id="x-1", action="approve"))
    assert not outbox.offer({"type": "LogLine"})
    lines = outbox.take()
    assert lines is not None and [json.loads(line)["kind"] for line in lines] == [
        "events",
        "answered",
    ]
    outbox.close()
    assert outbox.take() is None


def test_what_a_dead_engine_left_is_cleaned(tmp_path):
    root = tmp_path / "p"
    (root / ".labtui").mkdir(parents=True)
    (root / "labtui.toml").write_text("")
    path = engine_files.socket_path(root)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(path))
    leftover.close()  # the socket file stays; nobody listens
    gone = subprocess.Popen(["true"])
    gone.wait()
    info = engine_files.EngineInfo(gone.pid, str(path), time.time(), False, str(root))
    engine_files.write_atomically(engine_files.info_path(root), info.to_json())
    engine_files.register(info)

    assert engine_files.registered_roots() == []  # the dead entry is removed on the way
    assert engine_files.find_engine(root) is None
    assert not path.exists() and not engine_files.info_path(root).exists()
    with pytest.raises(LabtuiError, match="no engine runs"):
        RemoteSession.attach(root)


def test_a_deep_project_gets_a_short_private_socket(tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    deep = tmp_path / ("d" * 120) / "project"
    path = engine_files.socket_path(deep)
    assert path.parent == runtime / "labtui" and path.name.endswith(".sock")
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    server = engine_files.bind_private_socket(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    server.close()
    assert engine_files.socket_path(tmp_path / "short") == tmp_path.resolve() / "short" / (
        ".labtui/engine.sock"
    )


@pytest.mark.slow
def test_closing_the_terminal_detaches_and_a_new_attach_follows_to_the_end(project):
    """`labtui attach --headless` in a pseudo-terminal; the terminal goes away (its master is
    closed: SIGHUP); the engine goes on, and a new attach follows it to the finished paper."""
    import pty

    root = project.root
    with running_engine(root, auto=True) as engine:
        master, slave = pty.openpty()
        # setsid -c: a session of its own with the pty as its controlling terminal, so that
        # closing the master hangs it up, as a dropped ssh session does.
        attached = subprocess.Popen(
            ["setsid", "-c", labtui_bin(), "attach", "--headless", str(root)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
        )
        os.close(slave)
        shown = b""
        while b"literature" not in shown:
            chunk = os.read(master, 4096)
            assert chunk, f"the attached front end ended early: {shown!r}"
            shown += chunk
        os.close(master)
        # SIGHUP ends it; on a busy machine (the full suite beside a model bench) it once ended
        # with 1 first, its next read or write of the vanished terminal failing (EIO).
        assert attached.wait(timeout=DEADLINE_S) in (-signal.SIGHUP, 1), "the terminal hung it up"
        assert engine_files.engine_running(root), "the engine did not go with the terminal"

        follower = Follower(root)
        assert follower.result(timeout=300) == "finished"
        assert engine.ended() == 0
    finished = {e.stage for e in journal(root) if isinstance(e, StageFinished)}
    assert "review" in finished
    assert not engine_files.engine_running(root)


def test_the_engine_module_runs_with_its_own_interpreter():
    """`python -m labtui.core.engine.host` is what start_engine runs: it must parse its args."""
    result = subprocess.run(
        [sys.executable, "-m", "labtui.core.engine.host", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "--ready-fd" in result.stdout


@pytest.mark.slow  # a real engine process: it imports litellm (seconds)
def test_labtui_rewind_goes_through_a_running_engine(project):
    """With an engine on the project, `labtui rewind` asks it (the engine alone may move its
    git and journal), and the stage is asked again; an unknown stage is refused first."""
    from labtui.core.events import Rewound

    root = project.root
    with running_engine(root) as engine:
        follower = Follower(root)
        _literature, answer = follower.port.next()
        answer.put(Decision("approve"))
        ideas, _ideas_answer = follower.port.next()
        assert ideas.stage == "ideas"

        refused = run_labtui("rewind", "nonsense", str(root))
        assert refused.returncode != 0 and "unknown stage 'nonsense'" in refused.stderr
        done = run_labtui("rewind", "literature", str(root))
        assert done.returncode == 0, done.stderr
        assert "asked the running engine to rewind to literature" in done.stdout
        wait_until(
            lambda: any(
                isinstance(e, CheckpointDecided) and e.action == "rewind" for e in follower.seen
            ),
            what="the engine to answer the waiting question with the rewind",
            timeout_s=DEADLINE_S,
        )
        _ideas_answer.put(None)  # what the app does: the modal of an answered question closes

        again, answer_again = follower.port.next()
        assert again.stage == "literature"
        answer_again.put(Decision("abort", "enough for the test"))
        assert follower.result() == "stopped"
        assert engine.ended() == 0
    assert [e.stage for e in journal(root) if isinstance(e, Rewound)] == ["literature"]


def unchunked(events: list[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, AgentChunk)]


def test_a_pipeline_that_dies_past_its_own_handling_ends_the_engine_as_crashed(
    project, monkeypatch, tmp_path
):
    """serve() waited for a result the dead pipeline thread never gave, on a wake byte it never
    read: the select loop spun at 70% of a CPU forever."""
    host = EngineHost(Session.open(project.root), auto=False)

    def dies() -> tuple[str, str]:
        raise SystemExit(3)  # what run()'s own except Exception does not catch

    monkeypatch.setattr(host, "run", dies)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tmp_path / "e.sock"))
    server.listen()
    with server:
        assert host.serve(server) == "crashed"
    host.session.journal.close()
