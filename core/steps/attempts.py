"""One planned run: aider edits the experiment's code (``[experiment] edit``: the template's
experiment.py, or a repository's own files), labtui checks the edit, runs it and feeds failures
back, up to ``[limits] fix_attempts`` times. A run that keeps failing is abandoned: its code is
reverted to the last commit that ran, the failure goes into notes.md, and the stage goes on.

Two facts are computed here rather than trusted: whether the code really changed (a reply can
change some other file, or nothing), and whether the code is the very code an earlier run
already ran (its results would be a copy, not a new measurement).
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..coding.edit_guard import EditPolicy
from ..events import Refused, RunAbandoned
from ..runs.planned_settings import planned_change_problems
from ..runs.runner import RunResult, configured, run_experiment
from ..runs.setting_changes import read_command
from ..settings import CONFIG_NAME
from ..settings.contract import NO_TERMS, RunTerms, edit_files
from ..workspace.notebook import append_failure
from ..workspace.run_folder import finished_runs, recorded_commit

if TYPE_CHECKING:
    from ..coding.coder import CodeEditor, EditResult
    from ..stage_context import StageContext
    from ..workspace.project import CommitInfo, Project

FAILED_RUNS = "failed_runs"  # under .labtui/: the folders of abandoned runs, kept for the record


@dataclass
class Attempted:
    """How a planned run went: the successful run and its edit, or the last problem."""

    result: RunResult | None = None  # the run that succeeded
    edit: EditResult | HandEdit | None = None  # of the code that ran (or was last tried)
    problem: str = ""  # why the last attempt failed ('' on success)
    tried: list[str] = field(default_factory=list)  # one line per attempt, for notes.md
    sent: list[str] = field(default_factory=list)  # the prompts the coder was given
    stderr_tail: str = ""  # the last failed run's standard error (its end)
    digest: str = ""  # of the code last run (or refused as already run)
    run_s: float = 0.0  # the runs' own wall time, every attempt's

    @property
    def ok(self) -> bool:
        return self.result is not None

    def ran(self) -> Ran:
        """The run that succeeded and the edit of the code it ran, as ``ok`` promises them (a
        ValueError when every attempt failed)."""
        if self.result is None or self.edit is None:
            raise ValueError(f"no attempt ran: {self.problem}")
        return Ran(self.result, self.edit)


class Ran(NamedTuple):
    """A planned run that succeeded: its run and the edit of the code it ran."""

    result: RunResult
    edit: EditResult | HandEdit


@dataclass(frozen=True)
class HandEdit:
    """An edit no coder made, run as a planned run: the researcher's own edit of the code, or
    the settings labtui set itself (core/steps/settings_runs.py); shaped like the coder's
    EditResult where the notebook and the checkpoints read it."""

    commit: CommitInfo
    reply: str = ""
    target_changed: bool = True
    explanation: str = "(the researcher's own edit at the failed run's checkpoint)"


def code_files(project: Project) -> list[str]:
    """The files a run's change is made in (``[experiment] edit``, as they exist now)."""
    return edit_files(project.root, project.config.experiment)


def code_digest(texts: dict[str, str | None]) -> str:
    """One digest of the experiment's code: every file's name and text (None: absent)."""
    digest = hashlib.sha256()
    for name in sorted(texts):
        digest.update(f"{name}\0{texts[name]}\0".encode())
    return digest.hexdigest()


def code_now(project: Project, files: list[str]) -> dict[str, str | None]:
    return {
        name: (project.root / name).read_text(encoding="utf-8")
        if (project.root / name).is_file()
        else None
        for name in files
    }


def code_of_runs(project: Project) -> dict[str, str]:
    """{digest of the code: the first run that ran it} for every finished run, from the commit
    each run's record names (labtui_run.json)."""
    known: dict[str, str] = {}
    for run_id, commit in _run_commits(project.root).items():
        if digest := digest_at(project, commit):
            known.setdefault(digest, run_id)
    return known


