"""The four live panes: dialogue, code diff, experiment logs, LaTeX.

Each pane is a bordered container that renders one slice of the engine's event stream. Panes only
ever run on the UI thread: the app hands them events (in order) through ``apply`` and, for bursty
log lines, ``write_log_lines``. A pane declares the event types it renders in ``HANDLES`` so the
app can route without a central switch that every new pane would have to edit.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from pygments.token import Token
from rich.console import RenderableType
from rich.markdown import Markdown
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.highlight import HighlightTheme, highlight
from textual.widgets import RichLog, Static

from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    CheckpointDecided,
    CheckpointRequested,
    CodeDiff,
    CompileResult,
    ErrorEvent,
    Event,
    GpuSample,
    LatexUpdated,
    LogLine,
    Notice,
    RunFinished,
    StageFinished,
    StageStarted,
)

LOG_MAX_LINES = 5000
DIALOGUE_MAX_LINES = 4000
# Diffs and drafts are shown whole, but an aider rewrite of a big file must not make one Static
# hold megabytes of highlighted text; the full artifact is always in the project's git repo.
MAX_SHOWN_LINES = 3000
SHOWN_COMPILE_ERRORS = 3

# Roles the engine is expected to use, mapped to theme colour names so the palette follows the
# app theme. Unknown roles get a stable colour from FALLBACK_COLOURS (crc32, not hash(): str
# hashes are salted per process and would make colours, and snapshots, change between runs).
ROLE_COLOURS: dict[str, str] = {
    "researcher": "foreground",
    "user": "foreground",
    "ideator": "primary",
    "planner": "primary",
    "critic": "warning",
    "reviewer": "warning",
    "coder": "success",
    "aider": "success",
    "writer": "accent",
    "system": "secondary",
}
FALLBACK_COLOURS: tuple[str, ...] = ("primary", "secondary", "accent", "success", "warning")


class Pane(Vertical):
    """A bordered, maximisable region of the main screen that renders some event types."""

    HANDLES: ClassVar[tuple[type[Event], ...]] = ()
    ALLOW_MAXIMIZE = True  # `m` maximises the whole pane, status lines included
    TITLE: ClassVar[str] = ""

    def on_mount(self) -> None:
        self.border_title = self.TITLE

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


class DialoguePane(Pane):
    """What the agents say, stage changes, checkpoints, notices and errors."""

    TITLE = "Dialogue"
    HANDLES = (
        AgentMessage,
        AgentChunk,
        Notice,
        ErrorEvent,
        StageStarted,
        StageFinished,
        CheckpointRequested,
        CheckpointDecided,
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._streaming: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield RichLog(id="dialogue-log", wrap=True, min_width=20, max_lines=DIALOGUE_MAX_LINES)
        yield Static(id="dialogue-streaming", classes="status-line")

    @property
    def log_widget(self) -> RichLog:
        return self.query_one("#dialogue-log", RichLog)

    def role_colour(self, role: str) -> str:
        name = ROLE_COLOURS.get(role.lower())
        if name is None:
            name = FALLBACK_COLOURS[zlib.crc32(role.encode()) % len(FALLBACK_COLOURS)]
        return self.colour(name)

    def write(self, renderable: RenderableType) -> None:
        self.log_widget.write(renderable)

    def _on_AgentMessage(self, event: AgentMessage) -> None:
        colour = self.role_colour(event.role)
        self.write(Text.assemble(("● ", colour), (event.role, f"bold {colour}")))
        self.write(Markdown(event.text))
        self._streaming.pop(event.role, None)
        self._show_streaming()

    def _on_AgentChunk(self, event: AgentChunk) -> None:
        # Chunks only drive a one-line indicator: the complete AgentMessage that follows is what
        # lands in the log, so a half-streamed message is never written twice.
        self._streaming[event.role] = self._streaming.get(event.role, "") + event.text
        self._show_streaming()

    def _show_streaming(self) -> None:
        indicator = self.query_one("#dialogue-streaming", Static)
        if not self._streaming:
            indicator.display = False
            return
        role, text = next(reversed(self._streaming.items()))
        tail = " ".join(text.split())[-200:]
        indicator.update(
            Text.assemble(
                (f"{role} ", f"bold {self.role_colour(role)}"), ("writing… ", "italic"), tail
            )
        )
        indicator.display = True

    def clear_streaming(self) -> None:
        """Forget half-streamed messages (the pipeline ended, so nothing will complete them)."""
        self._streaming.clear()
        self._show_streaming()

    def _on_Notice(self, event: Notice) -> None:
        self.write(Text.assemble(("ℹ ", self.colour("accent")), event.text))

    def _on_ErrorEvent(self, event: ErrorEvent) -> None:
        error = self.colour("error")
        line = Text.assemble(("✘ ", error), (event.message, error))
        if event.hint:
            line.append(f"\n  fix: {event.hint}", style="italic")
        self.write(line)

    def _on_StageStarted(self, event: StageStarted) -> None:
        self.write(Text(f"━━ {event.stage} ━━", style=f"bold {self.colour('primary')}"))

    def _on_StageFinished(self, event: StageFinished) -> None:
        ok = event.status in ("done", "skipped")
        mark, colour = ("✔", "success") if ok else ("✘", "error")
        line = Text.assemble(
            (f"{mark} {event.stage} {event.status}", f"bold {self.colour(colour)}")
        )
        if event.summary:
            line.append(f": {event.summary}")
        self.write(line)

    def _on_CheckpointRequested(self, event: CheckpointRequested) -> None:
        self.write(Text.assemble(("⏸ checkpoint: ", f"bold {self.colour('warning')}"), event.title))

    def _on_CheckpointDecided(self, event: CheckpointDecided) -> None:
        line = Text.assemble(("↳ you chose ", "italic"), (event.action, "bold"))
        if event.note:
            line.append(f": {event.note}")
        self.write(line)


class DiffHighlightTheme(HighlightTheme):
    """Textual's highlight theme plus the diff tokens it leaves unstyled (+, -, @@ lines)."""

    STYLES: ClassVar[dict[Any, str]] = {
        **HighlightTheme.STYLES,
        Token.Generic.Inserted: "$text-success",
        Token.Generic.Deleted: "$text-error",
        Token.Generic.Subheading: "$text-accent",
        Token.Generic.Heading: "bold",
    }


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


