"""TEST-ONLY: a researcher's own small repository, as `labtui init` meets it: a training script
with its own arguments (argparse, an --output_dir, a --max_steps smoke setting), its own way of
writing results (a nested metrics.json), an evaluation file that must not change, a README that
says how to run it, results from earlier runs, and a LaTeX draft with sections. Never used by
the product.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

TRAIN = '''\
"""Logistic regression on a fixed synthetic data set, trained by gradient descent."""

import argparse
import json
import os

import numpy as np

from evaluate import accuracy
from model import predict

LR = 0.5


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", required=True, help="where metrics.json goes")
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--max_steps", type=int, default=200, help="training steps")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(float)
    w = np.zeros(2)
    for step in range(1, args.max_steps + 1):
        p = predict(w, x)
        loss = float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))
        w -= args.lr * x.T @ (p - y) / len(y)
        if step % 50 == 0:
            print(f"step {step} train_loss {loss:.4f}")
    os.makedirs(args.output_dir, exist_ok=True)
    metrics = {"eval": {"accuracy": accuracy(predict(w, x), y), "loss": loss}}
    with open(os.path.join(args.output_dir, "metrics.json"), "w") as handle:
        json.dump(metrics, handle)


if __name__ == "__main__":
    main()
'''

MODEL = """\
import numpy as np


def predict(w, x):
    return 1 / (1 + np.exp(-x @ w))
"""

EVALUATE = """\
def accuracy(p, y):
    return float(((p > 0.5) == (y > 0.5)).mean())
"""

README = """\
# Noisy linear boundaries

How fast does plain gradient descent find a linear boundary, and how does the learning rate
change that? A small study of logistic regression on a synthetic two-feature data set.

## Run

```bash
python train.py --output_dir outputs/lr05 --lr 0.5
```
"""

PAPER = r"""\documentclass{article}
\usepackage{graphicx}
\usepackage[round]{natbib}
\title{Learning Rates for Linear Boundaries}
\author{A. Researcher}
\begin{document}
\maketitle
\begin{abstract}
We study learning rates.
\end{abstract}

\section{Introduction}
Gradient descent on logistic regression is the simplest learner \citep{bottou2010large}.
Our own earlier result: an accuracy of 0.97 at a learning rate of 0.5.

\section{Experiments}
TO BE WRITTEN.

\section{Conclusion}
To be written too.

\bibliographystyle{plainnat}
\bibliography{refs}
\end{document}
"""

REFS = """\
@inproceedings{bottou2010large,
  title = {Large-Scale Machine Learning with Stochastic Gradient Descent},
  author = {Bottou, L{\\'e}on},
  booktitle = {Proceedings of COMPSTAT 2010},
  pages = {177--186},
  year = {2010}
}
"""

EARLIER_METRICS = '{"eval": {"accuracy": 0.97, "loss": 0.21}}\n'
EARLIER_TABLE = "method,lr,accuracy,loss\ngd,0.5,0.97,0.21\ngd,0.05,0.91,0.44\n"


def make_repository(root: Path, *, with_paper: bool = True) -> Path:
    """The repository, committed on main with a local git identity."""
    files = {
        "train.py": TRAIN,
        "model.py": MODEL,
        "evaluate.py": EVALUATE,
        "README.md": README,
        "outputs/lr05/metrics.json": EARLIER_METRICS,
        "results.csv": EARLIER_TABLE,
    }
    if with_paper:
        files |= {"paper/main.tex": PAPER, "paper/refs.bib": REFS}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "A. Researcher")
    git(root, "config", "user.email", "researcher@example.org")
    git(root, "add", "--all")
    git(root, "commit", "-q", "-m", "my research so far")
    return root


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()
