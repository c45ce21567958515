"""TUI benchmarks: first paint of the real ``labtui`` in a pty, and a chatty run through the app.

    .venv/bin/python tests/bench/tui_bench.py [--repeat 5] [--lines 100000] [--skip-pty-stream]
                                              [--tracemalloc]

bench.py calls ``tui_rows``; run alone, this prints the same table and JSON line for the TUI part.

What is measured, and how (the numbers are only as honest as these methods):

- first paint: ``labtui`` (the console script) in a pseudo-terminal of 100x30, TERM
  xterm-256color, inside a project made from the moons template. The clock runs from spawning the
  process to reading a frame whose text (escape sequences stripped) contains "Dialogue", the
  dialogue pane's title, which only the painted main screen has. Two set-ups: no model (the app
  then shows its no-model screen, also timed) and a model whose api_base is a loopback socket that
  accepts connections and never answers (the pipeline starts, and hangs, in the background
  engine). Then "q", and the process group is killed if it is still there. With a model, the
  first ``labtui`` starts the project's engine (reported apart: it paints from the project's own
  session and starts the engine after the model check) and the next ones attach to it, as
  ``labtui`` does whenever an engine runs; the engine is stopped at the end.
- where that time goes: with the engine running, the CLI runs in-process in the same pty with
  marks between phases, and exits at its first written frame (which also lists the heavy
  modules already loaded by then); and ``-X importtime`` of the imports ``labtui`` makes on
  that path, charged to the labtui module that imports each one first (a module that textual
  would import anyway shows up as labtui's too).
- streaming: a child prints N lines as fast as it can. (a) ``core.machine.processes.run_process`` with a
  no-op emit; (b) the same call from a bench Session's ``run`` inside ``LabtuiApp.run_test``
  (headless: Textual composes every frame but writes nothing to a terminal), and the time until
  the first frame composed after the app recorded the outcome (it drains its inbox first, so that
  frame holds the last line); (e) the real app in a real pty (the real driver and terminal
  output) following the run in another process, as it follows its engine: run_process there,
  its events sent through the engine's own outbox as wire lines and decoded here on a thread,
  as RemoteSession does.
  (a2)/(b2): the same with a ``Journal`` as the bus's first subscriber, as a real Session has,
  on N/20 lines (it is that slow), reported per line.
- key latency: while (b) or (e) runs, and until its end is painted, "tab" is sent every ~50 ms
  (in (b) a press also waits for the previous one's frame, up to 5 s). Latency = from sending the
  key to the end of the first frame composed after the focus moved. Focus changes are recorded
  by wrapping the main screen's ``set_focus``, frames by wrapping ``App._display`` (called once
  per composed frame, headless included); the k-th focus change after the first press is taken
  as the k-th press's. A press never painted before the measurement ends counts with the time
  until that end, a lower bound. (e) clocks both processes with CLOCK_MONOTONIC; a frame's time
  there is when Textual hands it to its writer thread, a little before the bytes reach the pty.
  With a handful of presses, p95 is the worst but one or the worst. In (e) the last press gets
  ``KEY_SETTLE_S`` to be painted before "q" (else quitting would be counted as its latency), and
  the app is started as ``run_app`` starts it (the import out of the garbage collector).
- memory: ``ru_maxrss`` of the measuring process (each set-up runs in a fresh process, so the
  peak is that set-up's), RSS before the run and after it (after ``gc.collect``, app still
  open), and optionally the tracemalloc peak in a separate run (tracing makes it ~3x slower).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import fcntl
import gc
import json
import os
import re
import resource
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SIZE = (100, 30)  # columns, rows
FIRST_PAINT_MARKER = "Dialogue"  # the dialogue pane's border title: only the main screen has it
NO_MODEL_MARKER = "No model configured"
ENGINE_MARKER = "started the engine"  # the app's notice once the engine it started serves
KEY_INTERVAL_S = 0.05
ENGINE_SETTLE_S = 6.0  # after the first labtui starts the engine, before the others attach
KEY_SETTLE_S = 0.5  # after the run's end is painted, before q: the last press's frame
IDLE_PRESSES = 10
PTY_TIMEOUT_S = 20.0
STREAM_TIMEOUT_S = 60.0
# CSI, OSC, DCS/APC/PM/SOS and two-byte escapes: everything that is not text on the screen.
ANSI = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|.)")


# -- results -------------------------------------------------------------------------------


@dataclass
class Row:
    """One number of the report; ``key`` names it in the JSON line."""

    key: str
    label: str
    value: float | None
    unit: str
    goal: str = ""
    note: str = ""


def print_table(rows: list[Row]) -> None:
    width = max(len(row.label) for row in rows)
    print(f"{'measure':<{width}}  {'value':>10}  {'goal':<10}  note")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 10}  {'-' * 30}")
    for row in rows:
        value = "n/a" if row.value is None else f"{row.value:,.{_decimals(row.value)}f} {row.unit}"
        print(f"{row.label:<{width}}  {value:>10}  {row.goal:<10}  {row.note}")


def _decimals(value: float) -> int:
    return 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2


def json_line(rows: list[Row], **extra: Any) -> str:
    results = {row.key: row.value for row in rows}
    units = {row.key: row.unit for row in rows}
    return json.dumps({"bench": "labtui", "results": results, "units": units, **extra})


def machine(load_at_start: float) -> dict[str, Any]:
    """What the numbers depend on: a loaded machine inflates every timing here."""
    return {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_start": round(load_at_start, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }


def print_machine(info: dict[str, Any]) -> None:
    # The load at the end includes this benchmark's own processes; at the start, only others.
    busy = info["load_start"] > 0.5
    print(
        f"{info['cpus']} CPUs, Python {info['python']}, 1-min load average "
        f"{info['load_start']} before, {info['load_end']} after (with the benchmark)"
        + ("; other processes competed for the CPUs, timings are inflated" if busy else "")
    )


def print_report(rows: list[Row], load_at_start: float) -> None:
    """The machine, the table, then the JSON line: how every bench script ends."""
    info = machine(load_at_start)
    print_machine(info)
    print_table(rows)
    print(json_line(rows, machine=info))


def slug(text: str) -> str:
    """A JSON key from a label: 'import labtui.core.events (self)' → 'labtui_core_events_self'."""
    return re.sub(r"\W+", "_", text).strip("_").lower()


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


# -- environment and project -----------------------------------------------------------------


def labtui_script() -> str:
    return str(Path(sys.executable).with_name("labtui"))


def clean_env(home: Path) -> dict[str, str]:
    """No real model, key or home leaks in; litellm must not fetch its price map (no network)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith("LABTUI_") or k.endswith("_API_KEY"))
    }
    env.update(
        HOME=str(home),
        TERM="xterm-256color",
        COLUMNS=str(SIZE[0]),
        LINES=str(SIZE[1]),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    return env


def make_project(parent: Path, name: str) -> Path:
    """A real project from the bundled moons template (no baseline run: not needed to paint)."""
    from labtui.core.workspace.project import Project

    return Project.create(parent / name, "moons").root


def point_model_at(root: Path, api_base: str) -> None:
    from labtui.core.settings.config import load_config, save_config

    config = load_config(root)
    config.models.default = "openai/bench-never-answers"
    config.models.api_base = api_base
    save_config(config, root)


@contextlib.contextmanager
def never_answering_server() -> Iterator[str]:
    """A loopback OpenAI-compatible URL whose socket accepts connections (the kernel completes
    the handshake from the backlog) and never reads or answers: an LLM call just hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"


# -- pseudo-terminal -------------------------------------------------------------------------


class PtyProcess:
    """A child on a fresh pty of SIZE, in its own session so it can be killed as a group."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
        )
        os.close(slave)
        self.output = bytearray()
        self._text = b""
        self._stripped_upto = 0

    def pump(self, timeout: float) -> bool:
        """Read what the child wrote (the pty must be drained or the child blocks on write)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 1 << 16)
        except OSError:  # the child closed the pty
            return False
        self.output += chunk
        return bool(chunk)

    def screen_text(self) -> bytes:
        # Strip escapes from whole output each time: a sequence can straddle two reads.
        if len(self.output) != self._stripped_upto:
            self._text = ANSI.sub(b"", bytes(self.output))
            self._stripped_upto = len(self.output)
        return self._text

    def wait_for(self, markers: list[str], timeout: float) -> dict[str, float]:
        """Seconds from spawn until each marker was on screen (missing: not seen in time)."""
        seen: dict[str, float] = {}
        deadline = self.started + timeout
        while len(seen) < len(markers) and time.monotonic() < deadline:
            if self.proc.poll() is not None and not self.pump(0.05):
                break
            if self.pump(0.02):
                read_at = time.monotonic() - self.started  # before the (slower) stripping
                text = self.screen_text()
                for marker in markers:
                    if marker not in seen and marker.encode() in text:
                        seen[marker] = read_at
        return seen

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def stop(self, quit_keys: bytes = b"q", grace_s: float = 1.0) -> int | None:
        """Quit with a key if the app will; otherwise SIGTERM, then SIGKILL, the whole group."""
        with contextlib.suppress(OSError):
            self.send(quit_keys)
        deadline = time.monotonic() + grace_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump(0.02)
        code = self.proc.poll()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(1.0)
        os.close(self.master)
        return code

    def tail(self, chars: int = 800) -> str:
        return self.screen_text()[-chars:].decode(errors="replace")


# -- 1. first paint ------------------------------------------------------------------------


def first_paint_once(root: Path, env: dict[str, str], markers: list[str]) -> dict[str, float]:
    child = PtyProcess([labtui_script()], root, env)
    try:
        seen = child.wait_for(markers, PTY_TIMEOUT_S)
    finally:
        child.stop(grace_s=0.5)
    if FIRST_PAINT_MARKER not in seen:
        raise RuntimeError(f"labtui never painted its main screen; last output:\n{child.tail()}")
    return seen


def first_paint_rows(repeat: int, tmp: Path) -> list[Row]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = clean_env(home)
    no_model = make_project(tmp, "no-model")
    loopback = make_project(tmp, "loopback")
    no_model_runs = [
        first_paint_once(no_model, env, [FIRST_PAINT_MARKER, NO_MODEL_MARKER])
        for _ in range(repeat)
    ]
    with never_answering_server() as url:
        point_model_at(loopback, url)
        try:
            # The first `labtui` starts the project's engine; the others attach to it, once its
            # own start (its model check imports litellm: seconds of CPU) is over.
            started = first_paint_once(loopback, env, [FIRST_PAINT_MARKER, ENGINE_MARKER])
            time.sleep(ENGINE_SETTLE_S)
            attached = [
                first_paint_once(loopback, env, [FIRST_PAINT_MARKER]) for _ in range(repeat)
            ]
        finally:
            stop_engine(loopback, env)
    return [
        _median_row(
            "first_paint_no_model_ms",
            "first paint, no model (pty)",
            no_model_runs,
            FIRST_PAINT_MARKER,
            "≤ 400 ms",
        ),
        _median_row(
            "no_model_screen_ms", "  … until no-model screen", no_model_runs, NO_MODEL_MARKER
        ),
        _median_row(
            "first_paint_loopback_ms",
            "first paint, loopback model (pty)",
            attached,
            FIRST_PAINT_MARKER,
            "≤ 400 ms",
        ),
        _median_row(
            "first_paint_engine_start_ms",
            "  … when it starts the engine",
            [started],
            FIRST_PAINT_MARKER,
        ),
        _median_row("engine_started_ms", "  … until that engine serves", [started], ENGINE_MARKER),
    ]


def stop_engine(root: Path, env: dict[str, str]) -> None:
    """The engine a first `labtui` started outlives it (its own session): stop it, or it keeps
    running (and, once the folder is gone, spinning) after the bench."""
    subprocess.run(
        [labtui_script(), "stop", "--now", str(root)], env=env, capture_output=True, check=False
    )


def _median_row(
    key: str, label: str, runs: list[dict[str, float]], marker: str, goal: str = ""
) -> Row:
    samples = [run[marker] for run in runs if marker in run]
    if not samples:
        return Row(key, label, None, "ms", goal, f"'{marker}' never seen")
    return Row(
        key,
        label,
        ms(statistics.median(samples)),
        "ms",
        goal,
        f"median of {len(samples)}, best {min(samples) * 1000:.0f} ms",
    )


# -- 1b. where the time to first paint goes ---------------------------------------------------

# Runs `labtui` (cli.main) in-process with marks between phases and leaves at its first written
# frame. A bare `python -c` script, so that nothing this module imports (asyncio, subprocess…)
# is loaded before the clock starts and hides its cost from the phases that really pay it.
PHASES_CHILD = """
import time
started = time.monotonic()
import json, os, sys
marks = []
def mark(name):
    marks.append((name, time.monotonic() - started))
