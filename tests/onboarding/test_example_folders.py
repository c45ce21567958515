"""`labtui init` in a repository of many examples (issue 43): at its top, one example chosen by
stated rules and the others listed as an open question; `--path FOLDER`, or init run inside the
folder, sets that example up with runs starting in it ([experiment] workdir) and its README's
set-up step (`python generate_data.py` before `python train.py`) as [experiment] prepare."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import run_labtui
from support.research_repo import commit_as_researcher

from labtui.core.errors import ConfigError
from labtui.core.onboarding.constant_wrapper import runs_wrapper
from labtui.core.onboarding.example_folders import choose_example, place_in_folder
from labtui.core.onboarding.repo_facts import EntryPoint, Readme, RepoSurvey, ResultFile
from labtui.core.onboarding.setup_steps import readme_setup_steps
from labtui.core.settings.config import config_from_dict
from labtui.core.settings.contract import run_argv
from labtui.core.settings.sections import ExperimentSection

GENERATE = """\
import json
import random

random.seed(0)
json.dump([random.random() for _ in range(50)], open("data.json", "w"))
"""

# Reads data.json from the folder it starts in: run anywhere else, or before the set-up step,
# it fails.
TRAIN = """\
import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", default="out")
args = parser.parse_args()
data = json.load(open("data.json"))
accuracy = sum(x > 0.3 for x in data) / len(data)
print(f"accuracy {accuracy:.3f}")
os.makedirs(args.out_dir, exist_ok=True)
with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
    json.dump({"main": {"means": {"accuracy": accuracy}}}, f)
"""

EXAMPLE_README = """\
# Example {name}

A tiny classifier on generated numbers.

```bash
python generate_data.py
python train.py
```
"""

TOP_README = """\
# Examples

