"""The diff pane alone in a small app, over a real git repository: following CodeDiff events,
stepping through commits and stage/run groups, the working tree, and errors from git.

Commit dates are fixed so shas (and the snapshot) never change. Async tests run under
``asyncio.run`` (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import git
import pytest
from support.git_history import HISTORY, commit, init_repo
from support.pane_app import PaneApp
from support.pilot import settle
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Footer, Static

from labtui.core.events import CodeDiff
from labtui.core.workspace.history import CommitEntry, CommitLog
from labtui.core.workspace.project import CommitInfo
from labtui.tui.panes import DiffPane
from labtui.tui.panes.diff_history import WORKING_TREE

SIZE = (100, 30)
FIXED_DATE = "2024-05-01T12:00:00+00:00"


class DiffApp(PaneApp):
    """The pane as the main screen holds it, styled by the app's stylesheet, with a footer."""

    def __init__(self, commit_log: CommitLog | None) -> None:
        super().__init__()
        self.commit_log = commit_log

    def compose(self) -> ComposeResult:
        yield DiffPane(commit_log=self.commit_log, id="diff")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff-scroll").focus()

    @property
    def pane(self) -> DiffPane:
        return self.query_one(DiffPane)

    def text(self, selector: str) -> str:
        return str(self.query_one(selector, Static).render())

    @property
    def header(self) -> str:
        return self.text("#diff-header")

    @property
    def body(self) -> str:
        return self.text("#diff-body")


@pytest.fixture
def fixed_dates(monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)


@pytest.fixture
def project(tmp_path: Path, fixed_dates) -> tuple[Path, list[str]]:
    root = tmp_path / "project"
    repo = init_repo(root)
    shas = [commit(repo, message, files) for message, files in HISTORY]
    repo.create_tag("labtui/smoothing/run_1", ref=shas[5], message="run_1 of smoothing")
    return root, shas


def event_for(root: Path, message: str, files: dict[str, str]) -> CodeDiff:
    """Commit in the project, as the pipeline does, and the CodeDiff event it emits."""
    sha = commit(git.Repo(root), message, files)
    info = CommitLog(root).show(sha)
    return CodeDiff.from_commit("experiments", info)


async def settle_diff(pilot: Pilot) -> None:
    """Wait until the pane has everything it asked git for (workers chain: list, then show)."""
    app = pilot.app
    assert isinstance(app, DiffApp)
    await settle(pilot, lambda: not app.pane.busy)


