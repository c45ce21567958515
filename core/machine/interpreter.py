"""What the experiment interpreter is: its version and installed packages, as it reports them
itself (recorded with every run, so that a result can be traced to its environment).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .processes import check_program, child_env, last_line, missing_interpreter
from .sandbox import SandboxSpec

ENV_PROBE_TIMEOUT_S = 60.0

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
    env = child_env(None, sandbox)
    if sandbox is not None and sandbox.limited:
        check_program(python, Path(cwd))
        command = sandbox.wrap(command, Path(cwd).resolve())
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
        raise missing_interpreter(python) from None
    except subprocess.TimeoutExpired:
        return {"error": f"the environment probe took longer than {timeout_s:g} s"}
    if done.returncode != 0:
        return {"error": f"exit code {done.returncode}: {last_line(done.stderr)}"}
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": f"unreadable probe output: {done.stdout[-300:]!r}"}
    return info if isinstance(info, dict) else {"error": f"unexpected probe output: {info!r:.300}"}


# Answers with its prefix and the names it cannot find, run in each candidate interpreter; -I:
# the project folder on sys.path must not make a repository module pass for an installed package.
_MISSING_PROBE = (
    "import importlib.util, json, sys; print(json.dumps({'prefix': sys.prefix, 'missing': "
    "[m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]}))"
)
# Import names whose distribution (what pip installs) is named otherwise.
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "yaml": "pyyaml",
}


def distribution(module: str) -> str:
    """What pip installs to make ``module`` importable (sklearn: scikit-learn)."""
    return DISTRIBUTIONS.get(module, module)


@dataclass(frozen=True)
class Imports:
    """What one interpreter finds of some packages, and which environment it is: its
    ``sys.prefix``, since every venv's ``bin/python`` resolves to the base interpreter it was
    made from, so the binary cannot tell a research venv from labtui's own."""

    python: str
    prefix: str
    missing: tuple[str, ...] = ()

    @property
    def labtuis_own(self) -> bool:
        """Whether this is the environment labtui itself runs in."""
        return Path(self.prefix).resolve() == Path(sys.prefix).resolve()


def imports_in(python: str, packages: list[str]) -> Imports | None:
    """What ``python`` lacks of ``packages`` (import names), with its prefix; None when it
    cannot be run or answers nonsense."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", _MISSING_PROBE, *packages],
            capture_output=True, text=True, timeout=ENV_PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        return Imports(python, str(answer["prefix"]), tuple(answer["missing"]))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError, TypeError):
        return None


def interpreter_with(packages: list[str], candidates: list[str]) -> tuple[str, dict[str, list]]:
    """The first of ``candidates`` (interpreter paths) that finds every one of ``packages``, or
    ''; with what each candidate lacked (those that could not be run are left out)."""
    lacking: dict[str, list] = {}
    for python in dict.fromkeys(candidates):
        found = imports_in(python, packages)
        if found is None:
            continue
        lacking[python] = list(found.missing)
        if not found.missing:
            return python, lacking
    return "", lacking
