"""Experiment processes: run, stream, time out, kill, and record how a run was made.

Every child runs in its own session (and so its own process group) so that a timeout, or the
end of a run, can kill everything it started: data-loader workers and other grandchildren
included, which would otherwise keep holding the GPU. Output is streamed line by line as
LogLine events while only a bounded tail is kept in memory, so a chatty multi-hour run costs
nothing but the events.

Experiments and plots run under a sandbox policy (core/sandbox.py): bubblewrap when it works,
resource limits always, and watchers here that kill the group when the run folder outgrows its
disk cap or the run starts more processes than allowed. A run a limit stopped is a failed
result whose problem names the limit, never an exception: the pipeline goes on.

The interpreter is always passed in (``[experiment] python`` in labtui.toml): the researcher's
environment is theirs, and labtui's own pins must not decide which numpy an experiment sees.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import LabtuiError
from .events import Event, LogLine, Notice, RunFinished, RunStarted
from .gpu import GpuPool, GpuSampler, Lease
from .sandbox import SandboxSpec
from .sandbox import policy as sandbox_policy
from .templates import check_final_info

if TYPE_CHECKING:
    from .config import SandboxSection

Emit = Callable[[Event], None]

KILL_GRACE_S = 3.0  # between SIGTERM and SIGKILL: time to flush logs and free the GPU
DRAIN_AFTER_EXIT_S = 2.0  # how long readers may still drain pipes after the child exited
MAX_LINE_CHARS = 16_384  # longer lines arrive cut into pieces of this size
READ_BYTES = 1 << 16  # at most this much output per LogLine event
COALESCE_S = 0.02  # how long one event may gather a chatty child's writes
ENV_PROBE_TIMEOUT_S = 60.0
RUN_RECORD_NAME = "labtui_run.json"
FINAL_INFO_NAME = "final_info.json"
PROCESS_WATCH_S = 0.2  # how often the process count of a sandboxed run is checked
DISK_WATCH_S = 0.5  # how often the size of its run folder is summed

# Runs inside the *experiment* interpreter, so it reports that environment, not labtui's.
# Kept to the standard library, and tolerant of very old Pythons without importlib.metadata.
# The project folder is dropped from sys.path first: a research file named json.py or
# platform.py must not shadow the modules the probe itself needs.
_ENV_PROBE = r"""
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import json, platform
info = {"executable": sys.executable, "python_version": platform.python_version(),
        "implementation": platform.python_implementation(), "packages": {}}
try:
    from importlib import metadata
    packages = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and name not in packages:
            packages[name] = dist.version
    info["packages"] = dict(sorted(packages.items(), key=lambda kv: kv[0].lower()))
except Exception as exc:
    info["packages_error"] = repr(exc)
print(json.dumps(info))
"""


# -- processes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    timed_out: bool
    wall_s: float
    stdout_tail: str
    stderr_tail: str
    limit_hit: str = ""  # set when a sandbox watcher killed the run: which limit, and by how much
    stopped: bool = False  # labtui ended it early (``stop`` was set): the run is abandoned


class _Tail:
    """The last ``limit`` characters of a stream, kept as whole lines where possible.

    Locked because a reader may still be appending when the result is read (a grandchild that
    escaped the process group can hold the pipe open after the run is over).
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(0, limit)
        self._lines: deque[str] = deque()
        self._chars = 0
        self._lock = threading.Lock()

    def extend(self, lines: list[str]) -> None:
        with self._lock:
            for line in lines[-max(1, self._limit) :]:  # more lines than chars never survive
                line = line[-self._limit :] if self._limit else ""
                self._lines.append(line)
                self._chars += len(line) + 1
            # Drop whole old lines while the rest still covers the limit.
            while self._lines and self._chars - len(self._lines[0]) - 1 >= self._limit:
                self._chars -= len(self._lines.popleft()) + 1

    def text(self) -> str:
        with self._lock:
            joined = "\n".join(self._lines)
        return joined[-self._limit :] if self._limit else ""


