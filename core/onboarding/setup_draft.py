"""The set-up `labtui init` first proposes, drafted from a repository's facts alone.

``propose_setup(survey)`` turns the facts of core/onboarding/repo_scan.py into a first draft of labtui.toml's
[project], [experiment], [results] and [paper] sections, with the fact behind each value and the
questions the facts leave open: the script that runs an experiment and its command line (its
output folder made {out_dir}, a smoke run shortened by the script's own options), the files the
agents may edit and those they must not, where a run's results lie and which numbers count, the
LaTeX draft and the sections to write, and the task the README tells. A model may refine the
draft later (core/onboarding/setup_proposal.py); these heuristics give it a start that needs none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

from ..machine.metric_lines import lower_is_better
from ..runs import result_sources
from ..settings.sections import LimitsSection
from ..source.files import is_data, is_evaluation, is_test
from ..workspace.run_folder import FINAL_INFO
from .command_draft import NO_OUTPUT_OPTION, RunSizing, draft_command, draft_env, size_runs
from .entry_choice import choose_entry
from .metric_choice import MAX_METRICS, propose_metrics, rank_names
from .metric_names import CodeMetrics, metrics_in_code
from .readme_text import readme_task
from .repo_facts import (
    Draft,
    EntryPoint,
    LatexMain,
    RepoSurvey,
    ResultFile,
)
from .result_files import DATA_PARTS


@dataclass(frozen=True)
class SetupDraft:
    """What the survey proposes by code: the settings, the fact behind each, open questions,
    and how long a run trains (for fitting it after the smoke run)."""

    values: dict[str, dict[str, Any]]
    reasons: dict[str, str]
    open_questions: list[str]
    sizing: RunSizing | None = None


# which kind of result file tells most, when several earlier runs' files could be the results
_SOURCE_RANK = {"final_info": 0, "json": 1, "csv": 2, "wandb": 3, "tensorboard": 4}
_WRITTEN = re.compile(r"experiment|result|evaluat|discussion|conclusion|abstract|ablation", re.I)


def propose_setup(
    survey: RepoSurvey, limits: LimitsSection | None = None, *, network: bool = False
) -> SetupDraft:
    """A first labtui.toml draft from the facts: each value with the fact behind it, and what
    the facts leave to the researcher. ``limits`` bound a run's length ([limits] as the
    environment sets them); ``network``: whether a run has one ([sandbox] network)."""
    draft = Draft()
    choice = choose_entry(survey)
    entry = choice.entry
    out_dirs: list[str] = []
    if entry is None:
        draft.ask(choice.why)
    else:
        draft.questions += [choice.question] if choice.question else []
        out_dirs = draft_command(survey, entry, choice.why, draft)
        _propose_edit_protect(survey, entry, draft)
    code = metrics_in_code(survey, entry)  # read once: the results and the run's length use it
    _propose_results(survey, entry, out_dirs, draft, code)
    sizing = size_runs(survey, entry, draft, limits or LimitsSection(), code) if entry else None
    draft_env(draft, network)
    _drop_settled_questions(draft)
    _propose_paper(survey, draft)
    _propose_task(survey, draft)
    return SetupDraft(draft.values, draft.reasons, draft.questions, sizing)


def _drop_settled_questions(draft: Draft) -> None:
    """A script with no output-folder option needs none when the metrics it prints are known,
    or W&B writes them into the run's folder ([experiment] env's WANDB_DIR)."""
    source = draft.get("results.source")
    into_run = "{out_dir}" in (draft.get("experiment.env") or {}).get("WANDB_DIR", "")
    if draft.get("results.metrics") and (source == "stdout" or (source == "wandb" and into_run)):
        draft.questions = [q for q in draft.questions if NO_OUTPUT_OPTION not in q]


def _propose_edit_protect(survey: RepoSurvey, entry: EntryPoint, draft: Draft) -> None:
    """Edit: the script and the repository modules it imports (two levels down). Protect: what
    decides whether a result is true, namely evaluation, data and tests."""
    py = survey.python_files
    tops = {f.split("/")[0] for f in survey.files if "/" in f}
    protect = [*py.evaluation, *py.data]
    protect += [f"{d}/*" for d in sorted(tops & (DATA_PARTS | {"tests", "test"}))]
    protect += [t for t in py.tests if not any(fnmatchcase(t, g) for g in protect)]
    # the script itself stays editable, even when it is named like evaluation
    protect = [p for p in dict.fromkeys(protect) if p != entry.path]
    imports = survey.imports
    edit, frontier = [entry.path], list(entry.imports)
    for _level in range(2):
        following: list[str] = []
        for path in frontier:
            kept = not (is_test(path) or is_evaluation(path) or is_data(path))
            if path not in edit and kept and not any(fnmatchcase(path, g) for g in protect):
                edit.append(path)
                following += imports.get(path, ())
        frontier = following
    imported = f" and the modules it imports ({', '.join(edit[1:])})" if edit[1:] else ""
    draft.set("experiment.edit", edit, f"{entry.path} runs the experiment{imported}")
    if protect:
        draft.set(
            "experiment.protect",
            protect,
            "evaluation, data and test files decide whether a result is true",
        )


def _propose_results(
    survey: RepoSurvey,
    entry: EntryPoint | None,
    out_dirs: list[str],
    draft: Draft,
    code: CodeMetrics,
) -> None:
    hydra = entry is not None and entry.kind == "hydra"
    placed = [(r, _in_run_folder(r.path, out_dirs, hydra)) for r in survey.result_files]
    if placed:
        # one in an earlier run's folder first, then the most telling kind, then the newest
        result, relative = min(
            placed, key=lambda p: (p[1] is None, _SOURCE_RANK[p[0].source], -p[0].mtime, p[0].path)
        )
        has_output = any(o.entry == (entry.path if entry else "") for o in survey.output_options)
        _propose_result_file(survey, result, relative, has_output, draft)
        return
    names = entry.result_names if entry else ()
    if FINAL_INFO in names and entry:
        why = f"{entry.path} names {FINAL_INFO}, The AI Scientist's contract"
        draft.set("results.source", "final_info", why)
        return
    if names and entry and any(o.entry == entry.path for o in survey.output_options):
        source = "csv" if names[0].endswith(".csv") else "json"
        draft.set("results.source", source, f"{entry.path} names {names[0]} in its code")
        why = f"{entry.path} names {names[0]}; no run has written it yet"
        draft.set("results.path", f"{{out_dir}}/{names[0]}", why)
        draft.ask(
            f"Does {entry.path} write {names[0]} into its output folder, and which of its "
            "numbers measure the experiment?"
        )
        return
    if _propose_from_code(survey, entry, draft, code):
        return
    trackers = _trackers_near(survey, entry)
    if "tensorboard" in trackers:
        draft.set("results.source", "tensorboard", f"{trackers['tensorboard']} use TensorBoard")
        draft.ask("Which TensorBoard tags measure the experiment, and is higher or lower better?")
    elif "wandb" in trackers:
        draft.set("results.source", "wandb", f"{trackers['wandb']} log to W&B")
        draft.ask("Which W&B summary keys measure the experiment, and is higher or lower better?")
    else:
        why = "no result file, TensorBoard or W&B use was found: the numbers come from the log"
        draft.set("results.source", "stdout", why)
        draft.ask("Which metric names does a run print, and is higher or lower better?")


def _propose_from_code(
    survey: RepoSurvey, entry: EntryPoint | None, draft: Draft, code: CodeMetrics
) -> bool:
    """[results] from the metric names the code writes and the configs state; False when they
    name none."""
    proposal = propose_metrics(survey, entry, code)
    if proposal is None:
        return False
    draft.set("results.source", proposal.source, proposal.source_reason)
    if proposal.path:
        draft.set("results.path", proposal.path, proposal.path_reason)
    if proposal.metrics:
        draft.set("results.metrics", proposal.metrics, proposal.metrics_reason)
    if proposal.question:
        draft.ask(proposal.question)
    return True


def _trackers_near(survey: RepoSurvey, entry: EntryPoint | None) -> dict[str, str]:
    """The trackers the script and its imports use; when they use none, any code's but tests'."""
    near = {entry.path, *entry.imports} if entry else set()
    for allowed in (near.__contains__, lambda path: not is_test(path)):
        found = {t.name: [f for f in t.files if allowed(f)] for t in survey.trackers}
        if any(found.values()):
            return {name: ", ".join(files[:3]) for name, files in found.items() if files}
    return {}


def _in_run_folder(path: str, out_dirs: list[str], hydra: bool) -> str | None:
    """The path within a run's folder, or None when it lies outside every output folder."""
    for folder in sorted(out_dirs, key=len, reverse=True):  # outputs/run1 before outputs
        if folder and path.startswith(f"{folder}/"):
            return path[len(folder) + 1 :]
    parts = path.split("/")
    if hydra and parts[0] == "outputs" and len(parts) > 3:  # Hydra's outputs/<date>/<time>/
        return "/".join(parts[3:])
    return None


