"""What keeps the machine alive beside an experiment: the run's share of memory, CPU and tasks.

labtui, the researcher's shell and often a local model server share the machine with
LLM-written code. Every limited run (``[sandbox] mode`` other than "off") gets, from its wrapper
(core/machine/sandbox.py), a raised ``oom_score_adj`` (the kernel's OOM killer takes the experiment
first), a lower CPU priority (``nice``) and a lower IO priority (``ioprio_set``). On top of that,
one containment mechanism, the first this machine offers:

* **systemd-scope**: systemd's user manager answers ``systemd-run --user --scope``; the run is
  started through it with ``MemoryMax``, ``MemorySwapMax=0``, ``CPUQuota`` and ``TasksMax``.
  ``--scope`` registers the calling process and execs the command in place, so the pid and
  process group that the runner watches and kills stay the same. Only where the user lingers
  (``loginctl enable-linger``): otherwise logout stops the user manager and the run with it.
* **cgroup**: a cgroup v2 folder this user may write, with the memory and pids controllers
  delegated to its children: each run creates ``labtui-run-<pid>`` there, writes its limits and
  moves itself in before it execs (the wrapper does it, outside bubblewrap, which would see
  /sys read-only).
* **rlimits**: neither is possible (cgroup v1, a container without delegation, no user
  manager): resource limits in the child plus labtui's watchers (core/machine/watch.py) that kill
  the whole group, with the priorities above so that labtui stays responsive.

Detection runs once per process (cached, as bubblewrap's probe is); ``labtui doctor`` says which
mechanism is active and why the better ones are not.
"""

from __future__ import annotations

import json
import os
import platform
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings.sections import SandboxSection

SYSTEMD_RUN = "systemd-run"  # the program name or path; tests point it at a fake one
CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
MEMINFO = Path("/proc/meminfo")
LINGER_DIR = Path("/var/lib/systemd/linger")  # logind's: one empty file per lingering user
PROBE_TIMEOUT_S = 5.0  # `labtui doctor` runs the probe too: a dead bus must not stall it
RUN_CGROUP_PREFIX = "labtui-run-"
CPU_PERIOD_US = 100_000
NEEDED_CONTROLLERS = ("memory", "pids")  # cpu is welcome but optional

# The task cap "auto": a PyTorch process keeps ~2 threads per CPU (intra-op and inter-op pools)
# and each DataLoader worker ~1 per CPU plus a few: 16 workers measured 335 tasks with 16
# threads and 1199 with 64. 24 per CPU leaves room for that; 512 is the floor on small machines.
TASKS_FLOOR = 512
TASKS_PER_CPU = 24

# ioprio_set(2) is not in the os module: (class, level) per [sandbox] ionice, and the syscall's
# number per architecture (ioprio_set has no libc wrapper).
IOPRIO_CLASS_SHIFT = 13
IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASSES = {"best-effort": (2, 7), "idle": (3, 0)}
IOPRIO_SET_SYSCALL = {
    "x86_64": 251, "i386": 289, "i686": 289, "aarch64": 30, "arm64": 30, "riscv64": 30,
    "armv7l": 314, "ppc64le": 273, "ppc64": 273, "s390x": 282,
}  # fmt: skip

# Run by systemd-run in the probe: the limits the scope really got, as the kernel shows them.
_OWN_LIMITS = r"""
import json, sys
path = [l.split(":", 2)[2] for l in open("/proc/self/cgroup").read().splitlines() if l.startswith("0::")]
found = {}
for name in ("memory.max", "pids.max", "cpu.max"):
    try:
        found[name] = open(sys.argv[1] + path[0].rstrip("\n") + "/" + name).read().strip()
    except (OSError, IndexError):
        pass
print(json.dumps(found))
"""


# -- sizes ---------------------------------------------------------------------------------