class _StreamPump(threading.Thread):
    """Reads one pipe to its end in blocks, emitting the lines of each block as one LogLine
    (its text holds them joined with newlines) and keeping the tail.

    One event per read, not per line: a child printing 100k lines as fast as it can then costs
    tens of events, which keeps the journal, the bus and the UI thread out of its way.

    A failing subscriber must not stop the draining: a child whose pipe is not read blocks on
    its next write and would hang until the timeout. So the first error is kept and re-raised
    by the caller once the child is done, and further lines are only kept in the tail.
    """

    def __init__(
        self, pipe: IO[str], stream: str, emit: Emit, stage: str, run_id: str, tail_chars: int
    ) -> None:
        super().__init__(name=f"labtui-{run_id}-{stream}", daemon=True)
        self._pipe = pipe
        self._stream = stream
        self._emit = emit
        self._stage = stage
        self._run_id = run_id
        self.tail = _Tail(tail_chars)
        self.error: Exception | None = None

    def _blocks(self) -> Iterator[list[str]]:
        """Lines as they arrive, a block per read. Universal newlines: '\r' progress bars
        arrive as separate lines; a '\r\n' split across two reads is one line break."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self._pipe.fileno()
        pending = ""
        while chunk := _read_block(fd):
            pending += decoder.decode(chunk)
            held = ""
            if pending.endswith("\r"):
                pending, held = pending[:-1], "\r"
            *lines, pending = pending.splitlines(keepends=True) or [""]
            if pending.endswith(("\n", "\r")):
                lines.append(pending)
                pending = ""
            pending += held
            while len(pending) > MAX_LINE_CHARS:  # a newline-free flood: cut it, keep reading
                lines.append(pending[:MAX_LINE_CHARS])
                pending = pending[MAX_LINE_CHARS:]
            if lines:
                yield [piece for line in lines for piece in _cut(line.rstrip("\r\n"))]
        pending += decoder.decode(b"", final=True)
        if pending.rstrip("\r\n"):
            yield _cut(pending.rstrip("\r\n"))

    def run(self) -> None:
        try:
            for lines in self._blocks():
                self.tail.extend(lines)
                if self.error is None:
                    try:
                        self._emit(
                            LogLine(
                                stage=self._stage,
                                run_id=self._run_id,
                                stream=self._stream,
                                text="\n".join(lines),
                            )
                        )
                    except Exception as exc:
                        self.error = exc
        except (OSError, ValueError):
            pass  # the pipe was closed under us while killing the group: nothing more to read
        finally:
            self._pipe.close()


def _read_block(fd: int) -> bytes:
    """What the child wrote within COALESCE_S of its first byte (b"" at the end of the pipe).

    An unbuffered child writes line by line; gathering for a few milliseconds turns a flood of
    small writes into a few large events while a quiet child's line still shows at once."""
    block = os.read(fd, READ_BYTES)
    deadline = time.monotonic() + COALESCE_S
    while block and len(block) < READ_BYTES:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            break
        more = os.read(fd, READ_BYTES - len(block))
        if not more:
            break  # the end of the pipe: the next read says so again
        block += more
    return block


def _cut(line: str) -> list[str]:
    """A line in pieces of at most MAX_LINE_CHARS: one huge line must not become one huge event."""
    if len(line) <= MAX_LINE_CHARS:
        return [line]
    return [line[i : i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)]


def _missing_interpreter(python: str) -> LabtuiError:
    return LabtuiError(
        f"the experiment interpreter {python!r} was not found or cannot be executed",
        "set [experiment] python in labtui.toml to a Python that exists "
        "(e.g. /path/to/venv/bin/python), or leave it empty to use labtui's own",
    )


_PROC = Path("/proc")


