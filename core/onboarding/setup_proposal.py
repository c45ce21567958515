"""A model's reading of a repository for ``labtui init``, checked against what the survey found.

core/onboarding/repo_scan.py looks at the repository by code and drafts a set-up from facts alone. A model
reads the same facts (the README, the scripts and their options, the result files, the LaTeX)
and may do better where heuristics are weak: which script is the experiment, which metric
answers the question, what the research is about. A small model also invents flags, paths and
metric names with confidence. So every value it proposes is checked here against the survey; a
value the facts contradict is refused (said, with the fact), and the draft's value stands.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..answers.setup_answer import RESULT_SOURCES, SetupAnswer
from ..runs import result_sources
from ..settings.contract import matches
from ..settings.prompts import load_prompt
from ..settings.sections import LimitsSection
from ..workspace.run_folder import FINAL_INFO
from .command_draft import RunSizing, resize
from .repo_scan import EntryPoint, RepoSurvey, SetupDraft

if TYPE_CHECKING:
    from ..llm.client import LLM

SURVEY_CHARS = 24000  # of the survey's JSON in the prompt (~6k tokens)


@dataclass
class Proposal:
    """The set-up to show: labtui.toml's sections, why each value, what is still open, and
    what the model proposed that the facts refuted."""

    values: dict[str, dict[str, Any]]
    reasons: dict[str, str]
    open_questions: list[str]
    refused: list[str] = field(default_factory=list)
    sizing: RunSizing | None = None  # how long a run trains: fitted after the smoke run

    @classmethod
    def of(cls, draft: SetupDraft) -> Proposal:
        values = {section: dict(fields) for section, fields in draft.values.items()}
        return cls(values, dict(draft.reasons), list(draft.open_questions), [], draft.sizing)


def ask_model(
    llm: LLM,
    survey: RepoSurvey,
    draft: SetupDraft,
    note: str = "",
    limits: LimitsSection | None = None,
) -> Proposal:
    """The model's set-up, each value checked against ``survey``; the draft's where refused."""
    facts = json.dumps(survey.to_dict(), indent=None, ensure_ascii=False)[:SURVEY_CHARS]
    prompt = load_prompt(
        "init_setup",
        survey=facts,
        draft=json.dumps(draft.values, indent=1),
        note=f"\nThe researcher asks: {note}\n" if note else "",
    )
    answer = llm.ask_json(
        [{"role": "user", "content": prompt}],
        lambda data: SetupAnswer.model_validate(data),
        schema=SetupAnswer,
    )
    return checked(answer, survey, draft, limits)


def checked(
    answer: SetupAnswer,
    survey: RepoSurvey,
    draft: SetupDraft,
    limits: LimitsSection | None = None,
) -> Proposal:
    """The draft with each of the model's values that the survey bears out. The results' source,
    path and metrics stand or fall together: a path without its metrics says nothing. A value
    the model left empty is no proposal: the draft's stands."""
    proposal = Proposal.of(draft)
    command, smoke = _with_python(answer.command), _with_python(answer.smoke_command)
    groups: list[tuple[dict[str, dict[str, Any]], Callable[[], str]]] = [
        ({"experiment": {"command": command}}, lambda: command_problem(command, survey)),
        ({"experiment": {"smoke_command": smoke}}, lambda: command_problem(smoke, survey)),
        ({"experiment": {"edit": answer.edit}},
         lambda: globs_problem(answer.edit, survey) or edit_problem(answer, survey, draft)),
        ({"experiment": {"protect": answer.protect}},
         lambda: globs_problem(answer.protect, survey) or _overlap(answer)),
        ({"results": {"source": answer.results_source, "path": answer.results_path,
                      "metrics": answer.metrics}}, lambda: results_problem(answer, survey)),
        ({"paper": {"tex": answer.paper_tex, "sections": answer.paper_sections}},
         lambda: tex_problem(answer.paper_tex, survey) or sections_problem(answer, survey)),
        ({"project": {"task": answer.task}}, lambda: task_problem(answer.task)),
    ]  # fmt: skip
    for values, problem_of in groups:
        ((section, fields),) = values.items()
        proposed = {name: value for name, value in fields.items() if value not in ("", [], {})}
        if not proposed:
            continue
        if problem := problem_of():
            shown = ", ".join(f"{section}.{name} = {value!r}" for name, value in proposed.items())
            proposal.refused.append(f"{shown}: {problem}")
            continue
        for name, value in proposed.items():
            proposal.values.setdefault(section, {})[name] = value
            said = answer.why.get(name) or answer.why.get(f"{section}.{name}") or "its reading"
            proposal.reasons[f"{section}.{name}"] = f"the model: {said}"
    _drop_answered_questions(proposal)
    if proposal.values.get("experiment") != draft.values.get("experiment"):
        # the model's command: bounded and made to write its metrics, as the draft's was
        proposal.sizing = resize(
            proposal.values, proposal.reasons, survey, limits or LimitsSection()
        )
    return proposal


def _with_python(command: str) -> str:
    """A command that starts with ``python``: that word is the project's interpreter, {python}
    (a model often writes the word as the README does)."""
    return re.sub(r"^\s*python(?:3(?:\.\d+)?)?(?=\s)", "{python}", command)


# -- the checks ---------------------------------------------------------------------------------


