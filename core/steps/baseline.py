"""The baseline: run_0 with the project's code as it is, the reference every later run is
compared with. The plan needs its numbers and the experiments need it run, so it is made once,
by whichever comes first, and read from ``run_0/final_info.json`` after (whatever the source of
its numbers, core/runs/runner.py writes them there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import StageFailed
from ..events import Event
from ..runs.runner import configured, run_experiment
from ..settings.contract import prompt_facts
from ..stage_context import StageContext
from ..workspace.project import Project
from ..workspace.run_folder import RunFolderError, has_results, read_final_info, run_name

BASELINE = run_name(0)


def run_baseline(project: Project, emit: Callable[[Event], None]) -> Any:
    """run_0 with the project's code as it is; committed when it succeeds."""
    result = run_experiment(
        project.root,
        BASELINE,
        emit=emit,
        stage="experiments",
        commit=project.head(),
        **configured(project.config),
    )
    if result.ok:
        project.commit(f"baseline: {BASELINE} results", [BASELINE])
    return result


def ensure_baseline(ctx: StageContext) -> dict[str, Any]:
    """The baseline's means, running it first when it has not run yet."""
    root = ctx.project.root
    if not has_results(root / BASELINE):
        ctx.say(f"no baseline yet: running {BASELINE} with the project's code")
        result = run_baseline(ctx.project, ctx.emit)
        if not result.ok:
            raise StageFailed(f"the baseline {BASELINE} failed: {result.problem}", fix_hint(ctx))
    return baseline_means(ctx.project)


def fix_hint(ctx: StageContext) -> str:
    """How to make the baseline work, in the project's own terms."""
    facts = prompt_facts(ctx.project.root, ctx.config)
    command = facts["run_command"].replace("run_i", BASELINE)
    return f"fix {facts['code_files']} (or [experiment] command in labtui.toml) so that `{command}` works"


def baseline_means(project: Project) -> dict[str, Any]:
    """The baseline's means; StageFailed when its final_info.json is missing or breaks the
    contract."""
    try:
        info = read_final_info(project.root / BASELINE)
    except RunFolderError as error:
        raise _unusable(error.message) from None
    if info.problem:
        raise _unusable(info.problem)
    return info.means()


def _unusable(problem: str) -> StageFailed:
    return StageFailed(
        f"the baseline is unusable: {problem}",
        f"delete {BASELINE}/ and run `labtui run` again to redo the baseline",
    )
