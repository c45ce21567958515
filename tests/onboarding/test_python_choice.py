"""core.onboarding.python_choice (issue 43): the interpreter `labtui init` proposes. A research
venv made from the same Python as labtui's is told apart by its prefix, the active environment
comes first, and a package the chosen one lacks is an open question with its install line, before
anything runs; a command written into the proposal by hand is checked the same way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.research_repo import make_repository

from labtui.core.errors import ConfigError
from labtui.core.onboarding.python_choice import choose_python
from labtui.core.onboarding.repo_init import read_proposal, write_proposal
from labtui.core.onboarding.repo_scan import survey

COMMAND = "{python} train.py --output_dir {out_dir}"  # train.py imports numpy


@pytest.fixture(autouse=True)
def _no_active_environment(monkeypatch):
    """The test's own shell may have a venv active; each test says which one is."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)


def research_venv(where: Path, *packages: str) -> Path:
    """A venv made from labtui's own base Python (no pip: fast), with stand-ins for
    ``packages`` in its site-packages (an empty package is all an import check looks for)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python*/site-packages"))
    for name in packages:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("")
    return where / "bin" / "python"


def test_a_research_venv_made_from_labtuis_python_is_not_taken_for_labtuis_own(tmp_path):
    root = make_repository(tmp_path / "repo")
    python = research_venv(root / ".venv")  # no numpy, which labtui's own has
    assert python.resolve() == Path(sys.executable).resolve(), "the case of the issue"
    chosen = choose_python(root, survey(root), COMMAND)
    assert chosen.python == str(python)
    assert "labtui's own interpreter has" not in chosen.why
    assert chosen.why.startswith(f"the repository's .venv ({root / '.venv'}), the environment")
    assert "it lacks numpy" in chosen.why
    # the missing package is the researcher's question, with the line that installs it there
    assert f"{python} (the repository's .venv) lacks numpy" in chosen.question
    assert f"(`uv pip install --python {python} numpy`)" in chosen.question


def test_a_research_venv_that_has_what_the_script_imports_is_proposed(tmp_path):
    root = make_repository(tmp_path / "repo")
    python = research_venv(root / ".venv", "numpy")
    chosen = choose_python(root, survey(root), COMMAND)
    assert (chosen.python, chosen.question) == (str(python), "")
    assert chosen.why.startswith(f"the repository's .venv ({root / '.venv'}) has numpy (train.py")
    assert chosen.why.endswith(
        "; it has no matplotlib, so plot.py will run with labtui's own Python"
    )


def test_the_active_virtualenv_comes_before_the_repositorys_own(tmp_path, monkeypatch):
    root = make_repository(tmp_path / "repo")
    research_venv(root / ".venv", "numpy")
    active = research_venv(tmp_path / "active", "numpy", "matplotlib")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "active"))
    chosen = choose_python(root, survey(root), COMMAND)
    assert (chosen.python, chosen.question) == (str(active), "")
    assert chosen.why.startswith(f"the active $VIRTUAL_ENV ({tmp_path / 'active'}) has numpy")


def test_an_active_environment_that_lacks_a_package_is_passed_over_for_one_that_has_it(
    tmp_path, monkeypatch
):
    root = make_repository(tmp_path / "repo")
    own = research_venv(root / ".venv", "numpy", "matplotlib")
    active = research_venv(tmp_path / "active")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "active"))
    chosen = choose_python(root, survey(root), COMMAND)
    assert (chosen.python, chosen.question) == (str(own), "")
    assert f"({active} (the active $VIRTUAL_ENV) lacks numpy)" in chosen.why


def test_without_a_research_environment_labtuis_own_is_proposed_by_its_prefix(tmp_path):
    root = make_repository(tmp_path / "repo")
    chosen = choose_python(root, survey(root), COMMAND)
    assert (chosen.python, chosen.question) == ("", "")
    assert chosen.why.startswith(f"labtui's own interpreter ({sys.prefix}) has numpy")


def test_a_package_no_interpreter_here_has_is_a_question_with_its_install_line(tmp_path):
    root = make_repository(tmp_path / "repo")
    (root / "model.py").write_text("import notapackage_xyz\n" + (root / "model.py").read_text())
    chosen = choose_python(root, survey(root), COMMAND)
    assert (chosen.python, chosen.why) == ("", "")
    assert chosen.question.startswith(
        "No Python found here has numpy, notapackage_xyz (train.py and the modules it imports "
        f"need them): {sys.executable} (labtui's own interpreter) lacks notapackage_xyz"
    )
    assert f"(`{sys.executable} -m pip install notapackage_xyz`)" in chosen.question
    assert chosen.question.endswith(
        "or set python in [experiment] to your research environment's interpreter."
    )


def test_a_command_written_by_hand_is_checked_against_its_interpreter(tmp_path):
    root = make_repository(tmp_path / "repo")
    python = research_venv(tmp_path / "bare")
    has_numpy = research_venv(root / ".venv", "numpy")
    proposal = write_proposal(
        root,
        f'[experiment]\ncommand = "{COMMAND}"\npython = "{python}"\nedit = ["train.py"]\n\n'
        '[paper]\ntex = "paper/main.tex"\n',
    )
    with pytest.raises(ConfigError) as raised:
        read_proposal(root, proposal)
    assert raised.value.message == (
        f"{proposal}: [experiment] python = '{python}': {python} lacks numpy (train.py imports "
        "them)"
    )
    assert raised.value.hint == (
        f"install them there (`uv pip install --python {python} numpy`), or write python = "
        f'"{has_numpy}" (the repository\'s .venv has them)'
    )