def _live_members_linux(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running, zombies not counted.

    Orphaned grandchildren become zombies until init reaps them, which some container inits do
    only every second or two; counting them would make every kill wait out its grace period.
    """
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # Fields after "(comm)": state ppid pgrp ...; comm itself may hold spaces and ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, but a member changed user: still ours to try to stop
    if _PROC.is_dir():
        return _live_members_linux(pgid)
    return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(proc: subprocess.Popen[str], grace_s: float | None = None) -> None:
    """SIGTERM the child's whole group, wait up to ``grace_s`` for it to go, then SIGKILL the rest.

    The group id is the child's pid (``start_new_session``). The child is reaped while we wait:
    an unreaped zombie still counts as a group member and would make every kill wait out the
    full grace period.
    """
    pgid = proc.pid
    proc.poll()
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + (KILL_GRACE_S if grace_s is None else grace_s)
    while time.monotonic() < deadline:
        proc.poll()
        if not _group_alive(pgid):
            return
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)


RUN_MARK = "LABTUI_RUN_MARK"


def _kill_marked(mark: str) -> int:
    """SIGKILL every process whose environment carries ``RUN_MARK=mark``; how many there were."""
    needle = f"{RUN_MARK}={mark}".encode()
    killed = 0
    for entry in _PROC.iterdir() if _PROC.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError):
            continue  # gone already, or not ours to read
    return killed


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    # LLM-written code never sees the model providers' keys (OPENAI_API_KEY, LABTUI_API_KEY, …):
    # a run has no business with them, and a leaked key costs money. Other tokens a run may
    # legitimately need (HF_TOKEN for a gated data set) pass.
    merged = {k: v for k, v in os.environ.items() if not k.upper().endswith("API_KEY")}
    if env:
        merged.update(env)
    # Without it Python block-buffers a piped stdout and the log pane stays empty for minutes.
    merged["PYTHONUNBUFFERED"] = "1"
    return merged


def _check_program(program: str, cwd: Path) -> None:
    """A wrapped command starts even when the program does not exist: say so before that."""
    if os.sep in program and not os.path.isabs(program):
        program = str(cwd / program)
    if shutil.which(program) is None:
        raise _missing_interpreter(program)


def _start(
    argv: list[str], cwd: Path, env: dict[str, str], sandbox: SandboxSpec | None = None
) -> subprocess.Popen[str]:
    if not argv:
        raise ValueError("run_process needs a command (argv is empty)")
    if not cwd.is_dir():
        raise LabtuiError(f"cannot run {argv[0]!r}: working folder {cwd} does not exist")
    command = argv
    if sandbox is not None and sandbox.limited:
        _check_program(argv[0], cwd)
        command = sandbox.wrap(argv, cwd.resolve())
        env = {**sandbox.env, **env} if sandbox.isolated else env
    try:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # its own process group: killable as a whole
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        raise _missing_interpreter(argv[0]) from None


def _group_tasks(pgid: int) -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) in the group or session ``pgid``;
    zombies not counted. The session catches children that made a group of their own."""
    total = 0
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        # state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
        # cutime cstime priority nice num_threads ...
        if len(fields) > 17 and fields[0] != "Z" and str(pgid) in (fields[2], fields[3]):
            total += int(fields[17]) if fields[17].isdigit() else 1
    return total


def _disk_usage(folder: Path) -> int:
    """Bytes of disk a folder's files take (allocated blocks: a sparse file is what it holds)."""
    total = 0
    for path, _dirs, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(path, name))
            except OSError:
                continue
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total


