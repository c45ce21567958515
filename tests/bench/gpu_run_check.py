"""A search's runs on a real GPU (not run by pytest; CI has no GPU): labtui's runner runs a
template's experiment the way a hill-climb or a tree search does — under a wall-clock budget
($LABTUI_RUN_BUDGET_S) and with a seed offset ($LABTUI_SEED), on a GPU leased from the pool —
and prints what came back: whether the template honoured the budget, the GPU it was pinned to,
the peak GPU memory the sampler saw (the ledger's memory column), and the run's own time.

    python tests/bench/gpu_run_check.py [--template grokking] [--budget-s 40] [--seeds 2]

On a machine without a GPU it runs on the CPU and says so (the GPU columns stay empty).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from labtui.core.events import Event, GpuSample, Notice
from labtui.core.machine.gpu import detect
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.contract import RunTerms
from labtui.core.settings.sections import SandboxSection
from labtui.core.settings.templates import builtin_templates_dir, copy_template


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", default="grokking")
    parser.add_argument("--budget-s", type=float, default=40.0)
    parser.add_argument("--overrun-s", type=float, default=15.0)
    parser.add_argument("--seeds", type=int, default=2, help="runs, with seed offsets 0, 1, …")
    args = parser.parse_args()
    gpus = detect()
    print(
        "GPUs:", ", ".join(f"{g.index}: {g.name} {g.mem_total_mb:.0f} MB" for g in gpus) or "none"
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / args.template
        copy_template(builtin_templates_dir() / args.template, root)
        for seed in range(args.seeds):
            events: list[Event] = []
            started = time.monotonic()
            result = run_experiment(
                root,
                f"run_{seed + 1}",
                python=sys.executable,
                timeout_s=3600,
                emit=events.append,
                stage="experiments",
                sandbox=SandboxSection(mode="limits", cgroup="off"),
                terms=RunTerms(args.budget_s, seed),
                overrun_s=args.overrun_s,
            )
            wall = time.monotonic() - started
            run_dir = root / f"run_{seed + 1}"
            record = json.loads((run_dir / "labtui_run.json").read_text())
            info = json.loads((run_dir / "final_info.json").read_text()) if result.ok else {}
            budgets = {name: entry.get("budget") for name, entry in info.items()}
            print(
                json.dumps(
                    {
                        "seed": seed,
                        "ok": result.ok,
                        "problem": result.problem,
                        "run_s": round(result.wall_s, 1),
                        "with_labtui_s": round(wall, 1),
                        "over_budget": result.over_budget,
                        "CUDA_VISIBLE_DEVICES": record["CUDA_VISIBLE_DEVICES"],
                        "peak_gpu_memory_mb": result.peak_gpu_memory_mb,
                        "peak_memory_mb": result.peak_memory_mb,
                        "gpu_samples": sum(isinstance(e, GpuSample) for e in events),
                        "notices": [e.text for e in events if isinstance(e, Notice)],
                        "means": result.means,
                        "budget": budgets,
                        "seeds": {name: entry.get("seeds") for name, entry in info.items()},
                    },
                    indent=1,
                )
            )


if __name__ == "__main__":
    main()
