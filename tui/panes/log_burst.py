"""What the logs pane shows of a burst of a run's output: its newest lines, and a count of the
rest. A run may print 100,000 lines in a second; the app hands them over ten times a second, and
no one reads thousands of lines a tenth of a second. Each write shows at most a bounded number of
the newest lines (the UI thread's work per frame stays small, so keys are answered at once) and
says how many it left out and where they are all kept: the run folder's stdout.log / stderr.log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from labtui.core.events import LogLine

from ..job_words import not_shown

Row = tuple[str, str, str]  # run id, stream, one line of output


@dataclass
class Burst:
    """The newest lines of a burst, as rows, and what was left out before them."""

    rows: list[Row] = field(default_factory=list)
    skipped: int = 0  # lines left out, all older than the rows
    streams: list[str] = field(default_factory=list)  # the streams they came from, in order

    def marker(self) -> str:
        return not_shown(self.skipped, self.streams)


def last_rows(events: Sequence[LogLine], limit: int) -> Burst:
    """The last ``limit`` lines of a burst as rows, and how many earlier lines were left out.

    Walks the events from the newest and splits only what it keeps: the older events of a
    flood, and the head of the oldest kept one, are only counted."""
    chunks: list[list[Row]] = []
    kept = skipped = 0
    streams: dict[str, None] = {}  # ordered and unique
    for event in reversed(events):
        room = limit - kept
        if room <= 0:
            skipped += event.text.count("\n") + 1
            streams[event.stream] = None
            continue
        lines = event.text.rsplit("\n", room)  # at most room + 1 parts: the first, the rest
        if len(lines) > room:
            skipped += lines.pop(0).count("\n") + 1
            streams[event.stream] = None
        chunks.append([(event.run_id, event.stream, text) for text in lines])
        kept += len(lines)
    rows = [row for chunk in reversed(chunks) for row in chunk]
    return Burst(rows, skipped, sorted(streams, key=lambda stream: stream != "stdout"))
