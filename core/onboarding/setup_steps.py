"""The steps a README runs before its experiment: ``bash create_output_dirs.sh``, ``mkdir -p
checkpoints``. Without them the run fails on its first write, so ``labtui init`` proposes them as
``[experiment] prepare``, which labtui runs in the project folder before every run.

Only steps that change nothing outside the repository and need no network are taken: a shell
script of the repository, or ``mkdir``. Installing packages, logging in, downloading and
activating environments are the researcher's to do once, not every run's.
"""

from __future__ import annotations

import re
import shlex

from .command_lines import FENCE

_SHELLS = ("bash", "sh", "zsh")
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
    script = words[1] if words[0] in _SHELLS and len(words) > 1 else words[0]
    if re.fullmatch(r"(\./)?[\w./-]+\.sh", script) and script.removeprefix("./") in files:
        return shlex.join(words)
    return ""
