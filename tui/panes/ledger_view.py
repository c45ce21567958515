"""The logs pane's ledger view: a search's steps as they are judged.

- a hill-climb: a header (the metric and which way is better, the noise a change must beat,
  attempts done of the limit, keep/discard/crash counts, the best), the metric over attempts
  (ledger_plot.py) and the last few attempts, one per line;
- a tree search: the header, then the tree as an indented list, children under their parent,
  each node with its number, action, status and value; the best node marked, buggy ones in the
  error colour. A tree taller than the view scrolls.

Everything comes from a ``SearchRecord`` (built from events). The lines are drawn only when the
view is on screen, once per change of the record, size or theme: a step costs the pane a dict
insert and a refresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from labtui.core.events import SearchStep

from .base import format_number
from .ledger_plot import CRASH, DISCARD, KEEP, PlotColours, climb_marks, climb_plot_ansi
from .search_record import CLIMB, SearchRecord

LAST_ATTEMPTS = 5  # attempts listed under the climb's plot
MIN_PLOT = (16, 8)  # the smallest plot worth drawing (cells); below, attempts fill the room
BEST_MARK = "★"
OK, BUGGY = "ok", "buggy"
LAST = "└─ "  # the branch glyph of a last child


class LedgerView(ScrollView, can_focus=True):
    """A search's ledger, drawn from its record whenever it changed and is on screen."""

    DEFAULT_CSS = """
    LedgerView {
        height: 1fr;
        background: transparent;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, record: SearchRecord, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.record = record
        self._cache_key: tuple[Any, ...] = ()
        self._strips: list[Strip] = []

    def changed(self) -> None:
        """The record changed: the tree's height is known without drawing it, so the scroll
        range is set now; the lines are drawn when next shown."""
        record = self.record
        rows = len(header_rows(record)) + len(record.steps) if record.strategy != CLIMB else 0
        self.virtual_size = Size(0, rows if record.active else 0)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache_key = ()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        strips = self._lines(width, self.size.height, base)
        index = self.scroll_offset.y + y
        if index >= len(strips):
            return Strip.blank(width, base)
        return strips[index].apply_offsets(0, index)

    def _lines(self, width: int, height: int, base: Style) -> list[Strip]:
        key = (self.record.version, width, height, self.app.current_theme.name)
        if key != self._cache_key:
            texts = self.draw(width, height)
            strips = []
            for text in texts:
                text.truncate(width, overflow="ellipsis")
                # Text.render draws spans only (not Text.style): the line's own style goes in as
                # a span, with the widget's before it so that the line's wins.
                text.stylize_before(text.style)
                text.stylize_before(base)
                strip = Strip(text.render(self.app.console), text.cell_len)
                strips.append(strip.crop_extend(0, width, base))
            self._strips, self._cache_key = strips, key
        return self._strips

    def draw(self, width: int, height: int) -> list[Text]:
        """The view's lines as text (each cut to ``width`` afterwards)."""
        record = self.record
        if not record.active:
            return [Text("no search yet", style="dim italic")]
        header = header_rows(record, self._colour("success"), self._colour("error"))
        if record.strategy == CLIMB:
            return header + self._climb(width, height - len(header))
        return header + tree_lines(record, self._colour("error"), width)

    def _climb(self, width: int, room: int) -> list[Text]:
        record = self.record
        steps = record.ordered()
        if not steps:
            return [Text("no attempts yet", style="dim italic")]
        # The plot first where it fits beside two attempts at least; else attempts fill the room.
        if width < MIN_PLOT[0] or room < MIN_PLOT[1] + min(2, len(steps)):
            return self._attempts(steps[-max(1, room) :])
        shown = min(len(steps), LAST_ATTEMPTS, room - MIN_PLOT[1])
        plot_rows = room - shown
        assert record.started is not None
        colours = PlotColours(
            best=self._rgb("primary"),
            keep=self._rgb("success"),
            discard=self._muted_rgb(),
            crash=self._rgb("error"),
        )
        try:
            marks = climb_marks(record.started.baseline, steps, colours)
            plot = list(Text.from_ansi(climb_plot_ansi(marks, width, plot_rows)).split("\n"))
        except ImportError:
            plot = [Text("plotext is not installed: pip install plotext", style="dim italic")]
        except Exception as error:  # a plotting bug must not take the research session down
            plot = [Text(f"could not draw the plot: {error}", style="dim italic")]
        return [*plot[:plot_rows], *self._attempts(steps[-shown:])]

    def _attempts(self, steps: Sequence[SearchStep]) -> list[Text]:
        colours = {KEEP: self._colour("success"), DISCARD: "dim", CRASH: self._colour("error")}
        best = self.record.best_step()
        widths = (
            max(len(str(step.step)) for step in steps),
            max(len(step.status) for step in steps),
            max(len(value_words(step)) for step in steps),
        )
        return [
            attempt_line(step, colours.get(step.status, ""), step.step == best, widths)
            for step in steps
        ]

    def _colour(self, name: str) -> str:
        theme = self.app.current_theme
        return str(getattr(theme, name, None) or theme.primary)

    def _rgb(self, name: str) -> tuple[int, int, int]:
        return Color.parse(self._colour(name)).rgb

    def _muted_rgb(self) -> tuple[int, int, int]:
        variables = self.app.get_css_variables()
        background = Color.parse(variables.get("background", "#000000"))
        muted = Color.parse(variables.get("foreground-muted", "#808080"))
        return (background + muted).rgb


