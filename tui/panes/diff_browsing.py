"""Where the diff pane is in the project's history, what its body holds, and the header lines
that say so.

Plain state, no widgets: the pane (diff.py) changes it on keys, events and the worker's results,
and renders the lines it gives. *Following* shows each CodeDiff as it arrives; *browsing* shows
the commit asked for (``browse_sha``) or the working tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.content import Content

from labtui.core.errors import LabtuiError
from labtui.core.events import CodeDiff
from labtui.core.workspace.history import CommitEntry, entry_of

from .diff_history import WORKING_TREE

NO_CHANGES = "No code changes yet."


@dataclass(frozen=True)
class Shown:
    """What the body holds now: a commit (by sha), the working tree, or nothing."""

    key: str = ""
    message: str = ""
    files: tuple[str, ...] = ()
    error: LabtuiError | None = field(default=None, compare=False)


@dataclass
class DiffBrowsing:
    """The pane's one *wanted* state (following, or the commit or working tree asked for), the
    history as last listed, and what is on screen."""

    entries: list[CommitEntry] | None = None  # None until git has been read
    index_of: dict[str, int] = field(default_factory=dict)
    history_error: LabtuiError | None = None
    # Every CodeDiff means a new commit: entries listed before it are stale.
    generation: int = 0
    entries_generation: int = -1
    follow_latest: bool = True  # the working tree, while open, hides it (see ``following``)
    browse_sha: str = ""
    working_tree: bool = False
    arrived_while_browsing: int = 0
    latest: CodeDiff | None = None
    shown: Shown = field(default_factory=Shown)

    @property
    def following(self) -> bool:
        return self.follow_latest and not self.working_tree

    # -- what is wanted -----------------------------------------------------------------------

    def anchor(self) -> str:
        """The commit the header talks about and moves start from (under the working tree)."""
        if not self.follow_latest:
            return self.browse_sha
        if self.latest is not None:
            return self.latest.commit
        return self.entries[-1].sha if self.entries else ""

    def wanted(self) -> str:
        if self.working_tree:
            return WORKING_TREE
        if self.follow_latest and self.latest is not None:
            return self.latest.commit  # shown straight from the event, never fetched
        return self.anchor()

    def entries_are_stale(self) -> bool:
        return self.entries is None or self.entries_generation < self.generation

    def set_entries(
        self, entries: list[CommitEntry], generation: int, error: LabtuiError | None
    ) -> None:
        self.entries = entries
        self.index_of = {entry.sha: index for index, entry in enumerate(entries)}
        self.entries_generation = generation
        self.history_error = error

    # -- the header ---------------------------------------------------------------------------

    def where_line(self) -> Content:
        """Where in the history the pane is, and whether it follows. The mode comes before the
        labels: in a half-width pane the end of the line is cut off."""
        if self.working_tree:
            parts = [Content.styled("working tree (uncommitted)", "bold $text-warning")]
            labels: list[Content] = []
        else:
            position, labels = self.position()
            parts = [position] if position is not None else []
        if self.following:
            parts.append(Content.styled("following", "$text-muted"))
        else:
            if self.arrived_while_browsing:
                newer = f"{self.arrived_while_browsing} newer"
                parts.append(Content.styled(newer, "bold $text-warning"))
            if self.working_tree:
                parts.append(Content.styled("w back", "$text-muted"))
            parts.append(Content.styled("f follows", "$text-warning"))
        parts += labels
        if self.history_error is not None:
            parts.append(Content.styled(f"history: {self.history_error.message}", "$text-error"))
        return Content.styled(" · ", "$text-muted").join(parts)

    def position(self) -> tuple[Content | None, list[Content]]:
        """The position ("commit 5/17", or why there is none) and the stage and run labels."""
        if self.entries is None:
            return Content.styled("reading history…", "$text-muted"), []
        if not self.entries:
            if self.history_error is not None:
                return None, []  # the error says why; "no commits" would be a guess
            return Content.styled("no commits yet", "$text-muted"), []
        sha = self.anchor()
        index = self.index_of.get(sha)
        if index is not None:
            position = Content.styled(f"commit {index + 1}/{len(self.entries)}", "bold")
            entry = self.entries[index]
        elif self.latest is not None and sha == self.latest.commit:
            position = None  # newer than the list: the position comes with the next listing
            entry = entry_of(sha, self.latest.message)
        else:
            return Content.styled(f"commit ?/{len(self.entries)}", "bold"), []
        labels = []
        if entry.stage:
            labels.append(Content.styled(entry.stage, "$text-accent"))
        if entry.run:
            labels.append(Content.styled(entry.run, "$text-success"))
        return position, labels

    def what_line(self) -> Content:
        """Which change the body shows: sha, message, files (or why there is none)."""
        wanted = self.wanted()
        shown = self.shown
        if shown.key == wanted and shown.error is not None:
            hint = f" — fix: {shown.error.hint}" if shown.error.hint else ""
            return Content.styled(f"{shown.error.message}{hint}", "$text-error")
        if self.working_tree:
            return self.working_tree_line()
        if self.following and self.latest is not None:
            return commit_line(shown.key, shown.message, shown.files)
        if not wanted:
            return Content(NO_CHANGES)
        if shown.key == wanted:
            message, files = shown.message, shown.files
        else:  # still being read: say which commit is coming, files once it is here
            index = self.index_of.get(wanted)
            message = self.entries[index].message if self.entries and index is not None else ""
            files = ()
        return commit_line(wanted, message, files)

    def working_tree_line(self) -> Content:
        if self.shown.key != WORKING_TREE:
            return Content.styled("reading the working tree…", "$text-muted")
        if not self.shown.files:
            return Content.styled("clean", "$text-success")
        count = len(self.shown.files)
        noun = "file" if count == 1 else "files"
        return Content.assemble(
            (f"{count} {noun} changed", "bold $text-warning"),
            (f"  ({', '.join(self.shown.files)})", "$text-muted"),
        )


def commit_line(sha: str, message: str, files: tuple[str, ...]) -> Content:
    """The short sha, the message's first line, and the files it touched."""
    subject = message.strip().split("\n", 1)[0]
    line = Content.assemble((sha[:7] or "uncommitted", "bold $text-warning"), " ", subject)
    if files:
        line += Content.styled(f"  ({', '.join(files)})", "$text-muted")
    return line