def digest_at(project: Project, commit: str) -> str:
    """The digest of the experiment's code at ``commit`` ('' when it has none of its files)."""
    code = {name: project.file_at(commit, name) for name in code_files(project)}
    return code_digest(code) if any(text is not None for text in code.values()) else ""


def _run_commits(root: Path) -> dict[str, str]:
    """{run id: the commit its code came from} for the finished runs, oldest first."""
    commits = {folder.name: recorded_commit(folder) for folder in finished_runs(root)}
    return {run_id: commit for run_id, commit in commits.items() if commit}


def attempt_run(
    ctx: StageContext,
    coder: CodeEditor,
    run_id: str,
    prompt: str,
    *,
    index: int,
    attempts: int | None = None,
    terms: RunTerms = NO_TERMS,
    overrun_s: float = 0.0,
    known: dict[str, str] | None = None,
    accept: Callable[[RunResult], str] | None = None,
    change: str = "",
) -> Attempted:
    """Edit, check, run, feed errors back: up to ``attempts`` tries ([limits] fix_attempts).
    ``known``: the digests of code run before elsewhere (a search's discarded changes), beside
    the project's finished runs, with what ran it; such code is never run again. ``terms`` and
    ``overrun_s`` are a search's budget and seed for the run (core/runs/runner.py); ``accept`` says
    what is wrong with a run that ended well ('' when nothing), which is then fixed like a
    failure (a search's run that does not report its metric). ``change``: the plan's words for
    the run; an edit that leaves a setting they name at another value is sent back unrun."""
    attempts = max(1, ctx.config.limits.fix_attempts if attempts is None else attempts)
    known = {**(known or {}), **code_of_runs(ctx.project)}
    files = code_files(ctx.project)
    names = ", ".join(files)
    outcome = Attempted()
    request = prompt  # what the run needs: a retry in aider's fresh chat must say it again
    start = code_now(ctx.project, files)  # what the planned change is made to
    for attempt in range(1, attempts + 1):
        ctx.check_stop()
        outcome.sent.append(prompt)
        edit = coder.edit(
            files,
            prompt,
            commit_message=f"experiments: {run_id} code (attempt {attempt})",
            read_only=[name for name in ("notes.md",) if (ctx.project.root / name).is_file()],
            policy=EditPolicy(),
        )
        outcome.edit = edit
        if not edit.target_changed:
            why = (edit.error or "no file changed").strip().splitlines()[0]
            outcome.problem = f"the edit did not change {names}: {why}"
            outcome.tried.append(f"attempt {attempt}: {outcome.problem}")
            ctx.say(f"{run_id} attempt {attempt}: {outcome.problem}")
            prompt = ctx.prompt(
                "experiment_noop", error=edit.error or "no file changed", request=request
            )
            continue
        now = code_now(ctx.project, files)
        unmade = planned_change_problems(change, start, now)
        if unmade:
            outcome.problem = f"the edit did not make the planned change: {'; '.join(unmade)}"
            outcome.tried.append(f"attempt {attempt}: {outcome.problem}; not run")
            ctx.emit(Refused(stage=ctx.stage, what="run", subject=run_id, reason=outcome.problem))
            prompt = ctx.prompt("experiment_unplanned", unmade="\n".join(unmade), request=request)
            continue
        code = code_digest(now)
        outcome.digest = code
        same = known.get(code)
        if same is not None:
            outcome.problem = f"{names} is the very code {same} already ran"
            outcome.tried.append(f"attempt {attempt}: {outcome.problem}; not run again")
            ctx.emit(Refused(stage=ctx.stage, what="run", subject=run_id, reason=outcome.problem))
            prompt = ctx.prompt("experiment_same", run_id=run_id, same=same, request=request)
            continue
        result = run_in_project(
            ctx,
            run_id,
            edit.commit.sha if edit.commit else ctx.project.head(),
            index,
            terms=terms,
            overrun_s=overrun_s,
        )
        outcome.run_s += result.wall_s
        if result.ok and accept is not None and (unusable := accept(result)):
            result = dataclasses.replace(result, problem=unusable)
        if result.ok:
            outcome.result, outcome.problem = result, ""
            return outcome
        ctx.check_stop()
        outcome.stderr_tail = result.stderr_tail[-1500:]
        known[code] = f"{run_id} (attempt {attempt}, failed)"
        outcome.problem = result.problem
        outcome.tried.append(f"attempt {attempt}: {result.problem}")
        ctx.say(f"{run_id} attempt {attempt} failed: {result.problem}")
        prompt = ctx.prompt(
            "experiment_fix",
            run_id=run_id,
            problem=result.problem,
            stderr=result.stderr_tail[-1500:],
        )
    return outcome


