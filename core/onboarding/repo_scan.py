"""What `labtui init` sees in a researcher's own repository.

``survey(root)`` gathers facts by reading files only: it never runs the repository's code and
never asks a model. Scripts are read with ``ast``, Hydra configs with ``yaml.safe_load``, LaTeX
and READMEs with regular expressions. ``propose_setup(survey)`` (core/onboarding/setup_draft.py) turns the
facts into a first draft of labtui.toml's [project], [experiment], [results] and [paper]
sections, with the fact behind each value and the questions the facts leave open. A model may
refine the draft later; labtui checks its words against these facts, so the facts say only what
the files say.

Every read is bounded (the first 200 kB of a file, ``max_files`` files, no symlink followed out
of the repository or round a loop), so no file, however odd, makes ``survey`` fail.

This module assembles the facts; each kind is found in its own room:

- core/onboarding/repo_facts.py: the records (``RepoSurvey``, ``EntryPoint``, …);
- core/source/files.py: bounded reads, the list of files, which kind of file a path is;
- core/source/python.py: a module parsed by ``ast`` and the readers of its nodes;
- core/onboarding/script_options.py: argparse, click and typer options, Hydra config keys;
- core/onboarding/python_survey.py: scripts, their imports, output and smoke options, trackers;
- core/onboarding/training_loops.py: a plain script known by its top-level training loop;
- core/onboarding/command_lines.py: command lines in the README, .sh scripts and Makefiles;
- core/onboarding/result_files.py: files with an earlier run's results;
- core/onboarding/latex_survey.py: LaTeX main files, their sections, inputs and bibliographies;
- core/onboarding/readme_text.py: the README and the task it tells;
- core/onboarding/setup_draft.py: ``propose_setup`` and what it gives, ``SetupDraft``.

``EntryPoint``, ``RepoSurvey``, ``SetupDraft`` and ``propose_setup`` are imported from here too,
by ``labtui init`` (core/onboarding/setup_proposal.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..source.files import is_config, is_data, is_evaluation, is_test, list_files, read_text
from ..source.python import PythonModule, parse_module
from .command_lines import find_commands
from .latex_survey import find_latex_mains
from .python_survey import (
    find_entry_points,
    find_output_options,
    find_repo_imports,
    find_smoke_options,
    find_trackers,
)
from .readme_text import find_readme
from .repo_facts import EntryPoint, PythonFiles, RepoSurvey
from .result_files import find_result_files
from .setup_draft import SetupDraft, propose_setup
from .training_loops import TOP_LEVEL_LOOP

__all__ = ["EntryPoint", "RepoSurvey", "SetupDraft", "propose_setup", "survey"]


# Text a script has (a main guard, an argument parser, Hydra, click, typer, a loop at the top
# level): the files without it are not parsed, which keeps a survey of a 5,000-file package to
# seconds.
_SCRIPT_HINT = re.compile(
    rf"__main__|ArgumentParser|hydra|click|typer|{TOP_LEVEL_LOOP.pattern}", re.M
)
IMPORT_DEPTH = 3  # scripts, what they import, and two levels more (the edit set goes two down)


def _scripts_and_their_imports(
    root: Path, py: list[str], run: set[str]
) -> tuple[dict[str, PythonModule], dict[str, tuple[str, ...]]]:
    """The modules that may be scripts (``run``: those a command line runs, whatever they
    hold), parsed, and the repository modules they import (to IMPORT_DEPTH), with the import
    graph among them. Tests run no experiment: never parsed."""
    python = set(py)
    hinted = [
        p
        for p in py
        if not is_test(p) and (p in run or _SCRIPT_HINT.search(read_text(root, p) or ""))
    ]
    parsed = (parse_module(root, path) for path in hinted)
    modules = {m.path: m for m in parsed if m is not None}
    graph: dict[str, tuple[str, ...]] = {}
    frontier = list(modules)
    for _ in range(IMPORT_DEPTH):
        reached: list[str] = []
        for path in frontier:
            found = tuple(find_repo_imports(modules[path], python))
            if found:
                graph[path] = found
            for imported in found:
                module = None if imported in modules else parse_module(root, imported)
                if module is not None and not is_test(imported):
                    modules[imported] = module
                    reached.append(imported)
        frontier = reached
    return modules, graph


def survey(root: Path, *, max_files: int = 5000) -> RepoSurvey:
    """The facts of the repository at ``root``, read without running any of its code."""
    root = Path(root)
    files, truncated = list_files(root, max_files)
    readme = find_readme(root, files)
    py = [f for f in files if f.endswith(".py")]
    commands = find_commands(root, files, readme, set(py))
    run = {c.script for c in commands if c.script}
    modules, graph = _scripts_and_their_imports(root, py, run)
    entries = find_entry_points(root, modules, graph, run)
    python_files = PythonFiles(
        all=tuple(py),
        tests=tuple(f for f in py if is_test(f)),
        evaluation=tuple(f for f in py if is_evaluation(f)),
        data=tuple(f for f in py if is_data(f)),
        config=tuple(f for f in files if is_config(f)),
        unparsed=tuple(f"{m.path}: {m.error}" for m in modules.values() if m.tree is None),
    )
    return RepoSurvey(
        root=str(root),
        readme=readme,
        files=tuple(files),
        files_truncated=truncated,
        entry_points=tuple(entries),
        commands=tuple(commands),
        output_options=tuple(find_output_options(entries)),
        smoke_options=tuple(find_smoke_options(entries)),
        result_files=tuple(find_result_files(root, files)),
        latex=tuple(find_latex_mains(root, files)),
        notebooks=tuple(f for f in files if f.endswith(".ipynb")),
        python_files=python_files,
        trackers=tuple(find_trackers(modules)),
        imports=graph,
    )