Small examples, one per folder. Start with [the second one](examples/b).
"""


def _monorepo(tmp_path: Path) -> Path:
    root = tmp_path / "examples-repo"
    for name in ("a", "b"):
        folder = root / "examples" / name
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(EXAMPLE_README.format(name=name))
        (folder / "generate_data.py").write_text(GENERATE)
        (folder / "train.py").write_text(TRAIN)
        (folder / ".gitignore").write_text("data.json\nout/\n")
    (root / "README.md").write_text(TOP_README)
    return commit_as_researcher(root)


def _init(cwd: Path, *args: str):
    return run_labtui("init", "--yes", "--no-model", *args, cwd=cwd)


def _proposal(root: Path) -> str:
    return (root / ".labtui/init/labtui.toml").read_text()


def test_at_the_top_one_example_is_chosen_by_the_readme_and_the_others_listed(tmp_path):
    root = _monorepo(tmp_path)
    done = _init(root, "--no-baseline")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    proposal = _proposal(root)
    assert "This repository holds 2 examples" in proposal
    assert "examples/a, examples/b" in proposal and "--path <folder>" in proposal
    assert "README.md:3 names it first" in proposal  # why b, said in the proposal
    experiment = tomllib.loads((root / "labtui.toml").read_text())["experiment"]
    assert experiment["workdir"] == "examples/b"
    assert experiment["prepare"] == ["{python} generate_data.py"]


def test_init_with_path_runs_the_baseline_in_the_folder_after_its_setup_step(tmp_path):
    root = _monorepo(tmp_path)
    done = _init(root, "--path", "examples/a")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    assert "This repository holds" not in _proposal(root)  # the researcher chose: no question
    experiment = tomllib.loads((root / "labtui.toml").read_text())["experiment"]
    assert experiment["workdir"] == "examples/a"
    assert experiment["prepare"] == ["{python} generate_data.py"]
    assert experiment["command"].startswith("{python} train.py")
    assert "examples/a/train.py" in experiment["edit"]
    # run_0 stays at the project's top; the script ran in examples/a, after the set-up step
    means = json.loads((root / "run_0/final_info.json").read_text())["main"]["means"]
    assert 0.5 < means["accuracy"] <= 1.0
    record = json.loads((root / "run_0/labtui_run.json").read_text())
    assert record["cwd"] == str(root / "examples/a")
    assert (root / "examples/a/data.json").is_file()
    assert not (root / "examples/b/data.json").exists()


def test_init_run_inside_an_example_folder_sets_that_folder_up(tmp_path):
    root = _monorepo(tmp_path)
    done = _init(root / "examples/b", "--no-baseline")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr
    experiment = tomllib.loads((root / "labtui.toml").read_text())["experiment"]
    assert experiment["workdir"] == "examples/b"
    assert experiment["prepare"] == ["{python} generate_data.py"]


def test_a_folder_with_no_script_is_refused_with_where_to_run_init(tmp_path):
    root = _monorepo(tmp_path)
    (root / "docs").mkdir()
    done = _init(root, "--path", "docs")
    assert done.returncode != 0
    assert "holds no script that runs an experiment" in done.stderr
    assert "--path" in done.stderr and not (root / "labtui.toml").exists()


# -- the rules, the settings and the set-up step, by code -----------------------------------------


def _survey(readme: str = "", results: tuple[ResultFile, ...] = ()) -> RepoSurvey:
    entries = tuple(EntryPoint(f"examples/{n}/train.py", "argparse") for n in ("x", "basic"))
    return RepoSurvey(
        root="/r",
        readme=Readme("README.md", readme) if readme else None,
        entry_points=entries,
        result_files=results,
    )


def test_without_a_readme_link_the_name_then_the_newest_results_choose():
    folders = ["examples/basic", "examples/x"]
    assert choose_example(_survey(), folders).folder == "examples/basic"
    assert "its name, basic" in choose_example(_survey(), folders).why
    newer = (
        ResultFile("examples/x/out/final_info.json", "final_info", 10, 2.0),
        ResultFile("examples/y/out/final_info.json", "final_info", 10, 3.0),
    )
    chosen = choose_example(_survey(results=newer), ["examples/x", "examples/z"])
    assert chosen.folder == "examples/x" and "newest results" in chosen.why
    linked = choose_example(_survey("run `cd examples/x && python train.py`"), folders)
    assert linked.folder == "examples/x" and "README.md:1" in linked.why


def test_a_folders_paths_become_the_projects_but_not_the_run_folders():
    values = {
        "experiment": {"command": "{python} train.py", "edit": ["train.py"], "protect": ["data/*"]},
        "results": {"path": "{out_dir}/metrics.json"},
    }
    place_in_folder(values, {}, "examples/a")
    assert values["experiment"]["workdir"] == "examples/a"
    assert values["experiment"]["edit"] == ["examples/a/train.py"]
    assert values["experiment"]["protect"] == ["examples/a/data/*"]
    assert values["results"]["path"] == "{out_dir}/metrics.json"
    assert values["experiment"]["command"] == "{python} train.py"


def test_the_constants_wrapper_stays_at_the_top_and_is_named_from_the_folder():
    wrapped = "{python} .labtui/with_constants train.py --max_iters=200"
    values = {"experiment": {"command": wrapped, "smoke_command": wrapped + " --smoke"}}
    place_in_folder(values, {}, "examples/a")
    expected = "{python} ../../.labtui/with_constants train.py --max_iters=200"
    assert values["experiment"]["command"] == expected
    assert values["experiment"]["smoke_command"] == expected + " --smoke"
    assert runs_wrapper(expected.split()), "still read as running the wrapper"


def test_the_run_folder_is_named_from_the_working_folder():
    experiment = ExperimentSection(command="{python} train.py --out {out_dir}", workdir="ex/a")
    assert run_argv(experiment, "python", "run_3") == ["python", "train.py", "--out", "../../run_3"]
    assert run_argv(ExperimentSection(command="{python} t.py {out_dir}"), "py", "run_3")[-1] == (
        "run_3"
    )


@pytest.mark.parametrize("workdir", ["/abs/path", "../outside", "a/../../b"])
def test_a_workdir_outside_the_project_is_named_with_its_fix(tmp_path, workdir):
    with pytest.raises(ConfigError, match=r"workdir") as raised:
        config_from_dict({"experiment": {"workdir": workdir}}, tmp_path / "labtui.toml")
    assert "relative to the project" in str(raised.value.hint)


def test_a_readmes_python_setup_step_runs_with_the_research_interpreter():
    readme = EXAMPLE_README.format(name="a").replace(
        "python generate_data.py", "python download_weights.py\npython generate_data.py --n 5"
    )
    line = next(i for i, t in enumerate(readme.splitlines(), 1) if "train.py" in t)
    files = {"generate_data.py", "download_weights.py", "train.py"}
    assert readme_setup_steps(readme, line, files) == ["{python} generate_data.py --n 5"]