# Heavy modules that must not be loaded before the first frame (their import is the slow work).
HEAVY = ("litellm", "aider", "git", "openai", "httpx", "pygments", "markdown_it")
from labtui.tui import cli
mark("import labtui.tui.cli")
import labtui.tui.remote_session as remote
mark("import labtui.tui.remote_session")
attach = remote.RemoteSession.attach.__func__
def timed_attach(cls, root, **kwargs):
    session = attach(cls, root, **kwargs)
    mark("RemoteSession.attach")
    return session
remote.RemoteSession.attach = classmethod(timed_attach)
import textual.app
mark("import textual.app")
import labtui.tui.app as app_module
mark("import labtui.tui.app")
run, display = app_module.LabtuiApp.run, textual.app.App._display
def timed_run(self, *args, **kwargs):
    mark("LabtuiApp.run called")
    return run(self, *args, **kwargs)
def first_display(self, screen, renderable):
    display(self, screen, renderable)
    if renderable is not None:
        mark(f"first frame written ({type(screen).__name__})")
        loaded = [name for name in HEAVY if name in sys.modules]
        with open(sys.argv[1], "w") as out:
            json.dump({"started": started, "marks": marks, "heavy_loaded": loaded}, out)
        os._exit(0)  # measured: leave without tearing the app down