def usable_cpus() -> int:
    """CPUs this process may run on (what OpenMP and PyTorch size their pools by)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def task_cap(setting: int | str) -> int:
    """``[sandbox] max_processes`` as a number: "auto" scales with the CPUs (see TASKS_PER_CPU)."""
    if setting == "auto":
        return max(TASKS_FLOOR, TASKS_PER_CPU * usable_cpus())
    return int(setting)


def total_memory_mb() -> int:
    """MemTotal in MB; 0 when /proc/meminfo cannot be read."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def memory_cap_mb(memory_mb: int, reserve_mb: int) -> int:
    """The run's memory cap: ``memory_mb`` when set, else all RAM but ``reserve_mb`` (never
    below half the RAM, so a small machine still runs real experiments); 0: unknown RAM."""
    if memory_mb:
        return memory_mb
    total = total_memory_mb()
    return max(total - reserve_mb, total // 2) if total else 0


def cpu_quota_pct(leave_cores: int) -> int:
    """CPUQuota in percent of one CPU: every CPU but ``leave_cores``, at least one; 0: none."""
    if not leave_cores:
        return 0
    return max(100, (usable_cpus() - leave_cores) * 100)


def ioprio(io_class: str) -> list[int]:
    """[syscall number, ioprio value] for the wrapper; [] when off or on an unknown CPU."""
    number = IOPRIO_SET_SYSCALL.get(platform.machine())
    if io_class not in IOPRIO_CLASSES or number is None:
        return []
    klass, level = IOPRIO_CLASSES[io_class]
    return [number, (klass << IOPRIO_CLASS_SHIFT) | level]


def io_words(io_class: str) -> str:
    """The IO priority a run gets: "best-effort 7", "idle", "off" or why it cannot be set."""
    if io_class not in IOPRIO_CLASSES:
        return "off"
    if not ioprio(io_class):
        return f"unsupported on {platform.machine()}"
    klass, level = IOPRIO_CLASSES[io_class]
    return io_class + (f" {level}" if klass == 2 else "")


# -- the mechanism -------------------------------------------------------------------------


@dataclass(frozen=True)
class Containment:
    """The mechanism that caps one run's memory, CPU and tasks for the sake of the host."""

    mechanism: str = "rlimits"  # "systemd-scope" | "cgroup" | "rlimits"
    memory_mb: int = 0  # 0: no cap (for these three)
    cpu_quota_pct: int = 0
    tasks_max: int = 0
    parent: str = ""  # the delegated cgroup folder runs are created in ("cgroup")
    why_not: str = ""  # why no cgroup is used ("rlimits")

    @property
    def uses_cgroup(self) -> bool:
        return self.mechanism != "rlimits"

    def cores(self) -> int:
        """The cores a run may keep busy: its CPU quota's where a cgroup enforces one, else
        every core this process may use."""
        if self.uses_cgroup and self.cpu_quota_pct:
            return max(1, self.cpu_quota_pct // 100)
        return usable_cpus()

    def prefix(self) -> list[str]:
        """What the whole command line (bubblewrap included) is started behind."""
        if self.mechanism != "systemd-scope":
            return []
        properties = _systemd_properties(self.memory_mb, self.cpu_quota_pct, self.tasks_max)
        return [shutil.which(SYSTEMD_RUN) or SYSTEMD_RUN, *_SCOPE_FLAGS, *properties, "--"]

    def enter_step(self) -> dict[str, Any]:
        """The wrapper's step that creates the run's cgroup and moves into it ("cgroup")."""
        if self.mechanism != "cgroup":
            return {}
        files = {"pids.max": str(self.tasks_max or "max")}
        if self.memory_mb:
            files["memory.max"] = str(self.memory_mb * 1024 * 1024)
            files["memory.swap.max"] = "0"  # a capped run swapping would stall the machine
        if self.cpu_quota_pct:
            files["cpu.max"] = f"{self.cpu_quota_pct * CPU_PERIOD_US // 100} {CPU_PERIOD_US}"
        return {"cgroup": {"parent": self.parent, "prefix": RUN_CGROUP_PREFIX, "files": files}}

    def limits_words(self) -> str:
        memory = f"MemoryMax {self.memory_mb} MB" if self.memory_mb else "no MemoryMax"
        cpu = f"CPUQuota {self.cpu_quota_pct}%" if self.cpu_quota_pct else "no CPUQuota"
        return f"{memory}, {cpu}, TasksMax {self.tasks_max or 'none'}"

    def describe(self) -> str:
        if self.mechanism == "systemd-scope":
            return f"cgroup v2 scope (systemd-run --user --scope): {self.limits_words()}"
        if self.mechanism == "cgroup":
            return f"cgroup v2 under {self.parent}: {self.limits_words()}"
        return f"rlimits + watchers (cgroups unavailable: {self.why_not})"

    def record(self) -> dict[str, Any]:
        if not self.uses_cgroup:
            return {"mechanism": self.mechanism, "why_no_cgroup": self.why_not}
        found: dict[str, Any] = {
            "mechanism": self.mechanism,
            "memory_max_mb": self.memory_mb,
            "cpu_quota_pct": self.cpu_quota_pct,
            "tasks_max": self.tasks_max,
        }
        if self.parent:
            found["cgroup_parent"] = self.parent
        return found


_SCOPE_FLAGS = ("--user", "--scope", "--quiet", "--collect")


def _systemd_properties(memory_mb: int, cpu_pct: int, tasks: int) -> list[str]:
    properties: list[str] = []
    if memory_mb:
        properties += ["-p", f"MemoryMax={memory_mb}M", "-p", "MemorySwapMax=0"]
    if cpu_pct:
        properties += ["-p", f"CPUQuota={cpu_pct}%"]
    if tasks:
        properties += ["-p", f"TasksMax={tasks}"]
    return properties


def containment(settings: SandboxSection, tasks_max: int) -> Containment:
    """The mechanism ``[sandbox]`` asks for and this machine allows, with the run's caps."""
    if settings.cgroup == "off":
        return Containment(why_not='[sandbox] cgroup = "off"')
    capped = Containment(
        memory_mb=memory_cap_mb(int(settings.memory_mb), int(settings.memory_reserve_mb)),
        cpu_quota_pct=cpu_quota_pct(int(settings.leave_cores)),
        tasks_max=tasks_max,
    )
    scope_problem = systemd_scope_problem()
    if not scope_problem:
        return replace(capped, mechanism="systemd-scope")
    parent, cgroup_problem = delegated_cgroup()
    if parent is not None:
        return replace(capped, mechanism="cgroup", parent=str(parent))
    return Containment(why_not=f"systemd-run --user --scope: {scope_problem}; {cgroup_problem}")


# -- detection -----------------------------------------------------------------------------


def systemd_scope_problem() -> str:
    """Why ``systemd-run --user --scope`` cannot cap a run here; '' when it can (cached).

    Without lingering, logind stops the user manager, and every scope in it, when the user's
    last session ends: a run in such a scope would die with the SSH connection that labtui's
    detached engine outlives. So a working user manager is used only where the user lingers."""
    problem = _systemd_scope_problem(SYSTEMD_RUN, str(CGROUP_ROOT))
    if problem:
        return problem
    user = _user_name()
    if not (LINGER_DIR / user).exists():
        return (
            f"systemd's user manager stops at logout and would end the run with it "
            f"(`loginctl enable-linger {user}` lets labtui use it)"
        )
    return ""


def _user_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


@lru_cache(maxsize=4)
def _systemd_scope_problem(program: str, cgroup_root: str) -> str:
    path = shutil.which(program)
    if path is None:
        return f"{program} is not installed"
    probe_memory_mb, probe_tasks = 1024, 64
    probe = [
        path, *_SCOPE_FLAGS, *_systemd_properties(probe_memory_mb, 100, probe_tasks), "--",
        sys.executable, "-I", "-S", "-c", _OWN_LIMITS, cgroup_root,
    ]  # fmt: skip
    done = run_probe(probe, PROBE_TIMEOUT_S)
    if not done.started:
        return f"{program} could not be started ({done.failure})"
    if done.failure:
        return f"no systemd user manager to ask ({done.failure})"
    try:
        seen = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return f"the probe printed no limits ({done.stdout.strip()[:80]!r})"
    wanted = {"memory.max": str(probe_memory_mb * 1024 * 1024), "pids.max": str(probe_tasks)}
    missing = [name for name, value in wanted.items() if seen.get(name) != value]
    if missing:
        return (
            "systemd's user manager runs but does not enforce "
            f"{' and '.join(missing)} (the controllers are not delegated to it)"
        )
    return ""


@dataclass(frozen=True)
class Probe:
    """How a detection probe went: ``failure`` says why it could not start (``started`` False)
    or, when it exited non-zero, the last line of its stderr; '' when it succeeded."""

    started: bool
    failure: str
    stdout: str = ""


def run_probe(argv: list[str], timeout_s: float) -> Probe:
    try:
        done = subprocess.run(
            argv,
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, str(exc))
    if done.returncode != 0:
        return Probe(
            True, (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        )
    return Probe(True, "", done.stdout)


def forget_probes() -> None:
    """Detect again on the next run (tests; a machine whose user manager just started)."""
    _systemd_scope_problem.cache_clear()


def own_cgroup(self_cgroup: Path | None = None) -> str | None:
    """This process's cgroup v2 path ("/user.slice/..."), None without a v2 line."""
    try:
        lines = (self_cgroup or SELF_CGROUP).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:]
    return None


def delegated_cgroup() -> tuple[Path | None, str]:
    """The cgroup v2 folder this user may create run cgroups in, from its own cgroup upwards:
    writable, with the memory and pids controllers enabled for its children. (None, why) else."""
    root = CGROUP_ROOT
    if not (root / "cgroup.controllers").is_file():
        return None, f"cgroup v1 at {root} (no unified cgroup v2 hierarchy to delegate)"
    mine = own_cgroup()
    if mine is None:
        return None, f"{SELF_CGROUP} names no cgroup v2"
    folder = root / mine.strip("/")
    while True:
        if _can_hold_runs(folder):
            return folder, ""
        if folder == root or root not in folder.parents:
            break
        folder = folder.parent
    return None, (
        f"no writable cgroup v2 folder with the {' and '.join(NEEDED_CONTROLLERS)} controllers "
        f"delegated from {root / mine.strip('/')} up to {root}"
    )


def _can_hold_runs(folder: Path) -> bool:
    try:
        enabled = (folder / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False
    return (
        all(name in enabled for name in NEEDED_CONTROLLERS)
        and os.access(folder, os.W_OK)
        and os.access(folder / "cgroup.procs", os.W_OK)
    )
