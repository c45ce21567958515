"""How a project runs one experiment, what its agents may edit, and what its prompts say of it:
the template contract as the defaults, a researcher's repository as labtui.toml says."""

from __future__ import annotations

import json

import pytest

from labtui.core.errors import ConfigError
from labtui.core.settings.config import Config, load_config
from labtui.core.settings.contract import (
    code_text,
    edit_files,
    matches,
    prompt_facts,
    protected_files,
    research_brief,
    run_argv,
    run_env,
)
from labtui.core.settings.sections import ExperimentSection, ResultsSection


def repository(tmp_path):
    for name, text in {
        "train.py": "import model\nLR = 3e-4\n",
        "model.py": "WIDTH = 64\n",
        "models/resnet.py": "DEPTH = 18\n",
        "eval.py": "def score(): ...\n",
        "data/train.csv": "x,y\n1,2\n",
        "run_0/final_info.json": "{}",
        ".labtui/journal.jsonl": "",
    }.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_template_contract_is_the_default_command():
    argv = run_argv(ExperimentSection(), "/usr/bin/python3", "run_2")
    assert argv == ["/usr/bin/python3", "experiment.py", "--out_dir=run_2"]


def test_a_repository_command_is_split_as_a_shell_would_and_filled_in():
    experiment = ExperimentSection(
        command="{python} train.py --output_dir {out_dir} --name 'wide model' hydra.run.dir={out_dir}",
        smoke_command="{python} train.py --output_dir {out_dir} --max_steps 10",
    )
    assert run_argv(experiment, "py", "run_1") == [
        "py", "train.py", "--output_dir", "run_1", "--name", "wide model", "hydra.run.dir=run_1",
    ]  # fmt: skip
    assert run_argv(experiment, "py", "run_1", smoke=True)[-2:] == ["--max_steps", "10"]


@pytest.mark.parametrize(
    ("command", "message", "fix"),
    [
        (
            "{python} train.py --out '{out_dir}",
            "cannot be read as a command line",
            "close the quote",
        ),
        (
            "{python} train.py --out {outdir}",
            "has {outdir}, which labtui does not fill",
            "{out_dir}",
        ),
    ],
)
def test_a_command_labtui_cannot_run_names_the_field_and_the_fix(command, message, fix):
    with pytest.raises(ConfigError) as caught:
        run_argv(ExperimentSection(command=command), "py", "run_1")
    assert "[experiment] command" in caught.value.message and message in caught.value.message
    assert fix in caught.value.hint


def test_an_empty_smoke_command_says_how_to_write_one():
    with pytest.raises(ConfigError, match=r"smoke_command is empty"):
        run_argv(ExperimentSection(), "py", "run_1", smoke=True)


def test_the_run_learns_its_folder_from_the_environment(tmp_path):
    assert run_env(tmp_path, "run_3") == {
        "LABTUI_OUT_DIR": str(tmp_path / "run_3"),
        "LABTUI_RUN_ID": "run_3",
    }


def test_edit_globs_name_files_but_never_runs_state_or_protected_files(tmp_path):
    root = repository(tmp_path)
    experiment = ExperimentSection(edit=["*.py", "models/"], protect=["eval.py", "data/"])
    assert edit_files(root, experiment) == ["model.py", "train.py", "models/resnet.py"]
    assert protected_files(root, experiment) == ["eval.py", "data/train.csv"]
    assert matches("data/x/y.npz", ["data"]) and not matches("database.py", ["data"])


def test_edit_globs_that_name_no_file_are_an_error_with_the_fix(tmp_path):
    root = repository(tmp_path)
    with pytest.raises(ConfigError) as caught:
        edit_files(root, ExperimentSection(edit=["trian.py"]))
    assert "[experiment] edit = ['trian.py'] names no file" in caught.value.message
    assert "edit = [" in caught.value.hint


def test_the_code_shown_to_the_agents_names_each_file_and_says_what_was_cut(tmp_path):
    root = repository(tmp_path)
    (root / "model.py").write_text("W = 1\n" * 200)
    shown = code_text(root, ExperimentSection(edit=["train.py", "model.py"]), limit_chars=100)
    assert shown.startswith("### train.py\nimport model") and "### model.py" in shown
    assert "cut here: too long" in shown
    assert len(shown) < 300