app_module.LabtuiApp.run = timed_run
textual.app.App._display = first_display
cli.main([])
"""


def phases_rows(repeat: int, tmp: Path) -> list[Row]:
    """Median time of each phase mark over ``repeat`` runs (the loopback set-up's project, its
    engine started first: `labtui` attaches to it), from spawning the process: the first phase
    is the interpreter's own start-up."""
    root = tmp / "loopback"
    env = clean_env(tmp / "home")
    with never_answering_server() as url:
        point_model_at(root, url)
        with engine_running(root, env):
            runs, heavy = _phases_runs(repeat, root, env, tmp)
    rows = []
    previous = 0.0
    for index, (name, _) in enumerate(runs[0]):
        at = statistics.median(run[index][1] for run in runs)
        rows.append(
            Row(
                f"phase_{index}_{slug(name)}_ms",
                f"  at {name}",
                ms(at),
                "ms",
                note=f"+{(at - previous) * 1000:.0f} ms",
            )
        )
        previous = at
    rows[-1].note += f"; heavy modules loaded by then: {', '.join(heavy) or 'none'}"
    return rows


def _phases_runs(
    repeat: int, root: Path, env: dict[str, str], tmp: Path
) -> tuple[list[list[tuple[str, float]]], list[str]]:
    """Each run's (phase, seconds from spawning) marks, and the heavy modules loaded by the
    first frame."""
    runs: list[list[tuple[str, float]]] = []
    heavy: list[str] = []
    for n in range(repeat):
        out = tmp / f"phases-{n}.json"
        child = PtyProcess([sys.executable, "-c", PHASES_CHILD, str(out)], root, env)
        while child.proc.poll() is None and time.monotonic() - child.started < PTY_TIMEOUT_S:
            child.pump(0.02)
        child.stop(grace_s=0.2)
        if not out.exists():
            raise RuntimeError(f"phases child wrote nothing; last output:\n{child.tail()}")
        record = json.loads(out.read_text())
        offset = record["started"] - child.started
        runs.append(
            [("python started", offset)] + [(name, offset + t) for name, t in record["marks"]]
        )
        heavy = record["heavy_loaded"]
    return runs, heavy


