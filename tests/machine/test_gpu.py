"""core.machine.gpu: the CPU-only path and, with a fake NVML module, detection and live sampling."""

from __future__ import annotations

import json
import sys
import threading
import types
from collections import namedtuple
from dataclasses import fields

import pytest
from support.waiting import wait_until

from labtui.core.events import Event, GpuSample
from labtui.core.machine import gpu
from labtui.core.machine.gpu import GpuInfo, GpuPool, GpuSampler, describe, detect

MIB = 1024 * 1024
Memory = namedtuple("Memory", "total free used")
Utilization = namedtuple("Utilization", "gpu memory")


class NVMLError(Exception):
    pass


def fake_nvml(devices: list[dict], *, init_error: str = "") -> types.ModuleType:
    """A stand-in for the pynvml module with just what core.machine.gpu calls, counting init/shutdown."""
    nvml = types.ModuleType("pynvml")
    nvml.NVML_TEMPERATURE_GPU = 0
    nvml.NVMLError = NVMLError
    nvml.calls = {"init": 0, "shutdown": 0, "reads": 0}

    def nvmlInit() -> None:
        if init_error:
            raise NVMLError(init_error)
        nvml.calls["init"] += 1

    def nvmlShutdown() -> None:
        nvml.calls["shutdown"] += 1

    def nvmlDeviceGetCount() -> int:
        nvml.calls["reads"] += 1
        return len(devices)

    def nvmlDeviceGetTemperature(handle: int, sensor: int) -> int:
        if devices[handle].get("temp") is None:
            raise NVMLError("Not Supported")
        return devices[handle]["temp"]

    nvml.nvmlInit = nvmlInit
    nvml.nvmlShutdown = nvmlShutdown
    nvml.nvmlDeviceGetCount = nvmlDeviceGetCount
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetName = lambda h: devices[h]["name"]
    nvml.nvmlDeviceGetMemoryInfo = lambda h: Memory(
        devices[h]["total_mib"] * MIB, 0, devices[h]["used_mib"] * MIB
    )
    nvml.nvmlDeviceGetUtilizationRates = lambda h: Utilization(devices[h]["util"], 0)
    nvml.nvmlDeviceGetTemperature = nvmlDeviceGetTemperature
    return nvml


H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "total_mib": 81559,
    "used_mib": 1024,
    "util": 37,
    "temp": 41,
}
H100_BYTES_NAME = {**H100, "name": b"NVIDIA H100 80GB HBM3", "util": 90, "temp": None}


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def samples(self) -> list[GpuSample]:
        with self._lock:
            return [e for e in self.events if isinstance(e, GpuSample)]


# -- CPU only ------------------------------------------------------------------------------


def test_no_driver_means_no_gpus_and_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        sys.modules, "pynvml", fake_nvml([], init_error="NVML Shared Library Not Found")
    )
    assert detect() == []
    assert (
        describe()
        == "CPU only (no NVIDIA GPU found: NVML unavailable: NVML Shared Library Not Found)"
    )


def test_missing_nvml_package_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    assert detect() == []
    assert describe().startswith("CPU only (no NVIDIA GPU found: nvidia-ml-py is not installed")


def test_this_machine_never_raises() -> None:
    gpus = detect()
    assert isinstance(gpus, list)
    text = describe()
    assert text.startswith("CPU only (") if not gpus else " × " in text


def test_sampler_starts_no_thread_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], init_error="Driver Not Loaded"))
    emit = Recorder()
    threads_before = threading.active_count()
    with GpuSampler(emit, "experiments", interval_s=0.01) as sampler:
        assert not sampler.active
        assert threading.active_count() == threads_before  # no thread: nothing could sample
    assert emit.events == []


# -- with a (fake) GPU ---------------------------------------------------------------------


