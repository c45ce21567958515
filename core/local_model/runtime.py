"""The local model server's own virtual environment, under the user's cache (``server/venv``), so
that llama-cpp-python and what it needs (fastapi, uvicorn, pydantic-settings …) never meet the
exact pins aider sets in labtui's own environment.

Built once per machine by pip, which compiles llama.cpp: minutes on a small machine, so the
build reports its progress every second (its elapsed time and pip's latest line) and keeps its
whole output in ``server/build.log``. On x86 it is built with ``-DGGML_NATIVE=OFF``: a native
build may use instructions (AMX) that some virtual machines fault on. An environment is taken as
ready only with its mark, written last, and when its interpreter imports ``llama_cpp.server``: a
build cut short is removed and made again. Builds are ordered by a lock, so two labtui processes
build it once.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..errors import LabtuiError
from ..machine.process_group import kill_group
from ..machine.processes import popen_in_group
from .catalog import SERVER_PACKAGE, CacheDirs
from .progress import Progress, ProgressSink, no_progress
from .server_state import FileLock

READY_MARK = ".labtui-ready"  # in the venv, holding SERVER_PACKAGE: written once it imports
TICK_S = 1.0  # how often the sink hears of a build
IMPORT_TIMEOUT_S = 120.0  # importing the server loads llama.cpp's library and fastapi
BUILD_WAIT_S = 3600.0  # for another process's build: a slow machine takes many minutes
TAIL_LINES = 8
X86 = ("x86_64", "amd64")
CREATING = "creating the model server's environment"
BUILDING = "building the model server"

Command = Callable[[Path], list[str]]
"""Gives the command line of one step: from the venv's folder (creating it) or its python
(installing the server). Tests pass fakes; nothing else should."""


def venv_command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "venv", str(folder)]


def install_command(python: Path) -> list[str]:
    # --verbose: pip shows the compiler's lines, so the front end sees the build move
    return [str(python), "-m", "pip", "install", "--progress-bar", "off", "-v", SERVER_PACKAGE]


def venv_python(folder: Path) -> Path:
    return folder / "bin" / "python"


def build_log(dirs: CacheDirs) -> Path:
    return dirs.server / "build.log"


def runtime_python(dirs: CacheDirs) -> Path | None:
    """The server environment's python when it is built and imports ``llama_cpp.server``.
    The import (a second or two: llama.cpp's library, fastapi) is tried once per build and
    process."""
    python = venv_python(dirs.server_venv)
    mark = dirs.server_venv / READY_MARK
    try:
        marked, built = mark.read_text().strip(), mark.stat().st_mtime_ns
    except OSError:
        return None
    if marked != SERVER_PACKAGE or not python.exists():
        return None
    if _imported.get(mark) != built:
        if not imports_server(python):
            return None
        _imported[mark] = built
    return python


_imported: dict[Path, int] = {}  # ready mark -> its mtime when the import was seen to work


def imports_server(python: Path) -> bool:
    try:
        done = subprocess.run(
            [str(python), "-c", "import llama_cpp.server"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=IMPORT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def ensure_runtime(
    dirs: CacheDirs,
    sink: ProgressSink = no_progress,
    *,
    make_venv: Command = venv_command,
    install: Command = install_command,
) -> Path:
    """The server environment's python, built first when there is none (minutes). LabtuiError
    naming the build log and pip's last lines when the build fails."""
    found = runtime_python(dirs)
    if found is not None:
        return found
    lock = FileLock(dirs.server / "venv.lock")

    def waiting(seconds: float) -> None:
        sink(Progress(BUILDING, seconds, None, "s", "another labtui process is building it"))

    if not lock.acquire(BUILD_WAIT_S, waiting):
        raise LabtuiError(
            f"another labtui process has been building the model server in "
            f"{dirs.server_venv} for over {BUILD_WAIT_S / 60:g} minutes",
            f"read {build_log(dirs)}; stop that process and try again",
        )
    try:
        found = runtime_python(dirs)  # the other process's build, finished while we waited
        return found if found is not None else _build(dirs, sink, make_venv, install)
    finally:
        lock.release()


def build_environment() -> dict[str, str]:
    """pip's environment: labtui's own (a proxy, the compiler), with GGML_NATIVE off on x86
    unless the researcher's CMAKE_ARGS says otherwise."""
    env = dict(os.environ)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    cmake_args = env.get("CMAKE_ARGS", "")
    if platform.machine().lower() in X86 and "GGML_NATIVE" not in cmake_args:
        env["CMAKE_ARGS"] = f"{cmake_args} -DGGML_NATIVE=OFF".strip()
    return env


def _build(dirs: CacheDirs, sink: ProgressSink, make_venv: Command, install: Command) -> Path:
    venv = dirs.server_venv
    if venv.exists() or venv.is_symlink():
        shutil.rmtree(venv)  # unmarked: a build cut short, or one that failed
    dirs.server.mkdir(parents=True, exist_ok=True)
    python = venv_python(venv)
    with build_log(dirs).open("w", encoding="utf-8") as log:
        run_step(make_venv(venv), dict(os.environ), log, CREATING, sink, dirs.server)
        run_step(install(python), build_environment(), log, BUILDING, sink, dirs.server)
    if not imports_server(python):
        raise LabtuiError(
            f"the model server was built in {venv} but its python cannot import llama_cpp.server",
            f"read {build_log(dirs)}; remove {venv} and labtui builds it again",
        )
    (venv / READY_MARK).write_text(SERVER_PACKAGE + "\n")
    return python


def run_step(
    argv: list[str], env: dict[str, str], log: IO[str], step: str, sink: ProgressSink, cwd: Path
) -> None:
    """Run one step of the build, its output copied into ``log``; ``sink`` hears of it every
    second. LabtuiError with its last lines when it fails."""
    log.write(f"$ {shlex.join(argv)}\n")
    log.flush()
    try:
        process = popen_in_group(argv, cwd, env, merge_stderr=True)
    except OSError as exc:
        raise LabtuiError(f"{step} failed: {argv[0]} could not be started ({exc})") from None
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    copier = threading.Thread(target=_copy_lines, args=(process, log, tail), daemon=True)
    copier.start()
    started = time.monotonic()
    try:
        while True:
            sink(Progress(step, time.monotonic() - started, None, "s", _detail(tail)))
            try:
                process.wait(timeout=TICK_S)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        if process.poll() is None:  # interrupted: no compiler left running on its own
            kill_group(process)
    copier.join(timeout=5.0)
    sink(Progress(step, time.monotonic() - started, None, "s", _detail(tail)))
    if process.returncode != 0:
        raise LabtuiError(
            f"{step} failed (exit code {process.returncode}): {' | '.join(tail) or 'no output'}",
            _failure_hint(step, log.name),
        )


# ninja's progress at the start of a line of the build: "[57/193] /usr/bin/g++ …"
_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]")


def _detail(tail: deque[str]) -> str:
    """What the build is doing, short: the compiler's count of files where it gives one (a
    compiler's command line is a screenful), else pip's latest line."""
    if not tail:
        return ""
    if step := _NINJA_STEP.match(tail[-1]):
        return f"compiling llama.cpp: {step[1]} of {step[2]} files"
    return tail[-1][:100]


def _copy_lines(process: subprocess.Popen[bytes], log: IO[str], tail: deque[str]) -> None:
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode("utf-8", "replace").rstrip()
        log.write(line + "\n")
        log.flush()
        if line.strip():
            tail.append(line.strip())


def _failure_hint(step: str, log_name: str) -> str:
    if step == CREATING:
        return (
            f"read {log_name}; on Debian and Ubuntu `python3 -m venv` needs the python3-venv "
            "package; or set LABTUI_MODEL to a hosted model"
        )
    return (
        f"read {log_name}; building llama-cpp-python needs a C/C++ compiler and cmake (e.g. "
        "apt install build-essential cmake) and the package index; or set LABTUI_MODEL to a "
        "hosted model"
    )
