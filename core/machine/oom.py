"""Whether the kernel's OOM killer struck while a run went on: its counters, read when the run
starts and again when it ends. A run that died of SIGKILL while one rose ran out of memory, which
the researcher (and the model fixing the code) must hear instead of a bare "killed by SIGKILL".

Counters: the machine's (``oom_kill`` in /proc/vmstat, Linux 4.13+), and the run's memory cgroup
(``oom_kill`` in memory.events under cgroup v2, in memory.oom_control under v1), which also rises
when the run hit a cgroup memory limit of its own.
"""

from __future__ import annotations

from pathlib import Path

VMSTAT = Path("/proc/vmstat")
CGROUP_FS = Path("/sys/fs/cgroup")
PROC = Path("/proc")


def _counter(path: Path, key: str = "oom_kill") -> int | None:
    """The value of ``key`` in a "name value" per line file; None when absent or unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def cgroup_counter_file(pid: int) -> Path | None:
    """The file holding the OOM-kill count of ``pid``'s memory cgroup, if the machine has one."""
    try:
        lines = (PROC / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if controllers == "" and (CGROUP_FS / relative / "memory.events").is_file():
            return CGROUP_FS / relative / "memory.events"
        if "memory" in controllers.split(","):
            return CGROUP_FS / "memory" / relative / "memory.oom_control"
    return None


class OomCounter:
    """The OOM-kill counters as they were when it was made (and when ``watch`` first saw a
    cgroup); ``struck`` says whether any has risen since."""

    def __init__(self) -> None:
        self._start: dict[Path, int] = {}
        self._add(VMSTAT)

    def _add(self, path: Path | None) -> None:
        if path is None or path in self._start:
            return
        value = _counter(path)
        if value is not None:
            self._start[path] = value

    def watch(self, pid: int) -> None:
        """Also watch ``pid``'s memory cgroup (the run may be moved into one as it starts)."""
        self._add(cgroup_counter_file(pid))

    def struck(self) -> bool:
        return any((_counter(path) or 0) > start for path, start in self._start.items())
