"""What a run costs as a Slurm job compared with a local run (not run by pytest).

    .venv/bin/python tests/bench/slurm_bench.py [--runs 8] [--run-s 1.0] [--poll-s 0.2]

Starts the test suite's real single-node Slurm (tests/support/slurm_cluster.py: munge,
slurmctld, slurmd, slurmdbd with MariaDB; root and the Debian packages needed), then does the
same tiny experiment (it sleeps ``--run-s`` and writes final_info.json) ``--runs`` times with
``[cluster] backend = "local"`` and as many times with ``"slurm"``, through labtui's runner as
the experiments stage calls it. Per run, from the events' own times:

- submit→start: from RunStarted (the runner submits right after it) to the first JobState
  RUNNING, which labtui sees at its next poll (``--poll-s``);
- submit→result: from RunStarted to the runner's return, the result collected;
- overhead: the runner's whole time minus the experiment process's own wall time, locally
  (interpreter probe, sandbox, GPU lease, record) and as a job (all that plus sbatch, the
  queue, the job's start on the node, following its files and collecting its result).

Prints one table and one JSON line, like the other bench scripts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.slurm_cluster import cluster_unavailable_reason, shared_cluster

from labtui.core.events import JobState, RunStarted
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.sections import ClusterSection

EXPERIMENT = """\
import json, os, pathlib, time
time.sleep({run_s})
out = pathlib.Path(os.environ["LABTUI_OUT_DIR"])
out.mkdir(parents=True, exist_ok=True)
(out / "final_info.json").write_text(json.dumps({{"d": {{"means": {{"acc": 1.0}}}}}}))
"""


def one_run(root: Path, index: int, cluster: ClusterSection) -> dict[str, float]:
    events: list = []
    called = time.monotonic()
    result = run_experiment(
        root, f"run_{index}", python=sys.executable, timeout_s=600, emit=events.append,
        stage="experiments", cluster=cluster,
    )  # fmt: skip
    whole = time.monotonic() - called
    returned = time.time()
    if not result.ok:
        raise SystemExit(f"run_{index} failed: {result.problem}")
    started = next(e.ts for e in events if isinstance(e, RunStarted))
    running = [e.ts for e in events if isinstance(e, JobState) and e.state == "RUNNING"]
    return {
        "whole_s": whole,
        "run_s": result.wall_s,
        "overhead_s": whole - result.wall_s,
        "submit_to_start_s": running[0] - started if running else float("nan"),
        "submit_to_result_s": returned - started,
    }


def measure(backend: str, runs: int, run_s: float, poll_s: float) -> list[dict[str, float]]:
    cluster = ClusterSection(backend=backend, partition="debug", cpus=1, mem_gb=0.5, poll_s=poll_s)
    with tempfile.TemporaryDirectory(prefix=f"labtui-bench-{backend}-") as folder:
        root = Path(folder)
        (root / "experiment.py").write_text(EXPERIMENT.format(run_s=run_s), encoding="utf-8")
        return [one_run(root, index, cluster) for index in range(1, runs + 1)]


def median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--run-s", type=float, default=1.0)
    parser.add_argument("--poll-s", type=float, default=0.2)
    args = parser.parse_args()
    if reason := cluster_unavailable_reason():
        print(f"no test cluster here: {reason}")
        return 2
    began = time.monotonic()
    with shared_cluster() as cluster:
        ready_s = time.monotonic() - began
        local = measure("local", args.runs, args.run_s, args.poll_s)
        slurm = measure("slurm", args.runs, args.run_s, args.poll_s)
        version = cluster.version
    summary = {
        "slurm": version,
        "cluster_ready_s": round(ready_s, 2),
        "runs": args.runs,
        "run_s": args.run_s,
        "poll_s": args.poll_s,
        "local_overhead_s": round(median(local, "overhead_s"), 3),
        "slurm_overhead_s": round(median(slurm, "overhead_s"), 3),
        "submit_to_start_s": round(median(slurm, "submit_to_start_s"), 3),
        "submit_to_result_s": round(median(slurm, "submit_to_result_s"), 3),
        "slurm_overhead_max_s": round(max(r["overhead_s"] for r in slurm), 3),
    }
    print(f"Slurm {version}, cluster up in {ready_s:.1f} s; {args.runs} runs of {args.run_s:g} s")
    print(f"{'backend':8} {'overhead (median)':>18} {'submit→start':>13} {'submit→result':>14}")
    print(f"{'local':8} {summary['local_overhead_s']:>17.2f}s {'—':>13} {'—':>14}")
    print(
        f"{'slurm':8} {summary['slurm_overhead_s']:>17.2f}s "
        f"{summary['submit_to_start_s']:>12.2f}s {summary['submit_to_result_s']:>13.2f}s"
    )
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