def _propose_result_file(
    survey: RepoSurvey, result: ResultFile, relative: str | None, has_output: bool, draft: Draft
) -> None:
    draft.set("results.source", result.source, f"{result.path} holds results ({result.source})")
    usual = result.source == "wandb" or (
        relative is not None and (result.source == "tensorboard" or relative == FINAL_INFO)
    )
    if relative is not None and not usual:
        why = f"{result.path} lies in the output folder an earlier run was given"
        draft.set("results.path", f"{{out_dir}}/{relative}", why)
    elif relative is None and not usual:
        tensorboard = result.source == "tensorboard"
        where = str(PurePosixPath(result.path).parent) if tensorboard else result.path
        draft.set("results.path", where, f"{result.path} exists, outside any run's output folder")
        if has_output:
            draft.ask(
                f"{result.path} lies outside the run's output folder: does every run overwrite "
                "it, or does a run write its results elsewhere?"
            )
    if result.source == "final_info":
        return  # every mean counts
    metrics = _best_metrics(_available(result.source, Path(survey.root) / result.path))
    if metrics:
        draft.set("results.metrics", metrics, f"{result.path} holds {', '.join(metrics)}")
    else:
        draft.ask(f"Which numbers of {result.path} measure the experiment, higher or lower?")


def _available(source: str, path: Path) -> dict[str, float]:
    try:
        found = result_sources.available_metrics(source, path)
    except Exception:  # a reader's failure must not stop `labtui init`: the question is asked
        return {}
    return dict(found) if isinstance(found, dict) else {}


