"""The diff pane: the latest code change, live, and the project's history to step through.

Following (the default), each CodeDiff event is shown as it arrives. Stepping through the history
(`[` `]` per commit, `{` `}` per stage/run group) or opening the working tree (`w`) switches to
browsing: new commits then only raise a count in the header until `f` follows again.

The pane keeps one *wanted* state (following, or the commit or working tree asked for) and asks a
single exclusive thread worker for whatever of it is not on screen yet. A newer request always
carries everything still missing, so cancelling the older one loses nothing; results are applied
on the UI thread only if they are still wanted. That state, and the header lines that say where
the pane is, are diff_browsing.py's; what git is asked and how a key moves, diff_history.py's.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.content import Content
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from labtui.core.errors import LabtuiError
from labtui.core.events import CodeDiff
from labtui.core.workspace.history import CommitLog

from .base import Pane
from .diff_browsing import NO_CHANGES, DiffBrowsing, Shown
from .diff_history import (
    MOVES,
    WORKING_TREE,
    HistoryRequest,
    HistoryResult,
    fetch_history,
    highlight_diff,
)

HISTORY_GROUP = "diff-history"
HISTORY_ACTIONS = frozenset(
    {"older", "newer", "previous_group", "next_group", "working_tree", "follow"}
)


class DiffPane(Pane):
    """The latest code change, or any commit of the history, or the working tree: highlighted."""

    TITLE = "Code diff"
    HANDLES = (CodeDiff,)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "left_square_bracket",
            "older",
            "Older",
            key_display="[",
            tooltip="Older: show the previous commit",
            id="diff.older",
        ),
        Binding(
            "right_square_bracket",
            "newer",
            "Newer",
            key_display="]",
            tooltip="Newer: show the next commit",
            id="diff.newer",
        ),
        Binding(
            "left_curly_bracket",
            "previous_group",
            "Prev group",
            key_display="{",
            tooltip="The newest commit of the previous stage/run group",
            id="diff.previous_group",
        ),
        Binding(
            "right_curly_bracket",
            "next_group",
            "Next group",
            key_display="}",
            tooltip="The newest commit of the next stage/run group",
            id="diff.next_group",
        ),
        Binding(
            "w",
            "working_tree",
            "Working tree",
            tooltip="Show uncommitted changes in the working tree; again: back",
            id="diff.working_tree",
        ),
        Binding(
            "f", "follow", "Follow", tooltip="Follow the latest commit again", id="diff.follow"
        ),
    ]
    DEFAULT_CSS = """
    DiffPane #diff-header {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    DiffPane.-browsing #diff-header {
        background: $warning 10%;
    }
    """

    def __init__(self, commit_log: CommitLog | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._log = commit_log
        self._browsing = DiffBrowsing()
        self._pending_moves: list[str] = []  # keys pressed before the history was listed
        self._worker: Worker[HistoryResult] | None = None
        self._in_flight: HistoryRequest | None = None
        self._sync_scheduled = False

    def compose(self) -> ComposeResult:
        yield Static(NO_CHANGES, id="diff-header", classes="status-line")
        with ScrollableContainer(id="diff-scroll", classes="code-scroll"):
            yield Static(id="diff-body", classes="code")

    def on_mount(self) -> None:  # Pane.on_mount (the title) runs too: Textual calls both
        if self._log is not None:
            self._render_header()
            self._sync()

    # -- state, read by tests and the footer --------------------------------------------------

    @property
    def following(self) -> bool:
        return self._browsing.following

    @property
    def showing_working_tree(self) -> bool:
        return self._browsing.working_tree

    @property
    def shown_sha(self) -> str:
        """The sha whose diff the body holds ("" for nothing, WORKING_TREE for the tree)."""
        return self._browsing.shown.key

    @property
    def busy(self) -> bool:
        return self._in_flight is not None or self._sync_scheduled

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in HISTORY_ACTIONS:
            return True
        if self._log is None:
            return False  # no history to browse: hide the keys
        if action == "follow":
            return None if self.following else True  # shown, dimmed, while already following
        return True

    # -- events ------------------------------------------------------------------------------

    def _on_CodeDiff(self, event: CodeDiff) -> None:
        self._browsing.latest = event
        self._browsing.generation += 1
        if self.following:
            self._show_event(event)
        else:
            self._browsing.arrived_while_browsing += 1
        self._render_header()
        if self._log is not None:
            self._sync_soon()

    # -- keys --------------------------------------------------------------------------------

    def action_older(self) -> None:
        self._move("older")

    def action_newer(self) -> None:
        self._move("newer")

    def action_previous_group(self) -> None:
        self._move("previous_group")

    def action_next_group(self) -> None:
        self._move("next_group")

    def action_working_tree(self) -> None:
        if self._log is None:
            return
        browsing = self._browsing
        browsing.working_tree = not browsing.working_tree
        if browsing.working_tree and browsing.shown.key == WORKING_TREE:
            browsing.shown = Shown()  # the tree changes all the time: read it again
        if not browsing.working_tree and browsing.follow_latest:
            browsing.arrived_while_browsing = 0  # back to following: the newest is on screen
            if browsing.latest is not None:
                self._show_event(browsing.latest)
        self._state_changed()

    def action_follow(self) -> None:
        if self._log is None:
            return
        browsing = self._browsing
        browsing.follow_latest = True
        browsing.working_tree = False
        browsing.arrived_while_browsing = 0
        self._pending_moves.clear()
        if browsing.latest is not None:
            self._show_event(browsing.latest)
        self._state_changed()

    def _move(self, move: str) -> None:
        if self._log is None:
            return
        browsing = self._browsing
        anchor_unlisted = browsing.anchor() and browsing.anchor() not in browsing.index_of
        if browsing.entries is None or (anchor_unlisted and browsing.entries_are_stale()):
            # The list is still coming (or lacks the commit just shown): move once it is here.
            self._pending_moves.append(move)
            self._sync()
            return
        self._apply_move(move)
        self._state_changed()

    def _apply_move(self, move: str) -> None:
        browsing = self._browsing
        entries = browsing.entries or []
        target = MOVES[move](entries, browsing.index_of.get(browsing.anchor()))
        if target is None:
            self.app.bell()
            return
        browsing.follow_latest = False
        browsing.working_tree = False
        browsing.browse_sha = entries[target].sha

    def _state_changed(self) -> None:
        self.set_class(not self.following, "-browsing")
        self._render_header()
        self.refresh_bindings()
        self._sync()

    # -- asking git for what is wanted ------------------------------------------------------

    def _sync_soon(self) -> None:
        # A burst of CodeDiff events (a replayed journal) asks git once, not once per event.
        if not self._sync_scheduled:
            self._sync_scheduled = True
            self.call_later(self._scheduled_sync)

    def _scheduled_sync(self) -> None:
        self._sync_scheduled = False
        self._sync()

    def _sync(self) -> None:
        """Ask the worker for what the wanted state lacks, unless it is being fetched already."""
        if self._log is None:
            return
        browsing = self._browsing
        wanted = browsing.wanted()
        request = HistoryRequest(
            generation=browsing.generation,
            list_entries=browsing.entries_are_stale(),
            target=wanted if wanted != browsing.shown.key else "",
        )
        if not request.list_entries and not request.target:
            return
        if request == self._in_flight:
            return
        self._in_flight = request
        self._worker = self._fetch(request)

    @work(thread=True, exclusive=True, group=HISTORY_GROUP, exit_on_error=False)
    def _fetch(self, request: HistoryRequest) -> HistoryResult:
        assert self._log is not None
        return fetch_history(self._log, request)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != HISTORY_GROUP:
            return
        event.stop()
        if event.worker is not self._worker or event.state not in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
        ):
            return  # superseded (its request is part of the newer one) or still running
        request = self._in_flight
        self._worker = self._in_flight = None
        if event.state == WorkerState.SUCCESS:
            self._apply_result(event.worker.result)
        elif request is not None:
            # Not a git error (those come back as values): report it once, do not retry.
            error = LabtuiError(f"reading the history failed: {event.worker.error!r}")
            self._apply_result(HistoryResult(request, [], error, show_error=error))

    def _apply_result(self, result: HistoryResult | None) -> None:
        if result is None:
            return
        request = result.request
        if request.list_entries:
            self._browsing.set_entries(
                result.entries or [], request.generation, result.entries_error
            )
            moves, self._pending_moves = self._pending_moves, []
            for move in moves:
                self._apply_move(move)
        if request.target and request.target == self._browsing.wanted():
            self._show_fetched(request.target, result)
        self._state_changed()

    # -- showing -----------------------------------------------------------------------------

    def _show_event(self, event: CodeDiff) -> None:
        self._browsing.shown = Shown(event.commit, event.message, tuple(event.files))
        self._show_body(highlight_diff(event.diff))

    def _show_fetched(self, target: str, result: HistoryResult) -> None:
        info = result.info
        if info is None:
            self._browsing.shown = Shown(target, error=result.show_error)
            self._show_body(Content(""))
            return
        self._browsing.shown = Shown(target, info.message, tuple(info.files))
        if target == WORKING_TREE and not info.diff:
            self._show_body(Content.styled("Nothing uncommitted.", "$text-muted"))
        else:
            self._show_body(result.body or Content(""))

    def _show_body(self, body: Content) -> None:
        self.query_one("#diff-body", Static).update(body)
        self.query_one("#diff-scroll", ScrollableContainer).scroll_home(animate=False)

    def _render_header(self) -> None:
        what = self._browsing.what_line()
        if self._log is None:
            header = what
        else:
            header = Content("\n").join([self._browsing.where_line(), what])
        self.query_one("#diff-header", Static).update(header)
