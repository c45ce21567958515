"""Which script runs the experiment, when a repository has several: chosen by stated rules, each
choice with the rule that made it.

Issue 43: with two candidate scripts `labtui init --yes` chose none (so no command, and metrics
read from whichever script wrote some), even where the README linked one as *the* example. The
rules, in order, each a fact a researcher can check:

1. the script the README's commands run most;
2. the script the README links (``[the example](examples/mnist.py)``), the first one linked;
3. the script the repository's shell scripts and Makefile run most;
4. a script named like an experiment's (train.py, main.py, run.py, experiment.py), the shallowest;
5. the only script;
6. the script that names the newest earlier result file (``results.json`` in its code);
7. else the first by path: a choice still, so ``--yes`` goes on, said as the weakest one.

Past rule 1 the other candidates are named in an open question: the README's own command is the
only rule that leaves no doubt.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..source.files import is_data, is_test, normal_path
from .command_draft import in_readme
from .repo_facts import EntryPoint, RepoSurvey

PREFERRED = ("train.py", "main.py", "run.py", "experiment.py")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+\.py)>?[^)]*\)|href=[\"']([^\"']+\.py)[\"']")
_SHOWN = 8  # candidates named in the question


@dataclass(frozen=True)
class EntryChoice:
    """The script chosen (None when there is none), the rule that chose it, and what is left to
    ask ("" when the choice leaves no doubt)."""

    entry: EntryPoint | None
    why: str
    question: str = ""


def choose_entry(survey: RepoSurvey) -> EntryChoice:
    # tests and data preparation (data/*/prepare.py) run no experiment
    runnable = {
        e.path: e
        for e in survey.entry_points
        if not (e.error or is_test(e.path) or is_data(e.path))
    }
    if not runnable:
        return EntryChoice(
            None, "No Python script was found that runs an experiment: which command runs one?"
        )
    by_readme = _most_run(survey, runnable, readme=True)
    if by_readme is not None:
        return EntryChoice(runnable[by_readme[0]], by_readme[1])
    path, why = _by_weaker_rules(survey, runnable)
    others = [p for p in runnable if p != path]
    question = (
        f"Several scripts could run an experiment ({', '.join(others[:_SHOWN])} besides "
        f"{path}): labtui chose {path} because {why[0].lower()}{why[1:]}. Is it the one?"
        if others
        else ""
    )
    return EntryChoice(runnable[path], why, question)


def _by_weaker_rules(survey: RepoSurvey, runnable: dict[str, EntryPoint]) -> tuple[str, str]:
    """Rules 2 to 7: the script, and why."""
    linked = _linked(survey, runnable)
    if linked:
        return linked, f"the README links {linked}"
    scripted = _most_run(survey, runnable, readme=False)
    if scripted is not None:
        return scripted
    named = [p for p in runnable if PurePosixPath(p).name in PREFERRED]
    if named:
        best = min(named, key=lambda p: (p.count("/"), PREFERRED.index(PurePosixPath(p).name)))
        return best, f"{best} is named like an experiment's script"
    if len(runnable) == 1:
        only = next(iter(runnable))
        return only, f"{only} is the repository's only script"
    newest = _newest_results(survey, runnable)
    if newest is not None:
        return newest
    first = min(runnable, key=lambda p: (p.count("/"), p))
    return first, f"no README, name or result points at one script: {first} is the first by path"


def _most_run(
    survey: RepoSurvey, runnable: dict[str, EntryPoint], *, readme: bool
) -> tuple[str, str] | None:
    counts = Counter(
        c.script for c in survey.commands if c.script in runnable and in_readme(survey, c) == readme
    )
    if not counts:
        return None
    path, times = counts.most_common(1)[0]
    where = "the README's" if readme else "the scripts'"
    return path, f"{where} commands run {path} most ({times}×)"


def _linked(survey: RepoSurvey, runnable: dict[str, EntryPoint]) -> str | None:
    """The first runnable script the README links, by a path from its folder or a URL that
    ends with the script's path (a GitHub blob link)."""
    if survey.readme is None:
        return None
    folder = PurePosixPath(survey.readme.path).parent
    for match in _LINK.finditer(survey.readme.text):
        target = (match.group(1) or match.group(2)).split("#")[0]
        if "://" in target:
            found = [p for p in runnable if target.endswith(f"/{p}")]
        else:
            local = normal_path(str(folder / target.removeprefix("./")))
            found = [local] if local in runnable else []
        if found:
            return found[0]
    return None


def _newest_results(survey: RepoSurvey, runnable: dict[str, EntryPoint]) -> tuple[str, str] | None:
    """The script whose code names the newest earlier result file."""
    for result in sorted(survey.result_files, key=lambda r: -r.mtime):
        name = PurePosixPath(result.path).name
        writers = [p for p, e in runnable.items() if name in e.result_names]
        if writers:
            return writers[
                0
            ], f"{writers[0]} names {name}, the newest earlier result ({result.path})"
    return None
