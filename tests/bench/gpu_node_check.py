"""A Slurm job's node side on a real GPU (not run by pytest; CI has no GPU, and the GPU machine
has no Slurm): ``run_on_node`` runs a small PyTorch training loop as it would inside a job that
Slurm gave GPU 0 (SLURM_JOB_ID, SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES set as Slurm sets them),
and the login side's follower reads the node's GPU readings back as GpuSample events. Then the
same without GPUs from Slurm: an inherited CUDA_VISIBLE_DEVICES must not reach the run.

    python tests/bench/gpu_node_check.py [--seconds 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from labtui.core.events import Event, GpuSample
from labtui.core.settings.sections import SandboxSection
from labtui.core.slurm.follow import JobFollower
from labtui.core.slurm.node import NodeRun, run_on_node

TRAINING = """\
import json, os, pathlib, time, torch
device = "cuda" if torch.cuda.is_available() else "cpu"
print("device", device, os.environ.get("CUDA_VISIBLE_DEVICES"), flush=True)
model = torch.nn.Linear(4096, 4096).to(device)
optimiser = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(2048, 4096, device=device)
end = time.monotonic() + {seconds}
steps = 0
while time.monotonic() < end:
    loss = model(x).pow(2).mean()
    optimiser.zero_grad(); loss.backward(); optimiser.step(); steps += 1
out = pathlib.Path(os.environ["LABTUI_OUT_DIR"]); out.mkdir(parents=True, exist_ok=True)
(out / "final_info.json").write_text(json.dumps({{"d": {{"means": {{"steps": steps}}}}}}))
print("steps", steps, flush=True)
"""


def node_run(root: Path, run_id: str, gpu_log: str, seconds: float) -> NodeRun:
    return NodeRun(
        argv=[sys.executable, "experiment.py"],
        cwd=str(root),
        env={"LABTUI_OUT_DIR": str(root / run_id), "LABTUI_RUN_ID": run_id},
        timeout_s=seconds + 120,
        run_id=run_id,
        stage="experiments",
        sandbox=SandboxSection(mode="limits", cgroup="off"),
        run_dir=str(root / run_id),
        gpu_log=gpu_log,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    root = Path(args.out or tempfile.mkdtemp(prefix="labtui-node-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / "experiment.py").write_text(TRAINING.format(seconds=args.seconds), encoding="utf-8")
    gpu_log = root / "jobs" / "%j" / "%j_gpus.jsonl"

    os.environ.update({"SLURM_JOB_ID": "4242", "SLURM_JOB_GPUS": "0", "CUDA_VISIBLE_DEVICES": "0"})
    (root / "jobs" / "4242").mkdir(parents=True, exist_ok=True)
    given = run_on_node(node_run(root, "run_1", str(gpu_log), args.seconds))
    events: list[Event] = []
    readings = root / "jobs" / "4242" / "4242_gpus.jsonl"
    follower = JobFollower(
        root / "none.out", root / "none.err", readings,
        emit=events.append, stage="experiments", run_id="run_1",
    )  # fmt: skip
    follower.finish()
    samples = [e for e in events if isinstance(e, GpuSample)]

    for name in ("SLURM_JOB_GPUS",):
        os.environ.pop(name)
    os.environ.update({"SLURM_JOB_ID": "4243", "CUDA_VISIBLE_DEVICES": "3"})
    (root / "jobs" / "4243").mkdir(parents=True, exist_ok=True)
    without = run_on_node(node_run(root, "run_2", str(gpu_log), 2.0))

    report = {
        "with_gpu": {
            "returncode": given.process.returncode,
            "host": given.host,
            "cuda_visible_devices": given.cuda_visible_devices,
            "gpu_peak_mb": round(given.gpu_peak_mb, 1),
            "gpu_readings": len(samples),
            "first_reading": samples[0].gpus[0] if samples else None,
            "sample_host_job": [samples[0].host, samples[0].job_id] if samples else None,
            "sandbox": given.sandbox.get("mode"),
            "stdout_tail": given.process.stdout_tail,
        },
        "without_gpu": {
            "returncode": without.process.returncode,
            "cuda_visible_devices": without.cuda_visible_devices,
            "stdout_tail": without.process.stdout_tail,
        },
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