class _Watcher(threading.Thread):
    """Kills a sandboxed run's whole group when it holds too many tasks or its run folder
    outgrows the disk cap; ``reason`` then says which limit and by how much."""

    def __init__(self, pgid: int, sandbox: SandboxSpec) -> None:
        super().__init__(name=f"labtui-watch-{pgid}", daemon=True)
        self._pgid = pgid
        self._sandbox = sandbox
        self._done = threading.Event()
        self.reason = ""

    @staticmethod
    def wanted(sandbox: SandboxSpec | None) -> bool:
        if sandbox is None or not sandbox.limited:
            return False
        return bool(sandbox.max_processes or (sandbox.run_dir and sandbox.run_dir_cap_mb))

    def stop(self) -> None:
        self._done.set()

    def run(self) -> None:
        spec = self._sandbox
        next_disk = 0.0
        while not self._done.wait(PROCESS_WATCH_S):
            if spec.max_processes and _PROC.is_dir():
                tasks = _group_tasks(self._pgid)
                if tasks > spec.max_processes:
                    self._trip(
                        f"process limit exceeded: {tasks} processes/threads running, more than "
                        f"[sandbox] max_processes = {spec.max_processes} (a fork bomb?)"
                    )
                    return
            if spec.run_dir and spec.run_dir_cap_mb and time.monotonic() >= next_disk:
                next_disk = time.monotonic() + DISK_WATCH_S
                used = _disk_usage(spec.run_dir)
                if used > spec.run_dir_cap_mb * 1024 * 1024:
                    self._trip(
                        f"disk cap exceeded: {spec.run_dir.name}/ holds {used / 2**20:.1f} MB, "
                        f"more than [sandbox] run_dir_cap_mb = {spec.run_dir_cap_mb} MB"
                    )
                    return

    def _trip(self, reason: str) -> None:
        self.reason = reason
        # No grace period: a disk filler or a fork bomb must not get another second.
        # Under bubblewrap the group holds the sandbox's PID 1, whose death ends every process
        # in the sandbox, including any that left the group.
        _signal_group(self._pgid, signal.SIGKILL)


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
) -> ProcessResult:
    """Run ``argv`` to completion or timeout, streaming its output as LogLine events.

    A failing child is a result, not an exception. Raises LabtuiError only when the program
    cannot be started (missing interpreter, missing folder). When the child exits, or times out,
    whatever is left of its process group is stopped too. With a ``sandbox`` the child runs
    under its limits (and in bubblewrap when the policy says so); a limit that stops the run is
    named in ``limit_hit`` or shows in the stderr tail. Setting ``stop`` ends the run early
    (its whole group), as when the experiments stage ends while parallel ideas still run.
    """
    start = time.monotonic()
    child_env = _child_env(env)
    # Without bubblewrap's PID namespace a child can leave the process group (setsid, a
    # daemon); it still carries this mark, by which it is found and stopped at the end.
    mark = secrets.token_hex(8) if sandbox is not None and not sandbox.isolated else ""
    if mark:
        child_env[RUN_MARK] = mark
    proc = _start(argv, Path(cwd), child_env, sandbox)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        _StreamPump(proc.stdout, "stdout", emit, stage, run_id, tail_chars),
        _StreamPump(proc.stderr, "stderr", emit, stage, run_id, tail_chars),
    ]
    for pump in pumps:
        pump.start()
    watcher = _Watcher(proc.pid, sandbox) if sandbox and _Watcher.wanted(sandbox) else None
    if watcher is not None:
        watcher.start()
    ended = ""
    try:
        ended = _wait(proc, timeout_s, stop)
        if ended:
            _kill_group(proc)
            proc.wait()
        wall_s = time.monotonic() - start
        _finish_pumps(pumps, proc)
    finally:
        if watcher is not None:
            watcher.stop()
        # Also reached on KeyboardInterrupt or a crash here: never leave a run going unwatched.
        # After a normal exit this stops leftovers (e.g. data-loader workers) still holding a GPU.
        _kill_group(proc, grace_s=0.5)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        escaped = _kill_marked(mark) if mark else 0
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
    return ProcessResult(
        returncode=_sandbox_returncode(proc.returncode, sandbox),
        timed_out=ended == "timeout" and not limit_hit,
        stopped=ended == "stopped",
        wall_s=wall_s,
        stdout_tail=stdout_pump.tail.text(),
        stderr_tail=stderr_pump.tail.text(),
        limit_hit=limit_hit,
    )


