"""A repository of many examples, and one folder of a repository: where `labtui init` sets up.

At the top of a monorepo of examples (pytorch/examples: one folder per example, each with its
README and scripts), a proposal drafted from the whole repository picked one of dozens of
scripts silently and missed its folder's set-up steps. ``example_folders`` finds such folders;
``choose_example`` picks one by stated rules (the top README's link or command, then the
folder's name, then the newest results, then the first by name) and says why, and the
proposal's open question lists the others. ``init --path FOLDER`` (or init run inside a folder)
sets up that folder alone: it is surveyed as if it were the repository, and ``place_in_folder``
turns its proposal into the project's, with ``[experiment] workdir`` naming the folder.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import LabtuiError
from ..source.files import is_data, is_test
from . import repo_scan
from .constant_wrapper import wrapper_from
from .repo_facts import RepoSurvey

# Folder names that say "start here" among examples: the name rule's words.
_STARTING_NAMES = ("basic", "simple", "minimal", "quickstart", "getting_started", "hello", "mnist")
_README = re.compile(r"readme(\.(md|markdown|rst|txt))?", re.I)
SHOWN_FOLDERS = 12  # a question listing 39 folders is read by nobody: the first few, and a count


@dataclass(frozen=True)
class ExampleChoice:
    """The folder init sets up at a monorepo's top, why, and the folders it chose among."""

    folder: str
    why: str
    candidates: tuple[str, ...]

    def question(self) -> str:
        """The open question that lists the other examples and how to set one up instead."""
        shown = ", ".join(self.candidates[:SHOWN_FOLDERS])
        left = len(self.candidates) - SHOWN_FOLDERS
        more = f" and {left} more" if left > 0 else ""
        return (
            f"This repository holds {len(self.candidates)} examples, each in its own folder "
            f"({shown}{more}); labtui proposes {self.folder} ({self.why}). Another one? Run "
            "`labtui init --fresh --path <folder>`."
        )


# -- the folder init was asked for --------------------------------------------------------------


def repository_and_folder(directory: Path, path: str = "") -> tuple[Path, str]:
    """The repository's top folder and the folder in it to set up ('' for the whole
    repository): ``path`` (``--path``, relative to ``directory``), else ``directory`` itself
    when init runs inside the repository rather than at its top."""
    directory = Path(directory).expanduser().resolve()
    wanted = (directory / path).resolve() if path else directory
    if not wanted.is_dir():
        raise LabtuiError(
            f"--path {path}: {wanted} is no folder",
            "give a folder of the repository, e.g. `labtui init --path examples/mnist`",
        )
    top = _top_folder(wanted)
    if top is None:
        return wanted, ""  # no repository: check_repository says so, with its fix
    folder = wanted.relative_to(top).as_posix()
    return top, "" if folder == "." else folder


def folder_survey(root: Path, folder: str) -> RepoSurvey:
    """The facts of ``folder`` of the repository at ``root``, surveyed as if it were the
    repository; a folder with no script of its own (the paper's, say) is refused."""
    facts = repo_scan.survey(root / folder)
    if not _runnable(facts):
        raise LabtuiError(
            f"{root / folder} holds no script that runs an experiment, so labtui cannot set it up",
            f"run `labtui init` in {root}, or give --path the folder of one experiment",
        )
    return facts


def _runnable(facts: RepoSurvey) -> list[str]:
    """The scripts that may run an experiment: not tests, not data preparation, parsed."""
    return [
        e.path for e in facts.entry_points if not (e.error or is_test(e.path) or is_data(e.path))
    ]


def _top_folder(inside: Path) -> Path | None:
    done = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=inside, capture_output=True, text=True, check=False,
    )  # fmt: skip
    top = done.stdout.strip()
    return Path(top).resolve() if done.returncode == 0 and top else None


# -- a monorepo's top: its examples, and the one chosen -------------------------------------------


