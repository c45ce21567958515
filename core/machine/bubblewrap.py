"""bubblewrap on this machine: whether it is installed and can make a sandbox here (probed once),
whether it can size a tmpfs, the flags that isolate a run (a PID namespace, and no capabilities
when run as root), the GPU device nodes passed through, and the folders that make up a run's
Python interpreters (which the sandbox binds back where its empty home or private /tmp would
hide them). ``core.machine.sandbox`` builds a run's bwrap command line from them.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from .host_limits import run_probe

BWRAP = "bwrap"  # the program name or path; tests point it elsewhere to simulate its absence
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/dri")
PROBE_TIMEOUT_S = 10.0


def interpreter_roots(programs: list[str]) -> list[Path]:
    """The folders that make up the interpreters a sandboxed run uses: labtui's own (it runs the
    limits wrapper) and each program's, wherever they live (a pyenv or conda under the home
    folder, a repository's .venv, a scratch venv under /tmp). For ``<env>/bin/python``: the
    environment as named, as its symlinks resolve, and a venv's base interpreter (pyvenv.cfg's
    ``home``), whose standard library a venv made with copies still needs. The sandbox binds
    back, read-only, those it would otherwise hide."""
    executables = [Path(sys.executable)]
    for program in programs:
        executables.append(Path(shutil.which(program) or program))
    candidates = {Path(sys.prefix), Path(sys.base_prefix)}
    for executable in executables:
        for prefix in (executable.parent.parent, executable.resolve().parent.parent):
            candidates.add(prefix)
            if base := _venv_base(prefix):
                candidates |= {base, base.resolve()}
    return sorted(p for p in candidates if p.is_absolute() and p.is_dir())


def _venv_base(prefix: Path) -> Path | None:
    """The prefix of the interpreter a venv was made from (None when ``prefix`` is no venv)."""
    try:
        lines = (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip()).parent  # home is the base interpreter's bin folder
    return None


def user_site_packages(home: Path) -> list[Path]:
    """``pip install --user`` packages under the home folder (~/.local/lib/pythonX.Y/
    site-packages): a run needs them as much as the interpreter's own; a venv ignores them."""
    return sorted(Path(p) for p in glob.glob(str(home / ".local/lib/python3*/site-packages")))


def isolation_flags() -> list[str]:
    flags = ["--unshare-pid", "--die-with-parent"]
    if os.geteuid() == 0:
        # Run as root, bwrap keeps every capability in the sandbox: one remount and the
        # read-only binds are gone. A user namespace and no capabilities at all.
        flags += ["--unshare-user", "--cap-drop", "ALL"]
    return flags


@lru_cache(maxsize=4)
def _bwrap_problem(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        return f"{program!r} is not installed"
    probe = [
        path,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-net",
        *isolation_flags(),
        "true",
    ]  # fmt: skip
    done = run_probe(probe, PROBE_TIMEOUT_S)
    if not done.started:
        return f"{program} could not be started ({done.failure})"
    if done.failure:
        return f"{program} is installed but cannot create a sandbox here ({done.failure})"
    return ""


@lru_cache(maxsize=1)
def bwrap_sizes_tmpfs() -> bool:
    """bubblewrap 0.8 and later can cap a tmpfs (``--size``); older ones would refuse to start."""
    try:
        done = subprocess.run(
            [shutil.which(BWRAP) or BWRAP, "--help"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in done.stdout + done.stderr


def bwrap_problem() -> str:
    """Why bubblewrap cannot be used on this machine; '' when it works (checked once, cached)."""
    return _bwrap_problem(BWRAP)


def available() -> bool:
    """bubblewrap exists *and* works: containers often forbid unprivileged user namespaces."""
    return not bwrap_problem()


def gpu_devices() -> list[str]:
    """The GPU device nodes of this machine, passed through to the sandbox as they are."""
    found: list[str] = []
    for pattern in GPU_DEVICE_GLOBS:
        found += sorted(glob.glob(pattern))
    return found
