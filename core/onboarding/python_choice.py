"""The interpreter a researcher's runs use: ``[experiment] python`` as ``labtui init`` proposes
it, and the check that an approved command's script finds what it imports there.

Environments are told apart by their ``sys.prefix``, as each interpreter reports it: every
venv's ``bin/python`` resolves to the base interpreter it was made from, so a research venv
built from the same Python as labtui's would otherwise pass for labtui's own (and a proposal
would say "labtui's own interpreter has torch" of an environment that has none).

The environment the researcher is most likely to mean comes first: the active one
($VIRTUAL_ENV, $CONDA_PREFIX), then the repository's own venv; only where there is neither,
labtui's own, then python3 on the PATH. The first of those that has everything the script
imports is proposed; where none has, the first is, with an open question that names what it
lacks and the line that installs it: a missing package is said before anything runs, not found
by a failed run.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..machine.interpreter import Imports, distribution, imports_in
from ..runs.plot_run import PLOTS_NEED
from .python_survey import packages_of
from .repo_facts import RepoSurvey

REPOSITORY_VENVS = (".venv", "venv", "env")
ACTIVE_ENVIRONMENTS = ("VIRTUAL_ENV", "CONDA_PREFIX")
LABTUIS_OWN = "labtui's own interpreter"


class PythonChoice(NamedTuple):
    """``[experiment] python`` as proposed ('' for labtui's own), why (written above it; '':
    nothing to write), and an open question for the researcher ('': none)."""

    python: str = ""
    why: str = ""
    question: str = ""


@dataclass(frozen=True)
class Candidate:
    """An interpreter a run might use, and where it comes from, in words."""

    python: str
    where: str
    researchers: bool  # an environment the researcher made (active, or the repository's)


@dataclass(frozen=True)
class Needs:
    """The packages an experiment's script needs, said as a proposal says them."""

    script: str
    packages: list[str]
    deep: bool  # the script imports repository modules that import some of them

    def said(self) -> str:
        names = ", ".join(self.packages) or "nothing beyond the standard library"
        whose = "and the modules it imports need them" if self.deep else "imports them"
        return f"{names} ({self.script} {whose})"


def choose_python(root: Path, survey: RepoSurvey, command: str) -> PythonChoice:
    """The interpreter runs of ``command`` should use, why, or the open question about it."""
    needs = needs_of(root, survey, command)
    if needs is None:
        return PythonChoice()
    probes = _probed(candidates(root), needs.packages)
    # The researcher's own environment, where there is one, even when it lacks a package:
    # labtui's pins must not decide which numpy an experiment sees.
    researchers = [(c, p) for c, p in probes if c.researchers and not p.labtuis_own]
    pool = researchers or probes
    found = next((probe for probe in pool if not probe[1].missing), None)
    if found is not None:
        return _proposed(found, pool, needs)
    return _lacking(pool, needs)


def needs_of(root: Path, survey: RepoSurvey, command: str) -> Needs | None:
    """What the script ``command`` runs imports, its repository modules' imports included
    (None: the command runs no Python script)."""
    script = next((word for word in command.split() if word.endswith(".py")), "")
    if not script:
        return None
    files = _imported_files(survey, script)
    packages = packages_of(Path(survey.root), files, set(survey.python_files.all))
    return Needs(script, packages, deep=len(files) > 1)


def candidates(root: Path) -> list[Candidate]:
    """The interpreters here, most likely first: the active environment, the repository's own
    venv, labtui's own, python3 on the PATH (labtui's own before the PATH's: labtui is installed
    where the researcher works, and a python3 on the PATH may be a system's or a shim)."""
    active = [
        Candidate(str(Path(os.environ[name]) / "bin" / "python"), f"the active ${name}", True)
        for name in ACTIVE_ENVIRONMENTS
        if os.environ.get(name)
    ]
    local = [
        Candidate(str(root / folder / "bin" / "python"), f"the repository's {folder}", True)
        for folder in REPOSITORY_VENVS
    ]
    own = Candidate(sys.executable, LABTUIS_OWN, False)
    on_path = [Candidate(p, f"{p} on the PATH", False) for p in _on_path()]
    return [c for c in [*active, *local, own, *on_path] if Path(c.python).is_file()]


class Lack(NamedTuple):
    """What an interpreter lacks of a script's imports, and the fix."""

    problem: str
    fix: str


