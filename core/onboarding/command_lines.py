"""The command lines that run Python in a repository: those in the README's fenced code blocks,
its .sh scripts and its Makefiles, each taken apart into the launcher (python, torchrun,
deepspeed, accelerate launch) with its own options, the script or module it runs, and the
arguments it gives. Read as text with ``shlex``; nothing is run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

from ..source.files import normal_path, read_text
from .repo_facts import Command, Readme

FENCE = re.compile(r"\s*(```|~~~)")
_REDIRECT = re.compile(r"\s\d?>>?&?\s*\S+")
_MAKE_PYTHON = re.compile(r"\$[({]?PYTHON3?[)}]?", re.IGNORECASE)
_PYTHON = re.compile(r"(.*/)?python(\d+(\.\d+)?)?")
_ENV_RUNNERS = {"uv", "poetry", "pipenv", "pdm", "hatch", "conda", "mamba", "micromamba"}
_SKIP_WORDS = {"nohup", "time", "exec", "env", "sudo", "srun", "$", ">", "%"}


def find_commands(
    root: Path, files: list[str], readme: Readme | None, py: set[str]
) -> list[Command]:
    sources = []
    if readme is not None:
        text = read_text(root, readme.path) or ""
        numbered = list(enumerate(text.splitlines(), 1))
        markdown = readme.path.lower().endswith((".md", ".markdown"))
        sources.append((readme.path, _fenced(numbered) if markdown else numbered))
    for rel in files:
        name = PurePosixPath(rel).name
        if name.endswith((".sh", ".mk")) or name in ("Makefile", "makefile", "GNUmakefile"):
            sources.append((rel, list(enumerate((read_text(root, rel) or "").splitlines(), 1))))
    found = []
    for where, lines in sources:
        for number, line in _joined(lines):
            for tokens in _segments(line):
                parts = _command(tokens, py, PurePosixPath(where).parent)
                if parts is not None:
                    found.append(Command(line.strip(), f"{where}:{number}", *parts))
    return found


def _fenced(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    inside, code = False, []
    for number, line in lines:
        if FENCE.match(line):
            inside = not inside
        elif inside:
            code.append((number, line))
    return code


def _joined(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines with backslash continuations joined, each numbered by its first line."""
    out: list[tuple[int, str]] = []
    for number, line in lines:
        if out and out[-1][1].endswith("\\"):
            out[-1] = (out[-1][0], out[-1][1][:-1] + " " + line.strip())
        else:
            out.append((number, line.rstrip()))
    return out


def _segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line (split at && ; | &), redirections dropped."""
    line = _REDIRECT.sub(" ", _MAKE_PYTHON.sub("python", line.strip().lstrip("@-\t")))
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = line.split()
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set("&|;()"):
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _command(tokens: list[str], py: set[str], here: PurePosixPath) -> tuple[Any, ...] | None:
    """(launcher, prefix, script, module, args) when the tokens run Python, else None."""
    while tokens and (tokens[0] in _SKIP_WORDS or re.match(r"[A-Za-z_]\w*=", tokens[0])):
        tokens = tokens[1:]  # env assignments, nohup, a shell prompt
    tokens = _without_env_runner(tokens)
    first = tokens[0].lstrip("!") if tokens else ""
    if _PYTHON.fullmatch(first):
        launcher, rest = "python", tokens[1:]
    elif first in ("torchrun", "deepspeed"):
        launcher, rest = first, tokens[1:]
    elif first == "accelerate" and tokens[1:2] == ["launch"]:
        launcher, rest, first = "accelerate", tokens[2:], "accelerate launch"
    else:
        return None
    prefix, launched = tuple(first.split()), launcher != "python"
    for i, token in enumerate(rest):
        if i > 0 and rest[i - 1] in ("-m", "--module") and launched and launcher == "python":
            continue  # the name of python -m torch.distributed.launch
        if token in ("-m", "--module") and i + 1 < len(rest):
            module = rest[i + 1]
            if module in ("torch.distributed.launch", "torch.distributed.run"):
                launched = True  # a launcher: its options, then the script
                continue
            script = _module_file(module, py)
            return launcher, (*prefix, *rest[:i]), script, module, tuple(rest[i + 2 :])
        if token.endswith(".py"):
            script = next(
                (p for p in (normal_path(token), normal_path(here / token)) if p in py), ""
            )
            return launcher, (*prefix, *rest[:i]), script, "", tuple(rest[i + 1 :])
        flag_value = i > 0 and rest[i - 1] in ("-W", "-X")
        if token == "-c" or not (launched or token.startswith("-") or flag_value):
            return None  # python -c, or python on something that is no script
    return None


def _without_env_runner(tokens: list[str]) -> list[str]:
    """``uv run python x.py`` (``poetry run``, ``pipenv run``, ``pdm run``, ``hatch run``,
    ``conda run -n env``) is python in the project's environment: the runner and its options go,
    and ``uv run x.py`` becomes ``python x.py``. labtui runs the environment's interpreter
    itself ([experiment] python)."""
    if len(tokens) < 3 or tokens[0] not in _ENV_RUNNERS or tokens[1] != "run":
        return tokens
    rest = tokens[2:]
    start = next((i for i, t in enumerate(rest) if _PYTHON.fullmatch(t) or t.endswith(".py")), None)
    if start is None:
        return tokens
    return rest[start:] if _PYTHON.fullmatch(rest[start]) else ["python", *rest[start:]]


def _module_file(module: str, py: set[str]) -> str:
    stem = module.replace(".", "/")
    for base in ("", "src/"):
        for candidate in (f"{base}{stem}.py", f"{base}{stem}/__main__.py"):
            if candidate in py:
                return candidate
    return ""
