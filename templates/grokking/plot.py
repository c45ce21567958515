"""Plot the accuracy and loss curves of the runs named in ``labels``.

Run as ``python plot.py`` in the folder that holds the ``run_*`` folders. Reads
``run_*/all_results.json`` and writes into the current folder, one figure per operation:

- ``accuracy_<operation>.png``: train (dashed) and validation (solid) accuracy per step
- ``loss_<operation>.png``: train (dashed) and validation (solid) cross-entropy per step

Each line is the mean over seeds, shaded ± standard error. Only the runs listed in ``labels``
are plotted; add one entry per run you want in the figures.
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

FIGURES = {
    "accuracy": ("Accuracy", "train_acc", "val_acc"),
    "loss": ("Cross-entropy loss", "train_loss", "val_loss"),
}


def load_runs() -> dict[str, dict]:
    """run folder -> its all_results.json (operation -> results), for every labelled run on disk."""
    runs = {}
    for run in labels:
        path = os.path.join(run, "all_results.json")
        if not os.path.isfile(path):
            print(f"warning: {path} not found; skipping {run}", file=sys.stderr)
            continue
        with open(path) as f:
            runs[run] = json.load(f)
    return runs


def operations_of(runs: dict[str, dict]) -> list[str]:
    seen: list[str] = []
    for results in runs.values():
        seen += [op for op in results if op not in seen]
    return seen


def mean_and_stderr(curves: list[list[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over seeds at each evaluation. A seed the run budget stopped
    early has nulls where it was not evaluated; it is left out there (the others still count)."""
    values = np.asarray(curves, dtype=float)  # seeds x evaluations, NaN where a seed has none
    counts = np.sum(~np.isnan(values), axis=0)
    return np.nanmean(values, axis=0), np.nanstd(values, axis=0) / np.sqrt(counts)


def plot_operation(runs: dict[str, dict], operation: str, figure: str) -> None:
    ylabel, train_key, val_key = FIGURES[figure]
    colors = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (run, results) in enumerate(runs.items()):
        if operation not in results:
            continue
        steps = np.asarray(results[operation]["steps"])
        color = colors(i % 10)
        for key, style, split in ((train_key, "--", "train"), (val_key, "-", "val")):
            mean, stderr = mean_and_stderr(results[operation][key])
            ax.plot(steps, mean, style, color=color, label=f"{labels[run]} ({split})")
            ax.fill_between(steps, mean - stderr, mean + stderr, color=color, alpha=0.2)
    ax.set_xlabel("Training step")
    ax.set_ylabel(ylabel)
    if figure == "loss":
        ax.set_yscale("log")
    ax.set_title(f"{ylabel}: {operation}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    filename = f"{figure}_{operation}.png"
    fig.savefig(filename, dpi=150)
    plt.close(fig)
    print(f"wrote {filename}")


def main() -> None:
    runs = load_runs()
    if not runs:
        sys.exit(f"no results to plot: none of {', '.join(labels)} has an all_results.json")
    for operation in operations_of(runs):
        for figure in FIGURES:
            plot_operation(runs, operation, figure)


if __name__ == "__main__":
    main()