async def press(pilot: Pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle_diff(pilot)


def run(app: DiffApp, steps: Callable[[Pilot], Awaitable[None]]) -> None:
    async def test() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await settle_diff(pilot)
            await steps(pilot)

    asyncio.run(test())


# -- stepping ----------------------------------------------------------------------------------


def test_opens_on_the_newest_commit_and_steps_older_and_newer(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        assert app.pane.following and app.pane.shown_sha == shas[7]
        assert "commit 8/8" in app.header and "following" in app.header
        assert "notebook: record the results" in app.header

        await press(pilot, "left_square_bracket")
        assert not app.pane.following and app.pane.shown_sha == shas[6]
        assert "commit 7/8" in app.header and "f follows" in app.header
        assert "plots" in app.header and "(plot.py)" in app.header
        assert "+import matplotlib" in app.body

        await press(pilot, "left_square_bracket", "left_square_bracket", "left_square_bracket")
        assert app.pane.shown_sha == shas[3]
        header = app.header
        assert "commit 4/8" in header and shas[3][:7] in header
        assert "experiments" in header and "run_1" in header
        assert "(experiment.py)" in header
        assert "-lr = 0.1" in app.body and "+lr = 0.05" in app.body

        await press(pilot, "right_square_bracket")
        assert app.pane.shown_sha == shas[4] and "commit 5/8" in app.header

    run(app, steps)


def test_stepping_stops_at_both_ends(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        await press(pilot, "right_square_bracket")  # already the newest: nothing to step to
        assert app.pane.following and app.pane.shown_sha == shas[7]
        await press(pilot, *["left_square_bracket"] * 10)
        assert app.pane.shown_sha == shas[0] and "commit 1/8" in app.header
        assert "+lr = 0.1" in app.body  # the root commit, against the empty tree

    run(app, steps)


def test_group_jumps(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        await press(pilot, "left_curly_bracket")  # notebook → plots
        assert app.pane.shown_sha == shas[6]
        await press(pilot, "left_curly_bracket")  # → the newest commit of run_1
        assert app.pane.shown_sha == shas[5]
        assert "experiments" in app.header and "run_1" in app.header
        await press(pilot, "left_curly_bracket")  # → ideas
        assert app.pane.shown_sha == shas[2]
        await press(pilot, "right_curly_bracket")  # → run_1 again
        assert app.pane.shown_sha == shas[5]
        await press(pilot, "left_square_bracket", "right_curly_bracket")  # inside run_1 → plots
        assert app.pane.shown_sha == shas[6]

    run(app, steps)


# -- working tree ------------------------------------------------------------------------------


def test_working_tree_toggle(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        await press(pilot, "w")
        assert app.pane.showing_working_tree and app.pane.shown_sha == WORKING_TREE
        assert "working tree (uncommitted)" in app.header and "clean" in app.header
        assert "Nothing uncommitted." in app.body

        await press(pilot, "w")  # back where it was: following the newest commit
        assert app.pane.following and app.pane.shown_sha == shas[7]

        (root / "experiment.py").write_text("lr = 0.05\nepochs = 40\n")
        (root / "scratch.py").write_text("print(1)\n")
        await press(pilot, "left_square_bracket", "w")
        header = app.header
        assert "working tree (uncommitted)" in header and "2 files changed" in header
        assert "experiment.py, scratch.py" in header and "f follows" in header
        assert "+epochs = 40" in app.body and "?? scratch.py" in app.body

        await press(pilot, "w")  # back to the commit being browsed
        assert not app.pane.showing_working_tree and app.pane.shown_sha == shas[6]

    run(app, steps)


# -- live commits ------------------------------------------------------------------------------


def test_following_shows_each_commit_and_browsing_counts_them(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        first = event_for(root, "experiments: run_2 code (attempt 1)", {"experiment.py": "lr=1\n"})
        app.pane.apply(first)
        assert app.pane.shown_sha == first.commit and "+lr=1" in app.body  # no git needed
        await settle_diff(pilot)
        assert "commit 9/9" in app.header and "run_2" in app.header

        await press(pilot, "left_square_bracket")
        assert app.pane.shown_sha == shas[7]
        for attempt in (2, 3):
            event = event_for(
                root,
                f"experiments: run_2 code (attempt {attempt})",
                {"experiment.py": f"lr={attempt}\n"},
            )
            app.pane.apply(event)
            await settle_diff(pilot)
        assert app.pane.shown_sha == shas[7]  # still what the researcher is reading
        assert "2 newer · f follows" in app.header and "commit 8/11" in app.header

        await press(pilot, "f")
        assert app.pane.following and app.pane.shown_sha == event.commit
        assert "commit 11/11" in app.header and "newer" not in app.header
        assert "attempt 3" in app.header

    run(app, steps)


def test_the_kept_attempts_of_a_running_climb_are_stepped_through(project, tmp_path, monkeypatch):
    """A climb commits in its worktree on labtui/climb/<idea>, not on HEAD: its commits are
    listed (in date order) and `[`/`]` step through them while it runs."""
    root, shas = project
    worktree = tmp_path / "climb"
    git.Repo(root).git.worktree("add", "-q", "-b", "labtui/climb/smoothing", str(worktree))
    climb = git.Repo(worktree)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-05-01T12:05:00+00:00")
    kept = commit(climb, "experiments: run_1 results (kept: +0.1)", {"run_1/x.json": "{}\n"})
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        assert app.pane.shown_sha == kept and "commit 9/9" in app.header
        monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-05-01T12:06:00+00:00")
        sha = commit(climb, "experiments: run_2 code (attempt 1)", {"experiment.py": "lr=2\n"})
        app.pane.apply(CodeDiff.from_commit("experiments", CommitLog(worktree).show(sha)))
        await settle_diff(pilot)
        assert app.pane.shown_sha == sha and "commit 10/10" in app.header
        await press(pilot, "left_square_bracket")
        assert app.pane.shown_sha == kept and "run_1" in app.header
        await press(pilot, "left_square_bracket")
        assert app.pane.shown_sha == shas[7]
        await press(pilot, "right_square_bracket", "right_square_bracket")
        assert app.pane.shown_sha == sha and "+lr=2" in app.body

    run(app, steps)


def test_a_commit_made_while_the_working_tree_is_open_shows_when_it_closes(project):
    root, _ = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        await press(pilot, "w")
        event = event_for(root, "review: scores", {"review.md": "7/10\n"})
        app.pane.apply(event)
        await settle_diff(pilot)
        assert app.pane.shown_sha == WORKING_TREE and "1 newer · w back" in app.header
        await press(pilot, "w")  # it was following underneath: the new commit is on screen
        assert app.pane.following and app.pane.shown_sha == event.commit
        assert "commit 9/9" in app.header and "newer" not in app.header

    run(app, steps)


def test_stepping_from_a_live_commit_waits_for_the_list_to_include_it(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        event = event_for(root, "writeup: fill the paper", {"latex/template.tex": "x\n"})
        app.pane.apply(event)
        await pilot.press("left_square_bracket")  # before the list has been read again
        await settle_diff(pilot)
        assert app.pane.shown_sha == shas[7]  # one older than the live commit, not two

    run(app, steps)


def test_without_a_history_the_pane_only_follows():
    app = DiffApp(None)

    async def steps(pilot: Pilot) -> None:
        assert app.header == "No code changes yet."
        event = CodeDiff(
            stage="experiments",
            commit="3f2a9c1e0b7d",
            message="Add label smoothing",
            files=["experiment.py"],
            diff="--- a/experiment.py\n+++ b/experiment.py\n+x = 1\n",
        )
        app.pane.apply(event)
        await pilot.pause()
        assert app.header == "3f2a9c1 Add label smoothing  (experiment.py)"
        assert "+x = 1" in app.body
        await pilot.press("left_square_bracket", "w")
        assert app.pane.following and app.pane.shown_sha == "3f2a9c1e0b7d"
        assert not any(key.startswith("diff.") for key in footer_binding_ids(app))

    run(app, steps)


def footer_binding_ids(app: App[None]) -> list[str]:
    return [
        binding.id or ""
        for _, binding, enabled, _ in app.screen.active_bindings.values()
        if enabled or binding.show
    ]


def test_keys_have_ids_and_follow_is_dimmed_while_following(project):
    root, _ = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        bindings = {
            binding.id: (binding.description, enabled)
            for _, binding, enabled, _ in app.screen.active_bindings.values()
            if binding.id and binding.id.startswith("diff.")
        }
        assert bindings == {
            "diff.older": ("Older", True),
            "diff.newer": ("Newer", True),
            "diff.previous_group": ("Prev group", True),
            "diff.next_group": ("Next group", True),
            "diff.working_tree": ("Working tree", True),
            "diff.follow": ("Follow", False),
        }
        await press(pilot, "left_square_bracket")
        follow = [
            enabled
            for _, binding, enabled, _ in app.screen.active_bindings.values()
            if binding.id == "diff.follow"
        ]
        assert follow == [True]

    run(app, steps)


# -- errors ------------------------------------------------------------------------------------


def test_git_errors_show_in_the_header(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    app = DiffApp(CommitLog(plain))

    async def steps(pilot: Pilot) -> None:
        assert "is not a git repository" in app.header
        await press(pilot, "left_square_bracket", "right_curly_bracket", "w")
        assert "is not a git repository" in app.header  # the working tree fails the same way
        assert app.is_running

    run(app, steps)


def test_a_commit_gone_from_the_history_is_an_error_not_a_crash(project):
    root, shas = project
    app = DiffApp(CommitLog(root))

    async def steps(pilot: Pilot) -> None:
        await press(pilot, "left_square_bracket")
        assert app.pane.shown_sha == shas[6]
        repo = git.Repo(root)
        repo.git.reset("--hard", shas[5])  # history rewritten under the pane
        repo.git.reflog("expire", "--expire=now", "--all")
        repo.git.gc("--prune=now", "--quiet")
        await press(pilot, "w", "w")  # back from the working tree: plots is read again
        assert f"no commit {shas[6]}" in app.header and app.is_running
        app.pane.apply(CodeDiff(commit="", message="m", files=[], diff=""))  # lists again
        await settle_diff(pilot)
        assert "commit ?/6" in app.header
        await press(pilot, "left_square_bracket")  # from a commit the list lacks: the newest
        assert app.pane.shown_sha == shas[5] and "commit 6/6" in app.header

    run(app, steps)


class ThreadRecordingLog(CommitLog):
    """A CommitLog that notes the thread of every call, and whose listing fails unexpectedly."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.threads: set[threading.Thread] = set()

    def entries(self, limit: int = 2000) -> list[CommitEntry]:
        self.threads.add(threading.current_thread())
        raise RuntimeError("disk on fire")

    def working_tree(self) -> CommitInfo:
        self.threads.add(threading.current_thread())
        return super().working_tree()


def test_git_runs_off_the_ui_thread_and_a_crash_in_it_is_reported(project):
    root, _ = project
    log = ThreadRecordingLog(root)
    app = DiffApp(log)

    async def steps(pilot: Pilot) -> None:
        assert "reading the history failed: RuntimeError('disk on fire')" in app.header
        await press(pilot, "w")
        assert "clean" in app.header and app.is_running
        assert log.threads and threading.main_thread() not in log.threads

    run(app, steps)


# -- picture -----------------------------------------------------------------------------------


def test_snapshot_browsing(project, snap_compare: Callable[..., bool]) -> None:
    root, _ = project

    async def run_before(pilot: Pilot) -> None:
        await settle_diff(pilot)
        await press(pilot, "left_curly_bracket", "left_curly_bracket", "left_square_bracket")
        pane = pilot.app.query_one(DiffPane)
        pane.apply(CodeDiff(commit="0" * 40, message="experiments: run_2 code", files=[], diff=""))
        await settle_diff(pilot)

    assert snap_compare(DiffApp(CommitLog(root)), terminal_size=SIZE, run_before=run_before)