def _best_metrics(metrics: dict[str, float]) -> dict[str, str]:
    """At most four: names of known measures first, held-out ones (eval/val/test) next."""

    names = rank_names(list(metrics))[:MAX_METRICS]
    return {n: "lower" if lower_is_better(n) else "higher" for n in names}


def _propose_paper(survey: RepoSurvey, draft: Draft) -> None:
    def rank(main: LatexMain) -> tuple[int, int, str]:
        p = PurePosixPath(main.path)
        preferred = bool({"paper", "latex"} & set(p.parts[:-1])) + (
            p.name in ("main.tex", "paper.tex")
        )
        return -preferred, -len(main.sections), main.path

    if not survey.latex:
        return  # labtui's bundled template then
    main = min(survey.latex, key=rank)
    if main.placeholders:
        shown = ", ".join(main.placeholders[:3])
        draft.set("paper.tex", main.path, f"{main.path} is a draft with placeholders ({shown})")
        return  # the placeholders are the sections
    draft.set(
        "paper.tex", main.path, f"{main.path} has \\documentclass and {len(main.sections)} sections"
    )
    wanted = [s for s in main.sections if _WRITTEN.search(s)]
    if wanted:
        why = "the draft exists, so the agents write only its sections on experiments and results"
        draft.set("paper.sections", wanted, why)
    else:
        draft.ask(f"Which sections of {main.path} may the agents write?")


def _propose_task(survey: RepoSurvey, draft: Draft) -> None:
    task = readme_task(survey.readme.text) if survey.readme else ""
    if task and survey.readme:
        draft.set("project.task", task, f"the title and first paragraphs of {survey.readme.path}")
    else:
        draft.ask("The repository has no README prose: what is the research about?")
