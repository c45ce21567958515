"""The hardware a run had, read where it ran: the CPU's model and the cores the run could use, the
machine's memory, and each GPU it was given (name and memory), or none.

The paper's experimental setup states the hardware from this record, never from a model's words:
Qwen2.5-Coder-1.5B wrote "conducted on a GPU with 16GB of memory" about runs that had no GPU.
Read once per process and per set of devices (a run on a GPU lease sees only its own GPUs).
"""

from __future__ import annotations

import platform
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import gpu
from .host_limits import total_memory_mb, usable_cpus

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class GpuModel:
    """One GPU a run was given."""

    name: str
    memory_mb: float


@dataclass(frozen=True)
class Hardware:
    """What a run ran on; the run record keeps it as ``labtui_run.json``'s ``hardware``."""

    cpu: str = ""  # the model, as the kernel names it ('' when unknown)
    cores: int = 0  # the cores the run could use
    memory_mb: int = 0  # the machine's memory (0: unknown)
    gpus: list[GpuModel] = field(default_factory=list)  # []: CPU only

    @property
    def known(self) -> bool:
        return bool(self.cpu or self.cores or self.memory_mb or self.gpus)

    def described(self) -> str:
        """One phrase: "AMD EPYC CPU (2 cores), 23.4 GB of memory, no GPU"."""
        cpu = f"{self.cpu} CPU" if self.cpu else "CPU of unknown model"
        cores = f" ({self.cores} core{'s' if self.cores != 1 else ''})" if self.cores else ""
        memory = f", {self.memory_mb / 1024:.1f} GB of memory" if self.memory_mb else ""
        return f"{cpu}{cores}{memory}, {self.gpus_described()}"

    def gpus_described(self) -> str:
        """ "no GPU", or "1 NVIDIA H100 80GB HBM3 GPU (79.6 GB)", grouped by model."""
        if not self.gpus:
            return "no GPU"
        kinds = Counter((g.name, round(g.memory_mb / 1024, 1)) for g in self.gpus)
        return ", ".join(
            f"{count} {name} GPU{'s' if count > 1 else ''} ({gb:g} GB{' each' if count > 1 else ''})"
            for (name, gb), count in kinds.items()
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Hardware:
        """The record as labtui_run.json keeps it; an empty record for anything else (a record
        written before labtui kept the hardware)."""
        if not isinstance(data, dict):
            return cls()
        gpus = [
            GpuModel(str(g.get("name", "")), float(g.get("memory_mb", 0) or 0))
            for g in data.get("gpus") or []
            if isinstance(g, dict)
        ]
        return cls(
            cpu=str(data.get("cpu") or ""),
            cores=int(data.get("cores") or 0),
            memory_mb=int(data.get("memory_mb") or 0),
            gpus=gpus,
        )


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo, else what Python's platform says); '' unknown."""
    try:
        for line in CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or ""


def run_hardware(devices: str | None) -> Hardware:
    """The hardware a run here has: this machine's CPU, cores and memory, and the GPUs that
    ``devices`` (its CUDA_VISIBLE_DEVICES: indices; None: every GPU) leaves it."""
    return _hardware(devices)


@lru_cache(maxsize=8)
def _hardware(devices: str | None) -> Hardware:
    gpus = gpu.detect()
    if devices is not None:
        wanted = {part.strip() for part in devices.split(",")}
        gpus = [g for g in gpus if str(g.index) in wanted]
    return Hardware(
        cpu=cpu_model(),
        cores=usable_cpus(),
        memory_mb=total_memory_mb(),
        gpus=[GpuModel(g.name, round(g.mem_total_mb, 1)) for g in gpus],
    )
