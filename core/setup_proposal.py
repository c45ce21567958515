"""A model's reading of a repository for ``labtui init``, checked against what the survey found.

core/repo_scan.py looks at the repository by code and drafts a set-up from facts alone. A model
reads the same facts (the README, the scripts and their options, the result files, the LaTeX)
and may do better where heuristics are weak: which script is the experiment, which metric
answers the question, what the research is about. A small model also invents flags, paths and
metric names with confidence. So every value it proposes is checked here against the survey; a
value the facts contradict is refused (said, with the fact), and the draft's value stands.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from .experiment_spec import matches
from .prompts import load_prompt
from .records import SetupAnswer
from .repo_scan import EntryPoint, RepoSurvey, SetupDraft

SURVEY_CHARS = 24000  # of the survey's JSON in the prompt (~6k tokens)


@dataclass
class Proposal:
    """The set-up to show: labtui.toml's sections, why each value, what is still open, and
    what the model proposed that the facts refuted."""

    values: dict[str, dict[str, Any]]
    reasons: dict[str, str]
    open_questions: list[str]
    refused: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, draft: SetupDraft) -> Proposal:
        values = {section: dict(fields) for section, fields in draft.values.items()}
        return cls(values, dict(draft.reasons), list(draft.open_questions))


def ask_model(llm: Any, survey: RepoSurvey, draft: SetupDraft, note: str = "") -> Proposal:
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
    return checked(answer, survey, draft)


def checked(answer: SetupAnswer, survey: RepoSurvey, draft: SetupDraft) -> Proposal:
    """The draft with each of the model's values that the survey bears out. The results' source,
    path and metrics stand or fall together: a path without its metrics says nothing."""
    proposal = Proposal.of(draft)
    smoke = answer.smoke_command
    groups: list[tuple[dict[str, dict[str, Any]], str]] = [
        ({"experiment": {"command": answer.command}}, command_problem(answer.command, survey)),
        ({"experiment": {"smoke_command": smoke}},
         command_problem(smoke, survey) if smoke else ""),
        ({"experiment": {"edit": answer.edit}}, globs_problem(answer.edit, survey, "edit")),
        ({"experiment": {"protect": answer.protect}},
         globs_problem(answer.protect, survey, "protect") or _overlap(answer)),
        ({"results": {"source": answer.results_source, "path": answer.results_path,
                      "metrics": answer.metrics}}, metrics_problem(answer, survey)),
        ({"paper": {"tex": answer.paper_tex, "sections": answer.paper_sections}},
         tex_problem(answer.paper_tex, survey) or sections_problem(answer, survey)),
        ({"project": {"task": answer.task}}, ""),
    ]  # fmt: skip
    for values, problem in groups:
        ((section, fields),) = values.items()
        if problem:
            shown = ", ".join(f"{section}.{name} = {value!r}" for name, value in fields.items())
            proposal.refused.append(f"{shown}: {problem}")
            continue
        if section == "paper" and not answer.paper_tex:
            continue  # no paper of its own: the draft's choice (labtui's bundled one) stands
        for name, value in fields.items():
            if value in ("", [], {}):
                continue  # the model proposes nothing here: the draft's value stands
            proposal.values.setdefault(section, {})[name] = value
            said = answer.why.get(name) or answer.why.get(f"{section}.{name}") or "its reading"
            proposal.reasons[f"{section}.{name}"] = f"the model: {said}"
    _drop_answered_questions(proposal)
    return proposal


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


def globs_problem(globs: list[str], survey: RepoSurvey, field_name: str) -> str:
    unmatched = [g for g in globs if not any(matches(f, [g]) for f in survey.files)]
    if unmatched:
        return f"{', '.join(unmatched)} matches no file of the repository"
    if field_name == "edit" and not globs:
        return "the agents must be allowed to edit at least one file"
    return ""


def _overlap(answer: SetupAnswer) -> str:
    both = sorted(set(answer.edit) & set(answer.protect))
    return f"{', '.join(both)} would be both editable and protected" if both else ""


def metrics_problem(answer: SetupAnswer, survey: RepoSurvey) -> str:
    """Metric names must be ones an existing result file of the same kind offers (when there is
    such a file; the names of a source no file shows yet cannot be checked)."""
    from .result_sources import available_metrics

    if not answer.metrics and answer.results_source != "final_info":
        return "no metric named"
    files = [r for r in survey.result_files if r.source == answer.results_source]
    offered: set[str] = set()
    for result in files[:5]:
        offered |= set(available_metrics(result.source, _absolute(survey, result.path)))
    if not files or answer.results_source == "stdout":
        return ""
    unknown = [name for name in answer.metrics if name not in offered]
    if unknown:
        return (
            f"no result file of the repository has {', '.join(unknown)} "
            f"(they have {', '.join(sorted(offered)[:8]) or 'no numbers'})"
        )
    return ""


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


def _absolute(survey: RepoSurvey, path: str) -> Any:
    from pathlib import Path

    return Path(survey.root) / path


def _drop_answered_questions(proposal: Proposal) -> None:
    """An open question about the command goes once the model's command (checked) has
    {out_dir} in it."""
    command = proposal.values.get("experiment", {}).get("command", "")
    if "{out_dir}" in command:
        proposal.open_questions = [q for q in proposal.open_questions if "output" not in q.lower()]