def missing_in(root: Path, survey: RepoSurvey, command: str, python: str) -> Lack | None:
    """What ``command``'s script imports that ``python`` cannot find, with its fix (None when
    it finds everything, or cannot be asked): a command written by hand into the proposal is
    checked as labtui's own is."""
    needs = needs_of(root, survey, command)
    probe = imports_in(python, needs.packages) if needs else None
    if needs is None or probe is None or not probe.missing:
        return None
    others = _probed(candidates(root), needs.packages)
    better = next((c for c, p in others if not p.missing and not p.labtuis_own), None)
    instead = f', or write python = "{better.python}" ({better.where} has them)' if better else ""
    return Lack(
        f"{python} lacks {', '.join(probe.missing)} ({needs.script} imports them)",
        f"install them there ({install_line(python, probe.missing)}){instead}",
    )


def install_line(python: str, packages: tuple[str, ...] | list[str]) -> str:
    """The command that installs ``packages`` (import names) into ``python``'s environment:
    pip where it has pip, else uv's pip (a venv made by uv, or with --without-pip, has none)."""
    names = " ".join(distribution(name) for name in packages)
    probe = imports_in(python, ["pip"])
    if probe is not None and not probe.missing:
        return f"`{python} -m pip install {names}`"
    return f"`uv pip install --python {python} {names}`"


# -- the proposal's words ---------------------------------------------------------------------


def _proposed(
    found: tuple[Candidate, Imports], probes: list[tuple[Candidate, Imports]], needs: Needs
) -> PythonChoice:
    """The first interpreter that has everything, with those passed over on the way."""
    candidate, probe = found
    passed_over = "; ".join(_lacks(c, p) for c, p in probes[: probes.index(found)])
    aside = f" ({passed_over})" if passed_over else ""
    if probe.labtuis_own:
        return PythonChoice("", f"{LABTUIS_OWN} ({probe.prefix}) has {needs.said()}{aside}")
    why = f"{candidate.where} ({probe.prefix}) has {needs.said()}{aside}"
    plots = imports_in(candidate.python, [PLOTS_NEED])
    if plots is not None and plots.missing:
        why += f"; it has no {PLOTS_NEED}, so plot.py will run with labtui's own Python"
    return PythonChoice(candidate.python, why)


def _lacking(pool: list[tuple[Candidate, Imports]], needs: Needs) -> PythonChoice:
    """No interpreter of ``pool`` has everything: the most likely one is proposed (the
    researcher's own environment where there is one, else labtui's), and what it lacks is the
    open question, with its fix."""
    if not pool:
        return PythonChoice(question=f"No Python here could be asked what it has of {needs.said()}")
    candidate, probe = pool[0] if pool[0][0].researchers else _own(pool)
    tried = "; ".join(_lacks(c, p) for c, p in pool)
    question = (
        f"No Python found here has {needs.said()}: {tried}. Install what {candidate.where} "
        f"lacks there ({install_line(candidate.python, probe.missing)}), or set python in "
        "[experiment] to your research environment's interpreter."
    )
    if probe.labtuis_own:
        return PythonChoice("", "", question)
    why = (
        f"{candidate.where} ({probe.prefix}), the environment made for this research; it lacks "
        f"{', '.join(probe.missing)} (see the open question above)"
    )
    return PythonChoice(candidate.python, why, question)


def _own(probes: list[tuple[Candidate, Imports]]) -> tuple[Candidate, Imports]:
    return next(((c, p) for c, p in probes if p.labtuis_own), probes[0])


def _lacks(candidate: Candidate, probe: Imports) -> str:
    return f"{candidate.python} ({candidate.where}) lacks {', '.join(probe.missing)}"


# -- asking the interpreters ------------------------------------------------------------------


def _probed(found: list[Candidate], packages: list[str]) -> list[tuple[Candidate, Imports]]:
    """Each candidate that can be run, with what it lacks; one per environment (by prefix: an
    active venv that is the repository's, or labtui's own, is asked once, by its first name)."""
    probes: list[tuple[Candidate, Imports]] = []
    seen: set[Path] = set()
    for candidate in found:
        probe = imports_in(candidate.python, packages)
        if probe is None or Path(probe.prefix).resolve() in seen:
            continue
        seen.add(Path(probe.prefix).resolve())
        probes.append((candidate, probe))
    return probes


def _on_path() -> list[str]:
    return [found for name in ("python3", "python") if (found := shutil.which(name))]


def _imported_files(survey: RepoSurvey, script: str) -> list[str]:
    """The script and every repository module it imports, however deep (cli.py → training.py
    → model.py, which imports einops: a package the experiment needs all the same)."""
    found, frontier = [script], [script]
    while frontier:
        frontier = [m for f in frontier for m in survey.imports.get(f, ()) if m not in found]
        found += list(dict.fromkeys(frontier))
    return found
