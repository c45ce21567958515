"""Plot the training curves and generated samples of the runs named in ``labels``.

Run as ``python plot.py`` in the folder that holds the ``run_*`` folders. Reads
``run_*/all_results.json`` and writes into the current folder:

- ``train_loss.png``: training loss (noise-prediction MSE) per step, one panel per data set,
  one line per run (mean over seeds, shaded ± standard error)
- ``generated_samples.png``: a grid of generated points (seed 0), one row per run and one column
  per data set, with the real held-out points in grey behind them

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


def load_runs() -> dict[str, dict]:
    """run folder -> its all_results.json (data set -> results), for every labelled run on disk."""
    runs = {}
    for run in labels:
        path = os.path.join(run, "all_results.json")
        if not os.path.isfile(path):
            print(f"warning: {path} not found; skipping {run}", file=sys.stderr)
            continue
        with open(path) as f:
            runs[run] = json.load(f)
    return runs


def datasets_of(runs: dict[str, dict]) -> list[str]:
    seen: list[str] = []
    for results in runs.values():
        seen += [d for d in results if d not in seen]
    return seen


def mean_and_stderr(curves: list[list[float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over seeds at each point. A seed the run budget stopped early
    has nulls where it has no point; it is left out there (the others still count)."""
    values = np.asarray(curves, dtype=float)  # seeds x points, NaN where a seed has none
    counts = np.sum(~np.isnan(values), axis=0)
    return np.nanmean(values, axis=0), np.nanstd(values, axis=0) / np.sqrt(counts)


def plot_train_loss(runs: dict[str, dict], datasets: list[str], filename: str) -> None:
    colors = plt.get_cmap("tab10")
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(4 * len(datasets), 3.5), squeeze=False, sharey=True
    )
    for ax, dataset in zip(axes[0], datasets, strict=True):
        for i, (run, results) in enumerate(runs.items()):
            if dataset not in results:
                continue
            mean, stderr = mean_and_stderr(results[dataset]["train_loss"])
            steps = np.asarray(results[dataset]["steps"])
            color = colors(i % 10)
            ax.plot(steps, mean, label=labels[run], color=color)
            ax.fill_between(steps, mean - stderr, mean + stderr, color=color, alpha=0.2)
        ax.set_title(dataset)
        ax.set_xlabel("Training step")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("Training loss (noise MSE)")
    axes[0][-1].legend()
    fig.tight_layout()
    fig.savefig(filename, dpi=150)
    plt.close(fig)
    print(f"wrote {filename}")


def plot_samples(runs: dict[str, dict], datasets: list[str], filename: str) -> None:
    fig, axes = plt.subplots(
        len(runs),
        len(datasets),
        figsize=(3 * len(datasets), 3 * len(runs)),
        squeeze=False,
    )
    for row, (run, results) in enumerate(runs.items()):
        for col, dataset in enumerate(datasets):
            ax = axes[row][col]
            if dataset in results:
                real = np.asarray(results[dataset]["real"])
                generated = np.asarray(results[dataset]["generated"])
                ax.scatter(real[:, 0], real[:, 1], s=2, color="0.8", label="real")
                ax.scatter(generated[:, 0], generated[:, 1], s=2, color="C0", label="generated")
            ax.set_xlim(-3, 3)
            ax.set_ylim(-3, 3)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_aspect("equal")
            if row == 0:
                ax.set_title(dataset)
            if col == 0:
                ax.set_ylabel(labels[run])
    fig.tight_layout()
    fig.savefig(filename, dpi=150)
    plt.close(fig)
    print(f"wrote {filename}")


def main() -> None:
    runs = load_runs()
    if not runs:
        sys.exit(f"no results to plot: none of {', '.join(labels)} has an all_results.json")
    datasets = datasets_of(runs)
    plot_train_loss(runs, datasets, "train_loss.png")
    plot_samples(runs, datasets, "generated_samples.png")


if __name__ == "__main__":
    main()
