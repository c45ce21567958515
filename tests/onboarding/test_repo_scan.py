"""`labtui init`'s look at a researcher's repository (core/onboarding/repo_scan.py): the facts read from
small but realistic repositories, and the set-up first proposed from them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from labtui.core.onboarding.repo_scan import propose_setup, survey

TRAIN_PY = '''\
"""Train a small net on XOR."""
import argparse
import json
import os

from model import Net


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a small net.")
    parser.add_argument("--output_dir", "-o", type=str, default="outputs", help="where results go")
    optim = parser.add_argument_group("optimisation")
    optim.add_argument("--max_steps", type=int, default=1000)
    optim.add_argument("--lr", type=float, default=1e-3, help="learning rate")
    parser.add_argument("--seed", type=int, default=os.getpid())
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    net = Net()
    with open(os.path.join(args.output_dir, "metrics.json"), "w") as handle:
        json.dump({"eval": {"accuracy": net.fit(args.lr)}}, handle)


if __name__ == "__main__":
    main()
'''

README_MD = """\
# Tiny Nets

[![CI](https://img.shields.io/badge/ci-passing-green.svg)](https://example.org/ci)
<img src="docs/logo.png" width="200">

We study how **small networks** learn [XOR](https://en.wikipedia.org/wiki/XOR_gate),
and what their hidden units represent.

## Usage

```bash
pip install -r requirements.txt
python train.py --output_dir outputs/run1 --lr 3e-4
```

## Citation

Please cite us.
"""


def _repo(root: Path, files: dict[str, str | bytes], *, git: bool = True) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if git:
        for args in (
            ["init", "-q"],
            ["config", "user.name", "Test"],
            ["config", "user.email", "test@example.org"],
            ["add", "-A"],
            ["commit", "-q", "-m", "the researcher's repository"],
        ):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


@pytest.fixture
def argparse_repo(tmp_path: Path) -> Path:
    return _repo(
        tmp_path / "tiny",
        {
            ".gitignore": "outputs/\n",
            "README.md": README_MD,
            "train.py": TRAIN_PY,
            "model.py": "import layers\n\n\nclass Net:\n    def fit(self, lr):\n        return 0.9\n",
            "layers.py": "def dense(n):\n    return n\n",
            "eval.py": "from model import Net\n\n\ndef accuracy(net):\n    return 1.0\n",
            "data/xor.csv": "x1,x2,y\n0,0,0\n0,1,1\n",
            "tests/test_model.py": "from model import Net\n\n\ndef test_fit():\n    Net()\n",
            "outputs/run1/metrics.json": json.dumps({"eval": {"accuracy": 0.91, "loss": 0.3}}),
            "package.json": json.dumps({"name": "docs-site", "version": 1}),
        },
    )


# -- (1) an argparse script with a README command -----------------------------------------------


def test_argparse_facts(argparse_repo: Path) -> None:
    facts = survey(argparse_repo)
    (entry,) = [e for e in facts.entry_points if e.path == "train.py"]
    assert entry.kind == "argparse"
    options = {o.dest: o for o in entry.options}
    assert list(options) == ["output_dir", "max_steps", "lr", "seed", "fp16"]  # groups included
    assert options["output_dir"].flags == ("--output_dir", "-o")
    assert options["output_dir"].default == "outputs"
    assert options["output_dir"].help == "where results go"
    assert (options["lr"].type, options["lr"].default) == ("float", 1e-3)
    assert options["seed"].default is None  # not a literal: no guess
    assert (options["fp16"].action, options["fp16"].default) == ("store_true", False)
    assert entry.imports == ("model.py",)
    assert [(o.entry, o.flag) for o in facts.output_options] == [("train.py", "--output_dir")]
    assert [(o.flag, o.default, o.kind) for o in facts.smoke_options] == [
        ("--max_steps", 1000, "count")
    ]
    (command,) = facts.commands
    assert command.found_in == "README.md:13"
    assert (command.launcher, command.script) == ("python", "train.py")
    assert command.args == ("--output_dir", "outputs/run1", "--lr", "3e-4")
    # the ignored outputs/ folder is searched too; package.json and the data CSV are no results
    assert [(r.path, r.source) for r in facts.result_files] == [
        ("outputs/run1/metrics.json", "json")
    ]
    assert "outputs/run1/metrics.json" not in facts.files  # git ignores it
    assert facts.python_files.tests == ("tests/test_model.py",)
    assert facts.python_files.evaluation == ("eval.py",)
    assert facts.readme is not None and facts.readme.path == "README.md"
    json.dumps(facts.to_dict())  # fits in a prompt as it is


def test_argparse_proposal(argparse_repo: Path) -> None:
    draft = propose_setup(survey(argparse_repo))
    experiment = draft.values["experiment"]
    assert experiment["command"] == "{python} train.py --output_dir {out_dir} --lr 3e-4"
    assert experiment["smoke_command"] == (
        "{python} train.py --output_dir {out_dir} --lr 3e-4 --max_steps 10"
    )
    assert experiment["edit"] == ["train.py", "model.py", "layers.py"]
    assert "eval.py" in experiment["protect"]
    assert "tests/*" in experiment["protect"] and "data/*" in experiment["protect"]
    assert not set(experiment["edit"]) & set(experiment["protect"])
    results = draft.values["results"]
    assert (results["source"], results["path"]) == ("json", "{out_dir}/metrics.json")
    assert results["metrics"] == {"eval.accuracy": "higher", "eval.loss": "lower"}
    task = draft.values["project"]["task"]
    assert task.startswith("Tiny Nets\n\nWe study how small networks learn XOR")
    assert "shields" not in task and "<img" not in task and "pip install" not in task
    assert "Please cite" not in task
    assert "paper" not in draft.values  # no LaTeX: the bundled template
    assert "README.md:13" in draft.reasons["experiment.command"]
    assert "--max_steps" in draft.reasons["experiment.smoke_command"]
    fields = {f"{s}.{k}" for s, values in draft.values.items() for k in values}
    assert fields == set(draft.reasons)
    assert draft.open_questions == []


def test_metrics_are_ranked_and_capped(argparse_repo: Path, monkeypatch) -> None:
    import labtui.core.runs.result_sources as result_sources

    offered = {
        "step": 100.0,
        "lr": 1e-3,
        "train.loss": 0.2,
        "eval.accuracy": 0.9,
        "eval.f1": 0.8,
        "val.loss": 0.3,
        "test.bleu": 20.0,
    }
    monkeypatch.setattr(result_sources, "available_metrics", lambda source, path: offered)
    metrics = propose_setup(survey(argparse_repo)).values["results"]["metrics"]
    assert metrics == {
        "eval.accuracy": "higher",
        "eval.f1": "higher",
        "val.loss": "lower",
        "test.bleu": "higher",
    }


def test_a_failing_metrics_reader_leaves_a_question(argparse_repo, monkeypatch) -> None:
    import labtui.core.runs.result_sources as result_sources

    def fail(source: str, path: Path) -> dict[str, float]:
        raise RuntimeError("being written")

    monkeypatch.setattr(result_sources, "available_metrics", fail)
    draft = propose_setup(survey(argparse_repo))
    assert "metrics" not in draft.values["results"]
    assert draft.values["results"]["path"] == "{out_dir}/metrics.json"
    assert any("outputs/run1/metrics.json" in q for q in draft.open_questions)


def test_commands_in_scripts_and_readme(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/train.py": "import argparse\nargparse.ArgumentParser().parse_args()\n",
            "scripts/run.sh": (
                "#!/bin/bash\n"
                "set -e\n"
                "torchrun --nproc_per_node 4 pkg/train.py --epochs 3 2>&1 | tee log.txt\n"
                "CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 2 -m pkg.train --lr 1\n"
                "python -m pkg.train \\\n    --lr 2 && echo done\n"
                "python -c 'print(1)'\n"
            ),
        },
    )
    commands = survey(repo).commands
    found = [(c.found_in, c.launcher, c.prefix, c.script, c.module, c.args) for c in commands]
    assert found == [
        (
            "scripts/run.sh:3",
            "torchrun",
            ("torchrun", "--nproc_per_node", "4"),
            "pkg/train.py",
            "",
            ("--epochs", "3"),
        ),
        (
            "scripts/run.sh:4",
            "accelerate",
            ("accelerate", "launch", "--num_processes", "2"),
            "pkg/train.py",
            "pkg.train",
            ("--lr", "1"),
        ),
        ("scripts/run.sh:5", "python", ("python",), "pkg/train.py", "pkg.train", ("--lr", "2")),
    ]
    draft = propose_setup(survey(repo))
    assert draft.values["experiment"]["command"].startswith("torchrun --nproc_per_node 4")
    assert any("torchrun must be on the PATH" in q for q in draft.open_questions)


# -- (2) Hydra ------------------------------------------------------------------------------------


def test_hydra_repo(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            ".gitignore": "outputs/\n",
            "train.py": (
                "import hydra\nfrom omegaconf import DictConfig\n\n\n"
                '@hydra.main(config_path="conf", config_name="config", version_base=None)\n'
                "def main(cfg: DictConfig) -> None:\n    print(cfg)\n\n\n"
                'if __name__ == "__main__":\n    main()\n'
            ),
            "conf/config.yaml": (
                "defaults:\n  - _self_\nseed: 0\n"
                "trainer:\n  max_epochs: 20\n  lr: 0.001\nmodel:\n  hidden: 64\n"
            ),
            "Makefile": "train:\n\t@$(PYTHON) train.py trainer.lr=0.01\n",
            "outputs/2024-05-01/10-00-00/results.json": json.dumps({"val_acc": 0.8}),
        },
    )
    facts = survey(repo)
    (entry,) = facts.entry_points
    assert entry.kind == "hydra" and entry.hydra is not None
    assert (entry.hydra.config_path, entry.hydra.config_name) == ("conf", "config")
    assert entry.hydra.config_file == "conf/config.yaml"
    assert entry.hydra.keys == (
        "seed",
        "trainer",
        "trainer.max_epochs",
        "trainer.lr",
        "model",
        "model.hidden",
    )
    assert {o.dest: o.default for o in entry.options}["trainer.max_epochs"] == 20
    assert [o.flag for o in facts.output_options] == ["hydra.run.dir"]
    assert facts.commands[0].found_in == "Makefile:2"
    draft = propose_setup(facts)
    experiment = draft.values["experiment"]
    # 20 epochs at a guessed 90 s each would not fit half of [limits] run_timeout_s: 10 until
    # the smoke run has measured the pace
    assert experiment["command"] == (
        "{python} train.py trainer.lr=0.01 hydra.run.dir={out_dir} trainer.max_epochs=10"
    )
    assert experiment["smoke_command"] == (
        "{python} train.py trainer.lr=0.01 hydra.run.dir={out_dir} trainer.max_epochs=1"
    )
    # a result in Hydra's own outputs/<date>/<time>/ lies in a run's folder
    results = draft.values["results"]
    assert (results["source"], results["path"]) == ("json", "{out_dir}/results.json")
    assert results["metrics"] == {"val_acc": "higher"}


# -- (3) click and typer --------------------------------------------------------------------------


def test_click_script(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "cli.py": (
                "import click\n\n\n@click.command()\n"
                '@click.option("--epochs", default=10, type=int, help="Training epochs.")\n'
                '@click.option("--out-dir", "out_dir", default="runs", type=click.Path())\n'
                '@click.option("--debug/--no-debug", default=False)\n'
                '@click.argument("dataset")\n'
                "def main(epochs, out_dir, debug, dataset):\n    pass\n\n\n"
                'if __name__ == "__main__":\n    main()\n'
            ),
        },
    )
    facts = survey(repo)
    (entry,) = facts.entry_points
    assert entry.kind == "click"
    options = {o.dest: o for o in entry.options}
    assert list(options) == ["epochs", "out_dir", "debug", "dataset"]
    assert (options["epochs"].default, options["epochs"].type) == (10, "int")
    assert options["epochs"].help == "Training epochs."
    assert options["out_dir"].flags == ("--out-dir",)
    assert options["debug"].flags == ("--debug", "--no-debug")
    assert options["debug"].action == "store_true"
    assert options["dataset"].required and options["dataset"].flags == ("dataset",)
    assert [(o.flag, o.kind) for o in facts.smoke_options] == [
        ("--epochs", "count"),
        ("--debug", "flag"),
    ]
    draft = propose_setup(facts)
    assert draft.values["experiment"]["command"] == "{python} cli.py --out-dir {out_dir}"
    assert draft.values["experiment"]["smoke_command"] == (
        "{python} cli.py --out-dir {out_dir} --debug --epochs 1"
    )  # the switch, and one epoch: a debug switch need not shorten the epochs
    assert "declares --out-dir (click)" in draft.reasons["experiment.command"]
    assert any("requires dataset" in q for q in draft.open_questions)


def test_typer_script(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "app.py": (
                "from typing import Annotated\n\nimport typer\n\napp = typer.Typer()\n\n\n"
                "@app.command()\n"
                "def train(\n"
                "    data: str,\n"
                '    steps: int = typer.Option(500, "--steps", "-s", help="Optimiser steps."),\n'
                '    save_dir: Annotated[str, typer.Option(help="Where to save.")] = "ckpt",\n'
                "    smoke: bool = False,\n"
                ") -> None:\n    pass\n"
            ),
        },
    )
    (entry,) = survey(repo).entry_points
    assert entry.kind == "typer"
    options = {o.dest: o for o in entry.options}
    assert options["data"].flags == ("data",) and options["data"].required
    assert (options["steps"].flags, options["steps"].default) == (("--steps", "-s"), 500)
    assert options["steps"].help == "Optimiser steps."
    assert (options["save_dir"].flags, options["save_dir"].default) == (("--save-dir",), "ckpt")
    assert options["smoke"].flags == ("--smoke", "--no-smoke")
    draft = propose_setup(survey(repo))
    assert draft.values["experiment"]["command"] == "{python} app.py --save-dir {out_dir}"
    assert draft.values["experiment"]["smoke_command"].endswith(
        "--save-dir {out_dir} --smoke --steps 10"
    )


def test_subcommand_options_are_marked(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "main.py": (
                "import argparse\n\n"
                "parser = argparse.ArgumentParser()\n"
                "parser.add_argument('--out_dir', default='out')\n"
                "commands = parser.add_subparsers(dest='command')\n"
                "fit = commands.add_parser('fit')\n"
                "fit.add_argument('--dry_run', action='store_true')\n"
                "fit.add_argument('--log_dir')\n"
                "parser.parse_args()\n"
            ),
            "cli.py": (
                "import click\n\n\n@click.group()\ndef cli():\n    pass\n\n\n"
                "@cli.command()\n@click.option('--debug', is_flag=True)\n"
                "def fine_tune(debug):\n    pass\n"
            ),
        },
    )
    facts = survey(repo)
    entries = {e.path: e for e in facts.entry_points}
    assert [(o.dest, o.subcommand) for o in entries["main.py"].options] == [
        ("out_dir", ""),
        ("dry_run", "fit"),
        ("log_dir", "fit"),
    ]
    assert [(o.dest, o.subcommand) for o in entries["cli.py"].options] == [("debug", "fine-tune")]
    # a subcommand's switch is no switch of the command itself
    assert [(o.entry, o.flag) for o in facts.output_options] == [("main.py", "--out_dir")]
    assert facts.smoke_options == ()


# -- (4) LaTeX -----------------------------------------------------------------------------------

MAIN_TEX = r"""\documentclass{article}
\usepackage{graphicx}
\begin{document}
\begin{abstract}We study XOR.\end{abstract}
\section{Introduction}
Small nets. % \section{Commented Out}
\input{sections/results}
\include{sections/missing}
\section{Conclusion}
\bibliography{refs,more}
\end{document}
"""


def test_latex_draft(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "paper/main.tex": MAIN_TEX,
            "paper/sections/results.tex": "\\section{Results on \\textsc{Moons}}\nWe win.\n",
            "paper/refs.bib": "@article{a, title={A}}\n",
            "notes/scratch.tex": "\\section{Not a paper}\n",
            "old/draft.tex": "\\documentclass{article}\n\\title{TITLE HERE}\nINTRO HERE\n",
        },
    )
    facts = survey(repo)
    mains = {m.path: m for m in facts.latex}
    assert set(mains) == {"paper/main.tex", "old/draft.tex"}
    main = mains["paper/main.tex"]
    assert main.sections == ("Introduction", "Results on \\textsc{Moons}", "Conclusion")
    assert [(i.path, i.exists) for i in main.inputs] == [
        ("paper/sections/results.tex", True),
        ("paper/sections/missing.tex", False),
    ]
    assert [(b.path, b.exists) for b in main.bibliography] == [
        ("paper/refs.bib", True),
        ("paper/more.bib", False),
    ]
    assert main.placeholders == ()
    assert mains["old/draft.tex"].placeholders == ("TITLE HERE", "INTRO HERE")
    draft = propose_setup(facts)
    assert draft.values["paper"] == {
        "tex": "paper/main.tex",
        "sections": ["Results on \\textsc{Moons}", "Conclusion"],
    }


def test_a_placeholder_draft_keeps_its_placeholders(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {"latex/template.tex": "\\documentclass{article}\n\\section{Introduction}\nINTRO HERE\n"},
    )
    draft = propose_setup(survey(repo))
    assert draft.values["paper"] == {"tex": "latex/template.tex"}
    assert "INTRO HERE" in draft.reasons["paper.tex"]


# -- (5) no output option ------------------------------------------------------------------------


def test_no_output_option_is_an_open_question(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "experiment.py": (
                "import sys\n\n\ndef main():\n    print('accuracy', 0.5)\n\n\n"
                'if __name__ == "__main__":\n    main()\n'
            ),
            "helpers.py": "def unused():\n    pass\n",
        },
    )
    facts = survey(repo)
    assert [(e.path, e.kind) for e in facts.entry_points] == [("experiment.py", "plain")]
    draft = propose_setup(facts)
    assert draft.values["experiment"]["command"] == "{python} experiment.py"
    assert "smoke_command" not in draft.values["experiment"]
    assert draft.values["results"] == {"source": "stdout"}
    assert any(
        "no output-folder option" in q and "LABTUI_OUT_DIR" in q for q in draft.open_questions
    )
    assert any("print" in q for q in draft.open_questions)
    assert any("no README" in q for q in draft.open_questions)


def test_tensorboard_use_without_results_yet(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "main.py": (
                "import argparse\nfrom torch.utils.tensorboard import SummaryWriter\n"
                "p = argparse.ArgumentParser()\np.add_argument('--logdir', default='runs')\n"
                "SummaryWriter(p.parse_args().logdir)\n"
            ),
        },
    )
    facts = survey(repo)
    assert [(t.name, t.files) for t in facts.trackers] == [("tensorboard", ("main.py",))]
    draft = propose_setup(facts)
    assert draft.values["experiment"]["command"] == "{python} main.py --logdir {out_dir}"
    assert draft.values["results"] == {"source": "tensorboard"}


def test_result_files_of_every_kind(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            ".gitignore": "wandb/\nruns/\n",
            "wandb/offline-run-20240101_000000-abc/files/wandb-summary.json": json.dumps(
                {"val/acc": 0.7, "_runtime": 3}
            ),
            "wandb/offline-run-20240101_000000-abc/files/config.yaml": "lr: 1\n",
            "runs/exp1/events.out.tfevents.1700000000.host": b"\x18\x00\x00\x00binary",
            "logs/history.csv": "epoch,loss\n1,0.5\n2,0.4\n",
            "logs/names.csv": "name,city\nada,london\n",
            "run_0/final_info.json": json.dumps({"moons": {"means": {"acc": 0.9}}}),
            "configs/eval_metrics.json": json.dumps({"threshold": 0.5}),
            "results/notes.json": json.dumps({"text": "no numbers here"}),
            "data/results.csv": "a,b\n1,2\n",
            "tsconfig.json": json.dumps({"compilerOptions": {"target": 5}}),
        },
    )
    os.symlink("offline-run-20240101_000000-abc", root / "wandb" / "latest-run")
    found = {r.path: r.source for r in survey(root).result_files}
    assert found == {
        "wandb/offline-run-20240101_000000-abc/files/wandb-summary.json": "wandb",
        "runs/exp1/events.out.tfevents.1700000000.host": "tensorboard",
        "logs/history.csv": "csv",
        "run_0/final_info.json": "final_info",
    }


def test_a_wandb_summary_is_read_from_its_usual_place(tmp_path: Path) -> None:
    root = _repo(
        tmp_path,
        {
            ".gitignore": "wandb/\n",
            "train.py": "import wandb\n\nif __name__ == '__main__':\n    wandb.init()\n",
            "wandb/run-20240101_000000-abc/files/wandb-summary.json": json.dumps(
                {"val/acc": 0.7, "train/loss": 0.2, "_runtime": 3}
            ),
        },
    )
    facts = survey(root)
    assert [(t.name, t.files) for t in facts.trackers] == [("wandb", ("train.py",))]
    results = propose_setup(facts).values["results"]
    assert results == {
        "source": "wandb",  # no path: wandb/latest-run/files/wandb-summary.json
        "metrics": {"val/acc": "higher", "train/loss": "lower"},
    }


# -- (6) robustness ------------------------------------------------------------------------------


def test_odd_files_do_not_stop_the_survey(tmp_path: Path) -> None:
    root = tmp_path / "odd"
    _repo(
        root,
        {
            "README.md": b"# Caf\xe9 nets\n\nWe train caf\xe9 nets.\n",
            "broken.py": 'def main(:\n    pass\n\nif __name__ == "__main__":\n    main()\n',
            "results.json": b"\x00\x01\x02binary\xff",
            "metrics_big.json": '{"acc": [' + "0.5," * 80_000 + "0.5]}",
            "train.py": 'print("loss", 1.0)\nif __name__ == "__main__":\n    pass\n',
            "bad.yaml": "a: [unclosed\n",
            # a script (its main guard comes first) too big to parse
            "generated.py": 'if __name__ == "__main__":\n    pass\n' + "x = 1\n" * 40_000,
        },
    )
    os.symlink("self_loop", root / "self_loop")
    os.symlink("..", root / "up")  # a folder loop
    os.symlink("/etc", root / "outside")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"eval": {"acc": 1.0}}))
    os.symlink(tmp_path / "elsewhere.json", root / "metrics_link.json")  # out of the repository
    facts = survey(root)
    assert facts.readme is not None and "Caf\ufffd nets" in facts.readme.text
    (broken,) = [e for e in facts.entry_points if e.path == "broken.py"]
    assert "SyntaxError" in broken.error and "line 1" in broken.error
    assert any(u.startswith("broken.py: SyntaxError") for u in facts.python_files.unparsed)
    assert "generated.py: not parsed: larger than 200 kB" in facts.python_files.unparsed
    assert facts.result_files == ()  # binary, too big to read whole, outside the repository
    draft = propose_setup(facts)
    assert draft.values["experiment"]["command"] == "{python} train.py"  # broken.py never chosen
    assert draft.values["project"]["task"].startswith("Caf\ufffd nets")
    json.dumps(facts.to_dict())


def test_without_git_the_walk_skips_virtualenvs_and_caps(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"src/m{i}.py": "" for i in range(5)}
    files |= {
        ".venv/lib/site.py": "",
        "venv/lib/x.py": "",
        "myenv/pyvenv.cfg": "",
        "myenv/lib/y.py": "",
        "env/conda-meta/history": "",
        "env/lib/z.py": "",
        "envs/cartpole.py": "",  # an RL environment, no virtualenv
        "node_modules/a/index.js": "",
        "pkg/__pycache__/m.cpython-311.pyc": b"\0",
        ".hidden/z.py": "",
    }
    root = _repo(tmp_path / "plain", files, git=False)
    facts = survey(root)
    assert facts.files == ("envs/cartpole.py", *(f"src/m{i}.py" for i in range(5)))
    capped = survey(root, max_files=3)
    assert capped.files_truncated and len(capped.files) == 3
    assert capped.to_dict(max_files=2)["files_left_out"] == 1
