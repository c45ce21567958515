"""The four-pane main screen: the status header, the 2×2 grid of live panes and the key bar."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.message import Message
from textual.reactive import Reactive
from textual.widget import Widget

from labtui.core.events import Event, LogLine

from ..keybar import KeyBar
from ..panes import DialoguePane, DiffPane, LatexPane, LogsPane, Pane, PaneScreen, route
from ..status import Clock, Progress, StatusHeader

if TYPE_CHECKING:
    from labtui.core.workspace.history import CommitLog


class MainScreen(PaneScreen):
    """The status header, the 2×2 grid of live panes, and the footer with the keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Screen already binds tab/shift+tab, hidden; rebinding them here shows them in the
        # footer and gives them ids so a keymap can move them.
        Binding(
            "tab", "app.focus_next", "Next pane", tooltip="Focus the next pane", id="pane.next"
        ),
        Binding(
            "shift+tab",
            "app.focus_previous",
            "Prev pane",
            tooltip="Focus the previous pane",
            show=False,
            id="pane.previous",
        ),
        Binding(
            "m",
            "toggle_maximize",
            "Maximise",
            tooltip="Maximise the focused pane, or restore all four",
            id="pane.maximize",
        ),
        Binding(
            "n",
            "app.leave_note",
            "Note",
            tooltip="Leave a note for the agents; the next LLM call reads it",
            id="app.note",
        ),
        # As terminal agents use it; a maximised pane is restored first (Textual's own escape).
        Binding(
            "escape",
            "app.interrupt",
            "Interrupt",
            tooltip="Interrupt: stop the LLM call or run under way; a checkpoint asks what next",
            show=False,
            id="app.interrupt",
        ),
    ]
    # Title and cost stay visible while one pane fills the screen.
    ALLOW_IN_MAXIMIZED_VIEW = "StatusHeader, KeyBar"
    # Textual's Screen repaints the whole screen whenever the focus moves; the two panes whose
    # focus styles change repaint themselves (and the key bar its keys), so a tab costs half a
    # screen, not all of it, which matters while a chatty run keeps the UI thread busy.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    class Ready(Message):
        """The panes are mounted and can render: the app may paint history and start."""

    def __init__(
        self,
        project: str,
        progress: Progress,
        clock: Clock,
        commit_log: "CommitLog | None" = None,  # quoted: this module's annotations run
        cluster: str = "local",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.project = project
        self.progress = progress
        self.clock = clock
        self.commit_log = commit_log
        self.cluster = cluster

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.project, self.progress, self.clock, id="status")
        with Grid(id="panes"):
            yield DialoguePane(id="dialogue")
            yield DiffPane(commit_log=self.commit_log, id="diff")
            yield LogsPane(cluster=self.cluster, id="logs")
            yield LatexPane(id="latex")
        yield KeyBar()

    @property
    def status(self) -> StatusHeader:
        return self.query_one(StatusHeader)

    def show_project(self, project: str, cluster: str) -> None:
        """The session's facts, read once the screen is up (the app paints before them)."""
        self.project = self.status.project = project
        self.cluster = cluster
        self.query_one(LogsPane).set_cluster(cluster)
        self.status.refresh_status()

    def show_pane(self, pane_type: type[Pane]) -> None:
        """Focus a pane and let it fill the screen (the command palette's "Show …")."""
        pane = self.query_one(pane_type)
        self.minimize()
        focusable = next(widget for widget in pane.query("*") if widget.focusable)
        focusable.focus()
        self.maximize(pane, container=False)

    def on_mount(self) -> None:
        # Routing runs for every event: look the panes up once, not per event.
        self.panes: list[Pane] = list(self.query(Pane))
        # A screen's Mount runs after all its descendants are mounted; the App's own Mount can
        # run before the panes' inner widgets exist, so the app waits for this message instead.
        self.post_message(self.Ready())

    @property
    def dialogue(self) -> DialoguePane:
        return self.query_one(DialoguePane)

    def apply(self, event: Event) -> None:
        route(self.panes, event)

    def write_log_lines(self, lines: Sequence[LogLine], *, live: bool = True) -> None:
        self.query_one(LogsPane).write_log_lines(lines, live=live)

    def action_toggle_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        pane = self.focused_pane
        if pane is not None:
            # Maximise the pane itself (not its inner scroller, which Textual's containers
            # refuse to maximise anyway): the maximised view keeps the title and status lines.
            self.maximize(pane, container=False)


# What the researcher is asked to judge, by checkpoint kind.
