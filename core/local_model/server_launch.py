"""One start of the local model's server, made with the lock held: its command line, its
environment, its port, the memory it needs, its supervisor started detached, and the wait until
it answers. Kept apart from the server's life (``server.py``: found, reused, started or stopped
under the lock) so that each reads on its own.

The port is the last start's when it is free, so that a server stopped when idle comes back on
the same URL. The server binds it only after loading the model (seconds to tens of seconds);
another process may take it meanwhile, and the server then exits saying so: another port is
tried.

The command line, checked against llama-cpp-python 0.3.36 (``llama_cpp/server/__main__.py``,
``cli.py``, ``settings.py``): every field of its ``Settings`` is an option ``--name`` (booleans
take a word: ``--interrupt_requests False``). ``n_threads_batch`` defaults to every CPU of the
machine (``multiprocessing.cpu_count()``, blind to affinity), so it is given as well.

The environment is an allowlist (``core/machine/run_env.py``), not labtui's own: the server's
settings are pydantic ``BaseSettings`` without a prefix, so any variable named like one of its
fields (``API_KEY``, ``MODEL``, ``VERBOSE``, ``CACHE``, ``CONFIG_FILE``) would change it, and
``HOST`` and ``PORT`` override the command line outright (``os.getenv`` in its ``__main__``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import LabtuiError
from ..machine.host_limits import MEMINFO
from ..machine.process_group import kill_group
from ..machine.run_env import run_environment
from .catalog import ModelFacts
from .progress import Progress, ProgressSink
from .server_state import SUPERVISOR_GRACE_S, ServerFiles, ServerState, read_state, retire
from .supervisor import supervisor_argv

HOST = "127.0.0.1"
N_CTX = 16384  # labtui's prompts with aider's whole-file edits need it (catalog.py: its memory)
PORT_TAKEN = "address already in use"  # uvicorn's (and the stand-in's) words when bind fails
PORT_ATTEMPTS = 3  # the chosen port may be taken before the server binds it (after the load)
READY_POLL_S = 0.05
TAIL_BYTES = 8192
STARTING = "starting the local model server"


def server_command(
    python: Path, weights: Path, facts: ModelFacts, port: int, threads: int
) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server for ``weights`` on 127.0.0.1:``port``.
    ``interrupt_requests`` off: on, a second request cuts a streamed reply short, and every
    project on the machine shares this server."""
    return [
        str(python), "-m", "llama_cpp.server",
        "--model", str(weights), "--host", HOST, "--port", str(port),
        "--n_ctx", str(N_CTX), "--model_alias", facts.id,
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--interrupt_requests", "False",
    ]  # fmt: skip


def server_environment() -> dict[str, str]:
    """The allowlist (locale, PATH, HOME, TMPDIR, thread and GPU settings …) and PYTHONPATH, with
    OpenMP's threads sleeping when idle (spinning, they would hold the cores between requests
    and the supervisor could never see the server idle)."""
    return run_environment({"OMP_WAIT_POLICY": "passive"}, pass_env=("PYTHONPATH",))


def available_memory_mb() -> int | None:
    """MemAvailable in MB; None when the kernel does not say."""
    try:
        fields = dict(
            line.split(":", 1) for line in MEMINFO.read_text().splitlines() if ":" in line
        )
        return int(fields["MemAvailable"].split()[0]) // 1024
    except (OSError, KeyError, ValueError, IndexError):
        return None


