"""bubblewrap on this machine: whether it is installed and can make a sandbox here (probed once),
whether it can size a tmpfs, the flags that isolate a run (a PID namespace, and no capabilities
when run as root), the GPU device nodes passed through, and the Python environments under /tmp
that the sandbox's private /tmp would hide. ``core.machine.sandbox`` builds a run's bwrap
command line from them.
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


def environments_under_tmp(programs: list[str]) -> list[str]:
    """Python environments that live under /tmp (a CI checkout, a scratch venv): the sandbox's
    private /tmp would hide them, and with them the interpreters, so they are bound back
    read-only. labtui's own (it runs the limits wrapper) and each program's (<env>/bin/python)."""
    candidates = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent.parent}
    for program in programs:
        path = Path(shutil.which(program) or program)
        candidates |= {path.parent.parent, path.resolve().parent.parent}
    tmp = Path("/tmp")
    return sorted(str(p) for p in candidates if tmp in p.parents and p.is_dir())


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
