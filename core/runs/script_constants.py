"""A run's settings, as numbers the paper may quote: the settings of the script the run ran, as
its commit had it (module-level constants of any case, ``EPOCHS = 200`` as The AI Scientist's
templates keep them or ``n_features = 64``, and argparse defaults, ``--lr`` with
``default=3e-4``), and the numbers its command line gave (``--lr 3e-4``, ``--epochs=20``,
``trainer.max_steps=500``: a repository's settings). Both are read from what the run recorded
(``labtui_run.json``: its argv and commit), so a number traces to the run that used it. The
script and the commit are found here for core/runs/run_changes.py too.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path

from ..source.script_settings import is_number, script_settings
from ..workspace.run_folder import RunFolderError, RunRecord, read_run_record

DEFAULT_SCRIPT = "experiment.py"
_NUMERIC = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_WHOLE = re.compile(r"^[-+]?\d+$")


def run_settings(root: Path, run: Path) -> dict[str, float]:
    """{setting: value} of the run in folder ``run``: its command line's numbers first (what
    the run was given: a number in the paper traces to them before a default in the code),
    then its script's settings, an option's default only where the command line did not give
    that option."""
    argv, commit = command_and_commit(run)
    code = script_code(Path(root), script_of(argv), commit)
    given = arguments(argv)
    return {**given, **{k: v for k, v in constants(code).items() if k not in given}}


def script_of(argv: list[str]) -> str:
    """The experiment script a command line runs: its first ``.py`` word after the program."""
    return next((word for word in argv[1:] if word.endswith(".py")), DEFAULT_SCRIPT)


def command_and_commit(run: Path) -> tuple[list[str], str]:
    """The command line and the commit the run's record names (an import has no command; a
    run without a readable record has neither)."""
    try:
        record = read_run_record(run)
    except RunFolderError:
        return [], ""
    return (record.argv if isinstance(record, RunRecord) else []), record.commit


def constants(code: str) -> dict[str, float]:
    """The numeric settings of ``code``: a constant by its name, an option's default by its
    long flag (``--lr``), the name its command line gives it, so that a value given there
    replaces the default (``run_settings``). Infinity is no number a paper quotes."""
    return {
        setting.flag or setting.name: float(setting.value)
        for setting in script_settings(code)
        if is_number(setting.value) and math.isfinite(setting.value)
    }


def arguments(argv: list[str]) -> dict[str, float]:
    """The numbers of a command line, by the option (or key) that gave each."""
    found = {}
    for before, word in zip(["", *argv], argv, strict=False):
        name, _, literal = word.partition("=") if "=" in word else (before, "", word)
        if name.lstrip("-") and _NUMERIC.match(literal):
            found[name] = float(literal)
    return found


def number_in(word: str) -> int | float | None:
    """The number a command-line word spells (``20``, ``-1``, ``3e-4``), else None."""
    if not _NUMERIC.match(word):
        return None
    return int(word) if _WHOLE.match(word) else float(word)


def script_code(root: Path, script: str, commit: str) -> str:
    """The script as the run's commit had it (the working copy when the commit is unknown)."""
    if commit:
        committed = committed_text(root, commit, script)
        if committed is not None:
            return committed
    path = root / script
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def committed_text(root: Path, commit: str, path: str) -> str | None:
    """The file at ``path`` as ``commit`` has it; None when git cannot show it (no such
    commit, no such file in it, no repository)."""
    return git_output(root, "show", f"{commit}:{path}")


def git_output(root: Path, *args: str) -> str | None:
    """What ``git args`` prints in ``root``; None when it fails. Read-only: no index lock is
    taken, as the pipeline may be committing at the same time."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=root, capture_output=True, text=True, errors="replace", check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None
