"""What every pane shares: a bordered, maximisable region that renders some event types.

Panes only ever run on the UI thread: the app hands them events (in order) through ``apply``.
A pane declares the event types it renders in ``HANDLES`` so the screen can route without a
central switch that every new pane would have to edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget

from labtui.core.events import Event

# Diffs and drafts are shown whole, but an aider rewrite of a big file must not make one Static
# hold megabytes of highlighted text; the full artifact is always in the project's git repo.
MAX_SHOWN_LINES = 3000


class Pane(Vertical):
    """A bordered, maximisable region of the main screen that renders some event types."""

    HANDLES: ClassVar[tuple[type[Event], ...]] = ()
    ALLOW_MAXIMIZE = True  # `m` maximises the whole pane, status lines included
    TITLE: ClassVar[str] = ""

    def on_mount(self) -> None:
        self.border_title = self.TITLE

    def show_focus(self, focused: bool) -> None:
        """Draw the border of the pane that holds the focus (or not). Only the pane is
        restyled: nothing inside it looks different, and a subtree's restyle (as :focus-within
        does) restyled every widget of both panes at each tab."""
        if focused != self.has_class("-focused"):
            self.set_class(focused, "-focused", update=False)
            self.app.stylesheet.update_nodes([self], animate=False)

    def apply(self, event: Event) -> None:
        """Render one event; called on the UI thread, in emission order."""
        handler = getattr(self, f"_on_{type(event).__name__}", None)
        if handler is not None:
            handler(event)

    def colour(self, name: str) -> str:
        """A colour of the current theme, as a Rich colour string (for Rich renderables)."""
        theme = self.app.current_theme
        value = getattr(theme, name, None) or theme.primary
        return str(value)


class PaneScreen(Screen[None]):
    """A screen of panes: the one holding the focus is drawn so (``Pane.show_focus``)."""

    def set_focus(
        self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False
    ) -> None:
        # Every focus change comes here (tab, a click, focus() and a removed widget's).
        before = self.focused_pane
        super().set_focus(widget, scroll_visible, from_app_focus)
        after = self.focused_pane
        if after is not before:
            if before is not None:
                before.show_focus(False)
            if after is not None:
                after.show_focus(True)

    @property
    def focused_pane(self) -> Pane | None:
        focused = self.focused
        if focused is None:
            return None
        return next((node for node in focused.ancestors_with_self if isinstance(node, Pane)), None)


def clip_lines(text: str, limit: int = MAX_SHOWN_LINES) -> str:
    """The first ``limit`` lines of ``text`` and a note of how many were left out."""
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more lines not shown"])


def number_lines(code: Content, first: int = 1) -> Content:
    """Prefix every line with its number: compile errors name lines, so the reader needs them."""
    lines = code.split("\n")
    width = len(str(first + len(lines) - 1))
    return Content("\n").join(
        Content.assemble((f"{number:>{width}} ", "$text 40%"), line)
        for number, line in enumerate(lines, first)
    )


def format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def route(panes: Iterable[Pane], event: Event) -> None:
    """Hand an event to every pane that renders its type."""
    for pane in panes:
        if isinstance(event, pane.HANDLES):
            pane.apply(event)
