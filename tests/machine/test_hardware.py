"""core.machine.hardware: what a run ran on, read where it ran, kept in its record and said in
one phrase; the GPUs a lease leaves the run, never more."""

from __future__ import annotations

import sys

import pytest
from test_gpu import fake_nvml

from labtui.core.machine import hardware
from labtui.core.machine.hardware import GpuModel, Hardware, cpu_model, run_hardware


@pytest.fixture(autouse=True)
def _fresh_reading():
    hardware._hardware.cache_clear()
    yield
    hardware._hardware.cache_clear()


def test_a_cpu_only_machine_records_its_cpu_cores_and_memory(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], init_error="no driver"))
    found = run_hardware(None)
    assert found.gpus == [] and found.cores >= 1 and found.memory_mb > 0
    assert found.cpu == cpu_model()
    assert found.described().endswith(", no GPU")
    assert Hardware.from_json(found.to_json()) == found


def test_a_run_records_only_the_gpus_its_lease_gave_it(monkeypatch) -> None:
    devices = [
        {"name": "NVIDIA H100 80GB HBM3", "total_mib": 81559, "used_mib": 0, "util": 0, "temp": 30},
        {"name": "NVIDIA H100 80GB HBM3", "total_mib": 81559, "used_mib": 0, "util": 0, "temp": 30},
        {"name": "Tesla T4", "total_mib": 15360, "used_mib": 0, "util": 0, "temp": 30},
    ]
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(devices))
    assert [g.name for g in run_hardware("2").gpus] == ["Tesla T4"]
    both = run_hardware("0,1")
    assert both.gpus_described() == "2 NVIDIA H100 80GB HBM3 GPUs (79.6 GB each)"
    assert len(run_hardware(None).gpus) == 3


def test_the_cpu_model_is_the_kernels_name(tmp_path, monkeypatch) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)  Gold 6338 CPU @ 2.00GHz\n")
    monkeypatch.setattr(hardware, "CPUINFO", info)
    assert cpu_model() == "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"


def test_a_record_without_hardware_reads_as_unknown() -> None:
    assert not Hardware.from_json({}).known and not Hardware.from_json(None).known
    one = Hardware("AMD EPYC", 1, 2048, [GpuModel("A100", 40960.0)])
    assert one.described() == "AMD EPYC CPU (1 core), 2.0 GB of memory, 1 A100 GPU (40 GB)"
