"""The steps a README runs before its experiment: ``bash create_output_dirs.sh``, ``mkdir -p
checkpoints``. Without them the run fails on its first write, so ``labtui init`` proposes them as
``[experiment] prepare``, which labtui runs in the run's working folder before every run.

Only steps that change nothing outside the repository and need no network are taken: a shell
script of the repository, one of its Python scripts (``python generate_data.py``, run with the
research interpreter as ``{python} generate_data.py``) unless its name says it downloads, or
``mkdir``. Installing packages, logging in, downloading and activating environments are the
researcher's to do once, not every run's.
"""

from __future__ import annotations

import re
import shlex

from .command_lines import FENCE

_SHELLS = ("bash", "sh", "zsh")
_PYTHONS = re.compile(r"python(3(\.\d+)?)?")
# a script that fetches what it needs fails every run without a network: the researcher's, once
_NETWORK_NAME = re.compile(r"download|fetch|install|upload|login", re.I)
_MAX_STEPS = 4


def readme_setup_steps(readme: str, command_line: int, files: set[str]) -> list[str]:
    """The set-up steps in the README's code block that holds the run command (at line
    ``command_line``, 1-based), before that command; ``files``: the repository's files."""
    steps: list[str] = []
    for line in _block_before(readme.splitlines(), command_line):
        step = _setup_step(line.strip().lstrip("$ ").strip(), files)
        if step and step not in steps:
            steps.append(step)
    return steps[-_MAX_STEPS:]


def _block_before(lines: list[str], command_line: int) -> list[str]:
    """The fenced block's lines above the command (none when it is in no fenced block)."""
    above: list[str] = []
    for line in reversed(lines[: command_line - 1]):
        if FENCE.match(line):
            return list(reversed(above))
        above.append(line)
    return []


def _setup_step(line: str, files: set[str]) -> str:
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return ""
    if not words:
        return ""
    if words[0] == "mkdir" and all(not w.startswith(("/", "~", "$")) for w in words[1:]):
        return shlex.join(words)
    if _PYTHONS.fullmatch(words[0]) and len(words) > 1:
        return _python_step(words[1:], files)
    script = words[1] if words[0] in _SHELLS and len(words) > 1 else words[0]
    if re.fullmatch(r"(\./)?[\w./-]+\.sh", script) and script.removeprefix("./") in files:
        return shlex.join(words)
    return ""


def _python_step(args: list[str], files: set[str]) -> str:
    """``{python} script.py …`` for a Python script of the repository that needs no network."""
    script = args[0].removeprefix("./")
    if script not in files or not script.endswith(".py") or _NETWORK_NAME.search(script):
        return ""
    return "{python} " + shlex.join(args)
