"""Running a child process: started as the leader of its own process group, its output streamed
line by line as LogLine events while only a bounded tail is kept in memory (a chatty multi-hour
run costs nothing but the events; ``core.machine.output_lines`` reads it), stopped on timeout,
on request, or when a sandbox watcher trips, and its whole group stopped at the end.

A failing child is a result, not an exception; only a program that cannot be started is.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabtuiError
from ..events import Event, Notice
from .oom import OomCounter
from .output_lines import StreamPump
from .process_group import RUN_MARK, kill_group, kill_marked
from .run_env import run_environment
from .run_log import CappedLog, RunLogs
from .sandbox import SandboxSpec
from .watch import RunWatcher, Watch

Emit = Callable[[Event], None]

DRAIN_AFTER_EXIT_S = 2.0  # how long readers may still drain pipes after the child exited
STOP_POLL_S = 0.2


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    timed_out: bool
    wall_s: float
    stdout_tail: str
    stderr_tail: str
    limit_hit: str = ""  # set when a sandbox watcher killed the run: which limit, and by how much
    stopped: bool = False  # labtui ended it early (``stop`` was set): the run is abandoned
    oom_struck: bool = False  # the kernel's OOM killer ended a process of the machine meanwhile
    peak_rss_mb: float = 0.0  # the most resident memory its process tree was seen holding
    scheduler_end: str = ""  # how a cluster's scheduler ended it, said whole ('' when it did not)
    logs: tuple[LogWritten, ...] = ()  # the run folder's stdout.log and stderr.log, when kept


@dataclass(frozen=True)
class LogWritten:
    """One stream's log file: how much the run printed, and whether the cap cut the file."""

    name: str
    bytes: int
    cut: bool


def missing_interpreter(python: str) -> LabtuiError:
    return LabtuiError(
        f"the experiment interpreter {python!r} was not found or cannot be executed",
        "set [experiment] python in labtui.toml to a Python that exists "
        "(e.g. /path/to/venv/bin/python), or leave it empty to use labtui's own",
    )


def child_env(env: dict[str, str] | None, sandbox: SandboxSpec | None = None) -> dict[str, str]:
    """A run's environment: an allowlist of labtui's, never all of it (core/machine/run_env.py),
    the sandbox's ``pass_env`` and cache locations, then ``env``, which wins."""
    if sandbox is None:
        return run_environment(env)
    return sandbox.environment(env)


def check_program(program: str, cwd: Path) -> None:
    """A wrapped command starts even when the program does not exist: say so before that."""
    if os.sep in program and not os.path.isabs(program):
        program = str(cwd / program)
    if shutil.which(program) is None:
        raise missing_interpreter(program)