def test_detect_reads_every_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_nvml([H100, H100_BYTES_NAME])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    first, second = detect()
    assert first == GpuInfo(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        util=37.0,
        mem_used_mb=1024.0,
        mem_total_mb=81559.0,
        temp_c=41.0,
    )
    assert second.index == 1 and second.name == "NVIDIA H100 80GB HBM3"  # bytes decoded
    assert second.temp_c == 0.0  # unsupported sensor: a number, never an exception
    assert nvml.calls["init"] == nvml.calls["shutdown"]
    assert describe() == "2 × NVIDIA H100 80GB HBM3 (80 GB)"


def test_describe_groups_mixed_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    t4 = {"name": "Tesla T4", "total_mib": 15360, "used_mib": 0, "util": 0, "temp": 30}
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([H100, t4, t4]))
    assert describe() == "1 × NVIDIA H100 80GB HBM3 (80 GB), 2 × Tesla T4 (15 GB)"


def test_sampler_emits_samples_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_nvml([H100, H100_BYTES_NAME])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    emit = Recorder()
    with GpuSampler(emit, "experiments", interval_s=0.02) as sampler:
        assert sampler.active
        wait_until(lambda: len(emit.samples()) >= 3, "three samples")
    assert not sampler.active
    samples = emit.samples()
    assert len(samples) >= 3
    expected_keys = {f.name for f in fields(GpuInfo)}
    for sample in samples:
        assert sample.stage == "experiments"
        assert [g["index"] for g in sample.gpus] == [0, 1]
        assert all(set(g) == expected_keys for g in sample.gpus)
    assert samples[0].gpus[0]["util"] == 37.0 and samples[0].gpus[0]["mem_total_mb"] == 81559.0
    # Stopped for good: the thread is gone (so no sample can follow), and NVML shut down as
    # often as it was started.
    assert not any(t.name == "labtui-gpu-sampler" for t in threading.enumerate())
    assert nvml.calls["init"] == nvml.calls["shutdown"]


def test_sampler_exits_promptly_with_a_long_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake_nvml([H100])
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    emit = Recorder()
    with GpuSampler(emit, "experiments", interval_s=60):
        wait_until(emit.samples, "the first sample")
    # Exiting woke the thread in its 60 s wait: it is gone and shut NVML down (had it slept on,
    # it would still be alive here, the exit's join having given up on it).
    assert not any(t.name == "labtui-gpu-sampler" for t in threading.enumerate())
    assert nvml.calls["init"] == nvml.calls["shutdown"]
    assert len(emit.samples()) == 1


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        GpuSampler(lambda e: None, "experiments", interval_s=0)


def test_gpu_module_does_not_import_pynvml_at_import_time() -> None:
    assert "pynvml" not in vars(gpu)


# -- sharing GPUs between concurrent runs ----------------------------------------------------


def a_gpu(index: int, util: float = 0.0, used_mb: float = 0.0) -> GpuInfo:
    return GpuInfo(index, "NVIDIA H100", util, used_mb, 81559.0, 40.0)


def test_a_cpu_only_machine_leases_nothing_and_never_waits() -> None:
    pool = GpuPool(read=list)
    with pool.lease(timeout_s=0.1) as lease:
        assert lease.devices == () and lease.env == {}


def test_runs_are_pinned_to_free_gpus_and_busy_ones_are_left_alone() -> None:
    gpus = [a_gpu(0, util=95), a_gpu(1), a_gpu(2, used_mb=70_000), a_gpu(3)]
    pool = GpuPool(read=lambda: gpus)
    first = pool.acquire(timeout_s=1)
    second = pool.acquire(timeout_s=1)
    assert (first.devices, second.devices) == ((1,), (3,))
    assert first.env == {"CUDA_VISIBLE_DEVICES": "1"}
    with pytest.raises(TimeoutError):
        pool.acquire(timeout_s=0.2)  # GPU 0 computes and GPU 2 is full: none is free
    pool.release(first)
    assert pool.acquire(timeout_s=1).devices == (1,)