def example_folders(survey: RepoSurvey) -> list[str]:
    """The folders below the top that are examples of their own: a README and a script that
    runs an experiment, none inside another such folder. Empty where the top folder runs
    scripts itself (one project with helper folders, not a collection of examples)."""
    scripts = _runnable(survey)
    if any("/" not in s for s in scripts):
        return []
    readmes = {str(PurePosixPath(f).parent) for f in survey.files if _README.fullmatch(_name(f))}
    holding = {
        str(parent)
        for s in scripts
        for parent in PurePosixPath(s).parents
        if str(parent) in readmes and str(parent) != "."
    }
    folders = sorted(f for f in holding if not any(f.startswith(f"{o}/") for o in holding))
    return folders if len(folders) > 1 else []


def choose_example(survey: RepoSurvey, folders: list[str]) -> ExampleChoice:
    """One of ``folders`` by the rules, in order: the one the top README links to or runs
    first, one named like a starting example, the one with the newest results, the first by
    name."""
    for rule in (_named_in_readme, _named_to_start, _newest_results):
        chosen = rule(survey, folders)
        if chosen is not None:
            return ExampleChoice(chosen[0], chosen[1], tuple(folders))
    why = "the first by name: no README names one, no name says where to start, no results"
    return ExampleChoice(folders[0], why, tuple(folders))


def _named_in_readme(survey: RepoSurvey, folders: list[str]) -> tuple[str, str] | None:
    """The folder the top README names first, as a link, a ``cd`` or a script's path."""
    if survey.readme is None:
        return None
    text = survey.readme.text
    found = [(m.start(), f) for f in folders if (m := _path_in(text, f)) is not None]
    if not found:
        return None
    at, folder = min(found)
    line = text.count("\n", 0, at) + 1
    return folder, f"{survey.readme.path}:{line} names it first (a link, a cd or a command)"


def _path_in(text: str, folder: str) -> re.Match[str] | None:
    return re.search(rf"(?<![\w./-])(\./)?{re.escape(folder)}(?=[/)\s`'\"]|$)", text)


def _named_to_start(survey: RepoSurvey, folders: list[str]) -> tuple[str, str] | None:
    named = [f for f in folders if _name(f).lower() in _STARTING_NAMES]
    if not named:
        return None
    best = min(named, key=lambda f: _STARTING_NAMES.index(_name(f).lower()))
    return best, f"its name, {_name(best)}, says it is where to start"


def _newest_results(survey: RepoSurvey, folders: list[str]) -> tuple[str, str] | None:
    dated = [
        (r.mtime, f, r.path)
        for r in survey.result_files
        for f in folders
        if r.path.startswith(f"{f}/")
    ]
    if not dated:
        return None
    _mtime, folder, path = max(dated)
    return folder, f"it has the newest results ({path})"


def _name(path: str) -> str:
    return PurePosixPath(path).name


# -- a folder's proposal as the project's -------------------------------------------------------

# The keys whose values are paths relative to the project: a folder's survey wrote them relative
# to the folder. The command and prepare run in the folder ([experiment] workdir) and stay.
_PROJECT_PATHS = ("experiment.edit", "experiment.protect", "results.path", "paper.tex")


def place_in_folder(
    values: dict[str, dict[str, Any]], reasons: dict[str, str], folder: str
) -> None:
    """A proposal drafted from ``folder``'s own survey made the project's: runs start in the
    folder (``[experiment] workdir``), and paths that are the project's get the folder before
    them ({out_dir}'s stay the run folder's)."""
    if not folder:
        return
    experiment = values.setdefault("experiment", {})
    experiment["workdir"] = folder
    reasons["experiment.workdir"] = (
        f"the experiment is {folder}'s: its scripts read and write files beside them, so every "
        "run, the smoke run and prepare start there"
    )
    for name in ("command", "smoke_command"):
        if isinstance(command := experiment.get(name), str):
            experiment[name] = wrapper_from(folder, command)
    for key in _PROJECT_PATHS:
        section, name = key.split(".")
        value = values.get(section, {}).get(name)
        if isinstance(value, list):
            values[section][name] = [_in_folder(folder, v) for v in value]
        elif isinstance(value, str) and value:
            values[section][name] = _in_folder(folder, value)


def _in_folder(folder: str, path: str) -> str:
    if path.startswith(("{out_dir}", "/")):
        return path
    return f"{folder}/{path.removeprefix('./')}"