def popen_in_group(
    command: list[str], cwd: Path, env: dict[str, str], *, merge_stderr: bool = False
) -> subprocess.Popen[bytes]:
    """A child in a session, so a process group, of its own (killable as a whole), with no stdin
    (TeX, say, must never sit waiting for a keyboard) and its output piped as bytes."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
    )


def _start(
    argv: list[str], cwd: Path, env: dict[str, str], sandbox: SandboxSpec | None = None
) -> subprocess.Popen[bytes]:
    if not argv:
        raise ValueError("run_process needs a command (argv is empty)")
    if not cwd.is_dir():
        raise LabtuiError(f"cannot run {argv[0]!r}: working folder {cwd} does not exist")
    command = argv
    if sandbox is not None and sandbox.limited:
        check_program(argv[0], cwd)
        command = sandbox.wrap(argv, cwd.resolve())
    try:
        return popen_in_group(command, cwd, env)
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        raise missing_interpreter(argv[0]) from None


def _sandbox_returncode(code: int, sandbox: SandboxSpec | None) -> int:
    """bwrap exits with 128 + N when the experiment died of signal N: say -N, like Popen."""
    if sandbox is not None and sandbox.isolated and 128 < code < 128 + 65:
        return -(code - 128)
    return code


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    timeout_s: float,
    run_id: str,
    emit: Emit,
    stage: str,
    env: dict[str, str] | None = None,
    tail_chars: int = 4000,
    sandbox: SandboxSpec | None = None,
    stop: threading.Event | None = None,
    watch: Watch | None = None,
    logs: RunLogs | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion or timeout, streaming its output as LogLine events.

    A failing child is a result, not an exception. Raises LabtuiError only when the program
    cannot be started (missing interpreter, missing folder). When the child exits, or times out,
    whatever is left of its process group is stopped too. With a ``sandbox`` the child runs
    under its limits (and in bubblewrap when the policy says so); a limit that stops the run is
    named in ``limit_hit`` or shows in the stderr tail. Setting ``stop`` ends the run early
    (its whole group), as when the experiments stage ends while parallel ideas still run.
    ``watch`` adds the stall watchdog and the project's disk cap (core/machine/watch.py).
    ``logs`` keeps the whole output in the run folder (core/machine/run_log.py).
    """
    start = time.monotonic()
    environment = child_env(env, sandbox)
    # Without bubblewrap's PID namespace a child can leave the process group (setsid, a
    # daemon); it still carries this mark, by which it is found and stopped at the end.
    mark = secrets.token_hex(8) if sandbox is not None and not sandbox.isolated else ""
    if mark:
        environment[RUN_MARK] = mark
    growth = RunWatcher.project_growth(sandbox, watch)
    oom = OomCounter()
    proc = _start(argv, Path(cwd), environment, sandbox)
    assert proc.stdout is not None and proc.stderr is not None
    files = {stream: logs.open(stream) for stream in ("stdout", "stderr")} if logs else {}
    pumps = [
        StreamPump(proc.stdout, "stdout", emit, stage, run_id, tail_chars, files.get("stdout")),
        StreamPump(proc.stderr, "stderr", emit, stage, run_id, tail_chars, files.get("stderr")),
    ]
    for pump in pumps:
        pump.start()
    oom.watch(proc.pid)
    watcher = None
    if sandbox is not None or watch is not None:
        watcher = RunWatcher(
            proc.pid,
            sandbox,
            watch,
            mark=mark,
            growth=growth,
            oom=oom,
            last_output=lambda: max(pump.last_output for pump in pumps),
            emit=emit,
            stage=stage,
            run_id=run_id,
        )
        watcher.start()
    ended = ""
    escaped = 0  # processes of the run found outside its group once the group was stopped
    try:
        ended = _wait(proc, timeout_s, stop)
        if ended:
            kill_group(proc)
            if watcher is not None:
                escaped += watcher.tree.kill()  # what left the group (setsid) goes too
            proc.wait()
        wall_s = time.monotonic() - start
        escaped += _finish_pumps(pumps, proc, watcher)
    finally:
        if watcher is not None:
            watcher.stop()
        # Also reached on KeyboardInterrupt or a crash here: never leave a run going unwatched.
        # After a normal exit this stops leftovers (e.g. data-loader workers) still holding a GPU.
        kill_group(proc, grace_s=0.5)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if watcher is not None:
            # What left the group (setsid): the tree finds it by descent or by the mark.
            escaped += watcher.tree.kill()
        # The mark alone, as a backstop: it counts only when the tree found none (a process it
        # just killed may still carry the mark for a moment).
        marked = kill_marked(mark) if mark else 0
        escaped = escaped or marked
        if watcher is not None:
            watcher.check_after_run()
        written = _close_logs(files)
        if escaped:
            emit(
                Notice(
                    stage=stage,
                    text=f"{run_id} left {escaped} process(es) running outside its process "
                    "group; they were stopped",
                )
            )
    for pump in pumps:
        if pump.error is not None:
            raise pump.error
    stdout_pump, stderr_pump = pumps
    limit_hit = watcher.reason if watcher is not None else ""
    returncode = _sandbox_returncode(proc.returncode, sandbox)
    return ProcessResult(
        returncode=returncode,
        timed_out=ended == "timeout" and not limit_hit,
        stopped=ended == "stopped",
        wall_s=wall_s,
        stdout_tail=stdout_pump.tail.text(),
        stderr_tail=stderr_pump.tail.text(),
        limit_hit=limit_hit,
        oom_struck=returncode != 0 and not limit_hit and not ended and oom.struck(),
        peak_rss_mb=watcher.peak_rss_mb if watcher is not None else 0.0,
        logs=written,
    )


def _close_logs(files: dict[str, CappedLog]) -> tuple[LogWritten, ...]:
    for log in files.values():
        log.close()
    return tuple(LogWritten(log.final.name, log.total_bytes, log.cut) for log in files.values())


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, stop: threading.Event | None) -> str:
    """Wait for the child: '' once it exits, "timeout" or "stopped" when labtui must end it."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            proc.wait(timeout=left if stop is None else min(left, STOP_POLL_S))
            return ""
        except subprocess.TimeoutExpired:
            if stop is not None and stop.is_set():
                return "stopped"


def _finish_pumps(
    pumps: list[StreamPump], proc: subprocess.Popen[bytes], watcher: RunWatcher | None
) -> int:
    """Let readers drain; if leftover grandchildren keep the pipes open, stop them (and say how
    many were outside the group)."""
    for pump in pumps:
        pump.join(timeout=DRAIN_AFTER_EXIT_S)
    escaped = 0
    if any(pump.is_alive() for pump in pumps):
        kill_group(proc)
        if watcher is not None:
            escaped = watcher.tree.kill()
        for pump in pumps:
            pump.join(timeout=DRAIN_AFTER_EXIT_S)
    return escaped


def tool_available(name: str) -> bool:
    """Whether an executable is on PATH (e.g. "chktex", so a caller can warn when it is not)."""
    return shutil.which(name) is not None


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@dataclass(frozen=True)
class CollectedRun:
    returncode: int
    output: str  # stdout and stderr together
    timed_out: bool


def run_collected(
    cmd: list[str], cwd: Path, deadline: float, env: dict[str, str], grace_s: float | None = None
) -> CollectedRun:
    """Run a tool to its end and return its output (TeX, bibtex): in a group of its own, with
    no stdin (TeX must never sit waiting for a keyboard), its whole group stopped at the
    ``deadline`` (time.monotonic()) or when it exits."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return CollectedRun(returncode=-1, output="", timed_out=True)
    proc = popen_in_group(cmd, cwd, env, merge_stderr=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc, grace_s)
        out, _ = proc.communicate()
    finally:
        # Children (pdflatex under latexmk) can outlive the leader.
        kill_group(proc, grace_s=0.5)
    return CollectedRun(proc.returncode, out.decode("utf-8", "replace"), timed_out)
