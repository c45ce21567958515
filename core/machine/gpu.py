"""GPU discovery and live sampling through NVML (the ``nvidia-ml-py`` package, module ``pynvml``).

A CPU-only machine is a normal case, not an error: every function here degrades to "no GPU"
instead of raising, and ``describe`` says why no GPU was found so the researcher can tell a
missing driver from a machine that simply has none.

``pynvml`` is imported lazily: it is only needed while experiments run, and importing it (and
initialising NVML) costs time that ``labtui --help`` should not pay.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from types import ModuleType, TracebackType
from typing import Self

from ..errors import LabtuiError
from ..events import Event, GpuSample, Notice

Emit = Callable[[Event], None]

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
    import pynvml  # noqa: PLC0415 -- only runs need it (module docstring); tests swap it

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


class MemoryPeaks:
    """The most memory seen in use on each GPU since a run on it began, from the sampler's
    readings (once a second): a run's peak GPU memory, for its record and a search's ledger.
    A leased GPU is one nobody else was using, so what it holds is the run's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._peaks: dict[int, float] = {}

    def start(self, devices: tuple[int, ...]) -> None:
        with self._lock:
            for index in devices:
                self._peaks[index] = 0.0

    def seen(self, gpus: list[GpuInfo]) -> None:
        with self._lock:
            for gpu in gpus:
                if gpu.index in self._peaks:
                    self._peaks[gpu.index] = max(self._peaks[gpu.index], gpu.mem_used_mb)

    def peak_mb(self, devices: tuple[int, ...]) -> float:
        """The peaks of ``devices`` together (0 without GPUs or before any reading)."""
        with self._lock:
            return sum(self._peaks.get(index, 0.0) for index in devices)


memory_peaks = MemoryPeaks()


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
                    memory_peaks.seen(gpus)
                    self._emit(GpuSample(stage=self._stage, gpus=[asdict(g) for g in gpus]))
                self._stop.wait(self._interval_s)
        finally:
            _shutdown(nvml)


# -- sharing GPUs between concurrent runs ------------------------------------------------------

BUSY_UTIL_PERCENT = 30.0  # a GPU busier than this (someone else's job) is not handed out
BUSY_MEMORY_FRACTION = 0.5  # nor one with more than half its memory taken


def is_free(gpu: GpuInfo) -> bool:
    """Idle enough to give to a run: not computing and most of its memory available."""
    memory_taken = gpu.mem_used_mb / gpu.mem_total_mb if gpu.mem_total_mb else 0.0
    return gpu.util <= BUSY_UTIL_PERCENT and memory_taken <= BUSY_MEMORY_FRACTION


@dataclass(frozen=True)
class Lease:
    """The GPUs one run may use; ``env`` pins the run to them (empty on a CPU-only machine)."""

    devices: tuple[int, ...]

    @property
    def env(self) -> dict[str, str]:
        if not self.devices:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.devices))}


def visible_gpus() -> list[GpuInfo]:
    """The GPUs labtui may hand out: all of them, or those the researcher's own
    CUDA_VISIBLE_DEVICES names (by index) when it is set."""
    gpus = detect()
    allowed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if allowed is None:
        return gpus
    indices = {int(part) for part in allowed.split(",") if part.strip().isdigit()}
    return [g for g in gpus if g.index in indices]


