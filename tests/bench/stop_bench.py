"""How fast labtui ends what it must end (not run by pytest): the timings the tests no longer
assert, because a loaded machine stretches them while the outcome stays right.

    .venv/bin/python tests/bench/stop_bench.py [--repeat 5]

- a stop (parallel ideas ending): `stop` set -> run_process returns, child and grandchild gone;
- a timeout on a child that ignores SIGTERM: run_process's wall time minus its timeout (the
  SIGTERM grace, then SIGKILL);
- a grandchild left holding the pipes after its parent exited: run_process's wall time (the
  drain period, then the group is stopped);
- a TeX document that loops forever, compiled with a 2 s timeout: compile_latex's wall time;
- `labtui --help` is timed by bench.py (help_ms).

Prints one table and one JSON line, like bench.py, with the machine's load: run it with
`yes > /dev/null &` twice beside it to see what a loaded 2-core machine does to each number.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from tui_bench import Row, print_report  # noqa: E402

from labtui.core.events import Event, LogLine  # noqa: E402
from labtui.core.latex.compile import compile_latex  # noqa: E402
from labtui.core.machine.processes import run_process, tool_available  # noqa: E402

STOPPED_ONCE_UP = """\
import subprocess, time
subprocess.Popen(["sleep", "600"])
print("up", flush=True)
time.sleep(600)
"""
IGNORES_SIGTERM = """\
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(600)
"""
LEAVES_A_GRANDCHILD = """\
import subprocess
subprocess.Popen(["sleep", "600"])
"""
TEX_LOOP = "\\documentclass{article}\n\\begin{document}\n\\def\\x{\\x}\\x\n\\end{document}\n"


def stop_latency_s(folder: Path) -> float:
    """From the moment `stop` is set (the child is up) to run_process's return."""
    stop = threading.Event()
    stopped_at: list[float] = []

    def stop_once_up(event: Event) -> None:
        if isinstance(event, LogLine) and "up" in event.text and not stop.is_set():
            stopped_at.append(time.perf_counter())
            stop.set()

    run_process(
        [sys.executable, "-c", STOPPED_ONCE_UP],
        cwd=folder,
        timeout_s=600,
        run_id="r",
        emit=stop_once_up,
        stage="bench",
        stop=stop,
    )
    return time.perf_counter() - stopped_at[0]


def sigterm_ignored_beyond_timeout_s(folder: Path, timeout_s: float = 1.0) -> float:
    started = time.perf_counter()
    run_process(
        [sys.executable, "-c", IGNORES_SIGTERM],
        cwd=folder,
        timeout_s=timeout_s,
        run_id="r",
        emit=lambda event: None,
        stage="bench",
    )
    return time.perf_counter() - started - timeout_s


def leftover_grandchild_s(folder: Path) -> float:
    started = time.perf_counter()
    run_process(
        [sys.executable, "-c", LEAVES_A_GRANDCHILD],
        cwd=folder,
        timeout_s=600,
        run_id="r",
        emit=lambda event: None,
        stage="bench",
    )
    return time.perf_counter() - started


def tex_timeout_s(folder: Path, timeout_s: float = 2.0) -> float:
    tex = folder / "loop.tex"
    tex.write_text(TEX_LOOP)
    started = time.perf_counter()
    compile_latex(tex, folder / "loop.pdf", timeout_s=timeout_s)
    return time.perf_counter() - started


def median_row(key: str, label: str, repeat: int, measure: Callable[[Path], float]) -> Row:
    samples = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as scratch:
            samples.append(measure(Path(scratch)))
    note = f"median of {repeat}, worst {max(samples) * 1000:.0f} ms"
    return Row(key, label, statistics.median(samples) * 1000, "ms", note=note)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = [
        median_row(
            "stop_ms", "stop -> run ended (child + grandchild)", args.repeat, stop_latency_s
        ),
        median_row(
            "sigterm_ignored_ms",
            "timeout, SIGTERM ignored: beyond the timeout",
            args.repeat,
            sigterm_ignored_beyond_timeout_s,
        ),
        median_row(
            "leftover_grandchild_ms",
            "grandchild holding the pipes: whole run",
            args.repeat,
            leftover_grandchild_s,
        ),
    ]
    if tool_available("latexmk") or tool_available("pdflatex"):
        rows.append(
            median_row("tex_timeout_ms", "TeX loop, 2 s timeout: whole compile", 1, tex_timeout_s)
        )
    print_report(rows, load)


if __name__ == "__main__":
    main()
