"""Template validation: a folder that breaks the contract is refused with every problem named."""

from __future__ import annotations

import json
import shutil

import pytest

from labtui.core.errors import TemplateError
from labtui.core.settings.templates import (
    builtin_templates_dir,
    find_template,
    list_templates,
    validate_template,
)
from labtui.core.workspace.project import Project


@pytest.fixture
def template_copy(tmp_path):
    target = tmp_path / "tpl"
    shutil.copytree(builtin_templates_dir() / "moons", target)
    return target


def test_builtin_moons_is_valid_and_listed():
    assert "moons" in list_templates()
    validate_template(find_template("moons"))


def test_every_problem_is_named(template_copy):
    (template_copy / "plot.py").unlink()
    (template_copy / "prompt.json").write_text('{"system": "x"}')
    (template_copy / "seed_ideas.json").write_text("[{,}]")
    (template_copy / "experiment.py").write_text("def broken(:\n")
    (template_copy / "run_0").mkdir()
    (template_copy / "run_0" / "final_info.json").write_text(json.dumps({"moons": {"acc": 1}}))
    with pytest.raises(TemplateError) as info:
        validate_template(template_copy)
    text = str(info.value)
    assert "plot.py: missing" in text
    assert 'prompt.json: field "task_description"' in text
    assert "seed_ideas.json: invalid JSON at line 1" in text
    assert "experiment.py: Python syntax error at line 1" in text
    assert 'run_0/final_info.json: entry "moons" has no "means"' in text


def test_latex_without_bibliography_is_refused(template_copy):
    tex = template_copy / "latex" / "template.tex"
    text = tex.read_text()
    start = text.index(r"\begin{filecontents}")
    end = text.index(r"\end{filecontents}") + len(r"\end{filecontents}")
    tex.write_text(text[:start] + text[end:])
    for bib in template_copy.joinpath("latex").glob("*.bib"):
        bib.unlink()
    with pytest.raises(TemplateError, match="no bibliography"):
        validate_template(template_copy)


def test_unknown_template_lists_the_known_ones():
    with pytest.raises(TemplateError, match="not found") as info:
        find_template("does_not_exist")
    assert "moons" in info.value.hint


def test_new_project_is_a_git_repo_with_config_and_first_commit(tmp_path, template_copy):
    project = Project.create(tmp_path / "p", str(template_copy), idea="try dropout")
    assert (project.root / "labtui.toml").exists()
    assert project.config.project.idea == "try dropout"
    log = project.repo.git.log("--format=%s").splitlines()
    assert log == ["labtui: new project from template tpl"]
    assert project.commit("nothing changed") is None
    (project.root / "notes.md").write_text("x\n")
    info = project.commit("notebook: add", ["notes.md"])
    assert info.files == ["notes.md"] and "+x" in info.diff


def test_new_refuses_a_non_empty_folder(tmp_path, template_copy):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "keep.txt").write_text("mine")
    with pytest.raises(Exception, match="not empty"):
        Project.create(tmp_path / "p", str(template_copy))
    assert (tmp_path / "p" / "keep.txt").read_text() == "mine"


def test_a_template_that_reads_its_budget_gets_labtuis_reader_beside_it(tmp_path):
    """The built-in templates share templates/labtui_run.py; a project (or a copy) gets it beside
    experiment.py when its code imports it, unless it brings its own; other templates never."""
    from labtui.core.settings.templates import RUN_TERMS, copy_template

    copy_template(builtin_templates_dir() / "moons", tmp_path / "moons")
    shared = (builtin_templates_dir() / RUN_TERMS).read_text()
    assert (tmp_path / "moons" / RUN_TERMS).read_text() == shared
    own = tmp_path / "own"
    own.mkdir()
    (own / "experiment.py").write_text("from labtui_run import read_run_env\n")
    (own / RUN_TERMS).write_text("# the template's own\n")
    copy_template(own, tmp_path / "own_copy")
    assert (tmp_path / "own_copy" / RUN_TERMS).read_text() == "# the template's own\n"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "experiment.py").write_text("import json\n")
    copy_template(plain, tmp_path / "plain_copy")
    assert not (tmp_path / "plain_copy" / RUN_TERMS).exists()
