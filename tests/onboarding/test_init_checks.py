"""`labtui init` commits nothing a run has not borne out: the baseline runs before the commit, a
failed one leaves the repository as it was (its files moved aside), `labtui status` says where
init stands, and `labtui init` continues from the proposal once the cause is fixed."""

from __future__ import annotations

import os

from conftest import run_labtui as labtui
from support.research_repo import git, make_repository

from labtui.core.onboarding.python_survey import packages_of

CRASH = (
    "\nfrom pathlib import Path as _Path\n"
    "with open('train.log', 'a') as _log:  # a log the script writes beside itself\n"
    "    _log.write('started\\n')\n"
    "if _Path('CRASH').exists() and args.max_steps > 10:  # the smoke run's 10 steps pass\n"
    "    raise SystemExit('the data loader broke')\n"
)


def _indented(code: str) -> str:
    return "".join(f"    {line}\n" for line in code.strip().splitlines())


def _write(root, files: dict[str, str]) -> None:
    """A small repository's files, folders made as needed."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _broken_repository(root):
    make_repository(root)
    script = (root / "train.py").read_text()
    body = "    args = parser.parse_args()\n"
    assert body in script
    (root / "train.py").write_text(script.replace(body, body + _indented(CRASH), 1))
    (root / "CRASH").write_text("")
    git(root, "add", "--all")
    git(root, "commit", "-q", "-m", "a bug")
    return root


def run_labtui(*args, cwd, env=None):
    """labtui with lines wide enough that a path is never wrapped in two."""
    return labtui(*args, cwd=cwd, env={**(env or os.environ), "COLUMNS": "400"})


def test_a_failed_baseline_commits_nothing_and_init_continues_once_it_is_fixed(tmp_path):
    root = _broken_repository(tmp_path / "repo")
    head = git(root, "rev-parse", "HEAD")
    env = {**os.environ, "LABTUI_LIMITS__RUN_TIMEOUT_S": "45"}
    failed = run_labtui("init", "--yes", "--no-model", cwd=root, env=env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    said = " ".join(failed.stdout.split())
    assert "stopped after 45 s, [limits] run_timeout_s" in said, "the environment's settings"
    assert "the baseline run failed" in said and "the data loader broke" in said
    assert "nothing was committed" in said
    # Nothing committed, no branch, and the working tree as it was: the run's files moved aside.
    assert (
        git(root, "rev-parse", "HEAD") == head and git(root, "branch", "--show-current") == "main"
    )
    assert "labtui/" not in git(root, "branch", "--list")
    assert git(root, "status", "--porcelain") == ""
    kept = root / ".labtui/init/failed/baseline"
    assert (kept / "run_0/labtui_run.json").is_file() and (kept / "train.log").is_file()
    assert not (root / "labtui.toml").exists()

    status = run_labtui("status", cwd=root)
    shown = " ".join(status.stdout.split())
    assert "being set up by `labtui init`" in shown and "nothing committed yet" in shown
    assert "the baseline run failed: run_0 failed with exit code 1: the data loader broke" in shown

    git(root, "rm", "-q", "CRASH")
    git(root, "commit", "-q", "-m", "fix the loader")
    again = run_labtui("init", "--yes", "--no-model", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    said = " ".join(again.stdout.split())
    assert "continuing with the proposal" in said and "baseline run ok" in said
    assert "wrote 1 file(s) outside its folder (train.log)" in said
    assert git(root, "log", "-1", "--format=%s") == "baseline: run_0 results"
    assert git(root, "status", "--porcelain") == "", "train.log is kept out of git locally"
    assert (
        not (root / ".labtui/init/failed").exists()
        and not (root / ".labtui/init/check.json").exists()
    )
    assert "next:" in run_labtui("status", cwd=root).stdout


def test_an_unset_command_and_a_missing_interpreter_are_named_before_anything_runs(tmp_path):
    root = make_repository(tmp_path / "repo")
    proposal = root / ".labtui/init/labtui.toml"
    proposal.parent.mkdir(parents=True)
    proposal.write_text('[experiment]\nedit = ["train.py"]\n')
    done = run_labtui("init", "--yes", "--no-model", cwd=root)
    said = " ".join(done.stdout.split())
    assert "[experiment] command is not set" in said and "experiment.py" not in said
    assert f"{proposal}: [experiment] command is not set" in said
    proposal.write_text(
        '[experiment]\ncommand = "{python} train.py --output_dir {out_dir}"\n'
        'edit = ["train.py"]\npython = ".venv/bin/python"\n'
        '[results]\nsource = "json"\npath = "{out_dir}/metrics.json"\n'
        'metrics = {"eval.accuracy" = "higher"}\n'
    )
    done = run_labtui("init", "--yes", "--no-model", cwd=root)
    said = " ".join(done.stdout.split())
    assert "python = '.venv/bin/python': no such interpreter" in said
    assert f"{proposal}: [experiment]" in said and "/.labtui/init//" not in said
    assert git(root, "branch", "--list").split() == ["*", "main"], "nothing made"


def test_modules_beside_the_script_are_the_repositorys_not_packages(tmp_path):
    _write(
        tmp_path,
        {
            "grokking/train.py": "import data\nimport model\nimport torch\n",
            "grokking/data.py": "import numpy\n",
            "grokking/model.py": "",
        },
    )
    files = {"grokking/train.py", "grokking/data.py", "grokking/model.py"}
    found = packages_of(tmp_path, ["grokking/train.py", "grokking/data.py"], files)
    assert found == ["torch", "numpy"]


def test_a_readme_caveat_is_no_task_and_a_list_a_paragraph_introduces_is_kept_whole():
    from labtui.core.onboarding.readme_text import readme_task

    readme = (
        "# Caveat\n\nA research prototype; numbers may differ.\n\n"
        "# Grokking at the edge\n\nWe study delayed generalisation on modular arithmetic. "
        "This repository contains:\n\n- a transformer trained on (a + b) mod p\n"
        "- the training loop\n  with AdamW\n\n## Installation\n\npip install -r requirements.txt\n"
    )
    assert readme_task(readme) == (
        "Grokking at the edge\n\nWe study delayed generalisation on modular arithmetic. This "
        "repository contains: a transformer trained on (a + b) mod p; the training loop with AdamW"
    )
    assert readme_task("# RunAway models\n\nWe study runaway growth in sparse models.\n") == (
        "RunAway models\n\nWe study runaway growth in sparse models."
    )


def test_uv_poetry_and_conda_run_lines_are_the_script_run_by_python():
    from pathlib import PurePosixPath

    from labtui.core.onboarding.command_lines import _command, _segments

    def parsed(line):
        return _command(_segments(line)[0], {"train.py"}, PurePosixPath("."))

    expected = ("python", ("python",), "train.py", "", ("--steps", "10"))
    assert parsed("uv run python train.py --steps 10") == expected
    assert parsed("uv run --with numpy train.py --steps 10") == expected
    assert parsed("conda run -n research python train.py --steps 10") == expected
    assert parsed("poetry run pytest") is None


def test_a_readme_set_up_step_before_the_run_is_proposed_as_prepare(tmp_path):
    from labtui.core.onboarding.repo_scan import survey
    from labtui.core.onboarding.setup_draft import propose_setup

    _write(
        tmp_path,
        {
            "train.py": "import argparse\np = argparse.ArgumentParser()\n"
            "p.add_argument('--out', default='o')\np.parse_args()\nprint('loss: 0.5')\n",
            "create_output_dirs.sh": "mkdir -p outputs/models\n",
            "README.md": "# A study\n\nWe study things at length in this repository.\n\n```bash\n"
            "pip install -r requirements.txt\nwandb login\nbash create_output_dirs.sh\n"
            "mkdir -p checkpoints\nbash fetch_weights.sh\npython train.py --out outputs\n```\n",
        },
    )
    draft = propose_setup(survey(tmp_path))
    experiment = draft.values["experiment"]
    # installing, logging in and a script the repository does not have are not steps of a run
    assert experiment["prepare"] == ["bash create_output_dirs.sh", "mkdir -p checkpoints"]
    assert (
        "README.md runs bash create_output_dirs.sh; mkdir -p checkpoints before"
        in (draft.reasons["experiment.prepare"])
    )


def test_the_steps_after_the_first_metric_line_are_measured_between_lines_apart_in_time():
    from labtui.core.onboarding.init_check import FirstStep

    apart = FirstStep(step=10, before_end_s=2.0, last_step=110, last_after_s=1.5)
    assert apart.after_first(120) == (100, 1.5), "from the first line to the last"
    together = FirstStep(step=5, before_end_s=0.7, last_step=10, last_after_s=0.0)
    assert together.after_first(10) == (5, 0.7), "read in one go: from the first to the end"


def test_a_package_imported_two_modules_down_is_needed_all_the_same(tmp_path):
    """danielmamay/grokking: cli.py imports training.py, which imports model.py, which imports
    einops; the interpreter chosen must have it too."""
    from labtui.core.onboarding.python_choice import choose_python
    from labtui.core.onboarding.repo_scan import survey

    _write(
        tmp_path,
        {
            "grokking/cli.py": 'from training import main\n\nif __name__ == "__main__":\n    main()\n',
            "grokking/training.py": "from model import Net\ndef main(): Net()\n",
            "grokking/model.py": "import notapackage_einops_xyz\nclass Net: ...\n",
        },
    )
    python, _why, question = choose_python(tmp_path, survey(tmp_path), "{python} grokking/cli.py")
    assert python == ""
    assert "notapackage_einops_xyz (grokking/cli.py and the modules it imports need them)" in (
        question
    )


def test_a_missing_package_after_a_failed_run_is_named_with_where_it_goes():
    from types import SimpleNamespace

    from labtui.tui.commands.init import _fix_after

    config = SimpleNamespace(python="/usr/bin/python3")
    problem = "labtui_smoke failed with exit code 1: ModuleNotFoundError: No module named 'einops'"
    fix = _fix_after("smoke", problem, config)
    assert fix.startswith("install einops in /usr/bin/python3")
    assert "[experiment] python" in fix and "nothing was committed" in fix
    assert "edit the proposal" in _fix_after("smoke", "no scalar tag", config)


NANOGPT_TRAIN = """\
import os
import wandb

