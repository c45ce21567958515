"""The process that owns one model's server, so that the server can outlive the labtui process that
started it (it is shared by every project on the machine) and still stop when no one uses it.

Started detached by the manager (``server.py``) with labtui's own interpreter:

    python -m labtui.core.local_model.supervisor --server-dir DIR --model-id ID --port P \\
        --model FILE --idle-min M [--poll-s S] -- SERVER COMMAND...

It starts the server as its child, writes the state file (``ready`` once ``/v1/models`` answers
with the model's alias) and lines starting "labtui supervisor:" into the server's log, and nothing
else. It stops the server (SIGTERM, SIGKILL after a grace) and exits, removing the state file if
it is still its own, when:

* the server went unused for ``--idle-min`` minutes: no client touched ``<id>.used`` and the
  server's CPU time did not grow (a long answer nobody touches the mark for keeps it busy, while
  llama-cpp-python idles at no CPU with ``OMP_WAIT_POLICY=passive``); decided under the server's
  lock, so that a manager reusing the server at that moment either sees it stopped or keeps it;
* it gets SIGTERM (``stop_server``, or a manager retiring it);
* the server died by itself: the exit code is then the server's.
"""

from __future__ import annotations

import argparse
import ctypes
import http.client
import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..machine.process_group import kill_group
from ..machine.process_tree import read_stat
from .server_state import (
    STOP_GRACE_S,
    FileLock,
    ServerFiles,
    ServerState,
    boot_id,
    last_used,
    process_start,
    remove_state,
    write_state,
)

POLL_S = 5.0  # how often use is checked once the server answers
READY_POLL_S = 0.1  # how often /v1/models is asked while the model loads
PROBE_TIMEOUT_S = 2.0
LOCK_WAIT_S = 30.0  # a manager holds the lock while it reuses, starts or stops the server
# CPU time, as a share of the time between two looks, above which the server is busy: a
# generating server uses whole cores, an idle one (OMP_WAIT_POLICY=passive) a tick now and then.
BUSY_SHARE = 0.05
PR_SET_PDEATHSIG = 1
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class StopSignals:
    """SIGTERM, SIGINT and SIGHUP as a flag that a wait wakes up for. Not a threading.Event: its
    set() from a signal handler can deadlock on the lock its wait() holds in the same thread."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self) -> None:
        self._woken, wake = os.pipe()  # not inherited by the server (PEP 446)
        os.set_blocking(wake, False)
        signal.set_wakeup_fd(wake)  # the interpreter writes a byte here on each signal
        self._told = False
        for sig in self.SIGNALS:
            signal.signal(sig, self._note)

    def _note(self, *_: object) -> None:
        self._told = True

    def is_set(self) -> bool:
        return self._told

    def wait(self, timeout_s: float) -> None:
        """Sleep up to ``timeout_s``, less if a signal comes."""
        if not self._told:
            select.select([self._woken], [], [], timeout_s)


class IdleWatch:
    """When the server was last used: the clients' mark or its own CPU time growing."""

    def __init__(
        self,
        idle_s: float,
        marked: Callable[[], float],
        cpu_ticks: Callable[[], int | None],
        now: float,
    ) -> None:
        self._idle_s = idle_s
        self._marked = marked
        self._cpu_ticks = cpu_ticks
        self._last_use = now
        self._cpu = cpu_ticks() or 0
        self._sampled = now

    def idle(self, now: float) -> bool:
        """Whether nothing used the server for ``idle_s`` up to ``now`` (seconds since epoch)."""
        cpu = self._cpu_ticks()
        if cpu is not None:
            busy_ticks = max(1.0, BUSY_SHARE * (now - self._sampled) * _TICKS)
            if cpu - self._cpu >= busy_ticks:
                self._last_use = now
            self._cpu, self._sampled = cpu, now
        self._last_use = max(self._last_use, self._marked())
        return now - self._last_use >= self._idle_s


@dataclass(frozen=True)
class SupervisorArgs:
    files: ServerFiles
    port: int
    model: str
    idle_s: float
    poll_s: float
    command: tuple[str, ...]


def supervisor_argv(
    files: ServerFiles, port: int, model: Path, idle_min: float, poll_s: float, command: list[str]
) -> list[str]:
    """The command line the manager starts this module with (labtui's own interpreter)."""
    return [
        sys.executable, "-m", "labtui.core.local_model.supervisor",
        "--server-dir", str(files.folder), "--model-id", files.model_id, "--port", str(port),
        "--model", str(model), "--idle-min", repr(idle_min), "--poll-s", repr(poll_s),
        "--", *command,
    ]  # fmt: skip


