"""A hostile chatty run through a real Session's subscribers (the journal, the headless printer):
the whole output lands in the run folder, capped with head and tail, the journal stays bounded,
the printer shows a sample and says what it left out, metrics are still read."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from labtui.core.events import Bus, MetricsReported
from labtui.core.journal import Journal, read_events
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.sections import ExperimentSection, ResultsSection, SandboxSection
from labtui.tui.headless import SHOWN_BURST_LINES, HeadlessPrinter

FLOOD = """\
import json, os, sys
out = sys.argv[1]
junk = "x" * 1000
for i in range(8192):  # 8 MB: 1 KB lines, a metric line every 64th
    print(f"step {i} loss {1 / (i + 1):.6f}" if i % 64 == 0 else f"{i:06d} {junk}")
print("the last line")
os.makedirs(out, exist_ok=True)
json.dump({"flood": {"means": {"loss": 0.5}}}, open(os.path.join(out, "final_info.json"), "w"))
"""


def test_a_flood_goes_to_the_run_folder_and_leaves_a_small_journal(tmp_path: Path) -> None:
    (tmp_path / "flood.py").write_text(FLOOD)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    journal = Journal(tmp_path / ".labtui")
    shown = io.StringIO()
    bus = Bus()
    bus.subscribe(journal.append)
    # A frozen clock: the printer's rate never refills, so what it shows is its burst exactly.
    bus.subscribe(HeadlessPrinter(Console(file=shown, color_system=None), clock=lambda: 0.0))
    result = run_experiment(
        tmp_path, "run_1", python=sys.executable, timeout_s=120, emit=bus.emit, stage="experiments",
        experiment=ExperimentSection(command="{python} flood.py {out_dir}", edit=["flood.py"]),
        results=ResultsSection(), sandbox=SandboxSection(mode="limits"), log_mb=2,
    )  # fmt: skip
    journal.close()
    assert result.ok, result.problem

    log = (tmp_path / "run_1" / "stdout.log").read_text()
    assert log.startswith("step 0 loss 1.000000\n000001 ")
    assert log.endswith("the last line\n")
    assert "bytes cut here" in log and "[limits] run_log_mb" in log
    assert len(log) <= 2 * 1024 * 1024 + 200
    record = json.loads((tmp_path / "run_1" / "labtui_run.json").read_text())
    assert record["output_bytes"]["stdout.log"] > 8_000_000  # all it printed, counted
    assert record["logs_cut"] == ["stdout.log"]
    ignored = subprocess.run(["git", "check-ignore", "run_1/stdout.log"], cwd=tmp_path, check=False)
    assert ignored.returncode == 0  # kept on disk, out of git (.git/info/exclude)

    assert journal.path.stat().st_size < 200_000
    events = read_events(journal.path)
    assert any(isinstance(e, MetricsReported) for e in events)  # metrics still read

    out = shown.getvalue()
    assert "lines not shown (stdout.log in the run folder has all)" in out
    assert sum(line.startswith("run_1│ ") for line in out.splitlines()) <= SHOWN_BURST_LINES + 2
