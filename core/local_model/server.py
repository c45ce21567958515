"""The local model's server, one per machine and model, shared by every project and engine: found
when it runs, started when it does not, stopped on request. Its supervisor (``supervisor.py``)
stops it when idle; a client marks each use with :func:`touch`.

Everything that starts, stops or retires a server holds ``<id>.lock`` (an flock), so two labtui
processes racing to start it end with one server. The state file says where it runs; one left by
a dead server, by another boot, or naming a PID the kernel gave to another process, is stale and
removed, and the processes it names are signalled only while they are still the ones it means.

A client whose request failed because the server died mid-answer calls :func:`ensure_server`
again: the dead server's state is stale by then, and a fresh one starts, on the same port when it
is free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import LabtuiError
from ..machine.host_limits import usable_cpus
from .catalog import CacheDirs, ModelFacts
from .progress import Progress, ProgressSink, no_progress
from .server_launch import (
    HOST,
    PORT_ATTEMPTS,
    STARTING,
    accepts,
    await_ready,
    check_memory,
    launch,
    server_command,
)
from .server_state import (
    FileLock,
    ServerFiles,
    ServerState,
    mark_used,
    read_state,
    retire,
    same_process,
    state_problem,
)
from .supervisor import POLL_S

READY_TIMEOUT_S = 180.0  # loading takes seconds to tens of seconds; a busy 2-core machine more


@dataclass(frozen=True)
class ServerInfo:
    """A live server answering on 127.0.0.1."""

    title: str
    """The model's name, for people."""
    port: int
    pid: int
    supervisor_pid: int
    model: Path
    log: Path
    started_now: bool
    """True when this call started it (the model was loaded just now)."""

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``."""
        return f"{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-compatible API base: ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.address}/v1"


def info_of(facts: ModelFacts, state: ServerState, started_now: bool) -> ServerInfo:
    return ServerInfo(
        title=facts.title,
        port=state.port,
        pid=state.pid,
        supervisor_pid=state.supervisor_pid,
        model=Path(state.model),
        log=Path(state.log),
        started_now=started_now,
    )


def touch(facts: ModelFacts, dirs: CacheDirs) -> None:
    """Mark the server used now (a client, before and after each request): the supervisor stops
    it only after ``idle_min`` minutes without a mark and without work."""
    mark_used(ServerFiles.of(facts, dirs))


def server_status(facts: ModelFacts, dirs: CacheDirs) -> ServerInfo | None:
    """The running server when it is up and has answered; None otherwise (a stale state file is
    removed when no one else holds the lock). It may be busy with another request: it is not
    asked anything over HTTP."""
    files = ServerFiles.of(facts, dirs)
    state = read_state(files)
    if state is None:
        return None
    if state_problem(state):
        lock = FileLock(files.lock)
        if lock.try_acquire():
            try:
                retire_if_stale(files)
            finally:
                lock.release()
        return None
    if not state.ready or not accepts(state.port):
        return None
    return info_of(facts, state, started_now=False)


def ensure_server(
    facts: ModelFacts,
    dirs: CacheDirs,
    weights: Path,
    python: Path,
    *,
    idle_min: float,
    threads: int | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
    poll_s: float = POLL_S,
    sink: ProgressSink = no_progress,
) -> ServerInfo:
    """The server for ``weights``, reused when one runs, else started with ``python`` (the
    server's venv) and waited for until it answers. ``idle_min``: minutes without use after
    which its supervisor stops it; ``threads``: the CPUs this process may use unless given;
    ``poll_s``: how often the supervisor looks for use. LabtuiError, naming the log and its last
    lines, when it cannot start."""
    files = ServerFiles.of(facts, dirs)
    with _locked(files, ready_timeout_s, partial(_waiting_for_lock, sink)):
        found = _usable_server(files, weights, ready_timeout_s, sink)
        if found is not None:
            mark_used(files)
            return info_of(facts, found, started_now=False)
        check_memory(facts, weights)
        mark_used(files)
        cpus = threads or usable_cpus()

        def command(port: int) -> list[str]:
            return server_command(python, weights, facts, port, cpus)

        state = launch(files, weights, command, idle_min, poll_s, ready_timeout_s, sink)
        return info_of(facts, state, started_now=True)


def stop_server(facts: ModelFacts, dirs: CacheDirs) -> bool:
    """Stop the server; whether one was running (a stale state file is removed all the same)."""
    files = ServerFiles.of(facts, dirs)
    with _locked(files, READY_TIMEOUT_S):
        state = read_state(files)
        if state is None:
            return False
        was_running = not state_problem(state)
        retire(files, state)
        return was_running


# -- with the lock held ----------------------------------------------------------------------


@contextmanager
def _locked(
    files: ServerFiles, ready_timeout_s: float, waiting: Callable[[float], None] | None = None
) -> Iterator[None]:
    """The server's lock, waited for as long as another process may hold it to start one."""
    lock = FileLock(files.lock)
    if not lock.acquire(ready_timeout_s * PORT_ATTEMPTS + 60, waiting):
        raise LabtuiError(
            f"the local model server's lock {files.lock} stayed held by another process",
            "another labtui process is starting or stopping the server: try again in a minute",
        )
    try:
        yield
    finally:
        lock.release()


def retire_if_stale(files: ServerFiles) -> None:
    state = read_state(files)
    if state is not None and state_problem(state):
        retire(files, state)


def _usable_server(
    files: ServerFiles, weights: Path, ready_timeout_s: float, sink: ProgressSink
) -> ServerState | None:
    """The running server when it serves ``weights`` and listens; else what is left of it is
    retired. One still loading (its starter died while it loaded) is waited for."""
    state = read_state(files)
    if state is None:
        return None
    if not state_problem(state) and state.model == str(weights) and not state.ready:
        alive = partial(same_process, state.supervisor_pid, state.supervisor_start)
        deadline = time.monotonic() + ready_timeout_s
        state = await_ready(files, state.supervisor_pid, alive, deadline, sink) or state
    if state_problem(state) or state.model != str(weights) or not state.ready:
        retire(files, state)
        return None
    if not accepts(state.port):
        retire(files, state)
        return None
    return state


def _waiting_for_lock(sink: ProgressSink, seconds: float) -> None:
    sink(Progress(STARTING, seconds, None, "s", "another labtui process is starting it"))