def check_memory(facts: ModelFacts, weights: Path) -> None:
    """LabtuiError when the machine has too little memory free to load the model."""
    available = available_memory_mb()
    if available is None or available >= facts.memory_mb:
        return
    raise LabtuiError(
        f"not enough memory to start the local model server for {weights}: it needs about "
        f"{facts.memory_mb} MB and {available} MB are available",
        "close what holds memory (another model server, a notebook, an experiment), "
        "or set LABTUI_MODEL to a hosted model",
    )


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:``port`` can be bound as the server will bind it (SO_REUSEADDR, as
    uvicorn does: a port left in TIME_WAIT by the last server is free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def pick_port(preferred: int | None) -> int:
    """``preferred`` while it is free (URLs stay the same across idle restarts), else one the
    kernel hands out. Another process may take it before the server binds it: the caller tries
    again when the server says so."""
    if preferred and port_free(preferred):
        return preferred
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
    return port


def last_port(files: ServerFiles) -> int | None:
    try:
        return int(files.last_port.read_text().strip())
    except (OSError, ValueError):
        return None


def remember_port(files: ServerFiles, port: int) -> None:
    files.last_port.write_text(f"{port}\n")


def accepts(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``. Not an HTTP request: llama-cpp-python's
    /v1/models waits behind the request it is answering, which may take minutes."""
    try:
        with socket.create_connection((HOST, port), timeout=2.0):
            return True
    except OSError:
        return False


def spawn_supervisor(
    files: ServerFiles, port: int, weights: Path, command: list[str], idle_min: float, poll_s: float
) -> subprocess.Popen[bytes]:
    """The supervisor and, through it, the server: detached (a session of their own, no
    terminal), so that they outlive this process; their output is the log (the last start's log
    is kept as ``<id>.log.1``)."""
    files.folder.mkdir(parents=True, exist_ok=True)
    if files.log.exists():
        os.replace(files.log, files.log.with_name(files.log.name + ".1"))
    argv = supervisor_argv(files, port, weights, idle_min, poll_s, command)
    with files.log.open("ab") as log:
        return subprocess.Popen(
            argv,
            cwd=files.folder,  # not a project's folder, which may go away while it runs
            env=server_environment(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def log_tail(path: Path, lines: int = 8) -> list[str]:
    """The last non-empty lines of a log."""
    try:
        with path.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()][-lines:]


def launch(
    files: ServerFiles,
    weights: Path,
    command: Callable[[int], list[str]],
    idle_min: float,
    poll_s: float,
    ready_timeout_s: float,
    sink: ProgressSink,
) -> ServerState:
    """Start the server (through its supervisor) on the last port when it is free, and wait
    until it answers: its state. Another port is tried when the chosen one was taken before the
    server could bind it. LabtuiError with the log's last lines when it stops or does not
    answer within ``ready_timeout_s`` (then it is stopped)."""
    preferred = last_port(files)
    tried: list[int] = []
    for attempt in range(PORT_ATTEMPTS):
        port = pick_port(preferred if attempt == 0 else None)
        tried.append(port)
        supervisor = spawn_supervisor(files, port, weights, command(port), idle_min, poll_s)
        deadline = time.monotonic() + ready_timeout_s
        state = await_ready(files, supervisor.pid, _running(supervisor), deadline, sink)
        if state is not None:
            remember_port(files, port)
            _reap_later(supervisor)
            return state
        if supervisor.poll() is None:
            _abandon(files, supervisor)
            raise LabtuiError(
                f"the local model server for {weights} did not answer within "
                f"{ready_timeout_s:g} s: {_tail_words(files)}",
                f"read {files.log}; a machine this busy may load the model slower: try again "
                "when it is quieter, or set LABTUI_MODEL to a hosted model",
            )
        if PORT_TAKEN not in " ".join(log_tail(files.log)).lower():
            raise LabtuiError(
                f"the local model server for {weights} stopped before it answered "
                f"(exit code {supervisor.returncode}): {_tail_words(files)}",
                f"read {files.log}; if the model file is damaged, remove it and labtui fetches "
                "it again, or set LABTUI_MODEL to a hosted model",
            )
    raise LabtuiError(
        f"the local model server could not bind a port on {HOST}: each one tried "
        f"({', '.join(map(str, tried))}) was taken by another process before it started",
        "something on this machine takes ports as they come free: try again",
    )


def _running(process: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: process.poll() is None


def await_ready(
    files: ServerFiles,
    supervisor_pid: int,
    alive: Callable[[], bool],
    deadline: float,
    sink: ProgressSink,
) -> ServerState | None:
    """The state once ``supervisor_pid``'s server answers; None when the supervisor exited or
    the deadline passed first (``alive()`` tells which)."""
    started = time.monotonic()
    said = started - 1.0  # the front end hears of it at once, then every second
    while True:
        state = read_state(files)
        if state is not None and state.supervisor_pid == supervisor_pid and state.ready:
            return state
        now = time.monotonic()
        if not alive() or now > deadline:
            return None
        if now - said >= 1.0:
            said = now
            sink(Progress(STARTING, now - started, None, "s", " ".join(log_tail(files.log, 1))))
        time.sleep(READY_POLL_S)


def _abandon(files: ServerFiles, supervisor: subprocess.Popen[bytes]) -> None:
    """Stop a start that did not answer in time, and the server it may have started."""
    state = read_state(files)
    if state is not None and state.supervisor_pid == supervisor.pid:
        retire(files, state)
    else:
        kill_group(supervisor, SUPERVISOR_GRACE_S)  # its server, if any, dies with it (PDEATHSIG)
    supervisor.wait()


def _reap_later(supervisor: subprocess.Popen[bytes]) -> None:
    """Collect the supervisor's exit status when it ends (hours later, in a long-lived labtui
    process), so that it does not linger as a zombie."""
    threading.Thread(target=supervisor.wait, name="reap-model-supervisor", daemon=True).start()


def _tail_words(files: ServerFiles) -> str:
    return " | ".join(log_tail(files.log)) or "its log is empty"
