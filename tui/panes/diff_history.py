"""What the diff pane asks of git and gets back: the project's history and one commit (or the
working tree) highlighted, fetched in a worker thread; and how a key moves through the history.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.content import Content

from labtui.core.errors import LabtuiError
from labtui.core.workspace.history import (
    CommitEntry,
    CommitLog,
    newest_of_next_group,
    newest_of_previous_group,
)

from .base import clip_lines

if TYPE_CHECKING:  # its module loads the pydantic config (~150 ms), which the first paint skips
    from labtui.core.workspace.project import CommitInfo

WORKING_TREE = "<working tree>"  # what the pane shows, in place of a sha, for the working tree


@functools.cache
def diff_highlight_theme() -> type:
    """Textual's highlight theme plus the diff tokens it leaves unstyled (+, -, @@ lines).

    Built on first use: pygments and textual.highlight cost tens of ms to import, which the
    first paint does not need."""
    from pygments.token import Token  # noqa: PLC0415 -- see the docstring
    from textual.highlight import HighlightTheme  # noqa: PLC0415

    class DiffHighlightTheme(HighlightTheme):
        STYLES = {  # noqa: RUF012 (textual declares it an instance attribute)
            **HighlightTheme.STYLES,
            Token.Generic.Inserted: "$text-success",
            Token.Generic.Deleted: "$text-error",
            Token.Generic.Subheading: "$text-accent",
            Token.Generic.Heading: "bold",
        }

    return DiffHighlightTheme


def highlight_diff(diff: str) -> Content:
    """The diff, clipped and highlighted."""
    # pygments: imported when a diff first shows (diff_highlight_theme)
    from textual.highlight import highlight  # noqa: PLC0415

    return highlight(clip_lines(diff), language="diff", theme=diff_highlight_theme())


# -- what the worker is asked and answers ------------------------------------------------------


@dataclass(frozen=True)
class HistoryRequest:
    generation: int  # how many CodeDiff events had arrived: entries are fresh for this many
    list_entries: bool
    target: str  # a sha, WORKING_TREE, or "" when nothing needs showing


@dataclass(frozen=True)
class HistoryResult:
    request: HistoryRequest
    entries: list[CommitEntry] | None = None
    entries_error: LabtuiError | None = None
    info: CommitInfo | None = None
    body: Content | None = None
    show_error: LabtuiError | None = None


def fetch_history(log: CommitLog, request: HistoryRequest) -> HistoryResult:
    """Everything the request asks of git, highlighted; git's errors come back as values."""
    entries, entries_error = None, None
    if request.list_entries:
        try:
            entries = log.entries()
        except LabtuiError as error:
            entries_error = error
    if not request.target:
        return HistoryResult(request, entries, entries_error)
    try:
        info = log.working_tree() if request.target == WORKING_TREE else log.show(request.target)
    except LabtuiError as error:
        return HistoryResult(request, entries, entries_error, show_error=error)
    return HistoryResult(request, entries, entries_error, info, highlight_diff(info.diff))


# -- moving ------------------------------------------------------------------------------------


def older_index(entries: list[CommitEntry], index: int | None) -> int | None:
    if index is None:  # showing a commit not listed yet: it is newer than all of them
        return len(entries) - 1 if entries else None
    return index - 1 if index > 0 else None


def newer_index(entries: list[CommitEntry], index: int | None) -> int | None:
    if index is None:
        return None
    return index + 1 if index + 1 < len(entries) else None


MOVES = {
    "older": older_index,
    "newer": newer_index,
    "previous_group": newest_of_previous_group,
    "next_group": newest_of_next_group,
}