class DiffPane(Pane):
    """The latest code change: commit, message, and the highlighted unified diff."""

    TITLE = "Code diff"
    HANDLES = (CodeDiff,)

    def compose(self) -> ComposeResult:
        yield Static("No code changes yet.", id="diff-header", classes="status-line")
        with ScrollableContainer(id="diff-scroll", classes="code-scroll"):
            yield Static(id="diff-body", classes="code")

    def _on_CodeDiff(self, event: CodeDiff) -> None:
        header = Content.assemble(
            (event.commit[:7] or "uncommitted", "bold $text-warning"), " ", event.message
        )
        if event.files:
            header += Content.styled(f"  ({', '.join(event.files)})", "$text-muted")
        self.query_one("#diff-header", Static).update(header)
        body = highlight(clip_lines(event.diff), language="diff", theme=DiffHighlightTheme)
        self.query_one("#diff-body", Static).update(body)
        self.query_one("#diff-scroll", ScrollableContainer).scroll_home(animate=False)


def format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def flatten_means(means: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``{"ds": {"means": {"acc": 0.91}}}`` → ``["ds.acc=0.91"]``.

    The AI-Scientist contract nests each dataset's numbers under a ``means`` key; that level adds
    nothing for the reader, so it is skipped.
    """
    parts: list[str] = []
    for key, value in means.items():
        name = prefix if key == "means" and prefix else f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            parts.extend(flatten_means(value, name))
        else:
            parts.append(f"{name}={format_number(value)}")
    return parts


def gpu_status(gpus: Sequence[Mapping[str, Any]]) -> str:
    """One line for all GPUs of a sample: 'GPU0 NVIDIA H100 87% · 12.0/79.6 GB · 64°C │ …'."""
    if not gpus:
        return "CPU only"
    parts = []
    for gpu in gpus:
        used = float(gpu.get("mem_used_mb", 0)) / 1024
        total = float(gpu.get("mem_total_mb", 0)) / 1024
        parts.append(
            f"GPU{gpu.get('index', '?')} {gpu.get('name', '')} {gpu.get('util', 0)}%"
            f" · {used:.1f}/{total:.1f} GB · {gpu.get('temp_c', '?')}°C"
        )
    return " │ ".join(parts)


class LogsPane(Pane):
    """Experiment output (bounded), a GPU status line, and each run's outcome."""

    TITLE = "Experiment logs"
    HANDLES = (LogLine, GpuSample, RunFinished)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._current_run = ""

    def compose(self) -> ComposeResult:
        yield Static("CPU only", id="gpu-status", classes="status-line")
        yield RichLog(id="run-log", max_lines=LOG_MAX_LINES, min_width=1)

    @property
    def log_widget(self) -> RichLog:
        return self.query_one("#run-log", RichLog)

    def _on_LogLine(self, event: LogLine) -> None:
        self.write_log_lines([event])

    def write_log_lines(self, lines: Sequence[LogLine]) -> None:
        """Write a burst of lines as one renderable: one RichLog write per batch, not per line.

        Only the last ``LOG_MAX_LINES`` of a burst can survive the log's bound, so the rest are
        counted, not rendered.
        """
        if not lines:
            return
        skipped = max(0, len(lines) - LOG_MAX_LINES)
        parts: list[Text] = []
        if skipped:
            parts.append(Text(f"… {skipped} earlier lines skipped", style="dim italic"))
        error = self.colour("error")
        for line in lines[skipped:]:
            if line.run_id != self._current_run:
                self._current_run = line.run_id
                parts.append(Text(f"── {line.run_id} ──", style="dim"))
            parts.append(Text(line.text, style=error if line.stream == "stderr" else ""))
        self.log_widget.write(Text("\n").join(parts))

    def _on_GpuSample(self, event: GpuSample) -> None:
        self.query_one("#gpu-status", Static).update(Content(gpu_status(event.gpus)))

    def _on_RunFinished(self, event: RunFinished) -> None:
        self.log_widget.write(run_summary(event, self.colour("success"), self.colour("error")))
        # A later run gets its own separator even if the engine reuses the id after a fix.
        self._current_run = ""


def run_summary(event: RunFinished, ok_colour: str, error_colour: str) -> Text:
    if event.returncode == 0 and not event.timed_out:
        line = Text(f"✔ {event.run_id} finished in {event.wall_s:.1f} s", style=f"bold {ok_colour}")
        means = flatten_means(event.means)
        if means:
            line.append("\n  " + "  ".join(means), style="")
        return line
    what = "timed out" if event.timed_out else f"failed (exit {event.returncode})"
    line = Text(f"✘ {event.run_id} {what} after {event.wall_s:.1f} s", style=f"bold {error_colour}")
    tail = event.error_tail.strip().splitlines()[-5:]
    if tail:
        line.append("\n  " + "\n  ".join(tail), style=error_colour)
    return line


def compile_status(event: CompileResult) -> Content:
    """'✔ compiled · 4 pages' or '✘ compile failed' plus the first errors with line numbers."""
    if event.ok:
        text = Content.styled("✔ compiled", "bold $text-success")
        if event.pages:
            text += f" · {event.pages} page{'s' if event.pages != 1 else ''}"
        if event.warnings:
            text += Content.styled(f" · {len(event.warnings)} warnings", "$text-warning")
        return text
    text = Content.styled("✘ compile failed", "bold $text-error")
    if event.errors:
        text += f" · {len(event.errors)} error{'s' if len(event.errors) != 1 else ''}"
    for error in event.errors[:SHOWN_COMPILE_ERRORS]:
        text += "\n" + describe_compile_error(error)
    return text


def describe_compile_error(error: Mapping[str, Any]) -> str:
    line = error.get("line")
    message = str(error.get("message") or error.get("text") or error).strip()
    where = f"l.{line}: " if line else ""
    return f"  {where}{message}"


class LatexPane(Pane):
    """The latest LaTeX draft (highlighted, numbered) and the last compile result."""

    TITLE = "LaTeX"
    HANDLES = (LatexUpdated, CompileResult)

    def compose(self) -> ComposeResult:
        yield Static("Not compiled yet.", id="latex-status", classes="status-line")
        with ScrollableContainer(id="latex-scroll", classes="code-scroll"):
            yield Static("No LaTeX yet.", id="latex-body", classes="code")

    def _on_LatexUpdated(self, event: LatexUpdated) -> None:
        self.border_subtitle = event.path
        body = number_lines(highlight(clip_lines(event.text), language="latex"))
        self.query_one("#latex-body", Static).update(body)

    def _on_CompileResult(self, event: CompileResult) -> None:
        self.query_one("#latex-status", Static).update(compile_status(event))


def route(panes: Iterable[Pane], event: Event) -> None:
    """Hand an event to every pane that renders its type."""
    for pane in panes:
        if isinstance(event, pane.HANDLES):
            pane.apply(event)
