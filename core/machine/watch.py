"""The watcher of a run: a thread that samples the run's whole process tree several times a second
(core/machine/process_tree.py) and stops the run, naming the limit, when

* it holds more tasks than ``[sandbox] max_processes`` (a fork bomb), or its process count keeps
  growing past a floor (a process storm: it is stopped long before it reaches the cap, while the
  machine is still responsive; a data loader's workers start at once and then hold steady);
* its run folder outgrows ``[sandbox] run_dir_cap_mb``, the project folder grew by more than
  ``[sandbox] project_cap_mb``, or it holds more than ``[sandbox] max_files`` entries beyond what
  it held (core/machine/disk_growth.py, one walk for both; over the disk cap, what the run
  created outside its run folder is then removed, so the disk is not left full; the runner
  removes a failed run's files once it is over, core/runs/strays.py);
* it has been idle (no output, no CPU time, no GPU activity) for ``[limits] stall_s`` and then
  ``stall_stop_s`` more: it is flagged at the first, stopped at the second. A busy infinite loop
  uses CPU and is no stall: ``run_timeout_s`` ends it.

It also keeps the peak resident memory of the tree, for the report of a run the OOM killer ended.

The scan is cheap (a listing of /proc and the stat files of the run's own processes), and the
experiment runs at a lower priority than labtui, so the watcher keeps its pace on a starved machine.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from ..events import Event, LogLine, Notice
from .disk_growth import Over, ProjectGrowth
from .oom import OomCounter
from .process_group import signal_group
from .process_tree import RunTree, TreeSample
from .sandbox import SandboxSpec

Emit = Callable[[Event], None]

PROCESS_WATCH_S = 0.2  # how often the process tree of a run is sampled
DISK_WATCH_S = 0.5  # how often the size of its run folder is summed (and the project's checked)
GPU_WATCH_S = 2.0  # how often an idle-looking run's GPUs are asked whether they compute
STORM_FLOOR = 64  # processes (threads not counted): a run below this is never a storm
STORM_STEP = 3  # checks between two counts compared (0.6 s at PROCESS_WATCH_S) ...
STORM_STEPS = 4  # ... and counts that must each be higher than the one before: 2.4 s of growth
OOM_WATCH_AT = (1, 5, 25)  # at these samples the run's memory cgroup is looked up (it may move)
JOIN_S = 10.0  # how long a run's end waits for a tripped watcher to finish stopping it


@dataclass(frozen=True)
class Watch:
    """What a run's watcher checks beyond its sandbox's limits: the stall watchdog's periods
    (``[limits] stall_s``/``stall_stop_s``, 0: off), the project's disk cap
    (``[sandbox] project_cap_mb``, 0: off) and, where the run has GPUs, whether they compute.
    ``growth``, when the caller made it, is the project's watch, which it reads after the run
    (what the run created); else the watcher makes its own."""

    stall_s: float = 0.0
    stall_stop_s: float = 0.0
    project_cap_mb: int = 0
    gpu_busy: Callable[[], bool] | None = None
    growth: ProjectGrowth | None = None


def _disk_usage(folder: Path) -> int:
    """Bytes of disk a folder's files take (allocated blocks: a sparse file is what it holds)."""
    total = 0
    for path, _dirs, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(path, name))
            except OSError:
                continue
            total += stat.st_blocks * 512 if hasattr(stat, "st_blocks") else stat.st_size
    return total


class _Stall:
    """The stall watchdog's state: when the run last did anything, and whether it is flagged."""

    def __init__(self, watch: Watch, last_output: Callable[[], float]) -> None:
        self.watch = watch
        self._last_output = last_output
        self.active_at = time.monotonic()
        self._cpu_s = -1.0
        self._gpu_asked = 0.0
        self._gpu_was_busy = False  # the last answer, good until the next question
        self.flagged = False

    def active(self, now: float, sample: TreeSample) -> bool:
        """Whether the run did something since the last check (it resets the idle clock)."""
        cpu_grew = sample.cpu_s > self._cpu_s
        self._cpu_s = sample.cpu_s  # falls when a child exits unreaped; growth counts from there
        if cpu_grew or self._last_output() > self.active_at:
            return True
        if self.watch.gpu_busy is not None and now - self._gpu_asked >= GPU_WATCH_S:
            self._gpu_asked = now
            self._gpu_was_busy = self.watch.gpu_busy()
        return self._gpu_was_busy


