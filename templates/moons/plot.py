"""Plot the training curves of the runs named in ``labels``.

Run as ``python plot.py`` in the folder that holds the ``run_*`` folders. Reads
``run_*/all_results.json`` and writes into the current folder:

- ``train_loss.png``: training cross-entropy per epoch (mean over seeds, shaded ± standard error)
- ``test_accuracy.png``: test accuracy per epoch (same)

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

DATASET = "moons"
FIGURES = {
    "train_loss": ("Training loss (cross-entropy)", "train_loss.png"),
    "test_accuracy": ("Test accuracy", "test_accuracy.png"),
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
    """Mean and standard error over seeds at each epoch. A seed the run budget stopped early
    has nulls after its last epoch; it is left out there (the others still count)."""
    values = np.asarray(curves, dtype=float)  # seeds x epochs, NaN where a seed has no value
    counts = np.sum(~np.isnan(values), axis=0)
    return np.nanmean(values, axis=0), np.nanstd(values, axis=0) / np.sqrt(counts)


def plot_metric(runs: dict[str, dict], metric: str, ylabel: str, filename: str) -> None:
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (run, results) in enumerate(runs.items()):
        mean, stderr = mean_and_stderr(results[metric])
        epochs = np.asarray(results["epochs"])
        color = colors(i % 10)
        ax.plot(epochs, mean, label=labels[run], color=color)
        ax.fill_between(epochs, mean - stderr, mean + stderr, color=color, alpha=0.2)
    ax.set_xlabel("Epoch")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ylabel} on two moons")
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
