"""The dialogue pane: what the agents say, stage changes, checkpoints, notices and errors."""

from __future__ import annotations

import zlib
from collections import deque
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.widgets import RichLog, Static

from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    CheckpointDecided,
    CheckpointRequested,
    ErrorEvent,
    EstimateChecked,
    EstimateMade,
    Notice,
    Refused,
    ResearcherNote,
    RunAbandoned,
    StageFinished,
    StageStarted,
)

from .base import Pane

DIALOGUE_MAX_LINES = 4000
# What is kept to re-wrap the dialogue when the pane changes width (RichLog never reflows).
REFLOW_MAX_ENTRIES = 800
# The live preview of a message still streaming: its last few lines, until the whole arrives.
STREAM_TAIL_CHARS = 320

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


class DialoguePane(Pane):
    """What the agents say, stage changes, checkpoints, notices and errors."""

    TITLE = "Dialogue"
    HANDLES = (
        AgentMessage,
        AgentChunk,
        Notice,
        Refused,
        RunAbandoned,
        ErrorEvent,
        EstimateMade,
        EstimateChecked,
        StageStarted,
        StageFinished,
        CheckpointRequested,
        CheckpointDecided,
        ResearcherNote,
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._streaming: dict[str, str] = {}
        self._entries: deque[RenderableType] = deque(maxlen=REFLOW_MAX_ENTRIES)
        self._wrapped_at = 0

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
        # Follow new messages only while the reader is at the bottom: scrolling up to reread
        # something must not be undone by the next message.
        self._entries.append(renderable)
        log = self.log_widget
        log.write(renderable, scroll_end=log.is_vertical_scroll_end or not log.lines)

    def on_resize(self, event: events.Resize) -> None:
        # Maximising or resizing the terminal changes the width: wrap the kept messages anew
        # (after the layout settles, once per burst of resizes).
        if self._wrapped_at and event.size.width != self._wrapped_at:
            self.set_timer(0.05, self._rewrap, name="dialogue-rewrap")
        self._wrapped_at = event.size.width

    def _rewrap(self) -> None:
        log = self.log_widget
        following = log.is_vertical_scroll_end
        log.clear()
        for renderable in self._entries:
            log.write(renderable, scroll_end=following)

    def _on_AgentMessage(self, event: AgentMessage) -> None:
        colour = self.role_colour(event.role)
        self.write(Text.assemble(("● ", colour), (event.role, f"bold {colour}")))
        # markdown-it and pygments (~0.2 s): imported for the first agent message, not to paint
        from rich.markdown import Markdown  # noqa: PLC0415

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
        tail = " ".join(text.split())[-STREAM_TAIL_CHARS:]
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

    def _on_Refused(self, event: Refused) -> None:
        # What a model produced and labtui did not let through: the researcher should see why.
        subject = f" {event.subject}" if event.subject else ""
        self.write(
            Text.assemble(
                (f"⊘ refused {event.what}{subject}: ", f"bold {self.colour('warning')}"),
                event.reason,
            )
        )

    def _on_RunAbandoned(self, event: RunAbandoned) -> None:
        reverted = f"; code reverted to {event.reverted_to[:8]}" if event.reverted_to else ""
        self.write(
            Text.assemble(
                (f"✘ {event.run_id} abandoned ", f"bold {self.colour('error')}"),
                f"after {event.attempts} attempt(s): {event.problem}{reverted}",
            )
        )

    def _on_ResearcherNote(self, event: ResearcherNote) -> None:
        # The researcher's own words, so they can see which note the agents have been given.
        self.write(Text.assemble(("✎ your note: ", "bold"), event.text))

    def _on_ErrorEvent(self, event: ErrorEvent) -> None:
        error = self.colour("error")
        line = Text.assemble(("✘ ", error), (event.message, error))
        if event.hint:
            line.append(f"\n  fix: {event.hint}", style="italic")
        self.write(line)

    def _on_EstimateMade(self, event: EstimateMade) -> None:
        self._write_table_text(event.text)

    def _on_EstimateChecked(self, event: EstimateChecked) -> None:
        self._write_table_text(event.text)

    def _write_table_text(self, text: str) -> None:
        """An estimate as the engine laid it out: its inputs ("  - …") wrap as prose, its table's
        rows stay whole lines (cut at the pane's edge rather than folded into each other)."""
        style = self.colour("secondary")
        lines = [
            Text(line, style=style, no_wrap=not line.startswith("  - "))
            for line in text.splitlines()
        ]
        self.write(Group(*lines))

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