STOP_POLL_S = 0.2


def _wait(proc: subprocess.Popen[str], timeout_s: float, stop: threading.Event | None) -> str:
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


def _finish_pumps(pumps: list[_StreamPump], proc: subprocess.Popen[str]) -> None:
    """Let readers drain; if leftover grandchildren keep the pipes open, stop them."""
    for pump in pumps:
        pump.join(timeout=DRAIN_AFTER_EXIT_S)
    if any(pump.is_alive() for pump in pumps):
        _kill_group(proc)
        for pump in pumps:
            pump.join(timeout=DRAIN_AFTER_EXIT_S)


# -- experiments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    run_id: str
    returncode: int
    timed_out: bool
    wall_s: float
    stderr_tail: str
    stdout_tail: str
    final_info: dict[str, Any] | None
    means: dict[str, Any] = field(default_factory=dict)  # dataset -> its "means" dict
    problem: str = ""  # '' when the run succeeded and final_info.json is valid

    @property
    def ok(self) -> bool:
        return not self.problem


def _check_run_id(run_id: str) -> None:
    # The run folder is deleted before a rerun: a run id must never reach outside the project.
    if not run_id or run_id in (".", "..") or "/" in run_id or "\\" in run_id:
        raise ValueError(f"run_id must be a plain folder name like 'run_1', not {run_id!r}")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _describe_failure(
    run_id: str, proc: ProcessResult, timeout_s: float, sandbox: SandboxSpec | None = None
) -> str:
    last = _last_line(proc.stderr_tail)
    if proc.stopped:
        return f"{run_id} was stopped early: the experiments stage ended before it finished"
    if proc.limit_hit:
        told = f"; its last words: {last}" if last else ""
        return f"{run_id} was stopped by the sandbox: {proc.limit_hit}{told}"
    if proc.timed_out:
        return f"{run_id} timed out after {timeout_s:g} s and was stopped"
    code = proc.returncode
    if code < 0:
        try:
            how = f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"failed with exit code {code}"
    why = sandbox.explain(proc.stderr_tail, code) if sandbox is not None else ""
    if why:
        how = f"{how} (sandbox: {why})"
    return f"{run_id} {how}: {last}" if last else f"{run_id} {how} (nothing on stderr)"


def read_final_info(run_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """(final_info, means per dataset, problem) for a finished run folder; problem '' if valid."""
    path = run_dir / FINAL_INFO_NAME
    where = f"{run_dir.name}/{FINAL_INFO_NAME}"
    if not path.is_file():
        return None, {}, f"the run exited normally but wrote no {where}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return (
            None,
            {},
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
        )
    except UnicodeDecodeError:
        return None, {}, f"{where} is not UTF-8 text"
    problems = check_final_info(data, where)
    if not isinstance(data, dict):
        return None, {}, "; ".join(problems)
    means = {
        name: entry["means"]
        for name, entry in data.items()
        if isinstance(entry, dict) and isinstance(entry.get("means"), dict)
    }
    return data, means, "; ".join(problems)