def parse_args(argv: Sequence[str]) -> SupervisorArgs:
    own = list(argv)
    split = own.index("--") if "--" in own else len(own)
    parser = argparse.ArgumentParser(prog="labtui.core.local_model.supervisor")
    parser.add_argument("--server-dir", required=True)
    parser.add_argument("--model-id", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--idle-min", type=float, required=True)
    parser.add_argument("--poll-s", type=float, default=POLL_S)
    found = parser.parse_args(own[:split])
    command = tuple(own[split + 1 :])
    if not command:
        parser.error("the server's command goes after --")
    return SupervisorArgs(
        files=ServerFiles.named(Path(found.server_dir), found.model_id),
        port=found.port,
        model=found.model,
        idle_s=found.idle_min * 60,
        poll_s=found.poll_s,
        command=command,
    )


def say(text: str) -> None:
    """A line in the server's log (stderr is the log)."""
    print(f"labtui supervisor: {text}", file=sys.stderr, flush=True)


def answers(port: int, alias: str) -> bool:
    """Whether the server on ``port`` lists the model ``alias`` at /v1/models."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(f"http://127.0.0.1:{port}/v1/models", timeout=PROBE_TIMEOUT_S) as reply:
            data = json.load(reply)
    except (OSError, ValueError, http.client.HTTPException):
        return False
    models = data.get("data") if isinstance(data, dict) else None
    return isinstance(models, list) and any(
        isinstance(model, dict) and model.get("id") == alias for model in models
    )


def start_server(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """The server, in a process group of its own, with this process's stdout and stderr (the
    log) and environment (the manager made it explicit)."""
    try:
        prctl: Callable[..., int] | None = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        prctl = None

    def die_with_supervisor() -> None:
        # A supervisor killed by SIGKILL cannot stop its server; the kernel then sends SIGTERM,
        # so that no 2 GB server stays behind with no one to stop it.
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_supervisor,
    )


def stop_child(server: subprocess.Popen[bytes]) -> None:
    kill_group(server, STOP_GRACE_S)
    try:
        server.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        say(f"the server (pid {server.pid}) did not exit after SIGKILL")


def cpu_ticks(pid: int) -> int | None:
    stat = read_stat(pid)
    return None if stat is None else stat.cpu_ticks


def stop_if_still_idle(
    server: subprocess.Popen[bytes], args: SupervisorArgs, watch: IdleWatch, stop: StopSignals
) -> bool:
    """Stop the server if it is still unused once the lock is held: a manager reusing it holds
    the lock and marks it used first. Whether it was stopped."""
    lock = FileLock(args.files.lock)
    if not lock.acquire(LOCK_WAIT_S, give_up=stop.is_set):
        return False
    try:
        if not watch.idle(time.time()):
            return False
        say(f"unused for {args.idle_s / 60:g} min: stopping the server")
        stop_child(server)
        remove_state(args.files, os.getpid())
        return True
    finally:
        lock.release()


def first_state(server: subprocess.Popen[bytes], args: SupervisorArgs) -> ServerState:
    me = os.getpid()
    return ServerState(
        port=args.port,
        pid=server.pid,
        pid_start=process_start(server.pid) or 0,
        supervisor_pid=me,
        supervisor_start=process_start(me) or 0,
        model=args.model,
        log=str(args.files.log),
        boot_id=boot_id(),
        started_at=time.time(),
    )


def exit_code(returncode: int) -> int:
    """The server's exit status as a shell says it (128 + N when a signal N ended it)."""
    return returncode if returncode >= 0 else 128 - returncode


def supervise(server: subprocess.Popen[bytes], args: SupervisorArgs, stop: StopSignals) -> int:
    """Watch the server until it dies, is told to stop or goes unused; the exit status."""
    state = first_state(server, args)
    write_state(args.files, state)
    watch: IdleWatch | None = None  # made at the first answer: loading the model is not use
    while True:
        returncode = server.poll()
        if returncode is not None:
            say(f"the server exited with code {returncode}")
            remove_state(args.files, os.getpid())
            return exit_code(returncode)
        if stop.is_set():
            say("told to stop: stopping the server")
            stop_child(server)
            remove_state(args.files, os.getpid())
            return 0
        if watch is None:
            if answers(args.port, args.files.model_id):
                write_state(args.files, replace(state, ready=True))
                say(f"the server answers on port {args.port}")
                watch = IdleWatch(
                    args.idle_s,
                    lambda: last_used(args.files),
                    lambda: cpu_ticks(server.pid),
                    time.time(),
                )
        elif watch.idle(time.time()) and stop_if_still_idle(server, args, watch, stop):
            return 0
        stop.wait(READY_POLL_S if watch is None else args.poll_s)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    stop = StopSignals()
    args.files.folder.mkdir(parents=True, exist_ok=True)
    try:
        server = start_server(args.command)
    except OSError as exc:
        say(f"cannot start the server {args.command[0]}: {exc}")
        return 127
    say(f"started the server (pid {server.pid}) for {args.model} on port {args.port}")
    return supervise(server, args, stop)


if __name__ == "__main__":
    sys.exit(main())
