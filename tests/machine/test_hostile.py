"""Hostile experiments, as LLM-written code (or a new user's script) can be: each is contained, the
limit that stopped it is named, nothing of it is left behind (no process, no big file), and the
machine stays responsive meanwhile: a probe process started before the run keeps counting while
the run goes on.

No wall-clock bounds: progress is asserted between samples taken while the hostile run was still
running (at its own log lines, and at the moment a watcher trips), so the suite passes on a loaded
machine (checked with two `yes > /dev/null` burners beside it).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import processes_in
from support.experiment_scripts import bare_project, write_experiment

from labtui.core.events import Event, LogLine, Notice
from labtui.core.machine import bubblewrap
from labtui.core.machine import watch as run_watch
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.machine.watch import RunWatcher
from labtui.core.runs.runner import RunResult, run_experiment

PYTHON = sys.executable

MODES = [
    "limits",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(
            not bubblewrap.available(), reason=f"no bubblewrap here: {bubblewrap.bwrap_problem()}"
        ),
    ),
]

# Counts its iterations in a shared 8-byte file, each a millisecond's nap apart: what a
# researcher's shell, labtui's UI or a local model server needs from the machine, a slice of CPU
# whenever it wakes up. (A probe that spun would itself be one more CPU burner.)
PROBE = """
import mmap, struct, sys, time
with open(sys.argv[1], "r+b") as f:
    shared = mmap.mmap(f.fileno(), 8)
count = 0
while True:
    count += 1
    shared[:8] = struct.pack("Q", count)
    time.sleep(0.001)
