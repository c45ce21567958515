"""Rewind: the project back to the commit before a stage started, nothing lost.

The journal tells where each stage first started (``StageStarted.head``, the HEAD of that
moment). Rewinding to a stage commits whatever is uncommitted, keeps the work after that commit
on a tag ``labtui/abandoned/<stage>-<n>`` (a tag, so it stays reachable and shows in ``git log
--all`` but takes no branch name and gets no commits by mistake), moves the branch back with
``git reset --hard`` and returns the ``Rewound`` event that the journal appends: replaying it
forgets the stage and every stage after it, while the journal itself stays append-only.

Journals older than ``StageStarted.head`` say where a stage started only by the commits the
journal saw before it (``CodeDiff``) and by time: the newest of those commits that is on the
branch is taken, else the newest commit on the branch made no later than the stage's start.

Refused with what to do: a name that is no stage, a stage this project has not reached, a
repository in the middle of a merge, rebase, cherry-pick, revert or bisect, a detached HEAD,
a lock left by another git process. The caller holds the project lock (no engine runs).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..events import Rewound
from ..journal import JOURNAL_NAME, PipelineState, StageStart
from ..stage_list import STAGES
from .project import Project

TAG_PREFIX = "labtui/abandoned/"
# Files in the git folder that say an operation is half done.
_UNFINISHED = {
    "MERGE_HEAD": ("a merge", "git merge --continue, or git merge --abort"),
    "CHERRY_PICK_HEAD": ("a cherry-pick", "git cherry-pick --continue, or --abort"),
    "REVERT_HEAD": ("a revert", "git revert --continue, or --abort"),
    "rebase-merge": ("a rebase", "git rebase --continue, or git rebase --abort"),
    "rebase-apply": ("a rebase or git am", "git rebase --continue / --abort (or git am --abort)"),
    "BISECT_LOG": ("a bisect", "git bisect reset"),
}


@dataclass(frozen=True)
class Target:
    """Where a rewind goes: the stage and the commit before it started."""

    stage: str
    commit: str
    how: str  # how the commit was found, for the notice ("recorded", or the fallback used)


def check_stage(stage: str, state: PipelineState, journal: Path) -> StageStart:
    """The start of ``stage`` in the project's current history; LabtuiError when there is none."""
    if stage not in STAGES:
        raise LabtuiError(
            f"rewind: {stage!r} is no stage",
            f"name one of {', '.join(STAGES)} (as `labtui rewind STAGE`)",
        )
    start = state.started.get(stage)
    if start is None:
        reached = [s for s in STAGES if s in state.started]
        raise LabtuiError(
            f"rewind: stage {stage} has not started in this project (by {journal})",
            "rewind to a stage it has reached: " + (", ".join(reached) or "none yet"),
        )
    return start


def find_target(project: Project, start: StageStart) -> Target:
    """The commit HEAD was on as ``start`` began (see the module's note on old journals)."""
    if start.head:
        _check_on_branch(project, start.head, start.stage)
        return Target(start.stage, start.head, "recorded")
    for commit in reversed(start.commits_before):
        if _is_ancestor(project, commit):
            return Target(start.stage, commit, "the last commit the journal saw before it")
    found = _newest_before(project, start.ts)
    if not found:
        raise LabtuiError(
            f"rewind: the journal does not say where stage {start.stage} started (it predates "
            "labtui's record of that), and no commit on this branch is older than its start",
            "go back by hand: git tag a name for HEAD, then git reset --hard the commit you want",
        )
    return Target(start.stage, found, "the newest commit made before it started")


def check_repository(project: Project) -> None:
    """Refuse a repository in a state a reset would make worse (LabtuiError says the fix)."""
    git_dir = Path(_git(project, "rev-parse", "--absolute-git-dir").strip())
    for name, (what, fix) in _UNFINISHED.items():
        if (git_dir / name).exists():
            raise LabtuiError(
                f"rewind: {project.root} is in the middle of {what} ({git_dir / name} exists)",
                f"finish it or stop it first: {fix}",
            )
    lock = git_dir / "index.lock"
    if lock.exists():
        raise LabtuiError(
            f"rewind: {lock} exists: another git command is running, or one was killed",
            f"wait for it; if no git command is running, delete {lock}",
        )
    if not project.branch():
        raise LabtuiError(
            f"rewind: {project.root} has a detached HEAD; a rewind moves a branch back",
            "git checkout the branch labtui works on (git branch shows them), then rewind",
        )


def rewind_to(
    project: Project, state: PipelineState, stage: str, note: str = ""
) -> tuple[Rewound, str]:
    """Go back to before ``stage``: commit what is uncommitted, tag the work after the target,
    reset the branch. Returns the event to journal and a sentence saying what was done."""
    start = check_stage(stage, state, project.state_dir / JOURNAL_NAME)
    check_repository(project)
    target = find_target(project, start)
    kept = project.commit(f"labtui: keep uncommitted changes before rewinding to {stage}")
    head = project.head()
    kept_as = ""
    if head != target.commit:
        kept_as = _free_tag(project, stage)
        project.tag(
            kept_as,
            f"labtui: the work after {target.commit[:8]}, set aside when the project was "
            f"rewound to before stage {stage}",
        )
        _git(project, "reset", "--hard", target.commit)
    event = Rewound(
        stage=stage, to_commit=target.commit, kept_as=kept_as, from_commit=head, note=note
    )
    return event, _told(event, target, kept)


def _told(event: Rewound, target: Target, kept: Any) -> str:
    words = f"rewound to before stage {event.stage}: the project is at {event.to_commit[:8]}"
    if target.how != "recorded":
        words += f" ({target.how}: this journal predates the record of where stages start)"
    if kept is not None:
        words += f"; uncommitted changes were committed first ({kept.sha[:8]})"
    if event.kept_as:
        words += (
            f"; the work after it is kept on tag {event.kept_as} "
            f"(git log {event.kept_as}; git checkout {event.kept_as} -- FILE takes a file back)"
        )
    else:
        words += "; no commit came after it, so nothing was set aside"
    return words


def _newest_before(project: Project, ts: float) -> str:
    """The newest commit on the branch's first-parent line made no later than ``ts`` ('')."""
    for line in _git(project, "log", "--first-parent", "--format=%H %ct", "HEAD").splitlines():
        sha, _, seconds = line.partition(" ")
        if seconds.isdigit() and int(seconds) <= ts:
            return sha
    return ""


def _free_tag(project: Project, stage: str) -> str:
    taken = _git(project, "tag", "--list", f"{TAG_PREFIX}{stage}-*").split()
    numbers = [int(name.rsplit("-", 1)[1]) for name in taken if name.rsplit("-", 1)[1].isdigit()]
    return f"{TAG_PREFIX}{stage}-{max(numbers, default=0) + 1}"


def _check_on_branch(project: Project, commit: str, stage: str) -> None:
    if not _is_ancestor(project, commit):
        raise LabtuiError(
            f"rewind: stage {stage} started at commit {commit[:8]}, which is not in the history "
            f"of the branch {project.branch() or 'HEAD'}",
            "check out the branch the project ran on (git branch --contains "
            f"{commit[:8]}), then rewind",
        )


def _is_ancestor(project: Project, commit: str) -> bool:
    done = subprocess.run(
        ["git", "merge-base", "--is-ancestor", commit, "HEAD"],
        cwd=project.root,
        capture_output=True,
    )
    return done.returncode == 0


def _git(project: Project, *args: str) -> str:
    return str(project.repo.git.execute(["git", *args]))
