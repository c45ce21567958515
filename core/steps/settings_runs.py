"""A run whose change is settings only: labtui sets them (core/runs/setting_changes.py), commits
``settings: HIDDEN_UNITS 32 → 64`` and runs the code, with no model asked for code.

What a coder's edit is checked for holds here too: code an earlier run already ran is not run
again, and a setting the code does not have, or a value of the wrong type, is the run's problem
(the researcher decides at the failed run's checkpoint, as after a failed edit), with nothing
written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..events import Refused
from ..runs.setting_changes import (
    COMMAND_KEY,
    SettingError,
    apply_settings,
    commit_message,
    read_command,
    written_files,
)
from ..settings import CONFIG_NAME
from ..settings.contract import NO_TERMS, RunTerms
from .attempts import (
    Attempted,
    HandEdit,
    code_digest,
    code_files,
    code_now,
    code_of_runs,
    run_in_project,
)

if TYPE_CHECKING:
    from ..runs.runner import RunResult
    from ..stage_context import StageContext


def settings_run(
    ctx: StageContext,
    run_id: str,
    settings: dict[str, Any],
    *,
    index: int,
    terms: RunTerms = NO_TERMS,
    overrun_s: float = 0.0,
    known: dict[str, str] | None = None,
    accept: Callable[[RunResult], str] | None = None,
) -> Attempted:
    """Set ``settings`` ({name: value}) in the experiment's files, commit, and run ``run_id``:
    one attempt, no model call. ``known``: digests of code run elsewhere (a search's);
    ``accept``: what is wrong with a run that ended well ('' when nothing)."""
    files = code_files(ctx.project)
    outcome = Attempted()
    experiment = ctx.config.experiment
    try:
        changes = apply_settings(ctx.project.root, files, settings, experiment.command)
    except SettingError as exc:
        return _refused(ctx, run_id, outcome, f"its settings cannot be made: {exc}")
    if not changes:
        shown = ", ".join(f"{name} = {value!r}" for name, value in settings.items())
        return _refused(ctx, run_id, outcome, f"the code already has {shown}: nothing to run")
    message = commit_message(changes)
    written = written_files(changes)
    if CONFIG_NAME in written:  # the run's command changed: this run and the next use it
        experiment.command = read_command(ctx.project.root, experiment.command)
    commit = ctx.commit(f"{message} ({run_id})", written)
    if commit is None:  # the files were written: a commit that says nothing changed is a bug
        return _refused(ctx, run_id, outcome, f"{message} changed no file")
    outcome.edit = HandEdit(commit, explanation=f"labtui set {message.removeprefix('settings: ')}")
    outcome.tried.append(f"attempt 1: {message} (set by labtui)")
    code = code_now(ctx.project, files)
    if CONFIG_NAME in written:  # the same code under another command is another run
        code[COMMAND_KEY] = experiment.command
    digest = code_digest(code)
    outcome.digest = digest
    same = {**(known or {}), **code_of_runs(ctx.project)}.get(digest)
    if same is not None:
        return _refused(ctx, run_id, outcome, f"{', '.join(files)} is the very code {same} ran")
    result = run_in_project(ctx, run_id, commit.sha, index, terms=terms, overrun_s=overrun_s)
    outcome.run_s = result.wall_s
    if result.ok and accept is not None and (unusable := accept(result)):
        result = dataclasses.replace(result, problem=unusable)
    if result.ok:
        outcome.result = result
        return outcome
    outcome.problem = result.problem
    outcome.stderr_tail = result.stderr_tail[-1500:]
    outcome.tried[-1] += f": {result.problem}"
    ctx.say(f"{run_id} with {message} failed: {result.problem}")
    return outcome


def _refused(ctx: StageContext, run_id: str, outcome: Attempted, problem: str) -> Attempted:
    outcome.problem = problem
    outcome.tried.append(f"attempt 1: {problem}; not run")
    ctx.emit(Refused(stage=ctx.stage, what="run", subject=run_id, reason=problem))
    return outcome
