"""The static guards of .ci/check fail when the house rules are broken: import-linter's contracts
(pyproject.toml) are run on a copy of core/ or tui/ with one rule broken at a time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tmp_path: Path, break_rule: tuple[str, str] | None = None) -> subprocess.CompletedProcess:
    """lint-imports over a labtui tree with ``break_rule`` (a module's path under the repository,
    core/… or tui/…, and a line to append) applied to it: the folder of the broken module is a
    copy, the other a link to the repository's."""
    package = tmp_path / "labtui"
    package.mkdir()
    (package / "__init__.py").touch()
    broken = break_rule[0].split("/", 1)[0] if break_rule else None
    for folder in ("core", "tui"):
        if folder == broken:
            shutil.copytree(
                REPO / folder, package / folder, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            (package / folder).symlink_to(REPO / folder)
    if break_rule is not None:
        module, line = break_rule
        with (package / module).open("a", encoding="utf-8") as handle:
            handle.write(f"\n{line}\n")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(REPO / "pyproject.toml")],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )


pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def test_the_contracts_hold_for_labtui_as_it_is(tmp_path):
    result = _lint(tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("core/events.py", "import textual", "the engine never imports the front end"),
        (
            "core/pipeline/session.py",
            "from labtui.tui import app",
            "the engine never imports the front end",
        ),
        ("core/stages/plan.py", "from . import experiments", "stages never import each other"),
        ("core/answers/schemas.py", "from ..llm import client", "core's layers"),
        # the cycle provenance -> claims -> effect_text -> provenance, were it back
        ("core/runs/effect_text.py", "from ..provenance import numbers", "core's layers"),
        # packages of one layer must not know each other
        ("core/runs/runner.py", "from ..coding import coder", "core's layers"),
        # the cycle cli -> commands -> cli, were it back
        (
            "tui/commands/new.py",
            "from .. import cli",
            "the commands never import the command line that lists them",
        ),
    ],
)
def test_a_broken_rule_fails_the_check_and_names_the_contract(tmp_path, module, line, contract):
    result = _lint(tmp_path, (module, line))
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken.replace("\n", " ")
