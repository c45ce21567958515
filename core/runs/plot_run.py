"""Plot runs: ``python plot.py`` sandboxed like an experiment (without a run folder to watch),
and the PNGs it created or rewrote.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import Event
from ..machine import sandbox_policy
from ..machine.interpreter import interpreter_with
from ..machine.processes import ProcessResult, run_process
from ..machine.sandbox import SandboxSpec
from ..machine.watch import Watch
from .placement import OnCluster

if TYPE_CHECKING:
    from ..settings.config import Config
    from ..settings.sections import ClusterSection, SandboxSection

Emit = Callable[[Event], None]

_SKIP_DIRS = {"__pycache__", "node_modules"}
PLOTS_NEED = "matplotlib"


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


def _script_hash(root: Path) -> str:
    """plot.py's content, as a cluster job's identity: an edited script is a new job."""
    script = root / "plot.py"
    return hashlib.sha256(script.read_bytes()).hexdigest() if script.is_file() else ""


def plot_settings(config: Config) -> dict[str, Any]:
    """The keyword arguments of ``run_plot`` that a project's labtui.toml sets."""
    on_cluster = config.cluster.backend == "slurm"  # a node's interpreter is not probed here
    return {
        "python": config.python if on_cluster else plot_interpreter(config.python),
        "timeout_s": config.limits.plot_timeout_s,
        "sandbox": config.sandbox,
        "cluster": config.cluster,
    }


@functools.cache
def plot_interpreter(python: str) -> str:
    """plot.py's interpreter: the experiment's when it has matplotlib, else labtui's own (which
    has it), so a research environment without matplotlib still gets its figures."""
    if python == sys.executable:  # not resolved paths: every venv's python resolves to its base
        return python
    found, _lacking = interpreter_with([PLOTS_NEED], [python])
    return python if found else sys.executable


def run_plot(
    root: Path,
    *,
    python: str,
    timeout_s: float,
    emit: Emit,
    stage: str,
    sandbox: SandboxSection | SandboxSpec | None = None,
    cluster: ClusterSection | None = None,
) -> tuple[ProcessResult, list[str]]:
    """Run ``python plot.py`` in ``root`` (sandboxed like an experiment, without a run folder
    to watch; a Slurm job when ``cluster`` says so); also return the PNGs it created or
    rewrote."""
    root = Path(root).resolve()
    before = _png_signatures(root)
    # Filesystems with coarse timestamps (1–2 s) can keep a rewritten file's mtime: anything
    # stamped in or after the second the run started counts as rewritten too.
    started_ns = time.time_ns() // 1_000_000_000 * 1_000_000_000
    # Agg: AI Scientist plot.py files often pick no backend, and a server has no display.
    argv, env = [python, "plot.py"], {"MPLBACKEND": "Agg"}
    if cluster is not None and cluster.backend == "slurm":
        job = OnCluster.prepare(
            root, "plot", argv, env, timeout_s, stage, sandbox, [], Watch(), cluster,
            _script_hash(root), emit, run_dir=False,
        )  # fmt: skip
        proc = job.run(emit, None).process
    else:
        spec = sandbox_policy.resolve(sandbox, root, emit, stage)
        proc = run_process(
            argv, cwd=root, timeout_s=timeout_s, run_id="plot", emit=emit, stage=stage, env=env,
            sandbox=spec,
        )  # fmt: skip
    after = _png_signatures(root)
    changed = sorted(
        path
        for path, signature in after.items()
        if before.get(path) != signature or signature[0] >= started_ns
    )
    return proc, changed