max_iters = 600000
eval_interval = 2000
wandb_log = False  # disabled by default
exec(open("configurator.py").read())
meta_path = os.path.join("data", "meta.pkl")
print(f"found vocab_size = {65} (inside {meta_path})")
iter_num = 0
while True:
    if iter_num % eval_interval == 0:
        losses = {"train": 1.0, "val": 1.1}
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if wandb_log:
            wandb.log({"iter": iter_num, "train/loss": losses["train"], "val/loss": losses["val"]})
    iter_num += 1
    if iter_num > max_iters:
        break
"""


def test_a_nanogpt_shaped_repository_runs_its_top_level_train_script_and_reads_its_log(tmp_path):
    """karpathy/nanoGPT: train.py is top-level code (no main guard) that the README runs; the
    data folder's prepare.py scripts are no experiment; W&B is off unless wandb_log is set; the
    printed sizes and paths are no metrics."""
    from labtui.core.onboarding.repo_scan import survey
    from labtui.core.onboarding.setup_draft import propose_setup

    _write(
        tmp_path,
        {
            "data/shakespeare/prepare.py": 'if __name__ == "__main__":\n    print("downloading")\n',
            "train.py": NANOGPT_TRAIN,
            "configurator.py": "import sys\n",
            "README.md": "# nano\n\nThe simplest repository for training GPTs, small enough to "
            "read.\n\n```\npython data/shakespeare/prepare.py\n"
            "python train.py config/train_char.py\n"
            "python train.py config/train_char.py --device=cpu\n```\n",
        },
    )
    draft = propose_setup(survey(tmp_path))
    # its configurator sets a constant with --name=value: max_iters gets an end, the smoke run
    # a short eval interval, and runs to its first evaluation at iteration 5 and two more
    assert draft.values["experiment"]["command"] == (
        "{python} train.py config/train_char.py --max_iters=2001"
    )
    assert draft.values["experiment"]["smoke_command"] == (
        "{python} train.py config/train_char.py --max_iters=8 --eval_interval=5"
    )
    assert draft.values["results"] == {
        "source": "stdout",
        "metrics": {"val_loss": "lower", "train_loss": "lower"},
    }