def test_a_run_waits_for_a_gpu_and_gets_it_when_released() -> None:
    polls_by_waiter: list[int] = []

    def read() -> list[GpuInfo]:
        if threading.current_thread() is not threading.main_thread():
            polls_by_waiter.append(1)
        return [a_gpu(0), a_gpu(1)]

    pool = GpuPool(per_run=2, read=read, poll_s=0.05)
    held = pool.acquire(timeout_s=1)
    got: list[tuple[int, ...]] = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(timeout_s=60).devices))
    waiter.start()
    # It looked, found both GPUs leased, and looked again: it is queued.
    wait_until(lambda: len(polls_by_waiter) >= 2, "the waiter polling")
    assert got == [], "queued while both GPUs are leased"
    pool.release(held)
    waiter.join(60)
    assert got == [(0, 1)]


def test_asking_for_more_gpus_than_exist_is_a_clear_error() -> None:
    from labtui.core.errors import LabtuiError

    with pytest.raises(LabtuiError, match="needs 4 GPUs but this machine has 2"):
        GpuPool(per_run=4, read=lambda: [a_gpu(0), a_gpu(1)]).acquire(timeout_s=1)


def test_the_researchers_cuda_visible_devices_bounds_what_labtui_hands_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    idle = {**H100, "util": 0, "used": 1 * 2**30}
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([idle, idle, idle]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    assert [g.index for g in gpu.visible_gpus()] == [2]
    assert GpuPool().acquire(timeout_s=1).env == {"CUDA_VISIBLE_DEVICES": "2"}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert [g.index for g in gpu.visible_gpus()] == [0, 1, 2]


def test_a_run_is_pinned_to_its_leased_gpu(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.core.runs.runner import run_experiment

    (tmp_path / "experiment.py").write_text(
        "import json, os, sys\n"
        "out = sys.argv[1].split('=')[1]\n"
        "os.makedirs(out)\n"
        "seen = os.environ.get('CUDA_VISIBLE_DEVICES')\n"
        "json.dump({'d': {'means': {'gpu': int(seen)}}}, open(f'{out}/final_info.json', 'w'))\n"
    )
    pool = GpuPool(read=lambda: [a_gpu(0, util=99), a_gpu(1)])
    result = run_experiment(
        tmp_path,
        "run_1",
        python=sys.executable,
        timeout_s=60,
        emit=lambda e: None,
        stage="experiments",
        gpus=pool,
    )
    assert result.ok and result.means == {"d": {"gpu": 1}}
    record = json.loads((tmp_path / "run_1" / "labtui_run.json").read_text())
    assert record["CUDA_VISIBLE_DEVICES"] == "1"
    assert pool.acquire(timeout_s=1).devices == (1,), "released after the run"


def test_concurrent_runs_share_one_sampler(monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.core.machine.gpu import gpu_sampling

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([H100]))

    def samplers() -> int:
        return sum(t.name == "labtui-gpu-sampler" for t in threading.enumerate())

    emit = Recorder()
    with gpu_sampling(emit, "experiments"):
        assert samplers() == 1
        with gpu_sampling(emit, "experiments"):  # a parallel idea's run starts
            assert samplers() == 1, "each GPU must be read once, however many runs there are"
        assert samplers() == 1, "the first run still goes on"
    assert samplers() == 0, "the last run's end stopped the sampler"


def test_a_runs_gpu_memory_peak_is_the_most_its_gpus_held_while_it_ran():
    from labtui.core.machine.gpu import MemoryPeaks

    peaks = MemoryPeaks()
    peaks.seen([GpuInfo(0, "A", 0, 9_000, 80_000, 40)])  # before the run: not counted
    peaks.start((0,))
    for used in (1_000, 12_000, 4_000):
        peaks.seen([GpuInfo(0, "A", 90, used, 80_000, 60), GpuInfo(1, "B", 90, 70_000, 80_000, 60)])
    assert peaks.peak_mb((0,)) == 12_000, "GPU 1 is another run's: not this one's"
    assert peaks.peak_mb(()) == 0.0
