"""Containment for LLM-written code: every experiment and plot runs under a sandbox policy.

Two layers, chosen by ``[sandbox] mode`` in labtui.toml:

* **bubblewrap** (``bwrap``): the whole filesystem is mounted read-only, then the project folder
  is bound writable on top, and labtui's own state (``labtui.toml``, ``.labtui/``, ``.git``) is
  bound read-only again on top of that, so the child can neither escape the project nor edit
  its own time limit or rewrite history. ``/dev`` is a fresh minimal one plus the GPU nodes
  (``/dev/nvidia*``, ``/dev/dri``), ``/proc`` belongs to a new PID namespace (a fork bomb dies
  with the sandbox), ``/tmp`` is a private tmpfs of ``tmp_mb`` and, unless ``network = true``,
  the network namespace is empty (not even the host's loopback is reachable). The home folder
  is an empty tmpfs (and so are /home and /root): an allowlist, not a list of known secrets.
  Bound back read-only on top, and nothing else from there: the folders of the interpreters
  the run uses (``core/machine/bubblewrap.py``) and the paths of ``[sandbox] read``. The
  project's own credentials (``.env`` …) are hidden. The environment is an allowlist too
  (``core/machine/run_env.py``), in every mode.
* **limits**: resource limits set in the child right before it execs the experiment interpreter
  (CPU time, data memory, processes, file size, no core dumps), plus watchers in labtui
  (``core/machine/watch.py``, over the run's whole process tree from ``core/machine/process_tree.py`` and the
  project's growth from ``core/machine/disk_growth.py``) that stop a process storm, a run over its task
  or disk caps, and an idle one. Limits apply under bubblewrap too.

For the host's sake every limited run also gets a raised OOM score, a lower CPU and IO priority
and, where the machine allows it, a cgroup v2 that caps its memory, CPU and tasks
(``core/machine/host_limits.py``; ``labtui doctor`` says which).

``--new-session`` is deliberately not passed: the runner already starts bwrap in a session of
its own (``start_new_session``), which detaches it from any terminal (the TIOCSTI concern that
``--new-session`` addresses), and a second setsid inside would take the experiment out of the
process group that labtui kills on timeout.

Without a working bubblewrap, ``mode = "auto"`` runs with limits only and says so once per
session, loudly, as a Notice event (``core/machine/sandbox_policy.py``).

Whether bubblewrap works here, and what it is given beyond the policy (isolation flags, GPU
devices, environments under /tmp), is ``core/machine/bubblewrap.py``; the few lines that set
the limits inside the sandbox are ``core/machine/limits_wrapper.py``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .bubblewrap import (
    BWRAP,
    bwrap_sizes_tmpfs,
    gpu_devices,
    interpreter_roots,
    isolation_flags,
    user_site_packages,
)
from .host_limits import Containment, io_words, ioprio
from .limits_wrapper import wrapper_command
from .run_env import SANDBOX_LOCATIONS, EnvPolicy

MODES = ("auto", "bwrap", "limits", "off")
PROTECTED = ("labtui.toml", ".labtui", ".git")  # read-only inside the project, when present
# The project's own credentials: the project is bound writable, so these are masked on top (an
# empty folder, an empty file). What lies outside the project is hidden by the empty home.
PROJECT_SECRETS = (".env", ".envrc", ".aider.env", ".aider.conf.yml", ".netrc")
NPROC_MARGIN = 16  # RLIMIT_NPROC is a backstop above max_processes, which the runner watches

# Other users' homes, hidden like the run's own (unless the project lives there).
OTHER_HOMES = ("/home", "/root")


# -- the policy ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxSpec:
    """How one run is contained. ``mode`` is resolved: "bwrap", "limits" or "off"."""

    mode: str
    root: Path  # the project folder: the only writable place (besides a private /tmp)
    network: bool = False
    cpu_time_s: int = 0  # 0: no limit (for all of these)
    memory_mb: int = 0
    max_processes: int = 0
    max_processes_auto: bool = False  # max_processes is what "auto" came to on this machine
    max_file_mb: int = 0
    run_dir: Path | None = None
    run_dir_cap_mb: int = 0
    max_files: int = 0  # entries a run may add to the project folder (watched)
    tmp_mb: int = 0  # size of the private /tmp (bubblewrap; it lives in memory)
    note: str = ""  # why the run is not isolated, when it is not
    pass_env: tuple[str, ...] = ()  # [sandbox] pass_env: variables let through by name
    read: tuple[Path, ...] = ()  # [sandbox] read: paths bound read-only (absolute, existing)
    protected: tuple[str, ...] = ()  # project files no run may change ([experiment] protect)
    # For the host's sake (core/machine/host_limits.py): who the OOM killer takes, CPU and IO priority,
    # and the cgroup (or none) that caps the run's memory, CPU and tasks.
    oom_score_adj: int = 1000  # 0: left as is (for these three)
    nice: int = 10
    ionice: str = "best-effort"
    containment: Containment = field(default_factory=Containment)

    @property
    def isolated(self) -> bool:
        return self.mode == "bwrap"

    @property
    def limited(self) -> bool:
        return self.mode != "off"

    @property
    def task_cap_words(self) -> str:
        """The task cap as labtui.toml says it, for the messages that name it."""
        if self.max_processes_auto:
            return f'[sandbox] max_processes = "auto" ({self.max_processes} tasks here)'
        return f"[sandbox] max_processes = {self.max_processes}"

    @property
    def env_policy(self) -> EnvPolicy:
        """The run's environment: the allowlist and ``pass_env``, caches moved into the
        sandbox's private /tmp under bubblewrap (the real ones are hidden or read-only)."""
        return EnvPolicy(self.pass_env, SANDBOX_LOCATIONS if self.isolated else None)

    def environment(self, explicit: dict[str, str] | None = None) -> dict[str, str]:
        return self.env_policy.environment(explicit)

    def for_run_dir(self, run_dir: Path | None, cap_mb: int | None = None) -> SandboxSpec:
        """The same policy watching ``run_dir`` against the disk cap."""
        cap = self.run_dir_cap_mb if cap_mb is None else cap_mb
        return replace(self, run_dir=run_dir, run_dir_cap_mb=cap)

    def protecting(self, files: list[str]) -> SandboxSpec:
        """The same policy with the project-relative ``files`` read-only to the run too."""
        return replace(self, protected=tuple(files))

    # -- the command line ------------------------------------------------------------------

    def rlimits(self) -> dict[str, Any]:
        """RLIMIT name -> value (or [soft, hard]) for the wrapper; applied in the child."""
        if not self.limited:
            return {}
        limits: dict[str, Any] = {"RLIMIT_CORE": 0}
        if self.cpu_time_s:
            # SIGXCPU at the soft limit, SIGKILL a little later for a child that catches it.
            limits["RLIMIT_CPU"] = [self.cpu_time_s, self.cpu_time_s + 5]
        if self.memory_mb:
            # RLIMIT_DATA, not RLIMIT_AS: CUDA (and JAX) reserve tens of GB of address space
            # they never touch, so an address-space cap kills every GPU job at start-up.
            # RLIMIT_DATA counts private writable memory (Linux >= 4.7), i.e. what was used.
            limits["RLIMIT_DATA"] = self.memory_mb * 1024 * 1024
        if self.max_file_mb:
            limits["RLIMIT_FSIZE"] = self.max_file_mb * 1024 * 1024
        if self.max_processes and os.geteuid() != 0:
            # RLIMIT_NPROC counts every task (thread) of the user, or of the sandbox's user
            # namespace on new kernels: on top of what the user already runs, so that a busy
            # desktop does not make the first fork fail. Root is exempt (the kernel ignores it);
            # the runner's process watcher enforces max_processes exactly, for root too, and the
            # margin lets it see the excess (and name the limit) before forks start failing.
            limits["RLIMIT_NPROC"] = _user_tasks() + self.max_processes + NPROC_MARGIN
        return limits

    def priorities(self) -> dict[str, Any]:
        """The wrapper's steps that make the run the OOM killer's first choice and put it
        behind everyone else for CPU and disk."""
        if not self.limited:
            return {}
        steps: dict[str, Any] = {}
        if self.oom_score_adj:
            steps["oom_score_adj"] = self.oom_score_adj
        if self.nice:
            steps["nice"] = self.nice
        if io := ioprio(self.ionice):
            steps["ioprio"] = io
        return steps

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        """``argv`` as it must be started: behind the cgroup scope (when one is used), in bwrap,
        behind the limits wrapper, or unchanged."""
        if not self.limited:
            return list(argv)
        inside = {"rlimits": self.rlimits(), **self.priorities()}
        enter = self.containment.enter_step()
        if not self.isolated:
            command = [*wrapper_command({**enter, **inside}), *argv]
        else:
            command = [
                *self.bwrap_args(cwd, programs=programs_of(argv)),
                "--",
                *wrapper_command(inside),
                *argv,
            ]
            if enter:
                command = [*wrapper_command(enter), *command]
        return [*self.containment.prefix(), *command]

    def bwrap_args(self, cwd: Path, programs: list[str] | None = None) -> list[str]:
        """bwrap's command line; order matters: each mount lies on top of the ones before it
        (empty homes first, then what is bound back, then the project and its protections)."""
        root = str(self.root)
        args = [shutil.which(BWRAP) or BWRAP, "--ro-bind", "/", "/", "--dev", "/dev"]
        for device in gpu_devices():
            args += ["--dev-bind", device, device]
        args += ["--proc", "/proc"]
        for empty in ["/tmp", *map(str, self.empty_homes())]:
            if self.tmp_mb and bwrap_sizes_tmpfs():
                args += ["--size", str(self.tmp_mb * 1024 * 1024)]
            args += ["--tmpfs", empty]
        for source, target in self.read_only_binds(programs or []):
            args += ["--ro-bind", str(source), str(target)]
        args += ["--bind", root, root]
        for path in self.read_only_paths():
            args += ["--ro-bind", str(path), str(path)]
        for secret in self.hidden_paths():
            if secret.is_dir():
                args += ["--tmpfs", str(secret)]
            else:
                args += ["--ro-bind", "/dev/null", str(secret)]
        if not self.network:
            args.append("--unshare-net")
        args += isolation_flags()
        args += ["--chdir", str(cwd)]
        return args

    def empty_homes(self) -> list[Path]:
        """The home folder and the other homes, each an empty tmpfs in the sandbox, parents
        first; a home that is the project, or lies in it, stays as the project's bind shows it."""
        home = Path(os.path.expanduser("~"))
        homes = [Path(p) for p in OTHER_HOMES] + [home]
        return [
            path
            for path in sorted(dict.fromkeys(homes), key=lambda p: len(p.parts))
            if path.is_dir()
            and path != Path(path.anchor)
            and path != self.root
            and self.root not in path.parents
        ]

    def read_only_binds(self, programs: list[str]) -> list[tuple[Path, Path]]:
        """(source, target) bound read-only over the empty homes and the private /tmp: the
        interpreters' folders that those would hide, then ``[sandbox] read``. A folder inside
        the project (a repository's .venv) comes with the project's bind."""
        hiding = [Path("/tmp"), *self.empty_homes()]
        folders = [*interpreter_roots(programs), *user_site_packages(Path(os.path.expanduser("~")))]
        needed = [
            path
            for path in folders
            if any(h == path or h in path.parents for h in hiding)
            and path != self.root
            and self.root not in path.parents
        ]
        # One bind for a folder and what lies in it (~/.pyenv covers ~/.pyenv/versions/3.11).
        outermost = [p for p in needed if not any(q in p.parents for q in needed)]
        binds = [(path, path) for path in sorted(set(outermost))]
        return binds + [(path.resolve(), path) for path in self.read]

    def read_only_paths(self) -> list[Path]:
        names = [*PROTECTED, *self.protected]
        return [self.root / name for name in names if (self.root / name).exists()]

    def hidden_paths(self) -> list[Path]:
        """The project's own credentials that exist (masked on top of the project's bind)."""
        return [self.root / name for name in PROJECT_SECRETS if (self.root / name).exists()]

    # -- reporting -------------------------------------------------------------------------

    def record(self, programs: list[str] | None = None) -> dict[str, Any]:
        """What goes into labtui_run.json; ``programs`` (the run's interpreter) names what
        else was bound read-only."""
        record: dict[str, Any] = {
            "mode": self.mode,
            "isolated": self.isolated,
            "network": self.network if self.isolated else True,
            "cpu_time_s": self.cpu_time_s,
            "memory_mb": self.memory_mb,
            "max_processes": self.max_processes,
            "max_processes_auto": self.max_processes_auto,
            "max_file_mb": self.max_file_mb,
            "run_dir_cap_mb": self.run_dir_cap_mb,
        }
        if self.limited:
            record["oom_score_adj"] = self.oom_score_adj
            record["nice"] = self.nice
            record["ionice"] = io_words(self.ionice)
            record["containment"] = self.containment.record()
        if self.isolated:
            record["read_only_in_project"] = [
                p.relative_to(self.root).as_posix() for p in self.read_only_paths()
            ]
            record["home"] = f"{os.path.expanduser('~')}: empty (a tmpfs), like /home and /root"
            record["hidden"] = [str(p) for p in [*self.empty_homes(), *self.hidden_paths()]]
            binds = self.read_only_binds(programs or [])
            record["read_only"] = [str(target) for _, target in binds]
            record["tmp_mb"] = self.tmp_mb
            record["gpu_devices"] = gpu_devices()
        else:
            record["home"] = "visible: without bubblewrap only the environment is filtered"
        record["env"] = self.env_policy.passed_names()  # names only, before the run's own env
        if missing := self.env_policy.missing():
            record["pass_env_missing"] = missing
        if self.note:
            record["note"] = self.note
        return record

    def explain(self, stderr_tail: str, returncode: int) -> str:
        """Which sandbox rule most likely stopped a failed run ('' when none did): a sentence
        for the fix prompt, so the model changes the code instead of fighting the sandbox."""
        if not self.limited:
            return ""
        text = stderr_tail
        signal_hints = {
            -24: f"it used more than [sandbox] cpu_time_s = {self.cpu_time_s} s of CPU time",
            -25: f"a file grew past [sandbox] max_file_mb = {self.max_file_mb} MB",
        }
        if returncode in signal_hints and (returncode != -24 or self.cpu_time_s):
            return signal_hints[returncode]
        if self.max_file_mb and ("File too large" in text or "Errno 27" in text):
            return signal_hints[-25] + ": write less, or smaller files"
        if (
            self.isolated
            and self.tmp_mb
            and ("No space left on device" in text or "Errno 28" in text)
        ):
            return (
                f"the sandbox's private /tmp holds at most [sandbox] tmp_mb = {self.tmp_mb} MB: "
                "write large files under the run's out_dir instead"
            )
        if self.memory_mb and ("MemoryError" in text or "Cannot allocate memory" in text):
            return f"it needed more than [sandbox] memory_mb = {self.memory_mb} MB of memory"
        if self.max_processes and "Resource temporarily unavailable" in text:
            return f"it tried to start more processes/threads than {self.task_cap_words}"
        if self.isolated and ("Read-only file system" in text or "Errno 30" in text):
            return (
                "the sandbox makes everything outside the project folder read-only, and "
                "labtui.toml, .labtui/ and .git/ too: write only under the run's out_dir"
            )
        if self.isolated and not self.network and any(m in text for m in _NETWORK_ERRORS):
            return (
                "the sandbox has no network ([sandbox] network = false): use data that is "
                "already in the project folder, or ask the researcher to allow the network"
            )
        return ""


_NETWORK_ERRORS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Connection refused",
    "No address associated with hostname",
    "Errno 101",
    "Errno 111",
)


def programs_of(argv: list[str]) -> list[str]:
    """The programs a command line runs, whose interpreters the sandbox must show: its first
    word, and any absolute path to an executable after it (``[experiment] prepare`` runs the
    experiment's interpreter behind ``sh -c``)."""
    later = [
        a for a in argv[1:] if os.path.isabs(a) and os.path.isfile(a) and os.access(a, os.X_OK)
    ]
    return argv[:1] + later


def _user_tasks() -> int:
    """Tasks (threads included, as RLIMIT_NPROC counts them) of this user right now."""
    uid = os.getuid()
    count = 0
    try:
        entries = os.scandir("/proc")
    except OSError:
        return 0
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count
