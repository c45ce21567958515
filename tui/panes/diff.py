"""The diff pane: the latest code change, live, and the project's history to step through.

Following (the default), each CodeDiff event is shown as it arrives. Stepping through the history
(`[` `]` per commit, `{` `}` per stage/run group) or opening the working tree (`w`) switches to
browsing: new commits then only raise a count in the header until `f` follows again.

The pane keeps one *wanted* state (following, or the commit or working tree asked for) and asks a
single exclusive thread worker for whatever of it is not on screen yet. A newer request always
carries everything still missing, so cancelling the older one loses nothing; results are applied
on the UI thread only if they are still wanted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
from labtui.core.workspace.history import CommitEntry, CommitLog, entry_of

from .base import Pane
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
NO_CHANGES = "No code changes yet."


@dataclass(frozen=True)
class Shown:
    """What the body holds now: a commit (by sha), the working tree, or nothing."""

    key: str = ""
    message: str = ""
    files: tuple[str, ...] = ()
    error: LabtuiError | None = field(default=None, compare=False)


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
        self._entries: list[CommitEntry] | None = None  # None until git has been read
        self._index_of: dict[str, int] = {}
        self._history_error: LabtuiError | None = None
        # Every CodeDiff means a new commit: entries listed before it are stale.
        self._generation = 0
        self._entries_generation = -1
        self._following = True
        self._browse_sha = ""
        self._working_tree = False
        self._arrived_while_browsing = 0
        self._latest: CodeDiff | None = None
        self._shown = Shown()
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
        return self._following and not self._working_tree

    @property
    def showing_working_tree(self) -> bool:
        return self._working_tree

    @property
    def shown_sha(self) -> str:
        """The sha whose diff the body holds ("" for nothing, WORKING_TREE for the tree)."""
        return self._shown.key

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
        self._latest = event
        self._generation += 1
        if self.following:
            self._show_event(event)
        else:
            self._arrived_while_browsing += 1
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
        self._working_tree = not self._working_tree
        if self._working_tree and self._shown.key == WORKING_TREE:
            self._shown = Shown()  # the tree changes all the time: read it again
        if not self._working_tree and self._following:
            self._arrived_while_browsing = 0  # back to following: the newest is on screen
            if self._latest is not None:
                self._show_event(self._latest)
        self._state_changed()

    def action_follow(self) -> None:
        if self._log is None:
            return
        self._following = True
        self._working_tree = False
        self._arrived_while_browsing = 0
        self._pending_moves.clear()
        if self._latest is not None:
            self._show_event(self._latest)
        self._state_changed()

    def _move(self, move: str) -> None:
        if self._log is None:
            return
        anchor_unlisted = self._anchor() and self._anchor() not in self._index_of
        if self._entries is None or (anchor_unlisted and self._entries_are_stale()):
            # The list is still coming (or lacks the commit just shown): move once it is here.
            self._pending_moves.append(move)
            self._sync()
            return
        self._apply_move(move)
        self._state_changed()

    def _apply_move(self, move: str) -> None:
        entries = self._entries or []
        target = MOVES[move](entries, self._index_of.get(self._anchor()))
        if target is None:
            self.app.bell()
            return
        self._following = False
        self._working_tree = False
        self._browse_sha = entries[target].sha

    def _state_changed(self) -> None:
        self.set_class(not self.following, "-browsing")
        self._render_header()
        self.refresh_bindings()
        self._sync()

    # -- what is wanted, and asking git for it -----------------------------------------------

    def _anchor(self) -> str:
        """The commit the header talks about and moves start from (under the working tree)."""
        if not self._following:
            return self._browse_sha
        if self._latest is not None:
            return self._latest.commit
        return self._entries[-1].sha if self._entries else ""

    def _wanted(self) -> str:
        if self._working_tree:
            return WORKING_TREE
        if self._following and self._latest is not None:
            return self._latest.commit  # shown straight from the event, never fetched
        return self._anchor()

    def _entries_are_stale(self) -> bool:
        return self._entries is None or self._entries_generation < self._generation

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
        wanted = self._wanted()
        request = HistoryRequest(
            generation=self._generation,
            list_entries=self._entries_are_stale(),
            target=wanted if wanted != self._shown.key else "",
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
            self._set_entries(result.entries or [], request.generation, result.entries_error)
            moves, self._pending_moves = self._pending_moves, []
            for move in moves:
                self._apply_move(move)
        if request.target and request.target == self._wanted():
            self._show_fetched(request.target, result)
        self._state_changed()

    def _set_entries(
        self, entries: list[CommitEntry], generation: int, error: LabtuiError | None
    ) -> None:
        self._entries = entries
        self._index_of = {entry.sha: index for index, entry in enumerate(entries)}
        self._entries_generation = generation
        self._history_error = error

    # -- showing -----------------------------------------------------------------------------

    def _show_event(self, event: CodeDiff) -> None:
        self._shown = Shown(event.commit, event.message, tuple(event.files))
        self._show_body(highlight_diff(event.diff))

    def _show_fetched(self, target: str, result: HistoryResult) -> None:
        info = result.info
        if info is None:
            self._shown = Shown(target, error=result.show_error)
            self._show_body(Content(""))
            return
        self._shown = Shown(target, info.message, tuple(info.files))
        if target == WORKING_TREE and not info.diff:
            self._show_body(Content.styled("Nothing uncommitted.", "$text-muted"))
        else:
            self._show_body(result.body or Content(""))

    def _show_body(self, body: Content) -> None:
        self.query_one("#diff-body", Static).update(body)
        self.query_one("#diff-scroll", ScrollableContainer).scroll_home(animate=False)

    def _render_header(self) -> None:
        what = self._what_line()
        header = what if self._log is None else Content("\n").join([self._where_line(), what])
        self.query_one("#diff-header", Static).update(header)

    def _where_line(self) -> Content:
        """Where in the history the pane is, and whether it follows. The mode comes before the
        labels: in a half-width pane the end of the line is cut off."""
        if self._working_tree:
            parts = [Content.styled("working tree (uncommitted)", "bold $text-warning")]
            labels: list[Content] = []
        else:
            position, labels = self._position()
            parts = [position] if position is not None else []
        if self.following:
            parts.append(Content.styled("following", "$text-muted"))
        else:
            if self._arrived_while_browsing:
                newer = f"{self._arrived_while_browsing} newer"
                parts.append(Content.styled(newer, "bold $text-warning"))
            if self._working_tree:
                parts.append(Content.styled("w back", "$text-muted"))
            parts.append(Content.styled("f follows", "$text-warning"))
        parts += labels
        if self._history_error is not None:
            parts.append(Content.styled(f"history: {self._history_error.message}", "$text-error"))
        return Content.styled(" · ", "$text-muted").join(parts)

    def _position(self) -> tuple[Content | None, list[Content]]:
        """The position ("commit 5/17", or why there is none) and the stage and run labels."""
        if self._entries is None:
            return Content.styled("reading history…", "$text-muted"), []
        if not self._entries:
            if self._history_error is not None:
                return None, []  # the error says why; "no commits" would be a guess
            return Content.styled("no commits yet", "$text-muted"), []
        sha = self._anchor()
        index = self._index_of.get(sha)
        if index is not None:
            position = Content.styled(f"commit {index + 1}/{len(self._entries)}", "bold")
            entry = self._entries[index]
        elif self._latest is not None and sha == self._latest.commit:
            position = None  # newer than the list: the position comes with the next listing
            entry = entry_of(sha, self._latest.message)
        else:
            return Content.styled(f"commit ?/{len(self._entries)}", "bold"), []
        labels = []
        if entry.stage:
            labels.append(Content.styled(entry.stage, "$text-accent"))
        if entry.run:
            labels.append(Content.styled(entry.run, "$text-success"))
        return position, labels

    def _what_line(self) -> Content:
        """Which change the body shows: sha, message, files (or why there is none)."""
        wanted = self._wanted()
        shown = self._shown
        if shown.key == wanted and shown.error is not None:
            hint = f" — fix: {shown.error.hint}" if shown.error.hint else ""
            return Content.styled(f"{shown.error.message}{hint}", "$text-error")
        if self._working_tree:
            return self._working_tree_line()
        if self.following and self._latest is not None:
            return commit_line(shown.key, shown.message, shown.files)
        if not wanted:
            return Content(NO_CHANGES)
        if shown.key == wanted:
            message, files = shown.message, shown.files
        else:  # still being read: say which commit is coming, files once it is here
            index = self._index_of.get(wanted)
            message = self._entries[index].message if self._entries and index is not None else ""
            files = ()
        return commit_line(wanted, message, files)

    def _working_tree_line(self) -> Content:
        if self._shown.key != WORKING_TREE:
            return Content.styled("reading the working tree…", "$text-muted")
        if not self._shown.files:
            return Content.styled("clean", "$text-success")
        count = len(self._shown.files)
        noun = "file" if count == 1 else "files"
        return Content.assemble(
            (f"{count} {noun} changed", "bold $text-warning"),
            (f"  ({', '.join(self._shown.files)})", "$text-muted"),
        )


def commit_line(sha: str, message: str, files: tuple[str, ...]) -> Content:
    """The short sha, the message's first line, and the files it touched."""
    subject = message.strip().split("\n", 1)[0]
    line = Content.assemble((sha[:7] or "uncommitted", "bold $text-warning"), " ", subject)
    if files:
        line += Content.styled(f"  ({', '.join(files)})", "$text-muted")
    return line
