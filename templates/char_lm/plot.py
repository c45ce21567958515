"""Plot the loss curves of the runs named in ``labels``.

Run as ``python plot.py`` in the folder that holds the ``run_*`` folders. Reads
``run_*/all_results.json`` and writes into the current folder:

- ``train_loss.png``: estimated training loss (nats per character) at every evaluation, mean over
  seeds with a band of ± one standard error
- ``val_loss.png``: validation loss, same layout; the dashed line marks the best run's minimum

Only the runs listed in ``labels`` are plotted; add one entry per run you want in the figures.
"""

from __future__ import annotations

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on a server
import matplotlib.pyplot as plt
import numpy as np

# Run folder -> legend label. Only these runs are plotted.
labels = {
    "run_0": "Baseline",
}

DATASET = "kjv_genesis"
FIGURES = {
    "train_loss": ("Training loss (nats/char)", "train_loss.png"),
    "val_loss": ("Validation loss (nats/char)", "val_loss.png"),
}


def load_runs() -> dict[str, dict]:
    """run folder -> its all_results.json entry for DATASET, for every labelled run on disk."""
    runs = {}
    for run in labels:
        path = os.path.join(run, "all_results.json")
        if not os.path.isfile(path):
            print(f"warning: {path} not found; skipping {run}", file=sys.stderr)
            continue
        with open(path) as f:
            runs[run] = json.load(f)[DATASET]
    return runs


def mean_and_stderr(curves: list[list[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over seeds at each evaluation. A seed the run budget stopped
    early has nulls where it was not evaluated; it is left out there (the others still count)."""
    values = np.asarray(curves, dtype=float)  # seeds x evaluations, NaN where a seed has none
    counts = np.sum(~np.isnan(values), axis=0)
    return np.nanmean(values, axis=0), np.nanstd(values, axis=0) / np.sqrt(counts)


def plot_metric(runs: dict[str, dict], metric: str, ylabel: str, filename: str) -> None:
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(6, 4))
    best = float("inf")
    for i, (run, results) in enumerate(runs.items()):
        mean, stderr = mean_and_stderr(results[metric])
        iters = np.asarray(results["iters"])
        color = colors(i % 10)
        ax.plot(iters, mean, label=labels[run], color=color)
        ax.fill_between(iters, mean - stderr, mean + stderr, color=color, alpha=0.2)
        best = min(best, float(mean.min()))
    if metric == "val_loss" and np.isfinite(best):
        ax.axhline(best, color="grey", linestyle="--", linewidth=0.8, label=f"best {best:.3f}")
    ax.set_xlabel("Iteration")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ylabel.split(' (')[0]}, character-level GPT on Genesis (KJV)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(filename, dpi=150)
    plt.close(fig)
    print(f"wrote {filename}")


def main() -> None:
    runs = load_runs()
    if not runs:
        sys.exit(f"no results to plot: none of {', '.join(labels)} has an all_results.json")
    for metric, (ylabel, filename) in FIGURES.items():
        plot_metric(runs, metric, ylabel, filename)


if __name__ == "__main__":
    main()
