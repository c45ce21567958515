"""Where a hill-climb or a tree search keeps its code: git worktrees under ``.labtui/worktrees/``
and branches of their own, never the project's folder or branch, until the search ends and its
best code is merged in (``bring_home``).

- the climb's worktree stays on ``labtui/climb/<idea>`` and is reset to the best after each
  discarded attempt; a tree's workers have detached worktrees and take up each node on its own
  branch ``labtui/tree/<idea>/node-<n>``;
- a kept step's run folder is a commit on its branch; anything else is reset away once the
  ledger (core/search/ledger.py) holds what it needs;
- what a kill cut short (a commit the ledger does not record) is kept on a tag
  ``labtui/abandoned/...`` before anything moves the branch.

git is run directly (worktree, reset, checkout -B, merge), as core/workspace/history.py does.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LabtuiError
from ..steps.attempts import code_files
from ..workspace.project import Project
from .ledger import Step

if TYPE_CHECKING:
    from ..stage_context import StageContext

WORKTREES = "worktrees"


def open_checkout(project: Project, name: str, branch: str, start: str) -> Project:
    """The worktree ``.labtui/worktrees/<name>`` on ``branch`` (made from ``start`` the first
    time, reused after), with nothing left over from a step a kill cut short."""
    folder = project.state_dir / WORKTREES / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    checkout = project.worktree(folder, branch, start)
    return checkout


def open_worker(project: Project, name: str, start: str) -> Project:
    """The worktree ``.labtui/worktrees/<name>`` with a detached HEAD (made at ``start`` the
    first time): a tree search's worker, which takes up each node on the node's own branch."""
    folder = project.state_dir / WORKTREES / name
    if not (folder / ".git").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        git(project.root, "worktree", "prune")
        git(project.root, "worktree", "add", "--quiet", "--detach", str(folder), start)
    worker = Project(folder, project.config)
    # A worker killed mid-checkout (a crash, `labtui stop --now`) leaves its index.lock.
    worker.clear_stale_index_lock()
    return worker


def reset_checkout(checkout: Project, commit: str) -> None:
    """``checkout`` back to ``commit``: its branch moved there, its files as they were there,
    anything untracked a step left removed (ignored files, a run's checkpoints, stay)."""
    git(checkout.root, "reset", "--quiet", "--hard", commit)
    git(checkout.root, "clean", "--quiet", "-fd")


def switch_checkout(checkout: Project, branch: str, commit: str) -> None:
    """``checkout`` onto ``branch``, made (or moved) to ``commit``: a tree search's worker
    taking up a new node."""
    git(checkout.root, "checkout", "--quiet", "--force", "-B", branch, commit)
    git(checkout.root, "clean", "--quiet", "-fd")


def diff_between(checkout: Project, older: str, newer: str) -> str:
    """The change of the experiment's code from ``older`` to ``newer``."""
    files = code_files(checkout)
    return git(checkout.root, "diff", older, newer, "--", *files)


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LabtuiError(
            f"git {' '.join(args[:2])} failed in {root}: {result.stderr.strip()}",
            "look at the worktree with `git status` there; the search resumes from its ledger",
        )
    return result.stdout


def bring_home(ctx: StageContext, branch: str, message: str) -> str:
    """Merge the search's best ``branch`` into the project's branch (its kept commits join the
    project's history). A merge that conflicts (the project's code changed by hand meanwhile)
    is abandoned and the branch's files are taken instead, said so. Returns the new HEAD."""
    project = ctx.project
    project.commit(f"{ctx.stage}: keep uncommitted changes before the search's result")
    merged = subprocess.run(
        ["git", "merge", "--no-ff", "--no-edit", "-m", message, branch],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if merged.returncode != 0:
        git(project.root, "merge", "--abort")
        changed = git(project.root, "diff", "--name-only", "HEAD", branch).split()
        git(project.root, "checkout", branch, "--", *changed)
        ctx.project.commit(f"{message} (taken from {branch}: the merge conflicted)", changed)
        ctx.say(f"merging {branch} conflicted; its files were taken into the project instead")
    return project.head()


def keep_results(ctx: StageContext, step: Step, message: str) -> str:
    """Commit the step's run folder on its branch (in ``ctx``'s checkout): its tip."""
    commit = ctx.commit(message, [step.run_id])
    return commit.sha if commit is not None else ctx.project.head()


def drop_run_folder(checkout: Project, run_id: str) -> None:
    shutil.rmtree(checkout.root / run_id, ignore_errors=True)


def keep_abandoned_tip(ctx: StageContext, checkout: Project, expected: str, name: str) -> None:
    """A branch tip the ledger does not know (an attempt a kill cut short, or a search made
    before a rewind) is kept on a tag before the checkout is reset, and said so."""
    tip = checkout.head()
    if tip and tip != expected:
        keep_on_tag(ctx, checkout, tip, name)


def keep_unrecorded_nodes(ctx: StageContext, prefix: str, recorded: set[int], name: str) -> None:
    """The tips of node branches ``<prefix>/node-<n>`` the ledger does not record (nodes a kill
    cut short) kept on tags: their numbers are grown again, and their branches moved."""
    refs = git(
        ctx.project.root,
        "for-each-ref",
        "--format=%(refname:short) %(objectname)",
        f"refs/heads/{prefix}/",
    )
    for line in refs.splitlines():
        branch, _, tip = line.partition(" ")
        number = branch.rsplit("-", 1)[-1]
        if number.isdigit() and int(number) not in recorded:
            keep_on_tag(ctx, ctx.project, tip, f"{name}-node-{number}")


def keep_on_tag(ctx: StageContext, project: Project, commit: str, name: str) -> None:
    tag = f"labtui/abandoned/{name}-{commit[:8]}"
    git(
        project.root,
        "tag",
        "--force",
        "-m",
        f"{name}: work the ledger does not record",
        tag,
        commit,
    )
    ctx.say(
        f"{name}: commit {commit[:8]} is not in the ledger (cut short or rewound); kept as tag {tag}"
    )
