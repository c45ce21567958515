"""Issue 43, plain scripts: a training script with no main guard, no option parser and no README
line is a script to the survey by its top-level loop, and its run-length constant bounds the
smoke run and the baseline, through a --name=value the script reads (nanoGPT's configurator) or
through labtui's wrapper, .labtui/with_constants, which sets it in memory."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from conftest import run_labtui
from support.research_repo import commit_as_researcher, git, write_files

from labtui.core.onboarding.constant_wrapper import WRAPPER, WRAPPER_SOURCE
from labtui.core.onboarding.repo_scan import propose_setup, survey
from labtui.core.settings.sections import LimitsSection
from labtui.core.workspace.run_folder import read_final_info

# nanoGPT's shape: hyperparameters as module constants, then one top-level loop
PLAIN = """\
import numpy as np

max_iters = 5000
eval_interval = 100
learning_rate = 0.5

rng = np.random.default_rng(0)
x = rng.normal(size=(200, 2))
y = (x[:, 0] > 0).astype(float)
w = np.zeros(2)
for it in range(max_iters):
    p = 1 / (1 + np.exp(-x @ w))
    w -= learning_rate * x.T @ (p - y) / len(y)
    if it % eval_interval == 0 or it == max_iters - 1:
        loss = float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))
        print(f"step {it}: train loss {loss:.4f}, val loss {loss * 1.1:.4f}")
"""


def test_a_plain_script_is_seen_and_its_constant_bounds_both_runs_through_the_wrapper(tmp_path):
    root = commit_as_researcher(write_files(tmp_path / "repo", {"train.py": PLAIN}))
    env = {**os.environ, "LABTUI_LIMITS__RUN_TIMEOUT_S": "60", "COLUMNS": "300"}
    done = run_labtui("init", "--yes", "--no-model", cwd=root, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 script(s)" in done.stdout
    experiment = tomllib.loads((root / "labtui.toml").read_text())["experiment"]
    command, smoke = experiment["command"].split(), experiment["smoke_command"].split()
    assert command[:3] == smoke[:3] == ["{python}", WRAPPER, "train.py"]
    count = int(next(w for w in command if w.startswith("--max_iters=")).split("=")[1])
    assert 0 < count <= 5000  # fitted to the pace the smoke run measured: never above it
    assert "--max_iters=3" in smoke and "--eval_interval=5" in smoke
    means = read_final_info(root / "run_0").means()["main"]
    assert set(means) == {"train_loss", "val_loss"}
    # the wrapper is committed with labtui.toml, so worktrees and clones run it; train.py as it was
    assert WRAPPER in git(root, "show", "--name-only", "--format=", "HEAD~1").split()
    assert git(root, "status", "--porcelain") == ""
    assert (root / "train.py").read_text() == PLAIN


def test_the_wrapper_runs_the_script_as_main_with_its_constants_set_in_memory(tmp_path):
    script = """\
import sys

max_iters = 5000
name: str = "small"


class Point:
    pass


import pickle

pickle.dumps(Point())  # its classes belong to __main__, as under `python train.py`
print(__name__, __file__, sys.argv[1:], max_iters, name)
print(sys.path[0])
"""
    write_files(tmp_path, {"src/train.py": script, WRAPPER: WRAPPER_SOURCE})
    done = subprocess.run(
        [sys.executable, WRAPPER, "src/train.py", "--max_iters=7", "--name=big", "--seed=1", "x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, folder = done.stdout.splitlines()
    assert first == f"__main__ {tmp_path / 'src/train.py'} ['--seed=1', 'x'] 7 big"
    assert folder == str(tmp_path / "src")
    assert "sets no seed at its top level; --seed=1 is left to the script" in done.stderr
    assert (tmp_path / "src/train.py").read_text() == script


def test_a_configurator_reads_the_constant_so_no_wrapper_is_needed(tmp_path):
    nanogpt = PLAIN.replace("rng =", "exec(open('configurator.py').read())\nrng =", 1)
    root = write_files(tmp_path, {"train.py": nanogpt, "configurator.py": "import sys\n"})
    command = propose_setup(survey(root), LimitsSection(run_timeout_s=300)).values["experiment"]
    assert WRAPPER not in command["command"]
    assert "--max_iters=200" in command["command"].split()
    assert "--max_iters=3" in command["smoke_command"].split()


def test_a_top_level_loop_that_neither_steps_nor_prints_a_metric_is_no_script(tmp_path):
    root = write_files(
        tmp_path,
        {
            "prepare.py": "import os\nfor name in os.listdir('.'):\n    print('found', name)\n",
            "model.py": "def fit(opt):\n    for _ in range(3):\n        opt.step()\n",
            "loop.py": "import torch\nwhile True:\n    loss.backward()\n    opt.step()\n",
        },
    )
    assert [e.path for e in survey(root).entry_points] == ["loop.py"]


def test_a_fit_at_the_top_level_makes_a_script(tmp_path):
    # the repository bench's Keras tutorial: constants, a model, model.fit(...) at the top level
    keras = (
        "EPOCHS = 5\nmodel = make_model()\n"
        "history = model.fit(x_train, y_train, epochs=EPOCHS, validation_split=0.1)\n"
    )
    root = write_files(
        tmp_path,
        {
            "mnist_keras.py": keras,
            "lightning_run.py": "trainer = Trainer()\ntrainer.fit(model)\n",
            "helpers.py": "def train(model, x, y):\n    model.fit(x, y)\n",
            "noop.py": "model.fit()\n",
        },
    )
    assert sorted(e.path for e in survey(root).entry_points) == [
        "lightning_run.py",
        "mnist_keras.py",
    ]


def test_a_script_that_imports_the_repositorys_top_package_runs_as_a_module(tmp_path):
    # the repository bench's normalizing-flows: examples/ex_1d.py does `from src.flows import`,
    # and `python examples/ex_1d.py` failed with "No module named 'src'"
    example = (
        "import argparse\nfrom src.flows import scale\n\n"
        "if __name__ == '__main__':\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--iterations', type=int, default=3)\n"
        "    args = parser.parse_args()\n"
        "    for i in range(args.iterations):\n"
        "        print(f'step {i}: logprob {scale(i):.3f}')\n"
    )
    files = {
        "src/__init__.py": "",
        "src/flows.py": "def scale(x):\n    return -1.0 / (x + 1)\n",
        "examples/ex_1d.py": example,
        "examples/helper_free.py": example.replace("from src.flows import scale", "scale = abs"),
    }
    root = write_files(tmp_path, files)
    found = survey(root)
    drafted = propose_setup(found, LimitsSection(run_timeout_s=300))
    command = drafted.values["experiment"]["command"]
    assert command.split()[:3] == ["{python}", "-m", "examples.ex_1d"]
    assert "runs as a module from there" in drafted.reasons["experiment.command"]
    ran = subprocess.run(
        [sys.executable, "-m", "examples.ex_1d"], cwd=root, capture_output=True, text=True
    )
    assert ran.returncode == 0 and "logprob" in ran.stdout, "as a module it imports src"