@contextlib.contextmanager
def engine_running(root: Path, env: dict[str, str]) -> Iterator[None]:
    """The project's engine, started in the background (`labtui run --detach`), then stopped."""
    subprocess.run(
        [labtui_script(), "run", "--detach", str(root)], env=env, capture_output=True, check=True
    )
    try:
        yield
    finally:
        stop_engine(root, env)


# The imports `labtui` (no command) makes before its first frame when it attaches to a running
# engine, in the order cmd_attach makes them.
STARTUP_IMPORTS = (
    "import labtui.tui.cli; import labtui.core.engine.files; import labtui.tui.remote_session; "
    "import labtui.tui.app"
)


def import_costs(repeat: int) -> dict[str, tuple[float, str]]:
    """Median cumulative import time (ms) of each module that labtui code imports directly,
    with the labtui module that imported it first (it is charged for the whole subtree)."""
    samples: dict[str, list[float]] = {}
    owners: dict[str, str] = {}
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", STARTUP_IMPORTS],
            capture_output=True,
            text=True,
            check=True,
        )
        for name, owner, cumulative_us in _direct_imports(out.stderr):
            samples.setdefault(name, []).append(cumulative_us / 1000)
            owners[name] = owner
    return {name: (statistics.median(ms_), owners[name]) for name, ms_ in samples.items()}


def _direct_imports(importtime: str) -> Iterator[tuple[str, str, int]]:
    """(module, labtui importer, µs) for each import made by a labtui module (cumulative: its
    whole subtree), and each labtui module's own time (self: its body, e.g. class creation).

    -X importtime prints children before their parent, indented two spaces per level."""
    entries = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        if not cumulative.strip().isdigit():
            continue  # the header line
        depth = (len(name) - len(name.lstrip())) // 2
        entries.append((depth, name.strip(), int(own), int(cumulative)))
    for index, (depth, name, own, cumulative) in enumerate(entries):
        parent = next((e[1] for e in entries[index + 1 :] if e[0] < depth), "")
        if name.startswith("labtui"):
            yield f"{name} (self)", parent or "(top level)", own
        elif parent.startswith("labtui"):
            yield name, parent, cumulative


def import_rows(repeat: int, top: int = 10) -> list[Row]:
    costs = import_costs(repeat)
    ranked = sorted(costs.items(), key=lambda item: -item[1][0])[:top]
    return [
        Row(
            f"import_{slug(name)}_ms",
            f"  import {name}",
            cost,
            "ms",
            note=f"imported by {owner}",
        )
        for name, (cost, owner) in ranked
    ]


# -- 2. a chatty child through run_process, with and without the app --------------------------


def chatty_argv(lines: int) -> list[str]:
    code = f"for i in range({lines}): print(f'step {{i}} loss {{1/(i+1):.4f}}')"
    return [sys.executable, "-c", code]


