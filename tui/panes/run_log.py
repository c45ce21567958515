"""The scrolling log of a run's output in the logs pane: bounded, drawn lazily, selectable."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def printable(text: str) -> str:
    """A child's output line made safe to draw: what a terminal would show of a progress bar
    redrawn with carriage returns, without escape sequences, tabs or other control codes."""
    if text.isprintable():
        return text  # nearly every line: one C-speed check
    if "\r" in text:
        text = next((part for part in reversed(text.split("\r")) if part), "")
    text = _ANSI_ESCAPE.sub("", text).expandtabs()
    return "".join(char if char.isprintable() else "�" for char in text)


LineStyle = str | Text  # a Rich style for a plain line, or a whole styled line


class RunLog(ScrollView, can_focus=True):
    """The run's output: bounded, and drawn lazily.

    A write appends strings (and a style each) to two lists; a line is turned into a strip only
    when it scrolls into view, and that strip is cached. It follows the end unless the researcher
    has scrolled up, and keeps text selection working.
    """

    ALLOW_SELECT = True
    DEFAULT_CSS = """
    RunLog {
        height: 1fr;
        background: transparent;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
    }
    """

    def __init__(self, *, max_lines: int, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_lines = max_lines
        self._texts: list[str] = []
        self._styles: list[LineStyle] = []
        self._first = 0  # the number of lines ever dropped: cache keys survive the trimming
        self._width = 0
        self._strips: LRUCache[int, Strip] = LRUCache(1024)
        self._strips_base: Style | None = None  # the widget's style the strips were drawn in
        self._following = True  # new lines scroll into view (until the researcher scrolls up)
        self._end_pending = False  # a scroll to the end is scheduled for after the refresh

    @property
    def lines(self) -> list[str]:
        """The plain text of every line kept."""
        return list(self._texts)

    def write_lines(self, texts: Sequence[str], styles: Sequence[LineStyle]) -> None:
        """Append lines (no newlines inside, already ``printable``) with one style each."""
        if not texts:
            return
        self._texts.extend(texts)
        self._styles.extend(styles)
        self._width = max(self._width, _widest(texts))
        overflow = len(self._texts) - self.max_lines
        if overflow > 0:
            del self._texts[:overflow]
            del self._styles[:overflow]
            self._first += overflow
        self._grow_to(Size(self._width, len(self._texts)))
        self._follow_end()
        self.refresh()

    def _grow_to(self, size: Size) -> None:
        """The new virtual size, without a layout of the whole screen where none is needed.

        ``virtual_size`` asks for a layout of the screen (8 ms on a 2-core machine, and it makes
        the next frame redraw every pane) at each write while a run's output fills the log. Only
        a scrollbar appearing or going changes the room the log has (its vertical gutter is
        always kept); otherwise its scrollbars are updated in place, as a layout would."""
        width, height = self.container_size
        bars = (size.width > width, size.height > height)
        shown = (self.show_horizontal_scrollbar, self.show_vertical_scrollbar)
        if not self.container_size or bars != shown or size.width < self.virtual_size.width:
            self.virtual_size = size
            return
        self.set_reactive(RunLog.virtual_size, size)
        self._scroll_update(size)

    def _follow_end(self) -> None:
        # After the refresh: only the new layout knows that a scrollbar is needed (a scroll
        # before it is refused), and a hidden log has no layout at all until it is shown.
        if self._following and not self._end_pending:
            self._end_pending = True
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        self._end_pending = False
        if self._following:  # the researcher may have scrolled up since this was scheduled
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Scrolled up by the researcher: stay put while they read; back at the end: follow.
        # Only a move up stops following: a layout change (the GPU lines growing, a modal)
        # can leave the end below the view for a moment without the reader having moved.
        if new_value >= self.max_scroll_y:
            self._following = True
        elif new_value < old_value:
            self._following = False

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # Every layout that changes the view (a resize, the GPU lines growing, the pane shown
        # again) passes here, even when no Resize event follows: keep the end in view.
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        self._follow_end()
        return changed

    def write_text(self, text: Text) -> None:
        """Append a styled, possibly multi-line, Text (a run's summary)."""
        lines = text.split("\n", allow_blank=True)
        self.write_lines([line.plain for line in lines], list(lines))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._texts):
            return Strip.blank(width, base)
        strip = self._strip(index, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, index)

    def _strip(self, index: int, base: Style) -> Strip:
        selection = self.text_selection
        key = self._first + index
        if base != self._strips_base:  # a theme or class changed the log's own style: redraw
            self._strips.clear()
            self._strips_base = base
        if selection is None and key in self._strips:
            return self._strips[key]
        # Text.render draws spans only (not Text.style): every style goes in as a span, the
        # widget's own first so that the line's style wins.
        style = self._styles[index]
        if isinstance(style, Text):
            text = style.copy()
            text.stylize_before(text.style)
        else:
            text = Text(self._texts[index], no_wrap=True, end="")
            if style:
                text.stylize(style)
        text.stylize_before(base)
        if selection is not None:
            span = selection.get_span(index)
            if span is not None:
                start, end = span
                highlight = self.screen.get_component_rich_style("screen--selection")
                text.stylize(highlight, start, len(text) if end == -1 else end)
        strip = Strip(text.render(self.app.console), text.cell_len)
        if selection is None:
            self._strips[key] = strip
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self._texts)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._strips.clear()
        self.refresh()


def _widest(texts: Sequence[str]) -> int:
    # Output is nearly always ASCII, where a character is a cell: one C-speed check for all.
    if "".join(texts).isascii():
        return max(map(len, texts))
    return max(map(cell_len, texts))
