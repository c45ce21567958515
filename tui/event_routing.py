"""Engine events onto the main screen, in the order the engine emitted them, cheaply: consecutive
log lines go to the logs pane as one batch, of several GPU samples in one batch only the newest is
drawn, and the status header is refreshed once per batch, not once per event."""

from __future__ import annotations

from collections.abc import Callable

from labtui.core.events import AgentChunk, Event, GpuSample, LogLine, MetricsReported, Rewound
from labtui.core.journal import stages_from

from .screens import MainScreen
from .status import Progress


def apply_events(
    main: MainScreen,
    progress: Progress,
    events: list[Event],
    *,
    replay: bool,
    notice: Callable[[Event], None],
) -> None:
    """Render events in order; consecutive log lines go to the logs pane as one batch, and
    of several GPU samples in one batch only the newest is drawn. ``notice`` sees each event
    the panes and the status header get one by one, just before they do; ``replay``: the
    journal's events, at start-up."""
    lines: list[LogLine] = []
    newest_sample = last_of_type(events, GpuSample)
    status_changed = False
    for event in events:
        if isinstance(event, LogLine):
            lines.append(event)
            continue
        if isinstance(event, MetricsReported):
            # Each read's points follow its LogLine: plotted at once, so that they do not
            # cut the batch of lines into one log write per read.
            main.apply(event)
            continue
        if lines:
            main.write_log_lines(lines, live=not replay)
            lines = []
        if replay and isinstance(event, AgentChunk):
            continue  # a journal's chunks are always followed by their whole message
        if isinstance(event, GpuSample) and event is not newest_sample:
            continue
        notice(event)
        status_changed |= progress.apply(event) | forget_rewound(progress, event)
        main.apply(event)
    if lines:
        main.write_log_lines(lines, live=not replay)
    if status_changed:
        main.status.refresh_status()


def forget_rewound(progress: Progress, event: Event) -> bool:
    """A rewind: its stage and the later ones are pending again. True when it was one."""
    if not isinstance(event, Rewound):
        return False
    for stage in stages_from(event.stage):
        progress.stages[stage] = "pending"
    return True


def last_of_type(events: list[Event], kind: type[Event]) -> Event | None:
    return next((event for event in reversed(events) if isinstance(event, kind)), None)
