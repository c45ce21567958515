"""GPU discovery and live sampling through NVML (the ``nvidia-ml-py`` package, module ``pynvml``).

A CPU-only machine is a normal case, not an error: every function here degrades to "no GPU"
instead of raising, and ``describe`` says why no GPU was found so the researcher can tell a
missing driver from a machine that simply has none.

``pynvml`` is imported lazily: it is only needed while experiments run, and importing it (and
initialising NVML) costs time that ``labtui --help`` should not pay.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from types import ModuleType, TracebackType
from typing import Self

from .events import Event, GpuSample

_MIB = 1024 * 1024


@dataclass(frozen=True)
class GpuInfo:
    """One GPU at one moment. Memory in MiB, utilisation in percent, temperature in °C."""

    index: int
    name: str
    util: float
    mem_used_mb: float
    mem_total_mb: float
    temp_c: float


def _import_nvml() -> ModuleType:
    import pynvml  # lazy on purpose, see the module docstring

    return pynvml


def _optional(read: Callable[[], float]) -> float:
    """A reading some GPUs do not support (temperature, utilisation under MIG): 0.0 when absent.

    0.0 rather than NaN because samples travel through the JSON journal, where NaN is not valid.
    """
    try:
        return float(read())
    except Exception:
        return 0.0


def _device_name(nvml: ModuleType, handle: object) -> str:
    name = nvml.nvmlDeviceGetName(handle)
    # Older nvidia-ml-py releases return bytes, newer ones str.
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)


def _read_gpu(nvml: ModuleType, index: int) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    return GpuInfo(
        index=index,
        name=_device_name(nvml, handle),
        util=_optional(lambda: nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
        mem_used_mb=memory.used / _MIB,
        mem_total_mb=memory.total / _MIB,
        temp_c=_optional(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
    )


def _read_all(nvml: ModuleType) -> list[GpuInfo]:
    """Every GPU NVML sees; NVML must already be initialised."""
    return [_read_gpu(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]


def _shutdown(nvml: ModuleType) -> None:
    # Nothing useful to do if NVML fails to shut down: the samples are already out.
    with contextlib.suppress(Exception):
        nvml.nvmlShutdown()


def _probe() -> tuple[list[GpuInfo], str]:
    """The GPUs present, or ([], why none were found)."""
    try:
        nvml = _import_nvml()
    except ImportError as exc:
        return [], f"nvidia-ml-py is not installed ({exc})"
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return [], f"NVML unavailable: {exc}"
    try:
        gpus = _read_all(nvml)
    except Exception as exc:
        return [], f"NVML error while reading GPUs: {exc}"
    finally:
        _shutdown(nvml)
    return gpus, ("" if gpus else "NVML reports 0 devices")


def detect() -> list[GpuInfo]:
    """The GPUs of this machine; [] on a CPU-only machine or any NVML failure. Never raises."""
    return _probe()[0]


def describe() -> str:
    """One line for a status bar: '2 × NVIDIA H100 (80 GB)' or 'CPU only (no NVIDIA GPU ...)'."""
    gpus, reason = _probe()
    if not gpus:
        return f"CPU only (no NVIDIA GPU found: {reason})"
    # Group identical models so a mixed machine reads '1 × A100 (80 GB), 2 × T4 (15 GB)'.
    kinds = Counter((g.name, round(g.mem_total_mb / 1024)) for g in gpus)
    return ", ".join(f"{count} × {name} ({gb} GB)" for (name, gb), count in kinds.items())


class GpuSampler:
    """Context manager that emits a GpuSample every ``interval_s`` seconds while a run is going.

    It starts no thread at all when no GPU is found, so CPU-only machines pay nothing. NVML is
    initialised once for the whole sampling period (initialising it per sample is slow). Exiting
    the context wakes the thread at once instead of waiting out the interval.
    """

    def __init__(self, emit: Callable[[Event], None], stage: str, interval_s: float = 1.0) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s!r}")
        self._emit = emit
        self._stage = stage
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        """True while a sampling thread is running (False on CPU-only machines)."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Self:
        if detect():
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="labtui-gpu-sampler", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            # The stop event wakes the thread at once and one NVML read takes milliseconds; the
            # bound only guards against a hung driver call (the thread is a daemon).
            self._thread.join(timeout=2.0)
            self._thread = None

    def _run(self) -> None:
        try:
            nvml = _import_nvml()
            nvml.nvmlInit()
        except Exception:
            return
        try:
            while not self._stop.is_set():
                try:
                    gpus = _read_all(nvml)
                except Exception:
                    gpus = []
                if gpus:
                    self._emit(GpuSample(stage=self._stage, gpus=[asdict(g) for g in gpus]))
                self._stop.wait(self._interval_s)
        finally:
            _shutdown(nvml)