class GpuPool:
    """Hands out free GPUs to concurrent runs, ``per_run`` at a time; a run waits (in FIFO
    order) while none is free. GPUs are re-read at every request, so another user's job that
    starts on a GPU takes it out of the pool until it ends.

    ``read`` returns the GPUs as they are now (``detect`` by default; tests pass a fake). A
    machine without GPUs gives every run an empty lease at once: it runs on the CPU.
    """

    def __init__(
        self,
        per_run: int = 1,
        read: Callable[[], list[GpuInfo]] = lambda: visible_gpus(),
        poll_s: float = 5.0,
    ) -> None:
        self.per_run = max(1, per_run)
        self._read = read
        self._poll_s = poll_s
        self._leased: set[int] = set()
        self._condition = threading.Condition()
        self._queue: list[object] = []

    def acquire(self, timeout_s: float | None = None) -> Lease:
        """Block until ``per_run`` GPUs are free; TimeoutError after ``timeout_s``."""
        ticket = object()
        with self._condition:
            self._queue.append(ticket)
            try:
                return self._wait_for_gpus(ticket, timeout_s)
            finally:
                self._queue.remove(ticket)
                self._condition.notify_all()

    def _wait_for_gpus(self, ticket: object, timeout_s: float | None) -> Lease:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            gpus = self._read()
            if not gpus:
                return Lease(())
            if len(gpus) < self.per_run:
                raise LabtuiError(
                    f"a run needs {self.per_run} GPUs but this machine has {len(gpus)}",
                    "ask for fewer GPUs per run",
                )
            free = [g.index for g in gpus if g.index not in self._leased and is_free(g)]
            if self._queue[0] is ticket and len(free) >= self.per_run:
                devices = tuple(free[: self.per_run])
                self._leased.update(devices)
                return Lease(devices)
            wait = self._poll_s
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise TimeoutError(f"no {self.per_run} free GPU(s) within {timeout_s} s")
            self._condition.wait(wait)

    def release(self, lease: Lease) -> None:
        with self._condition:
            self._leased.difference_update(lease.devices)
            self._condition.notify_all()

    @contextlib.contextmanager
    def lease(self, timeout_s: float | None = None):
        """``with pool.lease() as lease:`` run with ``lease.env``; released however it ends."""
        held = self.acquire(timeout_s)
        try:
            yield held
        finally:
            self.release(held)


# -- leases and sampling for runs ------------------------------------------------------------

_shared_pool: GpuPool | None = None


@contextlib.contextmanager
def lease_gpus(pool: GpuPool, emit: Emit, stage: str, run_id: str) -> Iterator[Lease]:
    """A lease from ``pool``; a run that has to queue says so, so a quiet log is explained."""
    try:
        lease = pool.acquire(timeout_s=0)
    except TimeoutError:
        emit(Notice(stage=stage, text=f"{run_id} waits for a free GPU (all are busy)"))
        lease = pool.acquire()
    try:
        yield lease
    finally:
        pool.release(lease)


_sampling_lock = threading.Lock()
_sampling_users = 0
_sampler: GpuSampler | None = None


@contextlib.contextmanager
def gpu_sampling(emit: Emit, stage: str) -> Iterator[None]:
    """GPU samples while any run is going: one sampler for all concurrent runs (parallel ideas),
    so each GPU is read once a second however many runs there are."""
    global _sampling_users, _sampler
    with _sampling_lock:
        _sampling_users += 1
        if _sampling_users == 1:
            _sampler = GpuSampler(emit, stage).__enter__()
    try:
        yield
    finally:
        with _sampling_lock:
            _sampling_users -= 1
            if _sampling_users == 0 and _sampler is not None:
                _sampler.__exit__(None, None, None)
                _sampler = None


@contextlib.contextmanager
def gpu_activity(devices: tuple[int, ...]) -> Iterator[Callable[[], bool] | None]:
    """For the stall watchdog: a reader of whether any of ``devices`` (a run's lease) computes
    now; None when the run has no GPU or NVML cannot be used. NVML stays initialised meanwhile."""
    if not devices:
        yield None
        return
    try:
        nvml = _import_nvml()
        nvml.nvmlInit()
    except Exception:
        yield None
        return

    def utilisation(index: int) -> float:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        return float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)

    def reading() -> bool:
        try:
            return any(utilisation(index) > 0 for index in devices)
        except Exception:
            return True  # a GPU that cannot be read is no evidence of a stall

    try:
        yield reading
    finally:
        _shutdown(nvml)


def shared_gpu_pool() -> GpuPool:
    """One pool per labtui process, so concurrent runs never get the same GPU."""
    global _shared_pool
    if _shared_pool is None:
        _shared_pool = GpuPool()
    return _shared_pool
