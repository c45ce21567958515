"""A tree search's worker checkouts: one killed mid-command is usable again on resume."""

from __future__ import annotations

from pathlib import Path

from labtui.core.search.worktrees import open_worker, switch_checkout


def test_a_workers_stale_index_lock_is_cleared_when_it_is_opened_again(project) -> None:
    start = project.head()
    worker = open_worker(project, "tree-x-w1", start)
    lock = Path(worker.repo.git_dir) / "index.lock"  # .git/worktrees/tree-x-w1/index.lock
    lock.write_text("")  # a worker killed in the middle of a checkout leaves it
    again = open_worker(project, "tree-x-w1", start)
    assert not lock.exists()
    switch_checkout(again, "labtui/tree/x/node-1", start)  # git works in it again
    assert again.head() == start
