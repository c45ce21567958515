"""A chatty run through labtui against the same run bare (not run by pytest): what reading,
parsing, journaling and showing a run's output cost, and what it leaves on disk.

    .venv/bin/python tests/bench/flood_bench.py [--mb 128] [--line-bytes 1024] [--repeat 3]
                                                [--sandbox auto|limits|off] [--metrics]

- bare: ``python flood.py > file`` (no labtui, no sandbox): the child's own cost of writing;
- labtui: ``run_experiment`` (the sandbox as chosen, bwrap where it works) with a bus whose
  subscribers are a real Session's: the Journal first, then the headless printer writing to
  /dev/null (a terminal would add its own cost, which is the terminal's). The wall time is the
  run's ``wall_s`` as labtui_run.json records it, so the model and the set-up stay out of it.
- journal bytes per MB of output, the sizes of ``run_i/stdout.log`` and ``stderr.log``.

``--metrics`` makes every 50th line a metric line ("step 12 loss 0.5"), so the parser and the
journal's metric points are in the measurement too. Prints one table and one JSON line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from tui_bench import Row, print_report  # noqa: E402

from labtui.core.events import Bus  # noqa: E402
from labtui.core.journal import Journal  # noqa: E402
from labtui.core.runs.runner import run_experiment  # noqa: E402
from labtui.core.settings.sections import (  # noqa: E402
    ExperimentSection,
    ResultsSection,
    SandboxSection,
)
from labtui.tui.headless import HeadlessPrinter  # noqa: E402

FLOOD = """\
import json, os, sys
lines, width, metrics = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
junk = "x" * (width - 1) + "\\n"
write = sys.stdout.write
for i in range(lines):
    if metrics and i % 50 == 0:
        write(f"step {i} loss {1 / (i + 1):.5f}\\n")
    else:
        write(junk)
sys.stdout.flush()
out = sys.argv[4]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({"flood": {"means": {"loss": 0.5}}}, f)
"""


def bare_seconds(project: Path, argv: list[str]) -> float:
    out = project / "bare.out"
    start = time.monotonic()
    with out.open("wb") as sink:
        subprocess.run([sys.executable, *argv], cwd=project, stdout=sink, check=True)
    seconds = time.monotonic() - start
    out.unlink()
    return seconds


def labtui_run(project: Path, run_id: str, args: list[str], sandbox: str) -> dict[str, float]:
    state = project / ".labtui"
    journal = Journal(state)
    before = journal.path.stat().st_size
    bus = Bus()
    bus.subscribe(journal.append)
    with open("/dev/null", "w") as devnull:
        bus.subscribe(HeadlessPrinter(Console(file=devnull)))
        experiment = ExperimentSection(
            command="{python} flood.py " + " ".join(args) + " {out_dir}", edit=["flood.py"]
        )
        result = run_experiment(
            project, run_id, python=sys.executable, timeout_s=900, emit=bus.emit, stage="bench",
            experiment=experiment, results=ResultsSection(), sandbox=SandboxSection(mode=sandbox),
        )  # fmt: skip
    journal.close()
    if result.problem:
        raise SystemExit(f"the run failed: {result.problem}")
    run_dir = project / run_id
    sizes = {name: _size(run_dir / name) for name in ("stdout.log", "stderr.log")}
    return {
        "wall_s": result.wall_s,
        "journal_bytes": journal.path.stat().st_size - before,
        "stdout_log": sizes["stdout.log"],
        "stderr_log": sizes["stderr.log"],
    }


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=128.0, help="MB the run prints")
    parser.add_argument("--line-bytes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sandbox", default="auto", choices=("auto", "limits", "off"))
    parser.add_argument("--metrics", action="store_true", help="every 50th line a metric line")
    options = parser.parse_args()
    load = os.getloadavg()[0]
    lines = int(options.mb * 1024 * 1024 / options.line_bytes)
    with tempfile.TemporaryDirectory(prefix="labtui-flood-") as folder:
        project = Path(folder)
        (project / "flood.py").write_text(FLOOD)
        args = [str(lines), str(options.line_bytes), "1" if options.metrics else "0"]
        bare = [
            bare_seconds(project, ["flood.py", *args, "bare_out"]) for _ in range(options.repeat)
        ]
        runs = [
            labtui_run(project, f"run_{i}", args, options.sandbox) for i in range(options.repeat)
        ]
    mb = lines * options.line_bytes / 1e6
    bare_s = statistics.median(bare)
    wall_s = statistics.median(r["wall_s"] for r in runs)
    journal = statistics.median(r["journal_bytes"] for r in runs)
    label = f"{lines:,} lines of {options.line_bytes} B ({mb:.0f} MB)"
    rows = [
        Row("bare_ms", f"bare to a file, {label}", bare_s * 1000, "ms"),
        Row(
            "labtui_ms",
            f"through labtui ({options.sandbox}), the run's wall_s",
            wall_s * 1000,
            "ms",
        ),
        Row("ratio", "labtui / bare", wall_s / bare_s, "x", goal="<= 2"),
        Row("journal_b_per_mb", "journal bytes per MB of output", journal / mb, "B"),
        Row("journal_b", "journal bytes for the run", journal, "B", goal="< 5 MB"),
        Row("stdout_log_b", "run_i/stdout.log bytes", runs[-1]["stdout_log"], "B"),
    ]
    print_report(rows, load)


if __name__ == "__main__":
    main()