"""


class Probe:
    def __init__(self, folder: Path) -> None:
        self._file = folder / "probe.count"
        self._file.write_bytes(b"\0" * 8)
        self._proc = subprocess.Popen([PYTHON, "-c", PROBE, str(self._file)])

    def count(self) -> int:
        return struct.unpack("Q", self._file.read_bytes()[:8])[0]

    def wait_until_counting(self) -> None:
        while self.count() == 0:
            assert self._proc.poll() is None, "the probe died"
            time.sleep(0.01)

    def stop(self) -> None:
        self._proc.kill()
        self._proc.wait()


class Watching:
    """The run's events, and the probe's count sampled while the run went on: at each line the
    run printed and when a watcher tripped."""

    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.events: list[Event] = []
        self.samples: list[int] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, LogLine):
            self.samples.append(self.probe.count())

    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice)]

    def assert_machine_responsive(self) -> None:
        assert len(self.samples) >= 2, "the run was sampled twice while it went on"
        assert self.samples[-1] > self.samples[0], "the probe got no CPU while the run went on"


@pytest.fixture
def watching(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Watching]:
    monkeypatch.setattr(run_watch, "PROCESS_WATCH_S", 0.05)
    monkeypatch.setattr(run_watch, "DISK_WATCH_S", 0.1)
    probe = Probe(tmp_path)
    probe.wait_until_counting()
    watching = Watching(probe)
    trip = RunWatcher._trip

    def sampled_trip(self: RunWatcher, reason: str) -> None:
        watching.samples.append(probe.count())  # the run is still going: it is stopped next
        trip(self, reason)

    monkeypatch.setattr(RunWatcher, "_trip", sampled_trip)
    yield watching
    probe.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return bare_project(tmp_path)


def run_hostile(
    root: Path,
    mode: str,
    watching: Watching,
    body: str,
    *,
    timeout_s: float = 60,
    responsive: bool = True,
    **settings,
) -> RunResult:
    """Run ``body`` as the experiment under ``settings`` (SandboxSpec fields, and
    run_experiment's own); then nothing of it may be left running, and unless ``responsive`` is
    False (a run too short to sample twice) the probe must have counted on meanwhile."""
    write_experiment(root, body)
    fields = {key: settings.pop(key) for key in list(settings) if key in SPEC_FIELDS}
    result = run_experiment(
        root,
        "run_1",
        python=PYTHON,
        timeout_s=timeout_s,
        emit=watching,
        stage="experiments",
        sandbox=SandboxSpec(mode=mode, root=root.resolve(), **fields),
        **settings,
    )
    assert not processes_in(root), "a process of the run outlived it"
    if responsive:
        watching.assert_machine_responsive()
    return result


SPEC_FIELDS = set(SandboxSpec.__dataclass_fields__)


def record(root: Path) -> dict:
    return json.loads((root / "run_1" / "labtui_run.json").read_text())


# -- the cases -----------------------------------------------------------------------------

# Each process starts two more of itself in sessions of their own (out of the group), then
# waits: the count doubles per generation, as in the 658-process storm of issue 16.
STORM = """
print("generation", len(sys.argv), flush=True)
for _ in range(2):
    subprocess.Popen([sys.executable, "-S", __file__, "x", *sys.argv[1:]],
                     start_new_session=True, stdout=subprocess.DEVNULL)
    time.sleep(0.05)
time.sleep(600)
"""

FORK_BOMB = """
print("bomb", flush=True)
while True:
    try:
        os.fork()
        print("forked", flush=True)
    except OSError:
        time.sleep(0.01)
"""

MEMORY_HOG = """
hoard = []
while True:
    hoard.append(b"x" * 16 * 2**20)
    print("holding", 16 * len(hoard), "MB", flush=True)
"""

SLOW_FILLER = """
print("filling", flush=True)
with open("big.bin", "wb") as f:
    while True:
        f.write(os.urandom(2**20))
        f.flush()
        time.sleep(0.005)
"""

FAST_FILLER = """
print("filling", flush=True)
with open("big.bin", "wb") as f:
    while True:
        f.write(b"x" * 2**20)
"""

SLEEPER = """
print("waiting for something that never comes", flush=True)
time.sleep(10_000)
"""

# Busy and silent: no stall (the timeout would end it if it never stopped). It spins for several
# stall periods; niced and beside CPU burners it still gets a share of a core.
SPINNER = """
print("spinning", flush=True)
start = time.monotonic()
while time.monotonic() - start < 1.0:
    pass
print("still spinning", flush=True)
while time.monotonic() - start < 2.0:
    pass
"""

DEAF = """
signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
subprocess.Popen([sys.executable, "-c", code])
print("ignoring SIGTERM", flush=True)
while True:
    time.sleep(0.2)
    print("still here", flush=True)
"""


@pytest.mark.parametrize("mode", MODES)
def test_a_script_that_relaunches_itself_is_stopped_as_a_storm(project, watching, mode):
    result = run_hostile(project, mode, watching, STORM, max_processes=2000)
    assert result.problem.startswith("run_1 was stopped by the sandbox: process storm:")
    assert "[sandbox] max_processes = 2000" in result.problem


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_bomb_is_stopped_at_the_task_cap(project, watching, mode):
    result = run_hostile(project, mode, watching, FORK_BOMB, max_processes=64)
    assert "was stopped by the sandbox" in result.problem
    assert "[sandbox] max_processes = 64" in result.problem


@pytest.mark.parametrize("mode", MODES)
def test_a_memory_hog_is_stopped_at_its_memory_cap(project, watching, mode):
    result = run_hostile(project, mode, watching, MEMORY_HOG, memory_mb=200)
    assert "[sandbox] memory_mb = 200 MB" in result.problem
    assert record(project)["peak_memory_mb"] > 16


@pytest.mark.parametrize("mode", MODES)
def test_a_big_file_in_the_project_root_is_stopped_and_removed(project, watching, mode):
    result = run_hostile(project, mode, watching, SLOW_FILLER, project_cap_mb=8)
    assert "disk cap exceeded" in result.problem
    assert "[sandbox] project_cap_mb = 8 MB" in result.problem
    assert "removed what it created outside its run folder: big.bin" in result.problem
    assert not (project / "big.bin").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_file_that_hit_the_size_cap_first_is_removed_after_the_run(project, watching, mode):
    # The run ends (SIGXFSZ at max_file_mb) before any check sees the project grow: the check
    # after the run still finds what it left and removes it.
    settings = {"project_cap_mb": 2, "max_file_mb": 4, "responsive": False}
    result = run_hostile(project, mode, watching, FAST_FILLER, **settings)
    assert "[sandbox] project_cap_mb = 2 MB" in result.problem
    assert "removed what it created outside its run folder: big.bin" in result.problem
    assert not (project / "big.bin").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_run_that_sleeps_forever_is_flagged_then_stopped(project, watching, mode):
    result = run_hostile(project, mode, watching, SLEEPER, stall_s=0.5, stall_stop_s=0.5)
    assert "stalled: no output, no CPU time and no GPU activity" in result.problem
    assert "[limits] stall_s = 0.5 s, then stall_stop_s = 0.5 s" in result.problem
    flagged = [n for n in watching.notices() if "run_1 looks idle" in n]
    assert flagged and "it will be stopped in 0.5 s" in flagged[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_silent_cpu_spinner_is_not_flagged(project, watching, mode):
    result = run_hostile(project, mode, watching, SPINNER, stall_s=0.5, stall_stop_s=0.5)
    assert result.ok, result.problem
    assert not [n for n in watching.notices() if "idle" in n]


@pytest.mark.parametrize("mode", MODES)
def test_children_that_ignore_sigterm_are_killed_at_the_timeout(project, watching, mode):
    result = run_hostile(project, mode, watching, DEAF, timeout_s=2)
    assert result.timed_out and "timed out after 2 s" in result.problem
