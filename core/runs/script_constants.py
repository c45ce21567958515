"""A run's settings, as numbers the paper may quote: the module-level constants of the script the
run ran, as its commit had it (``EPOCHS = 200``, the way The AI Scientist's templates keep their
settings), and the numbers its command line gave (``--lr 3e-4``, ``--epochs=20``,
``trainer.max_steps=500``: a repository's settings). Both are read from what the run recorded
(``labtui_run.json``: its argv and commit), so a number traces to the run that used it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..workspace.run_folder import RunFolderError, RunRecord, read_run_record

_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*)\s*=\s*([-+]?[0-9][0-9_.eE+-]*)\s*(?:#.*)?$", re.M)
_NUMERIC = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def run_settings(root: Path, run: Path) -> dict[str, float]:
    """{setting: value} of the run in folder ``run``: its command line's numbers first (what
    the run was given: a number in the paper traces to them before a default in the code),
    then its script's constants."""
    argv, commit = _command_and_commit(run)
    script = next((word for word in argv[1:] if word.endswith(".py")), "experiment.py")
    code = _code(Path(root), script, commit)
    return {**arguments(argv), **constants(code)}


def _command_and_commit(run: Path) -> tuple[list[str], str]:
    """The command line and the commit the run's record names (an import has no command; a
    run without a readable record has neither)."""
    try:
        record = read_run_record(run)
    except RunFolderError:
        return [], ""
    return (record.argv if isinstance(record, RunRecord) else []), record.commit


def constants(code: str) -> dict[str, float]:
    found = {}
    for name, literal in _CONSTANT.findall(code):
        try:
            found[name] = float(literal.replace("_", ""))
        except ValueError:
            continue
    return found


def arguments(argv: list[str]) -> dict[str, float]:
    """The numbers of a command line, by the option (or key) that gave each."""
    found = {}
    for before, word in zip(["", *argv], argv, strict=False):
        name, _, literal = word.partition("=") if "=" in word else (before, "", word)
        if name.lstrip("-") and _NUMERIC.match(literal):
            found[name] = float(literal)
    return found


def _code(root: Path, script: str, commit: str) -> str:
    """The script as the run's commit had it (the working copy when the commit is unknown)."""
    if commit:
        done = subprocess.run(
            ["git", "show", f"{commit}:{script}"],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            return done.stdout
    path = root / script
    return path.read_text(encoding="utf-8") if path.is_file() else ""
