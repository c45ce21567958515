"""Which sandbox a run gets: the policy from ``[sandbox]`` in labtui.toml and what this machine
allows. Without a working bubblewrap, ``mode = "auto"`` falls back to resource limits and says so
loudly, once per session; ``mode = "bwrap"`` refuses to run instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError
from ..events import Event, Notice
from ..settings.sections import SandboxSection
from .bubblewrap import bwrap_problem
from .host_limits import Containment, containment, task_cap
from .sandbox import MODES, SandboxSpec

Emit = Callable[[Event], None]

_warned = False  # the "not isolated" Notice is said once per session (process)
_warn_lock = threading.Lock()


def forget_warning() -> None:
    """Let the next unisolated run warn again (for tests, and a new session in one process)."""
    global _warned
    with _warn_lock:
        _warned = False


# -- detection -----------------------------------------------------------------------------


_NOT_ISOLATED = (
    "⚠ EXPERIMENTS ARE NOT ISOLATED: {problem}. LLM-written code will run with your user's "
    "full access to files and network, under resource limits only: your home folder (tokens, "
    "keys, ~/.cache, ~/.config) is visible to runs; only their environment is filtered to an "
    "allowlist (plus [sandbox] pass_env). Fix: install bubblewrap "
    "(e.g. `apt install bubblewrap`) and allow unprivileged user namespaces "
    "(sysctl kernel.unprivileged_userns_clone=1, or "
    "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+), "
    'or set [sandbox] mode = "limits" (or "off") in labtui.toml to accept this and '
    "silence this warning."
)


def policy(
    settings: SandboxSection | None,
    root: Path,
    *,
    emit: Callable[[Event], None] | None = None,
    stage: str = "",
) -> SandboxSpec:
    """The sandbox for runs in ``root`` as ``[sandbox]`` asks; None settings: the defaults.

    ``mode = "auto"`` without a working bubblewrap emits the loud Notice (once per session)
    and falls back to limits; ``mode = "bwrap"`` then raises ConfigError instead.
    """
    if settings is None:
        settings = SandboxSection()
    mode = settings.mode
    where = Path(root) / "labtui.toml"
    if mode not in MODES:
        raise ConfigError(f"{where}: [sandbox] mode is {mode!r}", f"use one of: {', '.join(MODES)}")
    note = ""
    if mode in ("auto", "bwrap"):
        problem = bwrap_problem()
        if not problem:
            mode = "bwrap"
        elif mode == "bwrap":
            raise ConfigError(
                f'{where}: [sandbox] mode = "bwrap" but {problem}',
                "install bubblewrap and allow unprivileged user namespaces, "
                'or set [sandbox] mode = "auto" to run with resource limits only',
            )
        else:
            mode = "limits"
            note = f"not isolated: {problem}"
            warn_not_isolated(emit, stage, problem)
    tasks = task_cap(settings.max_processes)
    return SandboxSpec(
        mode=mode,
        root=Path(root).resolve(),
        network=settings.network,
        cpu_time_s=int(settings.cpu_time_s),
        memory_mb=int(settings.memory_mb),
        max_processes=tasks,
        max_processes_auto=settings.max_processes == "auto",
        max_file_mb=int(settings.max_file_mb),
        run_dir_cap_mb=int(settings.run_dir_cap_mb),
        max_files=int(settings.max_files),
        tmp_mb=int(settings.tmp_mb),
        note=note,
        pass_env=tuple(settings.pass_env),
        read=read_paths(settings.read, where),
        oom_score_adj=int(settings.oom_score_adj),
        nice=int(settings.nice),
        ionice=settings.ionice,
        containment=containment(settings, tasks) if mode != "off" else Containment(),
    )


def read_paths(paths: list[str], where: Path) -> tuple[Path, ...]:
    """``[sandbox] read`` as absolute paths (``~`` expanded, a relative one from the project);
    one that does not exist is a ConfigError that names it, not a run that fails later."""
    found = []
    for raw in paths:
        path = Path(os.path.normpath(where.parent / os.path.expanduser(raw)))
        if not path.exists():
            raise ConfigError(
                f"{where}: [sandbox] read names {raw!r}, which does not exist ({path})",
                "fix the path, or remove it from [sandbox] read in labtui.toml",
            )
        found.append(path)
    return tuple(dict.fromkeys(found))


def warn_not_isolated(emit: Callable[[Event], None] | None, stage: str, problem: str) -> None:
    global _warned
    with _warn_lock:
        if _warned or emit is None:
            return
        _warned = True
    emit(Notice(stage=stage, text=_NOT_ISOLATED.format(problem=problem)))


def resolve(
    sandbox: SandboxSection | SandboxSpec | None, root: Path, emit: Emit, stage: str
) -> SandboxSpec:
    """A ready policy as it is; else the policy that ``[sandbox]`` settings give (None: defaults)."""
    if isinstance(sandbox, SandboxSpec):
        return sandbox
    return policy(sandbox, root, emit=emit, stage=stage)
