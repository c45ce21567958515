"""Where and how contained a run executes, as ``labtui.toml`` sets it: [sandbox] (bubblewrap,
resource limits, cgroups, priorities) and [cluster] (this machine or Slurm jobs).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from .section_types import Count, Number, Section, TaskCap, at_most, whole


class SandboxSection(Section):
    """How experiments and plots are contained (see core/machine/sandbox.py). 0 means no limit.

    Defaults let the moons template and real multi-GPU training run untouched while stopping
    the failures LLM-written code actually has: a runaway fork, a file or run folder that fills
    the disk. CPU time and memory are unlimited by default: the wall-clock run_timeout_s already
    kills the whole process group, CPU time counts every thread (a 32-thread data loader uses
    32 CPU-seconds a second), and a memory cap misfires on GPU jobs, which map huge amounts of
    virtual memory (so memory_mb, when set, limits RLIMIT_DATA, never RLIMIT_AS).
    """

    mode: Literal["auto", "bwrap", "limits", "off"] = "auto"
    """"auto": bubblewrap when it works, else limits only (with a warning); "bwrap" requires
    it; "limits": resource limits only; "off": none."""
    network: bool = False
    """Reachable from inside bubblewrap; without bwrap it always is."""
    cpu_time_s: Count = 0
    """CPU seconds per process (SIGXCPU)."""
    memory_mb: Count = 0
    """Private writable memory per process (RLIMIT_DATA), and of the whole run where a cgroup
    caps it (MemoryMax; 0 there: all RAM but memory_reserve_mb)."""
    max_processes: TaskCap = "auto"
    """Processes + threads of a run (a watcher, cgroup TasksMax, RLIMIT_NPROC): a process storm
    is stopped here. "auto" is 24 per CPU and at least 512: PyTorch keeps about one thread per
    CPU in each DataLoader worker and two in the main process."""
    max_file_mb: Count = 8192
    """Size of any one file a run writes (RLIMIT_FSIZE)."""
    run_dir_cap_mb: Count = 20480
    """Disk use of the run folder (watched; the run is killed)."""
    project_cap_mb: Count = 20480
    """Disk a run may add to the whole project folder, run folder included (.git and .labtui
    aside; watched: the run is killed and the files it created outside its run folder are
    removed, largest first, until it is back under)."""
    tmp_mb: Count = 4096
    """The private /tmp under bubblewrap (it is held in memory)."""
    max_files: Count = 100_000
    """Files a run may create in the project folder (watched, like the disk caps: the run is
    stopped, named, and what it created outside its run folder is removed)."""
    pass_env: list[str] = Field(default_factory=list)
    """Environment variables a run also gets, by name (e.g. ["HF_TOKEN", "WANDB_API_KEY"]):
    everything outside labtui's allowlist (locale, PATH, the interpreter's, CUDA/NVIDIA/thread
    settings) is dropped; `labtui doctor` lists what passes."""
    read: list[str] = Field(default_factory=list)
    """Paths outside the project a run may read (data sets, model caches), bound read-only into
    the sandbox; the home folder is otherwise empty inside it."""
    oom_score_adj: Annotated[Count, at_most(1000, 1000)] = 1000
    """Raised OOM score of a run (0: left as is): out of memory, the kernel kills the
    experiment, not labtui, a model server or your shell."""
    nice: Annotated[Count, at_most(19, 10)] = 10
    """CPU priority of a run (0: as labtui's; 19: lowest), so the UI and a local model server
    stay responsive."""
    ionice: Literal["best-effort", "idle", "off"] = "best-effort"
    """IO priority of a run: "best-effort" is the normal class at its lowest level (it yields
    to everyone else, never stops); "idle" gets the disk only when nobody else wants it."""
    cgroup: Literal["auto", "off"] = "auto"
    """"auto": cap each run's memory, CPU and tasks with a cgroup v2 (systemd-run --user
    --scope, or a delegated cgroup) where this machine allows it; "off": rlimits only."""
    leave_cores: Count = 1
    """CPUs a run leaves to the rest of the machine (cgroup CPUQuota; at least one CPU runs).
    0: no CPU quota."""
    memory_reserve_mb: Count = 2048
    """RAM a run leaves to labtui, the shell and the system when memory_mb is 0 (cgroup
    MemoryMax; never less than half the RAM for the run)."""


def _gres(value: str) -> str:
    if value and (" " in value.strip() or value.strip().startswith("--")):
        raise PydanticCustomError(
            "labtui_invalid",
            "bad gres",
            {
                "why": f"is {value!r}, which is no Slurm GRES",
                "fix": 'write it as sbatch --gres takes it, e.g. "gpu:1" or "gpu:a100:2"',
            },
        )
    return value.strip()


class ClusterSection(Section):
    """Where experiment, plot and baseline runs execute: on this machine ("local") or as Slurm
    jobs through submitit ("slurm"). A site's defaults can live in
    ``~/.config/labtui/labtui.toml`` (its ``[cluster]`` only); a project's ``[cluster]``
    overrides them key by key."""

    backend: Literal["local", "slurm"] = "local"
    """"local": runs on this machine's GPUs; "slurm": each run is a Slurm job (``--cluster
    slurm`` for one session)."""
    partition: str = ""
    """Slurm partition of the jobs ("": the cluster's default partition)."""
    account: str = ""
    """Slurm account to charge ("": your default account)."""
    qos: str = ""
    """Slurm quality of service ("": the default)."""
    time_min: Count = 0
    """Slurm time limit of a job in minutes (0: the run's own limit, [limits] run_timeout_s or
    plot_timeout_s, plus 5 minutes for starting and collecting it)."""
    gres: Annotated[str, AfterValidator(_gres)] = ""
    """Generic resources of a job as sbatch --gres takes them, e.g. "gpu:1" ("": no GPU)."""
    cpus: Annotated[int, BeforeValidator(whole), Field(ge=1)] = 4
    """CPUs per job (--cpus-per-task)."""
    mem_gb: Number = 16.0
    """Memory per job in GB (--mem; 0: the cluster's default)."""
    setup: list[str] = Field(default_factory=list)
    """Shell lines a job runs before the run, e.g. ["module load cuda/12.4"]."""
    poll_s: Annotated[float, Field(ge=0.2)] = 2.0
    """How often a job's queue state is asked of Slurm, in seconds."""
