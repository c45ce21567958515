"""The GPU status line of the logs pane: each GPU's load, memory and temperature, as fits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# One status line per GPU only on a tall pane and a small machine; otherwise one compact line.
MAX_GPU_LINES = 4


def gpu_status(gpus: Sequence[Mapping[str, Any]]) -> str:
    """One line for all GPUs of a sample: 'GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C │ …'."""
    if not gpus:
        return "CPU only"
    return " │ ".join(_gpu_long(gpu) for gpu in gpus)


def _readings(gpu: Mapping[str, Any]) -> tuple[str, str, float, float, str]:
    """'GPU0', utilisation, memory used and total in GB, temperature: as every format shows them."""
    return (
        f"GPU{gpu.get('index', '?')}",
        _whole(gpu.get("util", 0)),
        float(gpu.get("mem_used_mb", 0)) / 1024,
        float(gpu.get("mem_total_mb", 0)) / 1024,
        _whole(gpu.get("temp_c", "?")),
    )


def _gpu_long(gpu: Mapping[str, Any]) -> str:
    label, util, used, total, temp = _readings(gpu)
    return f"{label} {gpu.get('name', '')} {util}% · {used:.1f}/{total:.1f} GB · {temp}°C"


def _gpu_short(gpu: Mapping[str, Any]) -> str:
    """'GPU0 87% 12/80G 64°C': several GPUs on one line of a narrow pane."""
    label, util, used, total, temp = _readings(gpu)
    return f"{label} {util}% {used:.0f}/{total:.0f}G {temp}°C"


def _gpu_tiny(gpu: Mapping[str, Any]) -> str:
    """'GPU0 87% 12G 64°': two GPUs in the 36 columns of the smallest pane."""
    label, util, used, _, temp = _readings(gpu)
    return f"{label} {util}% {used:.0f}G {temp}°"


def _whole(value: Any) -> str:
    """NVML readings are whole numbers that travel as floats: '87', not '87.0'."""
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def gpu_lines(gpus: Sequence[Mapping[str, Any]], width: int, *, one_per_gpu: bool) -> list[str]:
    """The GPU status as it fits: a line per GPU when there is room, else one compact line."""
    if not gpus:
        return ["CPU only"]
    if one_per_gpu and 1 < len(gpus) <= MAX_GPU_LINES:
        return [_gpu_long(gpu) for gpu in gpus]
    for describe in (_gpu_long, _gpu_short):
        line = " │ ".join(describe(gpu) for gpu in gpus)
        if len(line) <= width:
            return [line]
    return [" │ ".join(_gpu_tiny(gpu) for gpu in gpus)]  # the status line ellipsizes the rest