def test_a_template_reads_as_its_prompts_always_read(tmp_path):
    (tmp_path / "experiment.py").write_text("EPOCHS = 3\n")
    facts = prompt_facts(tmp_path, Config())
    assert facts == {
        "code_files": "experiment.py",
        "run_command": "python experiment.py --out_dir=run_i",
        "results_rule": "keep writing `final_info.json` in the same format (a dict of dataset -> "
        '{"means": {...}})',
        "tex": "latex/template.tex",
    }
    assert code_text(tmp_path, Config().experiment) == "EPOCHS = 3\n"


def test_a_repository_reads_in_its_own_names(tmp_path):
    root = repository(tmp_path)
    config = Config()
    config.experiment = ExperimentSection(
        command="{python} train.py --output_dir {out_dir}", edit=["train.py", "model.py"]
    )
    config.results = ResultsSection(
        source="json", path="{out_dir}/metrics.json", metrics={"eval.accuracy": "higher"}
    )
    config.paper.tex = "paper/main.tex"
    facts = prompt_facts(root, config)
    assert facts["code_files"] == "train.py, model.py"
    assert facts["run_command"] == "python train.py --output_dir run_i"
    assert (
        "eval.accuracy" in facts["results_rule"]
        and "{out_dir}/metrics.json" in facts["results_rule"]
    )
    assert facts["tex"] == "paper/main.tex"


def test_a_topic_before_its_code_is_written_reads_without_files(tmp_path):
    assert "no code yet" in code_text(tmp_path, Config().experiment)
    assert prompt_facts(tmp_path, Config())["code_files"] == "experiment.py"


def test_the_task_comes_from_labtui_toml_before_prompt_json(tmp_path):
    (tmp_path / "prompt.json").write_text(
        json.dumps({"system": "You study moons.", "task_description": "Classify moons."})
    )
    config = Config()
    assert research_brief(tmp_path, config).task == "Classify moons."
    config.project.task = "Make ResNet training robust to label noise."
    brief = research_brief(tmp_path, config)
    assert brief.task.startswith("Make ResNet") and brief.system == "You study moons."


def test_no_task_anywhere_says_where_to_write_one(tmp_path):
    with pytest.raises(ConfigError) as caught:
        research_brief(tmp_path, Config())
    assert "[project] task is empty and there is no prompt.json" in caught.value.message
    assert "task =" in caught.value.hint


@pytest.mark.parametrize(
    ("env", "message", "fix"),
    [
        ('{"1X" = "a"}', "env has '1X', which is no environment variable name", "letters, digits"),
        ('{"A B" = "a"}', "env has 'A B', which is no environment variable name", "letters"),
        ("{SEED = 3}", "env has SEED = 3, which is no text", 'write SEED = "3"'),
        ('"offline"', "env must be a table of NAME = \"value\", not 'offline'", "WANDB_MODE"),
        ('{LABTUI_OUT_DIR = "x"}', "env has LABTUI_OUT_DIR, which labtui sets", "remove"),
        ('{CUDA_VISIBLE_DEVICES = "0"}', "env has CUDA_VISIBLE_DEVICES, which labtui", "remove"),
    ],
)
def test_a_bad_env_names_the_field_and_the_fix(tmp_path, env, message, fix):
    (tmp_path / "labtui.toml").write_text(f"[experiment]\nenv = {env}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert "labtui.toml: [experiment] env" in caught.value.message
    assert message in caught.value.message and fix in caught.value.hint


def test_env_is_read_from_labtui_toml(tmp_path):
    (tmp_path / "labtui.toml").write_text(
        '[experiment]\nenv = {WANDB_MODE = "offline", WANDB_DIR = "{out_dir}"}\n', encoding="utf-8"
    )
    assert load_config(tmp_path).experiment.env == {
        "WANDB_MODE": "offline",
        "WANDB_DIR": "{out_dir}",
    }
