"""What a run's Slurm job asks for: the folder its files go to, the key that makes a job the
same run, its time limit and the sbatch parameters of ``[cluster]``'s settings
(``core.slurm.jobs`` submits it; doctor's cluster check asks sbatch with the same parameters).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .node import NodeRun

if TYPE_CHECKING:
    from ..settings.sections import ClusterSection

JOBS_DIR = Path(".labtui") / "jobs"
STARTUP_MARGIN_MIN = 5  # added to a run's own limit for the job's: starting, collecting


def job_key(run: NodeRun, commit: str) -> str:
    """What makes a job the same run: its command, folder, environment, limit and code."""
    text = json.dumps([run.argv, run.cwd, run.env, run.timeout_s, commit], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def job_minutes(settings: ClusterSection, timeout_s: float) -> int:
    """The job's Slurm time limit: ``[cluster] time_min``, else the run's own limit plus a margin."""
    if settings.time_min:
        return settings.time_min
    return math.ceil(timeout_s / 60) + STARTUP_MARGIN_MIN


def sbatch_parameters(settings: ClusterSection, name: str, minutes: int) -> dict[str, Any]:
    """What submitit passes to sbatch for a job of ``[cluster]``'s settings."""
    parameters: dict[str, Any] = {
        "job_name": name,
        "time": minutes,
        "cpus_per_task": settings.cpus,
        # submitit asks Slurm for USR2 before the time limit, sent to every process of the
        # job: it would kill the experiment (USR2's default) or make submitit end or requeue
        # the job itself. Sent to the batch shell alone, which ignores it, the job reaches its
        # limit and ends as TIMEOUT, which is what the researcher is told.
        "additional_parameters": {"signal": "B:USR2@30"},
        "setup": ["trap '' USR2", *settings.setup],
    }
    optional = {
        "partition": settings.partition,
        "account": settings.account,
        "qos": settings.qos,
        "gres": settings.gres,
        "mem": f"{round(settings.mem_gb * 1024)}M" if settings.mem_gb else "",
    }
    parameters.update({key: value for key, value in optional.items() if value})
    return parameters