def run_in_project(
    ctx: StageContext,
    run_id: str,
    commit: str,
    index: int,
    *,
    terms: RunTerms = NO_TERMS,
    overrun_s: float = 0.0,
) -> RunResult:
    """The run ``run_id`` as the project's settings say (``[experiment] command``), with a
    search's budget and seed when ``terms`` has them: a RunResult."""
    search = ctx.config.search
    return run_experiment(
        ctx.project.root,
        run_id,
        emit=ctx.emit,
        stage=ctx.stage,
        commit=commit,
        index=index,
        total=max(1, search.limit if search is not None else ctx.config.limits.max_runs),
        stop=ctx.stop,
        terms=terms,
        overrun_s=overrun_s,
        **configured(ctx.config),
    )


def abandon_run(
    ctx: StageContext, run_id: str, outcome: Attempted, last_good: str, good_run: str
) -> str:
    """Give a run up after its attempts: the code back to ``last_good`` (the commit of
    ``good_run``'s code), the failed run's folder out of the project root (plot.py reads every
    run_*/), and the failure in notes.md, in one commit that says so. Returns that commit."""
    root = ctx.project.root
    files = code_files(ctx.project)
    config = root / CONFIG_NAME
    if config.is_file() and (kept := ctx.project.file_at(last_good, CONFIG_NAME)) is not None:
        if kept != config.read_text(encoding="utf-8"):  # a setting of the command was changed
            files = [*files, CONFIG_NAME]
    for name in files:
        restored = ctx.project.file_at(last_good, name)
        if restored is not None:
            (root / name).write_text(restored, encoding="utf-8")
    experiment = ctx.config.experiment
    experiment.command = read_command(root, experiment.command)
    _keep_failed_folder(ctx.project, run_id)
    append_failure(
        root, run_id, tried=outcome.tried, last_error=outcome.problem, reverted_to=good_run
    )
    commit = ctx.commit(
        f"experiments: {run_id} abandoned after {len(outcome.tried)} attempt(s); "
        f"{', '.join(files)} reverted to the code of {good_run} ({last_good[:8]})",
        [*files, "notes.md"],
    )
    ctx.emit(
        RunAbandoned(
            stage=ctx.stage,
            run_id=run_id,
            attempts=len(outcome.tried),
            problem=outcome.problem,
            reverted_to=last_good,
        )
    )
    return commit.sha if commit is not None else ctx.project.head()


def _keep_failed_folder(project: Project, run_id: str) -> None:
    folder = project.root / run_id
    if not folder.is_dir():
        return
    kept = project.state_dir / FAILED_RUNS / run_id
    if kept.exists():
        shutil.rmtree(kept)
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), str(kept))


def failed_run_body(run_id: str, outcome: Attempted, good_run: str, files: list[str]) -> str:
    """What the researcher reads at the checkpoint after a run was abandoned."""
    tried = "\n".join(f"- {line}" for line in outcome.tried) or "- (no attempt was made)"
    code = ", ".join(files)
    return (
        f"**{run_id} failed every attempt** and was abandoned; {code} is back to the code "
        f"of {good_run}, and notes.md says what was tried:\n\n{tried}\n\n"
        f"*r retries this run with your note · e lets you edit {files[0]}, then runs your "
        "code as this run · s skips to the next planned run · q stops here.*"
    )


def failed_folder(project: Project, run_id: str) -> Path:
    return project.state_dir / FAILED_RUNS / run_id