def probe_interpreter(
    python: str,
    cwd: Path,
    timeout_s: float = ENV_PROBE_TIMEOUT_S,
    sandbox: SandboxSpec | None = None,
) -> dict[str, Any]:
    """Version and installed packages as the experiment interpreter itself reports them.

    Raises LabtuiError when the interpreter does not exist; any other failure is recorded in
    the returned dict under "error", since a run is still worth running without its record.
    Sandboxed like the run itself: an interpreter (or its site-packages) inside the project is
    as writable by earlier runs as experiment.py is.
    """
    command = [python, "-c", _ENV_PROBE]
    env = _child_env(None)
    if sandbox is not None and sandbox.limited:
        _check_program(python, Path(cwd))
        command = sandbox.wrap(command, Path(cwd).resolve())
        env = {**sandbox.env, **env} if sandbox.isolated else env
    try:
        done = subprocess.run(
            command,
            check=False,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        raise _missing_interpreter(python) from None
    except subprocess.TimeoutExpired:
        return {"error": f"the environment probe took longer than {timeout_s:g} s"}
    if done.returncode != 0:
        return {"error": f"exit code {done.returncode}: {_last_line(done.stderr)}"}
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": f"unreadable probe output: {done.stdout[-300:]!r}"}
    return info if isinstance(info, dict) else {"error": f"unexpected probe output: {info!r:.300}"}


def _write_run_record(run_dir: Path, record: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, ensure_ascii=False, default=str)
    (run_dir / RUN_RECORD_NAME).write_text(text + "\n", encoding="utf-8")


def run_experiment(
    root: Path,
    run_id: str,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    commit: str = "",
    index: int = 0,
    total: int = 0,
    sandbox: SandboxSection | SandboxSpec | None = None,
    gpus: GpuPool | None = None,
    stop: threading.Event | None = None,
) -> RunResult:
    """Run ``python experiment.py --out_dir=<run_id>`` in ``root`` and judge its final_info.json.

    The run folder always ends up holding ``labtui_run.json`` (command, interpreter, package
    versions, commit, timing, sandbox), failed runs included, so any result can be traced and
    redone. ``sandbox`` is the project's ``[sandbox]`` section (None: its defaults) or a ready
    policy; a run a limit stopped is a failed RunResult that names the limit. ``stop`` ends the
    run early (see ``run_process``).
    """
    _check_run_id(run_id)
    root = Path(root).resolve()
    if not root.is_dir():
        raise LabtuiError(f"cannot run {run_id}: project folder {root} does not exist")
    run_dir = root / run_id
    if run_dir.exists():
        # Left by a failed attempt: its partial files must not pass for this run's results.
        shutil.rmtree(run_dir)
    spec = _resolve_sandbox(sandbox, root, emit, stage).for_run_dir(run_dir)
    argv = [python, "experiment.py", f"--out_dir={run_id}"]
    environment = probe_interpreter(python, root, sandbox=spec)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    emit(RunStarted(stage=stage, run_id=run_id, index=index, total=total, command=shlex.join(argv)))
    # Pinned to free GPUs (waiting while none is free): other jobs on a shared server, or
    # labtui's own parallel runs, keep theirs.
    with (
        _lease_gpus(gpus or shared_gpu_pool(), emit, stage, run_id) as lease,
        gpu_sampling(emit, stage),
    ):
        proc = run_process(
            argv,
            cwd=root,
            timeout_s=timeout_s,
            run_id=run_id,
            emit=emit,
            stage=stage,
            sandbox=spec,
            env=lease.env,
            stop=stop,
        )

    if proc.timed_out or proc.stopped or proc.returncode != 0 or proc.limit_hit:
        final_info, means, problem = None, {}, _describe_failure(run_id, proc, timeout_s, spec)
    else:
        final_info, means, problem = read_final_info(run_dir)

    _write_run_record(
        run_dir,
        {
            "run_id": run_id,
            "argv": argv,
            "cwd": str(root),
            "interpreter": python,
            "interpreter_path": shutil.which(python) or python,
            "environment": environment,
            "commit": commit,
            "started_at": started_at,
            "wall_s": round(proc.wall_s, 3),
            "returncode": proc.returncode,
            "timed_out": proc.timed_out,
            "stopped": proc.stopped,
            "timeout_s": timeout_s,
            "CUDA_VISIBLE_DEVICES": lease.env.get(
                "CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")
            ),
            "sandbox": spec.record(),
            "limit_hit": proc.limit_hit,
            "problem": problem,
        },
    )
    error_tail = "" if not problem else f"{problem}\n{proc.stderr_tail}".strip()
    emit(
        RunFinished(
            stage=stage,
            run_id=run_id,
            returncode=proc.returncode,
            wall_s=proc.wall_s,
            means=means,
            error_tail=error_tail,
            timed_out=proc.timed_out,
        )
    )
    return RunResult(
        run_id=run_id,
        returncode=proc.returncode,
        timed_out=proc.timed_out,
        wall_s=proc.wall_s,
        stderr_tail=proc.stderr_tail,
        stdout_tail=proc.stdout_tail,
        final_info=final_info,
        means=means,
        problem=problem,
    )