class RunWatcher(threading.Thread):
    """Samples the run led by ``pid`` until ``stop``; when a limit trips it kills the whole tree
    and ``reason`` says which limit and by how much (see the module docstring)."""

    def __init__(
        self,
        pid: int,
        sandbox: SandboxSpec | None,
        watch: Watch | None = None,
        *,
        mark: str = "",
        growth: ProjectGrowth | None = None,
        oom: OomCounter | None = None,
        last_output: Callable[[], float] = lambda: 0.0,
        emit: Emit | None = None,
        stage: str = "",
        run_id: str = "",
    ) -> None:
        super().__init__(name=f"labtui-watch-{pid}", daemon=True)
        self._pgid = pid
        self._limits = sandbox if sandbox is not None and sandbox.limited else None
        self._growth = growth
        self._oom = oom
        self._samples = 0
        self._stall = _Stall(watch or Watch(), last_output)
        self._emit = emit
        self._stage = stage
        self._run_id = run_id or f"pid {pid}"
        self._counts: deque[int] = deque(maxlen=STORM_STEP * STORM_STEPS + 1)
        self._done = threading.Event()
        self.tree = RunTree(pid, mark)
        self.peak_rss_mb = 0.0
        self.reason = ""
        self._over: Over = ""  # the project cap that tripped, for what is then removed

    @staticmethod
    def project_growth(sandbox: SandboxSpec | None, watch: Watch | None) -> ProjectGrowth | None:
        """The project's disk and file-count watch for a run (the caller's, or one made here
        when it has a cap): made before the run starts."""
        if watch is not None and watch.growth is not None:
            return watch.growth
        if sandbox is None or not sandbox.limited or watch is None:
            return None
        if not watch.project_cap_mb and not sandbox.max_files:
            return None
        return ProjectGrowth(
            sandbox.root, sandbox.run_dir, watch.project_cap_mb * 2**20, sandbox.max_files
        )

    def stop(self) -> None:
        """End the watch; once it is joined, ``reason`` is final (a trip finishes its kill)."""
        self._done.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout=JOIN_S)

    def run(self) -> None:
        if self._growth is not None:
            self._growth.start()
        next_disk = 0.0
        while not self._done.wait(PROCESS_WATCH_S):
            now = time.monotonic()
            sample = self.tree.sample()
            self._samples += 1
            if self._oom is not None and self._samples in OOM_WATCH_AT:
                self._oom.watch(self._pgid)
            self.peak_rss_mb = max(self.peak_rss_mb, sample.rss_mb)
            reason = self._process_limit(sample)
            if not reason and now >= next_disk:
                next_disk = now + DISK_WATCH_S
                reason = self._disk_limit()
            if not reason:
                reason = self._stalled(now, sample)
            if reason:
                self._trip(reason)
                return

    # -- the limits ------------------------------------------------------------------------

    def _process_limit(self, sample: TreeSample) -> str:
        spec = self._limits
        if spec is None or not spec.max_processes:
            return ""
        if sample.tasks > spec.max_processes:
            return (
                f"process limit exceeded: {sample.tasks} processes/threads running, more than "
                f"[sandbox] max_processes = {spec.max_processes} (a fork bomb?)"
            )
        if self._growing(sample.processes):
            span = STORM_STEP * STORM_STEPS * PROCESS_WATCH_S
            return (
                f"process storm: {sample.processes} processes and still growing (for {span:g} s, "
                f"past {STORM_FLOOR}); stopped before it reached [sandbox] max_processes = "
                f"{spec.max_processes} (a script that keeps launching itself?)"
            )
        return ""

    def _growing(self, processes: int) -> bool:
        """Whether the process count rose at every step of the last STORM_STEPS, past the floor.
        Steps of several checks: a storm on a starved machine may stand still for one check. A
        pool or a data loader starts its workers at once and then holds steady."""
        self._counts.append(processes)
        if processes <= STORM_FLOOR or len(self._counts) < (self._counts.maxlen or 0):
            return False
        steps = list(self._counts)[::STORM_STEP]
        return all(earlier < later for earlier, later in pairwise(steps))

    def _disk_limit(self) -> str:
        spec = self._limits
        if spec is None:
            return ""
        if spec.run_dir and spec.run_dir_cap_mb:
            used = _disk_usage(spec.run_dir)
            if used > spec.run_dir_cap_mb * 2**20:
                return (
                    f"disk cap exceeded: {spec.run_dir.name}/ holds {used / 2**20:.1f} MB, "
                    f"more than [sandbox] run_dir_cap_mb = {spec.run_dir_cap_mb} MB"
                )
        return self._project_limit()

    def _project_limit(self, *, walk_now: bool = False) -> str:
        growth = self._growth
        over = growth.over_cap(walk_now=walk_now) if growth is not None else ""
        if growth is None or not over:
            return ""
        self._over = over
        if over == "files":
            return (
                f"file count exceeded: the run created {growth.created():,} files and folders "
                f"in the project folder, more than [sandbox] max_files = {growth.file_cap:,} "
                "(write many small results into one file, e.g. an .npz or a .jsonl, or raise "
                "max_files in labtui.toml)"
            )
        return (
            f"disk cap exceeded: the run added {growth.growth() / 2**20:.1f} MB to the "
            f"project folder, more than [sandbox] project_cap_mb = "
            f"{self._stall.watch.project_cap_mb} MB"
        )

    def _stalled(self, now: float, sample: TreeSample) -> str:
        stall = self._stall
        watch = stall.watch
        if not watch.stall_s:
            return ""
        if stall.active(now, sample):
            stall.active_at = now
            if stall.flagged:
                stall.flagged = False
                self._say(f"{self._run_id} is active again")
            return ""
        idle = now - stall.active_at
        if not stall.flagged and idle >= watch.stall_s:
            stall.flagged = True
            then = (
                f"it will be stopped in {watch.stall_stop_s:g} s ([limits] stall_stop_s) "
                "unless it resumes"
                if watch.stall_stop_s
                else "it is left running ([limits] stall_stop_s = 0)"
            )
            self._say(
                f"{self._run_id} looks idle: no output, no CPU time and no GPU activity for "
                f"{idle:.0f} s ([limits] stall_s = {watch.stall_s:g}); {then}"
            )
        if stall.flagged and watch.stall_stop_s and idle >= watch.stall_s + watch.stall_stop_s:
            return (
                f"stalled: no output, no CPU time and no GPU activity for {idle:.0f} s "
                f"([limits] stall_s = {watch.stall_s:g} s, then stall_stop_s = "
                f"{watch.stall_stop_s:g} s)"
            )
        return ""

    def _say(self, text: str) -> None:
        """A notice in the journal and the dialogue, and the same line in the run's log."""
        if self._emit is None:
            return
        self._emit(Notice(stage=self._stage, text=text))
        self._emit(LogLine(stage=self._stage, run_id=self._run_id, stream="labtui", text=text))

    def _trip(self, reason: str) -> None:
        # No grace period: a disk filler or a fork bomb must not get another second. The group
        # goes too: under bubblewrap it holds the sandbox's PID 1, whose death ends the sandbox.
        self.tree.kill()
        signal_group(self._pgid, signal.SIGKILL)
        self.reason = self._cleaned_up(reason)

    def check_after_run(self) -> None:
        """Once the run and all it started are gone: a project it left over its disk cap (it ended,
        say at the file size cap, before a check saw it) is reported and cleaned up as a trip."""
        if self.reason or self._growth is None or not self._growth.filled():
            return  # the filesystem grew by less than the cap: so did the project
        if reason := self._project_limit(walk_now=True):
            self.reason = self._cleaned_up(reason)

    def _cleaned_up(self, reason: str) -> str:
        """``reason``, and what was removed when the project was left over its disk cap."""
        if self._over != "disk" or self._growth is None:
            return reason
        removed = self._growth.remove_new_files()
        if not removed:
            return reason
        return f"{reason}; removed what it created outside its run folder: {_listed(removed)}"


def _listed(removed: list[tuple[str, int]], shown: int = 3) -> str:
    """The first few removed files by name and size, and how many more."""
    names = ", ".join(f"{path} ({size / 2**20:.0f} MB)" for path, size in removed[:shown])
    more = len(removed) - shown
    if more <= 0:
        return names
    rest = sum(size for _, size in removed[shown:])
    return f"{names} and {more:,} more ({rest / 2**20:.1f} MB)"
