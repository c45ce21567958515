"""The local model's server as a managed process: started on demand, shared, restarted after a
death, stopped when idle, one per machine and model even when two processes race to start it.
The server is the TEST-ONLY stand-in (tests/support/standin_llama), started by the real manager
and supervisor with this interpreter; every process a test starts is killed by PID at its end."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.own_model import STANDIN, kill_ours, our_processes, stand_in_server
from support.waiting import wait_until

from labtui.core.errors import LabtuiError
from labtui.core.local_model import server_launch
from labtui.core.local_model.catalog import QWEN_CODER_15B, CacheDirs, ModelFacts
from labtui.core.local_model.server import (
    ServerInfo,
    ensure_server,
    server_status,
    stop_server,
    touch,
)
from labtui.core.local_model.server_state import (
    ServerFiles,
    ServerState,
    boot_id,
    process_start,
    read_state,
    write_state,
)
from labtui.core.local_model.supervisor import IdleWatch
from labtui.core.machine.host_limits import usable_cpus

FACTS = dataclasses.replace(QWEN_CODER_15B, id="standin-model", memory_mb=1)
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Rig:
    facts: ModelFacts
    dirs: CacheDirs
    weights: Path
    root: Path

    @property
    def files(self) -> ServerFiles:
        return ServerFiles.of(self.facts, self.dirs)

    def ensure(
        self,
        *,
        idle_min: float = 30.0,
        poll_s: float = 0.05,
        ready_timeout_s: float = 60.0,
        threads: int | None = None,
    ) -> ServerInfo:
        python = Path(sys.executable)  # with the stand-in first on PYTHONPATH (the fixture)
        return ensure_server(
            self.facts,
            self.dirs,
            self.weights,
            python,
            idle_min=idle_min,
            poll_s=poll_s,
            ready_timeout_s=ready_timeout_s,
            threads=threads,
        )

    def steer(self, **behaviour: object) -> None:
        """What the stand-in does at its start and at each request (its module docstring)."""
        Path(f"{self.weights}.standin.json").write_text(json.dumps(behaviour))


@pytest.fixture
def rig(tmp_path, monkeypatch):
    stand_in_server(monkeypatch)
    weights = tmp_path / "weights.gguf"
    weights.write_bytes(b"GGUF stand-in weights")
    yield Rig(FACTS, CacheDirs(tmp_path / "cache"), weights, tmp_path)
    kill_ours(tmp_path)


def ask(
    info: ServerInfo, *, stream: bool = False, first_chunk: threading.Event | None = None
) -> str:
    """The stand-in's answer; a stream that ends without ``[DONE]`` is an error."""
    body = {"model": FACTS.id, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    request = urllib.request.Request(
        f"{info.url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with NO_PROXY.open(request, timeout=60) as reply:
        if not stream:
            return json.load(reply)["choices"][0]["message"]["content"]
        words = []
        for raw in reply:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                return "".join(words)
            if line.startswith("data: "):
                words.append(json.loads(line[6:])["choices"][0]["delta"].get("content", ""))
                if first_chunk is not None and len(words) > 1:
                    first_chunk.set()
    raise ConnectionError("the stream ended without [DONE]")


def started_with(info: ServerInfo) -> dict:
    with NO_PROXY.open(f"{info.url}/models", timeout=30) as reply:
        return json.load(reply)["standin"]


def is_server(pid: int) -> bool:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [
        b"-m",
        b"llama_cpp.server",
    ]


def gone(pid: int) -> bool:
    return process_start(pid) is None


# -- on demand, shared -------------------------------------------------------------------


def test_started_on_demand_answers_with_the_command_line_and_environment_meant(rig, monkeypatch):
    monkeypatch.setenv("HOST", "0.0.0.0")  # the real server's __main__ would listen there
    monkeypatch.setenv("API_KEY", "secret")  # and would demand it of every client
    info = rig.ensure()
    assert info.started_now
    assert info.url == f"http://127.0.0.1:{info.port}/v1"
    assert info.address == f"127.0.0.1:{info.port}" and info.title == FACTS.title
    assert "stand-in" in ask(info)
    assert "stand-in" in ask(info, stream=True)
    options, env = started_with(info)["options"], started_with(info)["env"]
    assert options["model"] == str(rig.weights)
    assert options["host"] == "127.0.0.1" and options["port"] == info.port
    assert options["n_ctx"] == 16384 and options["model_alias"] == FACTS.id
    assert options["interrupt_requests"] is False
    assert options["n_threads"] == options["n_threads_batch"] == usable_cpus()
    assert env["OMP_WAIT_POLICY"] == "passive"
    assert str(STANDIN) in env["PYTHONPATH"]
    assert "HOST" not in env and "API_KEY" not in env
    state = read_state(rig.files)
    assert state is not None and state.ready and state.boot_id == boot_id()
    assert (state.pid, state.supervisor_pid) == (info.pid, info.supervisor_pid)
    assert server_status(FACTS, rig.dirs) == dataclasses.replace(info, started_now=False)


def test_a_second_caller_reuses_the_running_server(rig):
    first = rig.ensure()
    second = rig.ensure()
    assert not second.started_now
    assert (second.pid, second.port, second.url) == (first.pid, first.port, first.url)


def test_threads_given_are_used(rig):
    info = rig.ensure(threads=1)
    assert started_with(info)["options"]["n_threads"] == 1


def test_after_a_stop_it_comes_back_on_the_same_port(rig):
    first = rig.ensure()
    assert stop_server(FACTS, rig.dirs)
    again = rig.ensure()
    assert again.started_now and again.pid != first.pid and again.port == first.port


def test_the_last_port_taken_gives_another(rig):
    first = rig.ensure()
    stop_server(FACTS, rig.dirs)
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past its TIME_WAIT
        holder.bind(("127.0.0.1", first.port))
        holder.listen()
        again = rig.ensure()
    assert again.port != first.port
    assert "stand-in" in ask(again)


def test_a_port_taken_before_the_server_binds_it_is_tried_again_elsewhere(rig, monkeypatch):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        rig.files.folder.mkdir(parents=True)
        rig.files.last_port.write_text(f"{taken}\n")
        monkeypatch.setattr(server_launch, "port_free", lambda port: True)  # the race, lost
        info = rig.ensure()
    assert info.port != taken
    assert "address already in use" in Path(f"{rig.files.log}.1").read_text()
    assert "stand-in" in ask(info)


# -- deaths and restarts -------------------------------------------------------------------


def test_a_server_killed_mid_answer_is_started_again_and_the_question_asked_again(rig):
    first = rig.ensure()
    rig.steer(stall_s=60)
    midway, failures = threading.Event(), []

    def asking() -> None:
        try:
            ask(first, stream=True, first_chunk=midway)
        except Exception as exc:  # the kill is meant to break it
            failures.append(exc)

    asker = threading.Thread(target=asking)
    asker.start()
    wait_until(midway.is_set, "the first words of the answer")
    os.kill(first.pid, signal.SIGKILL)
    asker.join(timeout=60)
    assert failures, "the answer cut short by the kill was taken as whole"
    # the supervisor sees its server die, removes the state and exits
    wait_until(lambda: not rig.files.state.exists(), "the dead server's state to be removed")
    wait_until(lambda: gone(first.supervisor_pid), "the supervisor to exit")
    rig.steer()
    again = rig.ensure()
    assert again.started_now and again.pid != first.pid and again.port == first.port
    assert "stand-in" in ask(again, stream=True)


def test_a_server_crashing_mid_answer_leaves_a_state_ensure_replaces(rig):
    first = rig.ensure()
    rig.steer(crash=True)
    with pytest.raises(Exception):  # noqa: B017 -- the connection breaks in whatever way it does
        ask(first)
    rig.steer()
    again = rig.ensure()  # whether or not the supervisor has cleaned up yet
    assert again.pid != first.pid
    assert "stand-in" in ask(again)


def test_a_server_that_cannot_start_is_reported_with_its_log(rig, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "")  # no stand-in: `-m llama_cpp.server` finds nothing
    with pytest.raises(LabtuiError) as raised:
        rig.ensure()
    assert "No module named 'llama_cpp'" in str(raised.value)
    assert str(rig.files.log) in raised.value.hint
    assert not rig.files.state.exists()


def test_a_server_too_slow_to_answer_is_stopped_and_reported(rig):
    rig.steer(load_s=600)
    with pytest.raises(LabtuiError, match="did not answer within 1 s"):
        rig.ensure(ready_timeout_s=1.0)
    assert not rig.files.state.exists()
    wait_until(lambda: not our_processes(rig.root), "the slow server to be stopped")


@pytest.mark.parametrize("left_by", ["another boot", "a dead server", "a reused pid"])
def test_a_stale_state_file_is_removed_and_a_fresh_server_started(rig, left_by):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me, my_start = os.getpid(), process_start(os.getpid()) or 0
    pid, start, boot = {
        "another boot": (me, my_start, "0000-another-boot"),
        "a dead server": (dead.pid, 1, boot_id()),
        "a reused pid": (me, my_start + 1, boot_id()),  # this process, but started at another time
    }[left_by]
    rig.files.folder.mkdir(parents=True)
    stale = ServerState(1, pid, start, pid, start, str(rig.weights), "", boot, 0.0, ready=True)
    write_state(rig.files, stale)
    assert server_status(FACTS, rig.dirs) is None
    assert not rig.files.state.exists()
    write_state(rig.files, stale)
    info = rig.ensure()  # and this process, named by the stale file, is not signalled
    assert info.started_now and info.pid != pid
    assert "stand-in" in ask(info)


def test_two_processes_racing_end_with_one_server(rig):
    rig.steer(load_s=1)  # a load long enough that both arrive while it runs
    racer = (
        "import dataclasses, json, sys; from pathlib import Path\n"
        "from labtui.core.local_model.catalog import QWEN_CODER_15B, CacheDirs\n"
        "from labtui.core.local_model.server import ensure_server\n"
        "facts = dataclasses.replace(QWEN_CODER_15B, id='standin-model', memory_mb=1)\n"
        "info = ensure_server(facts, CacheDirs(Path(sys.argv[1])), Path(sys.argv[2]),\n"
        "    Path(sys.executable), idle_min=30, poll_s=0.05, ready_timeout_s=60)\n"
        "print(json.dumps([info.pid, info.url, info.started_now]))\n"
    )
    argv = [sys.executable, "-c", racer, str(rig.dirs.root), str(rig.weights)]
    racers = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(racer.communicate(timeout=120)[0]) for racer in racers]
    assert results[0][:2] == results[1][:2]
    assert sorted(started for _, _, started in results) == [False, True]
    servers = [pid for pid in our_processes(rig.root) if is_server(pid)]
    assert servers == [results[0][0]]


def test_memory_too_small_is_said_and_nothing_started(rig, monkeypatch):
    monkeypatch.setattr(server_launch, "available_memory_mb", lambda: 300)
    big = dataclasses.replace(FACTS, memory_mb=2200)
    with pytest.raises(LabtuiError) as raised:
        ensure_server(big, rig.dirs, rig.weights, Path(sys.executable), idle_min=30)
    words = str(raised.value)
    assert str(rig.weights) in words and "2200 MB" in words and "300 MB" in words
    assert "LABTUI_MODEL" in raised.value.hint
    assert not our_processes(rig.root) and not rig.files.state.exists()


# -- stopping --------------------------------------------------------------------------------


def test_stop_server(rig):
    assert not stop_server(FACTS, rig.dirs)
    info = rig.ensure()
    assert stop_server(FACTS, rig.dirs)
    assert gone(info.pid) and gone(info.supervisor_pid)
    assert not rig.files.state.exists() and server_status(FACTS, rig.dirs) is None
    assert not stop_server(FACTS, rig.dirs)


def test_sigterm_to_the_supervisor_stops_the_server(rig):
    info = rig.ensure()
    os.kill(info.supervisor_pid, signal.SIGTERM)
    wait_until(lambda: gone(info.pid) and not rig.files.state.exists(), "the server to stop")


def test_the_supervisor_stops_an_idle_server(rig):
    info = rig.ensure(idle_min=0.02, poll_s=0.05)  # 1.2 s
    wait_until(lambda: not rig.files.state.exists(), "the idle server's state to go")
    wait_until(lambda: gone(info.pid) and gone(info.supervisor_pid), "the idle server to stop")
    assert "unused for 0.02 min" in info.log.read_text()
    assert server_status(FACTS, rig.dirs) is None


def test_touch_marks_the_server_used(rig):
    touch(FACTS, rig.dirs)
    long_ago = rig.files.used.stat().st_mtime - 100
    os.utime(rig.files.used, (long_ago, long_ago))
    touch(FACTS, rig.dirs)
    assert rig.files.used.stat().st_mtime > long_ago + 50


def test_a_supervisor_killed_takes_its_server_with_it(rig):
    info = rig.ensure()
    os.kill(info.supervisor_pid, signal.SIGKILL)
    wait_until(lambda: gone(info.pid), "the server to get SIGTERM from the kernel (PDEATHSIG)")
    assert server_status(FACTS, rig.dirs) is None
    assert not rig.files.state.exists()


def test_a_missing_server_program_is_said(rig):
    with pytest.raises(LabtuiError, match="cannot start the server /nowhere/python"):
        ensure_server(FACTS, rig.dirs, rig.weights, Path("/nowhere/python"), idle_min=30)


def test_idle_counts_from_the_last_mark_or_the_last_work():
    marked, cpu = [0.0], [100]
    watch = IdleWatch(10.0, lambda: marked[0], lambda: cpu[0], now=1000.0)
    assert not watch.idle(1005.0)
    assert watch.idle(1010.0)
    marked[0] = 1012.0  # a client's request
    assert not watch.idle(1015.0)
    assert watch.idle(1022.0)
    cpu[0] += 500  # a long answer no client marked: 5 s of CPU
    assert not watch.idle(1030.0)
    assert not watch.idle(1039.0)
    cpu[0] += 1  # a tick now and then is an idle server's
    assert watch.idle(1041.0)
