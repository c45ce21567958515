"""How a project runs one experiment, what its agents may edit, and what the research is about.

A project made from a template follows The AI Scientist's contract: ``python experiment.py
--out_dir=run_i`` writes ``run_i/final_info.json``, the agents edit ``experiment.py``, and
``prompt.json`` says what the research is about. A researcher's own repository (``labtui init``)
says the same in ``labtui.toml``: ``[experiment] command``, ``edit``, ``protect`` and ``[project]
task``. The contract is nothing but the defaults of those settings, so both are one code path:
everything that runs, edits or prompts asks this module.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, TemplateError

if TYPE_CHECKING:
    from .config import Config
    from .sections import ExperimentSection

PLACEHOLDERS = ("{python}", "{out_dir}", "{budget_s}", "{seed}")
OUT_DIR_ENV = "LABTUI_OUT_DIR"  # the run's folder (absolute), for scripts that read it
RUN_ID_ENV = "LABTUI_RUN_ID"
BUDGET_ENV = "LABTUI_RUN_BUDGET_S"  # a search's wall-clock budget of the run, in seconds
SEED_ENV = "LABTUI_SEED"  # an offset of the run's seeds: 0, or 1, 2, … for repeats
# A run's folder (run_<n>, run_0 the baseline), results imported beside the runs (imported_<n>),
# and the file a run writes its numbers into there: core/workspace/run_folder.py reads them.
RUN_PREFIX = "run_"
IMPORTED_PREFIX = "imported_"
FINAL_INFO = "final_info.json"

# Folders no glob ever reaches into: labtui's and git's state, caches, environments, and the
# runs themselves (their outputs are results, not code).
_NEVER = frozenset({".git", ".labtui", "__pycache__", "node_modules"})
_RUN_FOLDER_PREFIXES = (RUN_PREFIX, IMPORTED_PREFIX)


# -- the command ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunTerms:
    """What a search tells one run: its wall-clock budget (0: none, the run's timeout rules) and
    its seed offset (0: the code's own seeds). The plan's runs get neither."""

    budget_s: float = 0.0
    seed: int = 0

    def env(self) -> dict[str, str]:
        terms = {SEED_ENV: str(self.seed)} if self.seed else {}
        if self.budget_s:
            terms[BUDGET_ENV] = f"{self.budget_s:g}"
        return terms


NO_TERMS = RunTerms()


def run_argv(
    experiment: ExperimentSection,
    python: str,
    run_id: str,
    *,
    smoke: bool = False,
    terms: RunTerms = NO_TERMS,
    timeout_s: float = 0.0,
) -> list[str]:
    """The command line of one run: ``[experiment] command`` (or ``smoke_command``) split as a
    shell would, with {python}, {out_dir}, {budget_s} (the search's budget, else ``timeout_s``)
    and {seed} filled in. A command that cannot be split, or that names a placeholder labtui
    does not know, is a ConfigError naming the field and the fix."""
    field = "smoke_command" if smoke else "command"
    template = getattr(experiment, field)
    if not template.strip():
        raise ConfigError(
            f"labtui.toml: [experiment] {field} is empty",
            f'write {field} = "{{python}} train.py --output-dir {{out_dir}}"',
        )
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise ConfigError(
            f"labtui.toml: [experiment] {field} cannot be read as a command line ({exc})",
            "close the quote it opens",
        ) from None
    _check_placeholders(field, template)
    values = {
        "{python}": python,
        "{out_dir}": out_dir_from_workdir(experiment.workdir, run_id),
        "{budget_s}": f"{terms.budget_s or timeout_s:g}",
        "{seed}": str(terms.seed),
    }
    filled = []
    for word in words:
        for name, value in values.items():
            word = word.replace(name, value)
        filled.append(word)
    return filled


def out_dir_from_workdir(workdir: str, run_id: str) -> str:
    """The run's folder as a run started in ``workdir`` names it: run folders stay at the
    project's top, so from ``examples/mnist`` run_1 is ``../../run_1``."""
    return os.path.relpath(run_id, workdir or ".")


def prepare_lines(experiment: ExperimentSection, python: str) -> list[str]:
    """``[experiment] prepare`` with {python} filled in: a README's ``python generate_data.py``
    must run with the research interpreter, which the sandbox's PATH may not have."""
    return [line.replace("{python}", shlex.quote(python)) for line in experiment.prepare]


def _check_placeholders(field: str, template: str) -> None:
    unknown = sorted(set(re.findall(r"\{[^{}\s]*\}", template)) - set(PLACEHOLDERS))
    if unknown:
        raise ConfigError(
            f"labtui.toml: [experiment] {field} has {', '.join(unknown)}, which labtui does "
            "not fill in",
            "use {python} (the interpreter), {out_dir} (the run's folder), {budget_s} (its "
            "time budget in seconds) and {seed} (its seed offset) only",
        )


def run_env(root: Path, run_id: str) -> dict[str, str]:
    """What every run finds in its environment besides the usual: where its outputs go."""
    return {OUT_DIR_ENV: str(Path(root) / run_id), RUN_ID_ENV: run_id}


# -- what the agents may edit, and what nobody may change ---------------------------------------


def matches(path: str, globs: Iterable[str]) -> bool:
    """Whether the project-relative ``path`` matches one of ``globs`` (``*`` also crosses
    ``/``, as EditPolicy's globs; a glob naming a folder, ``data/`` or ``data``, covers it)."""
    for glob in globs:
        folder = glob.rstrip("/")
        if fnmatchcase(path, glob) or path.startswith(f"{folder}/"):
            return True
    return False


def project_files(root: Path) -> list[str]:
    """Every file of the project as a relative POSIX path, labtui's state, caches, environments
    and run folders left out."""
    root = Path(root)
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _NEVER
            and not (here == root and d.startswith(_RUN_FOLDER_PREFIXES))
            and not _is_environment(here / d)
        )
        found += [(here / name).relative_to(root).as_posix() for name in sorted(files)]
    return found


def _is_environment(folder: Path) -> bool:
    """A Python environment inside the project (.venv/, a conda env); an env/ of RL code is
    not one."""
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def edit_files(root: Path, experiment: ExperimentSection) -> list[str]:
    """The existing files ``[experiment] edit`` names, in the order it names them (a file named
    twice once), protected files never; a ConfigError when it names none that exists."""
    files = project_files(root)
    chosen: list[str] = []
    for glob in experiment.edit:
        chosen += [f for f in files if matches(f, [glob]) and not matches(f, experiment.protect)]
    chosen = list(dict.fromkeys(chosen))
    if not chosen:
        raise ConfigError(
            f"labtui.toml: [experiment] edit = {experiment.edit} names no file of {root}",
            'name the files the agents may change, e.g. edit = ["train.py", "models/*.py"]',
        )
    return chosen


def protected_files(root: Path, experiment: ExperimentSection) -> list[str]:
    """The existing files ``[experiment] protect`` names."""
    if not experiment.protect:
        return []
    return [f for f in project_files(root) if matches(f, experiment.protect)]


def code_text(root: Path, experiment: ExperimentSection, limit_chars: int = 24000) -> str:
    """The files the agents edit, for a prompt: a template's one experiment.py bare, as its
    prompts always showed it, else each file under its name; cut at ``limit_chars`` in all (a
    repository's model code can be long; the prompt says what was left out)."""
    root = Path(root)
    try:
        names = edit_files(root, experiment)
    except ConfigError:  # a topic's project before its code is written
        return "(no code yet: it is written for the chosen idea, from the topic)"
    bare = names == ["experiment.py"]
    parts: list[str] = []
    left = limit_chars
    for name in names:
        if left <= 0:
            parts.append(f"(left out: {', '.join(names[len(parts) :])})")
            break
        text = (root / name).read_text(encoding="utf-8", errors="replace")
        shown = text if len(text) <= left else text[:left] + "\n# … (cut here: too long)\n"
        parts.append(shown if bare else f"### {name}\n{shown}")
        left -= len(shown)
    return "\n\n".join(parts)


# -- what the research is about ------------------------------------------------------------


@dataclass(frozen=True)
class Brief:
    """What every agent is told of the research: a system prompt and the task."""

    system: str
    task: str


DEFAULT_SYSTEM = (
    "You are an ambitious machine-learning researcher who looks for ideas that can be tested "
    "with the experiment code at hand and that would be published."
)


def research_brief(root: Path, config: Config) -> Brief:
    """``[project] task`` when set, else the template's prompt.json (system, task_description).
    A ConfigError says how to give one when there is neither."""
    template = prompt_json(Path(root))
    task = config.project.task or str(template.get("task_description", ""))
    if not task.strip():
        raise ConfigError(
            f"{Path(root) / 'labtui.toml'}: [project] task is empty and there is no prompt.json",
            'write task = "what the research is about: the problem, the data, what counts as '
            'better" in [project]',
        )
    return Brief(system=str(template.get("system") or DEFAULT_SYSTEM), task=task)


def prompt_json(root: Path) -> dict[str, Any]:
    """A template's prompt.json ({} without one); a TemplateError when it does not parse."""
    path = Path(root) / "prompt.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: not valid JSON ({exc})", "repair prompt.json") from None
    return data if isinstance(data, dict) else {}


def seed_ideas(root: Path) -> list[Any]:
    """The template's seed ideas; a repository or a topic has none."""
    path = Path(root) / "seed_ideas.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else []


# -- what every prompt may say of the project ----------------------------------------------------


def prompt_facts(root: Path, config: Config) -> dict[str, str]:
    """The project's own names for what prompts talk about: ``$code_files`` (what the agents
    edit), ``$run_command`` (one run, for run_i), ``$results_rule`` (how a run must keep
    reporting its numbers) and ``$tex`` (the paper). A template's project reads exactly as the
    prompts always read: experiment.py, ``python experiment.py --out_dir=run_i``, final_info.json.
    """
    experiment = config.experiment
    try:
        files = edit_files(root, experiment)
    except ConfigError:  # nothing written yet (a topic's project before its code exists)
        files = list(experiment.edit)
    return {
        "code_files": ", ".join(files),
        "run_command": shlex.join(run_argv(experiment, "python", "run_i")),
        "results_rule": results_rule(config),
        "tex": config.paper.tex,
    }


def results_rule(config: Config) -> str:
    """What a change must keep of how a run reports its numbers, in the prompts' words."""
    results = config.results
    if results.source == "final_info":
        return (
            f"keep writing `{FINAL_INFO}` in the same format (a dict of dataset -> "
            '{"means": {...}})'
        )
    where = {
        "json": f"the JSON file {results.path}",
        "csv": f"the CSV file {results.path}",
        "stdout": "the metric lines it prints",
        "tensorboard": f"its TensorBoard events ({results.path or '{out_dir}'})",
        "wandb": "the W&B run it logs with wandb.log (its summary, or the run-<id>.wandb file of "
        f"an offline run; {results.path or 'under {out_dir}/wandb/ or wandb/'})",
    }[results.source]
    names = ", ".join(results.metrics)
    return f"keep reporting {names} as before: labtui reads them from {where}"