def rss_mb() -> float:
    """Resident set size now (ru_maxrss only gives the peak)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def bare_child(lines: int, journal: bool = False) -> dict[str, Any]:
    """(a) run_process with an emit that only counts, no app; with ``journal``, the emit is
    what a real Session subscribes first: ``Journal.append`` (one JSON line per event)."""
    from labtui.core.journal import Journal
    from labtui.core.machine.processes import run_process

    count = 0

    def emit(_event: object) -> None:
        nonlocal count
        count += 1

    rss_before = rss_mb()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as cwd:
        sink = Journal(Path(cwd) / ".labtui") if journal else None
        result = run_process(
            chatty_argv(lines),
            cwd=Path(cwd),
            timeout_s=STREAM_TIMEOUT_S,
            run_id="run_1",
            emit=sink.append if sink else emit,
            stage="experiments",
        )
        if sink:
            sink.close()
    return {
        "run_s": time.monotonic() - started,
        "events": count,
        "returncode": result.returncode,
        "rss_before_mb": rss_before,
        "maxrss_mb": maxrss_mb(),
    }


class BenchSession:
    """Duck-typed like the app's Session protocol: one run of the chatty child, nothing else.

    With ``journal``, a ``Journal`` is the bus's first subscriber, as in ``core.pipeline.session.Session``.
    """

    project_name = "bench"
    budget_usd = 10.0
    commit_log = None
    project_root = None

    def __init__(self, lines: int, cwd: Path, journal: bool = False) -> None:
        from labtui.core.events import Bus
        from labtui.core.journal import Journal

        self.bus = Bus()
        self._journal = Journal(cwd / ".labtui") if journal else None
        if self._journal:
            self.bus.subscribe(self._journal.append)
        self._lines = lines
        self._cwd = cwd
        self.started = threading.Event()
        self.done = threading.Event()
        self.started_at = 0.0
        self.run_s = 0.0
        self.returncode: int | None = None

    def history(self) -> list[Any]:
        return []

    def model_problems(self) -> list[str]:
        return []

    def stage_models(self) -> dict[str, str]:
        return {}

    def leave_note(self, text: str) -> None:
        return None

    def request_stop(self) -> None:
        pass

    def run(self, port: Any) -> str:
        from labtui.core.events import StageStarted
        from labtui.core.machine.processes import run_process

        self.started_at = time.monotonic()
        self.started.set()
        try:
            self.bus.emit(StageStarted(stage="experiments"))
            result = run_process(
                chatty_argv(self._lines),
                cwd=self._cwd,
                timeout_s=STREAM_TIMEOUT_S,
                run_id="run_1",
                emit=self.bus.emit,
                stage="experiments",
            )
            self.returncode = result.returncode
        finally:
            self.run_s = time.monotonic() - self.started_at
            if self._journal:
                self._journal.close()
            self.done.set()
        return "finished"


class EngineBenchSession(BenchSession):
    """The run in another process, as the real app follows its engine: the ``engine`` bench
    child runs run_process and writes its events as the engine sends them to a front end (the
    engine's outbox, batched wire lines); here a thread decodes them onto the bus, as
    ``RemoteSession`` does."""

    def run(self, port: Any) -> str:
        from labtui.core.engine.wire import ENGINE_KINDS, decode, events_of
        from labtui.core.events import StageStarted

        argv = [sys.executable, str(HERE), "--child", "engine", str(self._lines), str(self._cwd)]
        self.bus.emit(StageStarted(stage="experiments"))
        try:
            with subprocess.Popen(argv, stdout=subprocess.PIPE) as engine:
                assert engine.stdout is not None
                for line in engine.stdout:
                    # The run starts with its first output: a real engine is up already, its
                    # start-up (this child's imports) is no part of a burst.
                    if not self.started.is_set():
                        self.started_at = time.monotonic()
                        self.started.set()
                    for event in events_of(decode(line, ENGINE_KINDS)):
                        self.bus.emit(event)
            self.returncode = engine.returncode
        finally:
            self.run_s = time.monotonic() - self.started_at
            self.started.set()
            self.done.set()
        return "finished"


def engine_child(lines: int, cwd: Path) -> None:
    """(e)'s engine: the chatty child through run_process, each event offered to the engine's
    own outbox (core/engine/front_ends.py) and its batches written to stdout."""
    from labtui.core.engine.front_ends import Outbox
    from labtui.core.machine.processes import run_process

    outbox = Outbox()
    out = sys.stdout.buffer

    def send() -> None:
        while (wire_lines := outbox.take()) is not None:
            out.write(b"".join(wire_lines))
            out.flush()

    sender = threading.Thread(target=send, name="engine-send")
    sender.start()
    try:
        run_process(
            chatty_argv(lines),
            cwd=cwd,
            timeout_s=STREAM_TIMEOUT_S,
            run_id="run_1",
            emit=lambda event: outbox.offer(event.to_dict()),
            stage="experiments",
        )
    finally:
        outbox.close()
        sender.join()


@dataclass
class FrameProbe:
    """Times of composed frames and of focus changes, recorded on the UI thread."""

    frames: list[float] = field(default_factory=list)
    focus_changes: list[float] = field(default_factory=list)
    finished: Callable[[], bool] | None = None  # when true at a frame, that frame is noted
    first_finished_frame: float | None = None
    _waiter: asyncio.Future[float] | None = None
    _after: float = 0.0

    def install_frames(self, app: Any) -> None:
        display = app._display

        def recorded(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is None:
                return
            now = time.monotonic()
            self.frames.append(now)
            if self.first_finished_frame is None and self.finished and self.finished():
                self.first_finished_frame = now
            waiter = self._waiter
            changed = self.focus_changes and self.focus_changes[-1] >= self._after
            if waiter is not None and not waiter.done() and changed:
                waiter.set_result(now)

        app._display = recorded  # instance attribute: screens call app._display(...)

    def install_focus(self, screen: Any) -> None:
        set_focus = screen.set_focus

        def recorded(widget: Any, *args: Any, **kwargs: Any) -> None:
            before = screen.focused
            set_focus(widget, *args, **kwargs)
            if screen.focused is not before:
                self.focus_changes.append(time.monotonic())

        screen.set_focus = recorded

    async def press_and_wait(self, app: Any, key: str, timeout: float) -> float:
        """Send ``key`` as the driver would and wait for the frame after the focus moved."""
        from textual import events

        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        self._after = time.monotonic()
        event = events.Key(key, "\t" if key == "tab" else None)
        event.set_sender(app)
        app._driver.send_message(event)  # what Pilot.press does, minus its wait-for-idle
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._waiter, timeout)
        return self._after


def key_latencies(
    presses: list[float], changes: list[float], frames: list[float], ended: float
) -> tuple[list[float], int]:
    """Latency of each press, and how many presses were never painted.

    The k-th press is matched with the k-th focus change after the first press; its latency
    runs to the first frame composed at or after that change. A press with no such frame before
    the measurement ``ended`` counts as ``ended - press``: a lower bound, never left out."""
    if not presses:
        return [], 0
    changes = [c for c in changes if c >= presses[0]]
    latencies = []
    unpainted = 0
    for k, pressed in enumerate(presses):
        index = bisect.bisect_left(frames, changes[k]) if k < len(changes) else len(frames)
        if index < len(frames):
            latencies.append(frames[index] - pressed)
        else:
            unpainted += 1
            latencies.append(max(0.0, ended - pressed))
    return latencies, unpainted


def latency_summary(presses: list[float], probe: FrameProbe, ended: float) -> dict[str, Any]:
    latencies, unpainted = key_latencies(presses, probe.focus_changes, probe.frames, ended)
    return {
        "presses": len(presses),
        "unpainted": unpainted,
        "worst_ms": ms(max(latencies)) if latencies else None,
        "p95_ms": ms(p95(latencies)) if latencies else None,
        "median_ms": ms(statistics.median(latencies)) if latencies else None,
    }


def presses_note(keys: dict[str, Any]) -> str:
    note = f"{keys['presses']} presses"
    if keys["unpainted"]:
        note += f", {keys['unpainted']} never painted (counted until the end: lower bound)"
    return note


async def _stream_in_app(lines: int, keys: bool, cwd: Path, journal: bool) -> dict[str, Any]:
    from labtui.tui.app import LabtuiApp

    session = BenchSession(lines, cwd, journal)
    app = LabtuiApp(session, auto=True)  # type: ignore[arg-type]
    # The first frame composed once the app knows the outcome holds every line: the app drains
    # the inbox before it records the outcome.
    probe = FrameProbe(finished=lambda: app.outcome is not None)
    probe.install_frames(app)
    presses: list[float] = []
    async with app.run_test(size=SIZE):
        await _wait(app, lambda: session.started.is_set(), STREAM_TIMEOUT_S)
        rss_before = rss_mb()
        probe.install_focus(app.screen)
        # Keys go on until the app has painted the end: it may lag well behind the run.
        while keys and probe.first_finished_frame is None:
            pressed = await probe.press_and_wait(app, "tab", timeout=5.0)
            presses.append(pressed)
            await asyncio.sleep(max(0.0, pressed + KEY_INTERVAL_S - time.monotonic()))
        await _wait(app, lambda: probe.first_finished_frame is not None, STREAM_TIMEOUT_S)
        end_to_end = (probe.first_finished_frame or 0.0) - session.started_at
        # The same presses with nothing streaming: what a key costs the app by itself.
        idle: list[float] = []
        for _ in range(IDLE_PRESSES if keys else 0):
            idle.append(await probe.press_and_wait(app, "tab", timeout=5.0))
            await asyncio.sleep(max(0.0, idle[-1] + KEY_INTERVAL_S - time.monotonic()))
        idle_keys = latency_summary(idle, probe, time.monotonic())
        gc.collect()
        result = {
            "run_s": session.run_s,
            "end_to_end_s": end_to_end,
            "returncode": session.returncode,
            "frames": len(probe.frames),
            "last_log_line": _last_log_line(app),
            "rss_before_mb": rss_before,
            "rss_after_mb": rss_mb(),
            **latency_summary(presses, probe, time.monotonic()),
            "idle_worst_ms": idle_keys["worst_ms"],
            "idle_median_ms": idle_keys["median_ms"],
        }
    result["maxrss_mb"] = maxrss_mb()
    return result


async def _wait(app: Any, predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        # A crashed app keeps run_test's body going; its error is raised when the body ends.
        if app._exception is not None or time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not reached (did the app crash?)")
        await asyncio.sleep(0.005)


def _last_log_line(app: Any) -> str:
    """What the logs pane shows last (a check that every line made it), '' if not found.

    Duck-typed: ``#run-log`` may be a RichLog (lines are Strips) or a widget keeping strings."""
    with contextlib.suppress(Exception):
        lines = app.screen.query_one("#run-log").lines
        if lines:
            last = lines[-1]
            return str(getattr(last, "text", last)).rstrip()
    return ""


def app_child(lines: int, keys: bool, trace: bool, journal: bool) -> dict[str, Any]:
    """(b)-(d) one headless app run in this (fresh) process."""
    import tracemalloc

    if trace:
        tracemalloc.start()
    with tempfile.TemporaryDirectory() as cwd:
        result = asyncio.run(_stream_in_app(lines, keys, Path(cwd), journal))
    if trace:
        result["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return result


def run_child(*args: str) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its last stdout line is a JSON object."""
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"bench child {args} failed:\n{out.stdout[-2000:]}{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def stream_rows(lines: int, trace: bool) -> tuple[list[Row], dict[str, Any]]:
    # The baseline of every ratio: the median of three (it is cheap, and load skews one run).
    bare = sorted((run_child("bare", str(lines)) for _ in range(3)), key=lambda r: r["run_s"])[1]
    # A twentieth of the lines: journaling is slow enough to blow the time budget at full size.
    journal_lines = max(1, lines // 20)
    journaled = run_child("bare", str(journal_lines), "--journal")
    quiet = run_child("app", str(lines), "--no-keys")
    pressed = run_child("app", str(lines))
    real = run_child("app", str(journal_lines), "--journal")
    raw = {
        "bare": bare,
        "bare_journal": journaled,
        "app": quiet,
        "app_keys": pressed,
        "app_journal_keys": real,
    }
    per_line_us = bare["run_s"] / lines * 1e6
    journal_us = journaled["run_s"] / journal_lines * 1e6
    rows = [
        Row(
            "stream_bare_s",
            f"(a) run_process, {lines:,} lines, no app",
            bare["run_s"],
            "s",
            note=f"{per_line_us:.1f} µs a line; the emit only counts; median of 3",
        ),
        Row(
            "stream_journal_us_per_line",
            "(a2) … with emit=Journal.append",
            journal_us,
            "µs",
            note=f"a line ({journal_us / per_line_us:.0f}× (a)); what every real Session adds; "
            f"{journal_lines:,} lines, {journaled['run_s']:.1f} s",
        ),
        Row(
            "stream_app_s",
            "(b) same run_process inside the app",
            quiet["run_s"],
            "s",
            note=f"{quiet['run_s'] / bare['run_s']:.2f}× (a); headless run_test",
        ),
        Row(
            "stream_app_ratio",
            "(b) ratio app / bare",
            quiet["run_s"] / bare["run_s"],
            "×",
            "≤ 1.5×",
        ),
        Row(
            "stream_app_painted_s",
            "(b) until the last line is painted",
            quiet["end_to_end_s"],
            "s",
            note=f"{quiet['frames']} frames; last: {quiet['last_log_line'][:28]!r}",
        ),
        Row(
            "stream_app_keys_s",
            "(c) run_process while tab is pressed",
            pressed["run_s"],
            "s",
            note=f"{pressed['run_s'] / bare['run_s']:.2f}× (a)",
        ),
        Row(
            "key_worst_ms",
            "(c) key → paint, worst",
            pressed["worst_ms"],
            "ms",
            "≤ 50 ms",
            presses_note(pressed),
        ),
        Row("key_p95_ms", "(c) key → paint, p95", pressed["p95_ms"], "ms"),
        Row("key_median_ms", "(c) key → paint, median", pressed["median_ms"], "ms"),
        Row(
            "key_idle_worst_ms",
            "(c) key → paint once idle, worst",
            pressed["idle_worst_ms"],
            "ms",
            "≤ 50 ms",
            f"{IDLE_PRESSES} presses after the run; median {pressed['idle_median_ms']:.0f} ms",
        ),
        Row(
            "stream_app_journal_us_per_line",
            "(b2) app + Journal subscribed, tab pressed",
            real["run_s"] / journal_lines * 1e6,
            "µs",
            note=f"a line; {journal_lines:,} lines, {real['run_s']:.1f} s: the real Session's "
            "set-up",
        ),
        Row(
            "key_worst_journal_ms",
            "(b2) key → paint, worst",
            real["worst_ms"],
            "ms",
            "≤ 50 ms",
            presses_note(real),
        ),
        Row("maxrss_bare_mb", "(d) peak RSS, no app", bare["maxrss_mb"], "MB"),
        Row("maxrss_app_mb", "(d) peak RSS, app", quiet["maxrss_mb"], "MB"),
        Row(
            "rss_after_app_mb",
            "(d) RSS after the run (app open)",
            quiet["rss_after_mb"],
            "MB",
            note=f"before the run: {quiet['rss_before_mb']:.0f} MB",
        ),
    ]
    if trace:
        traced = run_child("app", str(lines), "--no-keys", "--tracemalloc")
        raw["app_traced"] = traced
        rows.append(
            Row(
                "tracemalloc_peak_app_mb",
                "(d) tracemalloc peak, app",
                traced["tracemalloc_peak_mb"],
                "MB",
                note="separate run (tracing is slow)",
            )
        )
    return rows, raw


# -- 2e. the same run in a real pty with the real driver ---------------------------------------


def pty_app_child(lines: int, out: Path) -> None:
    """Runs in a pty: the real app and driver. Signals with files beside ``out`` (".started":
    the run began and the focus hook is on; ".painted": the end is on screen) and writes the
    frame and focus times to ``out`` when the app exits."""
    # As run_app (tui/commands/common.py) starts the real app: the import out of the collector.
    gc.disable()
    from labtui.tui.app import LabtuiApp

    gc.freeze()
    gc.enable()

    with tempfile.TemporaryDirectory() as cwd:
        session = EngineBenchSession(lines, Path(cwd))
        app = LabtuiApp(session, auto=True)  # type: ignore[arg-type]
        probe = FrameProbe(finished=lambda: app.outcome is not None)
        probe.install_frames(app)

        def watch() -> None:
            # The focus hook goes on the main screen once the run has started (it exists then).
            session.started.wait(STREAM_TIMEOUT_S)
            app.call_from_thread(lambda: probe.install_focus(app.screen))
            out.with_suffix(".started").write_text("")
            deadline = time.monotonic() + STREAM_TIMEOUT_S
            while probe.first_finished_frame is None and time.monotonic() < deadline:
                time.sleep(0.01)
            out.with_suffix(".painted").write_text("")

        threading.Thread(target=watch, daemon=True).start()
        app.run()
        exited_at = time.monotonic()
    painted = probe.first_finished_frame
    record = {
        "exited_at": exited_at,
        "run_s": session.run_s,
        "end_to_end_s": None if painted is None else painted - session.started_at,
        "frames": probe.frames,
        "focus_changes": probe.focus_changes,
        "maxrss_mb": maxrss_mb(),
    }
    out.write_text(json.dumps(record))


def _pump_until(child: PtyProcess, flag: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not flag.exists() and time.monotonic() < deadline and child.proc.poll() is None:
        child.pump(0.01)


def pty_stream_rows(lines: int, bare_s: float, tmp: Path) -> list[Row]:
    out = tmp / "pty-stream.json"
    env = clean_env(tmp / "home")
    argv = [sys.executable, str(HERE), "--child", "pty-app", str(lines), str(out)]
    child = PtyProcess(argv, tmp, env)
    presses: list[float] = []
    try:
        if FIRST_PAINT_MARKER not in child.wait_for([FIRST_PAINT_MARKER], PTY_TIMEOUT_S):
            raise RuntimeError(f"pty app never painted; last output:\n{child.tail()}")
        _pump_until(child, out.with_suffix(".started"), STREAM_TIMEOUT_S)
        painted = out.with_suffix(".painted")
        deadline = time.monotonic() + STREAM_TIMEOUT_S
        # Keys go on until the end is on screen: the app may lag well behind the run.
        while not painted.exists() and time.monotonic() < deadline:
            presses.append(time.monotonic())
            child.send(b"\t")
            _pump_until(child, painted, presses[-1] + KEY_INTERVAL_S - time.monotonic())
        # The last press may come just before the end is painted: its frame, before q.
        settled = time.monotonic() + KEY_SETTLE_S
        while time.monotonic() < settled and child.proc.poll() is None:
            child.pump(0.01)
    finally:
        child.stop(b"q", grace_s=15.0)  # queued keys are handled first: give it time
    if not out.exists():
        note = "the app left no record: it did not quit within 15 s of q and was killed"
        return [Row("pty_stream_run_s", "(e) real app in a pty", None, "s", note=note)]
    record = json.loads(out.read_text())
    probe = FrameProbe(frames=record["frames"], focus_changes=record["focus_changes"])
    keys = latency_summary(presses, probe, record["exited_at"])
    return [
        Row(
            "pty_stream_run_s",
            "(e) the run in another process, real app (pty)",
            record["run_s"],
            "s",
            note=f"{record['run_s'] / bare_s:.2f}× (a); tab every 50 ms",
        ),
        Row(
            "pty_stream_painted_s",
            "(e) until the last line is painted",
            record["end_to_end_s"],
            "s",
            note=f"{len(record['frames'])} frames written",
        ),
        Row(
            "pty_key_worst_ms",
            "(e) key → paint in pty, worst",
            keys["worst_ms"],
            "ms",
            "≤ 50 ms",
            presses_note(keys),
        ),
        Row("pty_key_p95_ms", "(e) key → paint in pty, p95", keys["p95_ms"], "ms"),
        Row("pty_key_median_ms", "(e) key → paint in pty, median", keys["median_ms"], "ms"),
        Row("pty_maxrss_mb", "(e) peak RSS, real app", record["maxrss_mb"], "MB"),
    ]


# -- entry points --------------------------------------------------------------------------


def tui_rows(
    repeat: int, lines: int, *, pty_stream: bool = True, trace: bool = False
) -> tuple[list[Row], dict[str, Any]]:
    """Every TUI measurement, as report rows plus the raw child results."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rows = first_paint_rows(repeat, tmp)
        rows += phases_rows(min(repeat, 3), tmp)
        rows += import_rows(min(repeat, 3))
        stream, raw = stream_rows(lines, trace)
        rows += stream
        if pty_stream:
            rows += pty_stream_rows(lines, raw["bare"]["run_s"], tmp)
    return rows, raw


def child_main(argv: list[str]) -> None:
    kind, *rest = argv
    if kind == "bare":
        print(json.dumps(bare_child(int(rest[0]), journal="--journal" in rest)))
    elif kind == "app":
        keys, trace, journal = (
            "--no-keys" not in rest,
            "--tracemalloc" in rest,
            "--journal" in rest,
        )
        result = app_child(int(rest[0]), keys, trace, journal)
        print(json.dumps(result))
    elif kind == "pty-app":
        pty_app_child(int(rest[0]), Path(rest[1]))
    elif kind == "engine":
        engine_child(int(rest[0]), Path(rest[1]))
    else:
        raise SystemExit(f"unknown bench child {kind!r}")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--skip-pty-stream", action="store_true")
    parser.add_argument("--tracemalloc", action="store_true", help="one more, traced, app run")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows, raw = tui_rows(
        args.repeat, args.lines, pty_stream=not args.skip_pty_stream, trace=args.tracemalloc
    )
    info = machine(load)
    print_machine(info)
    print_table(rows)
    print(json_line(rows, machine=info, raw={k: _scalars(v) for k, v in raw.items()}))


def _scalars(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not isinstance(v, list | dict)}


if __name__ == "__main__":
    main()
