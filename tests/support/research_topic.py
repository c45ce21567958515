"""TEST-ONLY: a project started from a topic alone, and what the scripted models answer for it:
the code the agents write (prepare.py, experiment.py, the paper's skeleton, plot.py), the idea,
the runs and the paper. Each answer depends on the project on disk, as a real model's would.
Never used by the product.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from labtui.core.settings.templates import default_paper

from .research_script import (
    MoonsResearch,
    fenced_json,
    last_user_text,
    scripted_plan,
    whole_file_edit,
)

CODER = "scripted-experiments"

PREPARE = """\
import os
import numpy as np

rng = np.random.default_rng(0)
x = np.concatenate([rng.normal(-1, 1, (200, 2)), rng.normal(1, 1, (200, 2))])
y = np.array([0] * 200 + [1] * 200)
os.makedirs("data", exist_ok=True)
np.savez("data/blobs.npz", x=x, y=y)
print("data/blobs.npz", x.shape)
"""

EXPERIMENT = """\
import argparse
import json
import os

import numpy as np

RIDGE = 0.1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", required=True)
    out = parser.parse_args().out_dir
    data = np.load("data/blobs.npz")
    x = np.c_[data["x"], np.ones(len(data["x"]))]
    w = np.linalg.solve(x.T @ x + RIDGE * np.eye(3), x.T @ (2 * data["y"] - 1))
    accuracy = float(((x @ w > 0) == (data["y"] == 1)).mean())
    print(f"test_accuracy {accuracy:.4f}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "final_info.json"), "w") as handle:
        json.dump({"blobs": {"means": {"test_accuracy": accuracy}}}, handle)


main()
"""

# What a small model does when told the shape of final_info.json: it writes the numbers itself.
TYPED = """\
import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
out = parser.parse_args().out_dir
os.makedirs(out, exist_ok=True)
json.dump({"blobs": {"means": {"test_accuracy": 0.875}}}, open(os.path.join(out, "final_info.json"), "w"))
"""

PLOT = """\
import glob
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

labels = {"run_0": "Baseline"}
runs = [r for r in labels if glob.glob(f"{r}/final_info.json")]
values = [json.load(open(f"{r}/final_info.json"))["blobs"]["means"]["test_accuracy"] for r in runs]
plt.bar([labels[r] for r in runs], values)
plt.savefig("accuracy.png")
"""


def skeletons() -> list[str]:
    """The first drops a placeholder (refused); the second adds a section and a package."""
    bundled = default_paper().read_text()
    lost = bundled.replace("RESULTS HERE", "")
    adapted = bundled.replace("\\usepackage{amsmath}", "\\usepackage{amsmath}\n\\usepackage{bm}")
    adapted = adapted.replace(
        "\\section{Method}", "\\section{Problem Setting}\nPROBLEM SETTING HERE\n\n\\section{Method}"
    )
    return [lost, adapted]


class TopicCoder:
    """TEST-ONLY: a coder that writes the file each prompt asks for, the first experiment.py
    with typed-in results (as small models do), the next computed; the first paper skeleton
    without a placeholder, the next adapted."""

    def __init__(self) -> None:
        self.experiments = [TYPED, EXPERIMENT]
        self.skeletons = skeletons()

    def __call__(self, request):
        text = last_user_text(request)
        if "skeleton of the paper" in text or ("latex/template.tex" in text and "Fix" in text):
            tex = self.skeletons.pop(0) if len(self.skeletons) > 1 else self.skeletons[0]
            return whole_file_edit("latex/template.tex", tex, "The skeleton:")
        if "Write prepare.py" in text:
            return whole_file_edit("prepare.py", PREPARE, "The data step:")
        if "Write plot.py" in text:
            return whole_file_edit("plot.py", PLOT, "The plots:")
        if "experiment.py" in text:
            code = self.experiments.pop(0) if len(self.experiments) > 1 else self.experiments[0]
            return whole_file_edit("experiment.py", code, "The baseline:")
        raise AssertionError(f"unexpected prompt: {text[:200]}")


TOPIC = "Linear classifiers on two Gaussian blobs in 2-D: how much ridge regularisation helps."

TOPIC_IDEA = {
    "Name": "ridge_strength",
    "Title": "How Much Ridge Does a Linear Classifier on Blobs Need?",
    "Hypothesis": "A hundred times stronger ridge barely moves the boundary of two well separated "
    "blobs, so test accuracy stays within a point of the baseline.",
    "Experiment": "Raise RIDGE in experiment.py from 0.1 to 10 and compare test accuracy with "
    "the baseline run_0.",
    "Interestingness": 4,
    "Feasibility": 9,
    "Novelty": 3,
}


class TopicResearch(MoonsResearch):
    """The whole pipeline on the blobs topic; literature, novelty and review as for moons."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.coder = TopicCoder()

    def ideas(self, request):
        return self.answer_ideas(request, [TOPIC_IDEA])

    def experiments(self, request):
        text = last_user_text(request)
        asks = [str(m.get("content")) for m in request.get("messages", [])]
        if any("has finished. What it changed" in a for a in asks):
            return fenced_json(
                {
                    "analysis": "The stronger ridge changes test accuracy against the baseline "
                    "run_0 by what the table shows.",
                    "next": "finish",
                    "why": "one run answers the question",
                }
            )
        if text.startswith("Plan the experiment runs"):
            return scripted_plan(text, "Raise RIDGE from 0.1 to 10")
        if "carry out the experiment for" in text:
            code = (self.root / "experiment.py").read_text()
            return whole_file_edit("experiment.py", code.replace("RIDGE = 0.1", "RIDGE = 10.0"),
                                   "A hundred times stronger ridge.")  # fmt: skip
        return self.coder(request)

    def plots(self, request):
        if last_user_text(request).startswith("Describe each figure"):
            return fenced_json({"figures": {"accuracy.png": "test accuracy of each run, the "
                                            "baseline and the stronger ridge"}})  # fmt: skip
        code = PLOT.replace('{"run_0": "Baseline"}', '{"run_0": "Baseline", "run_1": "Ridge 10"}')
        return whole_file_edit("plot.py", code, "Label the new run.")

    def _fill(self, request):
        tex = (self.root / "latex" / "template.tex").read_text(encoding="utf-8")
        named = re.search(
            r"(?:Replace exactly these placeholders|still in latex/template.tex): ([A-Z ,]+)",
            last_user_text(request),
        )
        if named is None:
            return whole_file_edit("latex/template.tex", tex, "Nothing to change.")
        base, ridge = self._accuracy("run_0"), self._accuracy("run_1")
        fills = {
            "TITLE HERE": TOPIC_IDEA["Title"],
            "ABSTRACT HERE": f"A ridge a hundred times stronger reaches a test accuracy of "
            f"{ridge:.3f} against {base:.3f} for the baseline.",
            "INTRO HERE": "Linear classifiers remain a reference point \\citep{goodfellow2016deep}.",
            "RELATED WORK HERE": "Regularisation is textbook material \\citep{goodfellow2016deep}.",
            "BACKGROUND HERE": "Ridge regression adds a squared penalty on the weights.",
            "PROBLEM SETTING HERE": "Two Gaussian blobs in the plane, one per class.",
            "METHOD HERE": "We solve the regularised least-squares problem in closed form.",
            "EXPERIMENTAL SETUP HERE": "Four hundred points drawn once, with a fixed seed.",
            "RESULTS HERE": f"The stronger ridge reaches {ridge:.3f} (baseline {base:.3f}).",
            "CONCLUSIONS HERE": "Ridge strength matters little for well separated blobs.",
        }
        wanted = {p.strip() for p in named.group(1).split(",") if p.strip()}
        for placeholder in wanted & fills.keys():
            tex = tex.replace(placeholder, fills[placeholder])
        return whole_file_edit("latex/template.tex", tex, f"Filled {', '.join(sorted(wanted))}.")

    def _accuracy(self, run_id: str) -> float:
        data = json.loads((self.root / run_id / "final_info.json").read_text(encoding="utf-8"))
        return float(data["blobs"]["means"]["test_accuracy"])