# -- plots ---------------------------------------------------------------------------------

_SKIP_DIRS = {"__pycache__", "node_modules"}


def _png_signatures(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (mtime_ns, size) of every PNG under root, hidden folders (.git) skipped."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
        for name in files:
            if name.lower().endswith(".png"):
                path = Path(folder) / name
                try:
                    stat = path.stat()
                except OSError:
                    continue
                found[path.relative_to(root).as_posix()] = (stat.st_mtime_ns, stat.st_size)
    return found


def _resolve_sandbox(
    sandbox: SandboxSection | SandboxSpec | None, root: Path, emit: Emit, stage: str
) -> SandboxSpec:
    if isinstance(sandbox, SandboxSpec):
        return sandbox
    return sandbox_policy(sandbox, root, emit=emit, stage=stage)


def run_plot(
    root: Path,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    sandbox: SandboxSection | SandboxSpec | None = None,
) -> tuple[ProcessResult, list[str]]:
    """Run ``python plot.py`` in ``root`` (sandboxed like an experiment, without a run folder
    to watch); also return the PNGs it created or rewrote."""
    root = Path(root).resolve()
    spec = _resolve_sandbox(sandbox, root, emit, stage)
    before = _png_signatures(root)
    # Filesystems with coarse timestamps (1–2 s) can keep a rewritten file's mtime: anything
    # stamped in or after the second the run started counts as rewritten too.
    started_ns = time.time_ns() // 1_000_000_000 * 1_000_000_000
    # Agg: AI Scientist plot.py files often pick no backend, and a server has no display.
    proc = run_process(
        [python, "plot.py"],
        cwd=root,
        timeout_s=timeout_s,
        run_id="plot",
        emit=emit,
        stage=stage,
        env={"MPLBACKEND": "Agg"},
        sandbox=spec,
    )
    after = _png_signatures(root)
    changed = sorted(
        path
        for path, signature in after.items()
        if before.get(path) != signature or signature[0] >= started_ns
    )
    return proc, changed


_shared_pool: GpuPool | None = None


@contextlib.contextmanager
def _lease_gpus(pool: GpuPool, emit: Emit, stage: str, run_id: str) -> Iterator[Lease]:
    """A lease from ``pool``; a run that has to queue says so, so a quiet log is explained."""
    try:
        lease = pool.acquire(timeout_s=0)
    except TimeoutError:
        emit(Notice(stage=stage, text=f"{run_id} waits for a free GPU (all are busy)"))
        lease = pool.acquire()
    try:
        yield lease
    finally:
        pool.release(lease)


_sampling_lock = threading.Lock()
_sampling_users = 0
_sampler: GpuSampler | None = None


@contextlib.contextmanager
def gpu_sampling(emit: Emit, stage: str) -> Iterator[None]:
    """GPU samples while any run is going: one sampler for all concurrent runs (parallel ideas),
    so each GPU is read once a second however many runs there are."""
    global _sampling_users, _sampler
    with _sampling_lock:
        _sampling_users += 1
        if _sampling_users == 1:
            _sampler = GpuSampler(emit, stage).__enter__()
    try:
        yield
    finally:
        with _sampling_lock:
            _sampling_users -= 1
            if _sampling_users == 0 and _sampler is not None:
                _sampler.__exit__(None, None, None)
                _sampler = None


def shared_gpu_pool() -> GpuPool:
    """One pool per labtui process, so concurrent runs never get the same GPU."""
    global _shared_pool
    if _shared_pool is None:
        _shared_pool = GpuPool()
    return _shared_pool