# -- the lines (pure) ---------------------------------------------------------------------------


def header_rows(record: SearchRecord, good: str = "", bad: str = "") -> list[Text]:
    """What the search is and how far it got, narrow panes in mind (the most needed first on
    each line): three lines, a fourth once it ended.

        climb · moons.test_accuracy_mean ↑ · noise 0.0041 · wider_hidden_layer
        8/100 attempts · 3 keep · 4 discard · 1 crash
        best 0.9567 (attempt 7) · baseline 0.9367
    """
    started = record.started
    if started is None:
        return []
    climb = started.strategy == CLIMB
    unit = "attempts" if climb else "nodes"
    arrow = {"higher": "↑", "lower": "↓"}.get(started.direction, started.direction)
    first = Text.assemble(
        ("climb" if climb else "tree search", "bold"),
        " · ",
        (started.metric, "bold"),
        f" {arrow} · noise {format_number(started.noise)} · ",
        (started.idea, "dim"),
    )
    counts = record.counts
    statuses = (KEEP, DISCARD, CRASH) if climb else (OK, BUGGY)
    styles = {KEEP: good, DISCARD: "dim", CRASH: bad, OK: good, BUGGY: bad}
    second = Text(" · ").join(
        [
            Text(f"{len(record.steps)}/{started.limit} {unit}"),
            *(Text(f"{counts.get(s, 0)} {s}", style=styles[s]) for s in statuses),
        ]
    )
    rows = [first, second, Text(best_words(record))]
    ended = record.ended
    if ended is not None:
        last = Text.assemble(("ended", "bold"), f": {ended.reason}")
        if ended.seed_runs and ended.seed_mean is not None:
            spread = f" ± {format_number(ended.seed_std)}" if ended.seed_std is not None else ""
            last.append(
                f" · {ended.seed_runs} seed run(s): {format_number(ended.seed_mean)}{spread}"
            )
        rows.append(last)
    return rows


def best_words(record: SearchRecord) -> str:
    """'best 0.72 (attempt 6)', or the baseline when nothing beat it."""
    started = record.started
    assert started is not None
    number, value = record.best_step(), record.best_value()
    shown = format_number(value) if value is not None else "–"
    baseline = format_number(started.baseline)
    if not number:
        return f"best: the baseline {baseline}"
    unit = "attempt" if started.strategy == CLIMB else "node"
    return f"best {shown} ({unit} {number}) · baseline {baseline}"


def value_words(step: SearchStep) -> str:
    return format_number(step.value) if step.value is not None else "–"


def attempt_line(
    step: SearchStep, style: str, best: bool, widths: tuple[int, int, int] = (3, 7, 8)
) -> Text:
    """'6 keep    0.72 ★ raise the learning rate to 3e-3', in columns ``widths`` wide."""
    number, status, value = widths
    line = Text(
        f"{step.step:>{number}} {step.status:<{status}} {value_words(step):>{value}}", style=style
    )
    line.append(f" {BEST_MARK}" if best else "  ", style="bold")
    line.append(f" {step.description}", style=style)
    return line


def tree_lines(record: SearchRecord, bad: str, width: int = 80) -> list[Text]:
    """The nodes as an indented tree (roots are drafts; a node whose parent is unknown shows
    as a root too), each under its parent in number order. A chain of improvements deeper than
    three eighths of the width keeps the inner end of its indentation (cut at '…')."""
    room = 3 * max(2, width // 8)  # of indentation, in whole levels of three cells
    nodes = record.steps
    children: dict[int, list[int]] = {}
    for number in sorted(nodes):
        parent = nodes[number].parent
        children.setdefault(parent if parent in nodes else 0, []).append(number)
    best = record.best_step()
    lines: list[Text] = []
    # (node, the lines' lead above it, its own branch glyph), walked depth first without
    # recursion: a chain of improvements is as deep as the search is long.
    stack = [(root, "", "") for root in reversed(children.get(0, []))]
    while stack:
        number, lead, branch = stack.pop()
        prefix = lead + branch
        if len(prefix) > room:
            prefix = "…" + prefix[1 - room :]
        lines.append(node_line(nodes[number], prefix, bad, number == best))
        below = lead + {"": "", LAST: "   "}.get(branch, "│  ")
        kids = children.get(number, [])
        for index in reversed(range(len(kids))):
            stack.append((kids[index], below, LAST if index == len(kids) - 1 else "├─ "))
    return lines


def node_line(node: SearchStep, prefix: str, bad: str, best: bool) -> Text:
    """'├─ 3 improve ok 0.68 ★  add dropout': the best node bold, a buggy one in ``bad``."""
    style = bad if node.status == BUGGY else "bold" if best else ""
    line = Text()
    line.append(prefix, style="dim")
    line.append(f"{node.step} ", style="bold")
    line.append(f"{node.action or 'draft'} {node.status} {value_words(node)}", style=style)
    if best:
        line.append(f" {BEST_MARK}", style="bold")
    line.append(f"  {node.description}", style=style)
    return line