def command_problem(command: str, survey: RepoSurvey) -> str:
    """Why ``command`` cannot be the repository's ('' when the facts allow it): the script must
    exist, and each --option it passes must be one the script declares."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"not a command line ({exc})"
    scripts = [w for w in words if w.endswith(".py")]
    if not scripts and "-m" not in words:
        return "it runs no Python file of the repository"
    if scripts and scripts[0] not in survey.files:
        return f"the repository has no {scripts[0]}"
    entry = _entry(survey, scripts[0]) if scripts else None
    if entry is None or entry.kind in ("plain", "hydra") or not entry.options:
        return ""
    declared = {flag for option in entry.options for flag in option.flags}
    unknown = [
        w.split("=")[0]
        for w in words
        if w.startswith("-") and w.split("=")[0] not in declared and w not in ("-m", "-u")
    ]
    if unknown:
        return (
            f"{entry.path} declares no {', '.join(unknown)} (it has {', '.join(sorted(declared))})"
        )
    return ""


def globs_problem(globs: list[str], survey: RepoSurvey) -> str:
    unmatched = [g for g in globs if not any(matches(f, [g]) for f in survey.files)]
    return f"{', '.join(unmatched)} matches no file of the repository" if unmatched else ""


def edit_problem(answer: SetupAnswer, survey: RepoSurvey, draft: SetupDraft) -> str:
    """The agents must never edit what decides whether a result is true: the evaluation, test
    and data files the survey found, or what the proposal protects."""
    protect = answer.protect or draft.values.get("experiment", {}).get("protect", [])
    files = survey.python_files
    judged = {*files.evaluation, *files.tests, *files.data}
    named = [f for f in survey.files if matches(f, answer.edit)]
    wrong = [f for f in named if f in judged or matches(f, protect)]
    if wrong:
        return f"{', '.join(wrong)} decides whether a result is true (evaluation, tests, data)"
    return ""


def _overlap(answer: SetupAnswer) -> str:
    both = sorted(set(answer.edit) & set(answer.protect))
    return f"{', '.join(both)} would be both editable and protected" if both else ""


SOURCES = RESULT_SOURCES


def results_problem(answer: SetupAnswer, survey: RepoSurvey) -> str:
    """The source must be one labtui reads and one the repository shows (a result file of that
    kind, a script that names it, or a tracker it imports); each metric's direction "higher" or
    "lower", and its name one that a result file of that kind has, where there is such a file."""
    source = answer.results_source
    if source not in SOURCES:
        return f"labtui reads no source {source!r} (it reads {', '.join(SOURCES)})"
    if source in ("json", "csv") and not answer.results_path:
        return f"a {source} source needs the file's path"
    if not _shown_by_repository(source, answer.results_path, survey):
        return f"nothing in the repository writes {_what(source, answer.results_path)}"
    wrong = [f"{k}={v}" for k, v in answer.metrics.items() if v not in ("higher", "lower")]
    if wrong:
        return f"directions must be higher or lower, not {', '.join(wrong)}"
    if not answer.metrics and source != "final_info":
        return "no metric named"
    return _unknown_metrics(answer, survey)


def _shown_by_repository(source: str, path: str, survey: RepoSurvey) -> bool:
    if source == "stdout" or any(r.source == source for r in survey.result_files):
        return True
    if source in ("tensorboard", "wandb"):
        return any(t.name == source for t in survey.trackers)
    name = FINAL_INFO if source == "final_info" else Path(path).name
    return any(name in e.result_names for e in survey.entry_points)


def _what(source: str, path: str) -> str:
    return {"final_info": FINAL_INFO, "stdout": "metric lines"}.get(
        source, path or f"{source} results"
    )


def _unknown_metrics(answer: SetupAnswer, survey: RepoSurvey) -> str:
    """Metric names a result file of the source's kind lacks (none to check against: '')."""
    files = [r for r in survey.result_files if r.source == answer.results_source]
    if not files or answer.results_source == "stdout":
        return ""
    offered: set[str] = set()
    for result in files[:5]:
        offered |= set(
            result_sources.available_metrics(result.source, Path(survey.root) / result.path)
        )
    unknown = [name for name in answer.metrics if name not in offered]
    if unknown:
        return (
            f"no result file of the repository has {', '.join(unknown)} "
            f"(they have {', '.join(sorted(offered)[:8]) or 'no numbers'})"
        )
    return ""


def task_problem(task: str) -> str:
    words = len(task.split())
    return f"{words} words cannot say what the research is about" if words < 8 else ""


def tex_problem(tex: str, survey: RepoSurvey) -> str:
    if not tex:
        return ""
    if not any(main.path == tex for main in survey.latex):
        known = ", ".join(main.path for main in survey.latex) or "none"
        return f"it is no main LaTeX file of the repository (those are: {known})"
    return ""


def sections_problem(answer: SetupAnswer, survey: RepoSurvey) -> str:
    main = next((m for m in survey.latex if m.path == answer.paper_tex), None)
    if main is None:
        return "no paper to take them from" if answer.paper_sections else ""
    titles = {t.lower() for t in main.sections}
    inputs = {i.path for i in main.inputs}
    unknown = [
        s
        for s in answer.paper_sections
        if s.lower() not in titles and not any(fnmatchcase(i, f"*{s}*") for i in inputs)
    ]
    if unknown:
        return (
            f"{main.path} has no section {', '.join(unknown)} (it has {', '.join(main.sections)})"
        )
    return ""


def _entry(survey: RepoSurvey, script: str) -> EntryPoint | None:
    return next((e for e in survey.entry_points if e.path == script), None)


def _drop_answered_questions(proposal: Proposal) -> None:
    """An open question about the command goes once the model's command (checked) has
    {out_dir} in it."""
    command = proposal.values.get("experiment", {}).get("command", "")
    if "{out_dir}" in command:
        proposal.open_questions = [q for q in proposal.open_questions if "output" not in q.lower()]
