"""TEST-ONLY: a researcher's own small repository, as `labtui init` meets it: a training script
with its own arguments (argparse, an --output_dir, a --max_steps smoke setting), its own way of
writing results (a nested metrics.json), an evaluation file that must not change, a README that
says how to run it, results from earlier runs, and a LaTeX draft with sections. Never used by
the product.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .research_script import (
    REVIEW,
    MoonsResearch,
    fenced_json,
    last_user_text,
    scripted_plan,
    whole_file_edit,
)

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
    y = (x[:, 0] + 0.5 * x[:, 1] + 0.7 * rng.normal(size=400) > 0).astype(float)
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
    return commit_as_researcher(root)


def write_files(root: Path, files: dict[str, str]) -> Path:
    """``files`` (path: text) written under ``root``, their folders made."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def commit_as_researcher(root: Path) -> Path:
    """The files in ``root`` as a researcher's repository: committed on main, with a local git
    identity."""
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "A. Researcher")
    git(root, "config", "user.email", "researcher@example.org")
    git(root, "add", "--all")
    git(root, "commit", "-q", "-m", "my research so far")
    return root


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout.strip()


# -- the scripted research on it (TEST-ONLY), stage by stage -------------------------------------

REPO_IDEA = {
    "Name": "smaller_learning_rate",
    "Title": "Does a Smaller Learning Rate Find the Boundary as Well?",
    "Hypothesis": "Gradient descent with a tenth of the learning rate reaches a lower accuracy in "
    "the same number of steps, because it moves the weights less per step.",
    "Experiment": "Lower LR in train.py from 0.5 to 0.05 and compare eval.accuracy with run_0.",
    "Interestingness": 4,
    "Feasibility": 9,
    "Novelty": 3,
}


# Written by hand: every point names what the repository's paper has (the learning rate,
# gradient descent, logistic regression), as a grounded review must (core/review/grounding.py).
REPO_REVIEW = {
    **REVIEW,
    "Summary": "The paper lowers the learning rate of gradient descent on logistic regression "
    "from 0.5 to 0.05 and compares the accuracy.",
    "Strengths": [
        "Gradient descent on logistic regression is a clean testbed",
        "The earlier run at a learning rate of 0.5 is compared",
    ],
    "Weaknesses": ["Gradient descent is the only learner", "Only logistic regression is studied"],
}


class RepoResearch(MoonsResearch):
    """The scripted answers for the research repository; the literature and novelty are the
    moons research's."""

    def review(self, request):
        if last_user_text(request).startswith("Reflection round"):
            return json.dumps({"done": True})
        return fenced_json(REPO_REVIEW, "My review:")

    def ideas(self, request):
        return self.answer_ideas(request, [REPO_IDEA])

    def experiments(self, request):
        asks = [str(m.get("content")) for m in request.get("messages", [])]
        if any("has finished. What it changed" in text for text in asks):
            return fenced_json(
                {
                    "analysis": "The smaller learning rate changes eval.accuracy against "
                    "the baseline run_0 as the table shows.",
                    "next": "finish",
                    "why": "one run answers the question",
                }
            )
        plans = [text for text in asks if text.startswith("Plan the experiment runs")]
        if plans:
            return scripted_plan(
                plans[0],
                "Lower LR from 0.5 to 0.05 in train.py",
                measure="eval.accuracy against run_0",
            )
        code = (self.root / "train.py").read_text(encoding="utf-8")
        # The README's command passes --lr 0.5, so the default is not enough: the change
        # makes the script scale whatever rate it is given, as a researcher would.
        code = code.replace("w -= args.lr *", "w -= 0.1 * args.lr *")
        return whole_file_edit("train.py", code, "Use a tenth of the learning rate.")

    def plots(self, request):
        text = last_user_text(request)
        if text.startswith("Describe each figure"):
            return fenced_json({"figures": {"accuracy.png": "eval.accuracy of each run, "
                                            "baseline and smaller learning rate"}})  # fmt: skip
        return whole_file_edit("plot.py", PLOT, "A bar per run.")

    def writeup(self, request):
        text = last_user_text(request)
        tex_path = self.root / "paper" / "main.tex"
        tex = tex_path.read_text(encoding="utf-8")
        if "Write Experiments of it" in text:
            base, smaller = self._eval("run_0"), self._eval("run_1")
            tex = tex.replace(
                "TO BE WRITTEN.",
                f"At the learning rate of 0.5 the baseline reaches an accuracy of {base:.3f} "
                f"(our earlier run reached 0.97); a tenth of the rate reaches {smaller:.3f}.",
            )
            return whole_file_edit("paper/main.tex", tex, "The experiments section.")
        if "Write Conclusion of it" in text:
            tex = tex.replace("To be written too.", "The learning rate matters little here.")
            return whole_file_edit("paper/main.tex", tex, "The conclusion.")
        return whole_file_edit("paper/main.tex", tex, "Nothing to change.")

    def _eval(self, run_id: str) -> float:
        data = json.loads((self.root / run_id / "final_info.json").read_text())
        return float(data["main"]["means"]["eval.accuracy"])


PLOT = """\
import glob
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

labels = {"run_0": "Baseline (lr 0.5)", "run_1": "A tenth of the rate"}
runs = [r for r in labels if glob.glob(f"{r}/final_info.json")]
values = [json.load(open(f"{r}/final_info.json"))["main"]["means"]["eval.accuracy"] for r in runs]
plt.bar([labels[r] for r in runs], values)
plt.ylabel("eval.accuracy")
plt.savefig("accuracy.png")
"""
