"""Wall time of each template's *default* (GPU-sized) run on this machine, for the closing notes.

    .venv/bin/python tests/bench/template_defaults.py [--budget 120] [--only NAME ...]

Each template runs as a researcher's run_0 would (`python experiment.py --out_dir=run_0`, no
LABTUI_SMOKE) in a fresh copy, for at most --budget seconds. A run that ends in time is reported
as measured. One that does not is projected from its own progress lines (`step|iter|epoch X/Y`):
seconds per step over the steps it did, times the steps of every unit (data set or operation ×
seed, read from the template's constants), plus the start-up it took; evaluations between
progress lines are in the per-step time. A template that prints no progress line within the
budget (char_lm evaluates before its first line) is projected from timed training steps of its
default model instead. Numbers only: nothing here asserts a goal. Needs no GPU; uses one if
there is one (the device is printed).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from tui_bench import Row, json_line, machine, print_machine, print_table  # noqa: E402

from labtui.core.settings.templates import copy_template  # noqa: E402

PROGRESS = re.compile(r"\b(?:step|iter|epoch)\s+(\d+)/(\d+)")
DEVICE = re.compile(r"\bdevice[ =](\w+)")


@dataclass
class Progress:
    started: float
    first: tuple[float, int] | None = None  # (when, step) of the first line of the current unit
    last: tuple[float, int, int] | None = None  # (when, step, of)
    units_done: int = 0
    device: str = ""

    def see(self, line: str, now: float) -> None:
        device = DEVICE.search(line)
        if device and not self.device:
            self.device = device.group(1)
        found = PROGRESS.search(line)
        if not found:
            return
        step, of = int(found.group(1)), int(found.group(2))
        if self.last is not None and step < self.last[1]:
            self.first = None  # a new unit (data set or seed) began
        if self.first is None:
            self.first = (now, step)
        if step == of:
            self.units_done += 1
        self.last = (now, step, of)

    def per_step_s(self) -> float | None:
        if self.first is None or self.last is None or self.last[1] <= self.first[1]:
            return None
        return (self.last[0] - self.first[0]) / (self.last[1] - self.first[1])


def units_of(experiment: Path) -> int:
    """Data sets (or operations) × seeds, from the template's constants."""
    code = experiment.read_text(encoding="utf-8")
    seeds = re.search(r"^N_SEEDS = (\d+)", code, re.MULTILINE)
    lists = re.search(r"^(?:DATASETS|OPERATIONS) = \[(.*?)\]", code, re.MULTILINE)
    count = len(re.findall(r"\"[^\"]+\"", lists.group(1))) if lists else 1
    return count * (int(seeds.group(1)) if seeds else 1)


def run_for(root: Path, budget_s: float) -> tuple[Progress, float | None]:
    """Run the default experiment for at most ``budget_s``; (progress, wall time if it ended)."""
    env = {k: v for k, v in os.environ.items() if k != "LABTUI_SMOKE"}
    env["PYTHONUNBUFFERED"] = "1"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "experiment.py", "--out_dir=run_0"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    progress = Progress(started)
    reader = threading.Thread(
        target=lambda: [progress.see(line, time.perf_counter()) for line in proc.stdout],
        daemon=True,
    )
    reader.start()
    try:
        proc.wait(timeout=budget_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return progress, None
    reader.join(5)
    if proc.returncode != 0:
        raise RuntimeError(f"{root.name}: the default run failed with {proc.returncode}")
    return progress, time.perf_counter() - started


def char_lm_step_projection(root: Path, steps: int = 3) -> tuple[float, str]:
    """Seconds for char_lm's default run from timed training steps of its default model:
    MAX_ITERS steps per seed plus its evaluations (2 × EVAL_ITERS forward passes, about a third
    of a step each, every EVAL_INTERVAL iterations)."""
    probe = f"""
import sys, time, torch
sys.argv = ["experiment.py"]
sys.path.insert(0, {str(root)!r})
import experiment as e
data = e.load_data()
torch.manual_seed(0)
model = e.GPT(len(data["chars"])).to(e.DEVICE)
opt = e.make_optimizer(model)
g = torch.Generator().manual_seed(0)
times = []
for _ in range({steps} + 1):
    x, y = e.get_batch(data["train"], g)
    t = time.perf_counter()
    with e.autocast():
        _, loss = model(x.to(e.DEVICE), y.to(e.DEVICE))
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    if e.DEVICE == "cuda":
        torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
step = sorted(times[1:])[len(times[1:]) // 2]
evals = e.MAX_ITERS // e.EVAL_INTERVAL + 1
total = e.N_SEEDS * (e.MAX_ITERS * step + evals * 2 * e.EVAL_ITERS * step / 3)
print(f"RESULT {{total}} {{step}} {{e.DEVICE}}")
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT"))
    _, total, step, device = line.split()
    return float(
        total
    ), f"projected from {steps} timed training steps ({float(step):.1f} s each, {device})"


def default_rows(names: list[str], budget_s: float) -> list[Row]:
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / name
            copy_template(ROOT / "templates" / name, root)
            progress, wall = run_for(root, budget_s)
            units = units_of(root / "experiment.py")
            per_step = progress.per_step_s()
            if wall is not None:
                value, note = wall, "ran to the end"
            elif per_step is not None and progress.last is not None:
                of = progress.last[2]
                startup = (
                    progress.first[0] if progress.first else progress.started
                ) - progress.started
                value = startup + per_step * of * units
                note = (
                    f"projected: {per_step * 1000:.0f} ms/step × {of} steps × {units} units; "
                    f"reached step {progress.last[1]} of unit {progress.units_done + 1} in {budget_s:.0f} s"
                )
            elif name == "char_lm":
                value, note = char_lm_step_projection(root)
            else:
                value, note = None, f"no progress line within {budget_s:.0f} s"
        device = progress.device or "not printed"
        rows.append(
            Row(
                f"template_{name}_default_s",
                f"template {name}: default run",
                value,
                "s",
                note=f"{note}; device {device}",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per template")
    parser.add_argument("--only", nargs="*", default=None, help="template names")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from labtui.core.settings.templates import list_templates

    load = os.getloadavg()[0]
    rows = default_rows(args.only or list_templates(), args.budget)
    info = machine(load)
    print_machine(info)
    print_table(rows)
    print(json_line(rows, machine=info))


if __name__ == "__main__":
    main()
