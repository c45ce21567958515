"""The hand-over between the engine's thread and the UI's: events in emission order (bursty ones
batched by the app's timer), and checkpoints asked by the pipeline, answered by a modal. The
pipeline thread never touches a widget; it only posts messages.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from textual.app import App
from textual.message import Message

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.errors import Aborted
from labtui.core.events import AgentChunk, Event, GpuSample, LogLine, MetricsReported

BURSTY: tuple[type[Event], ...] = (LogLine, MetricsReported, AgentChunk, GpuSample)
RESUME_HINT = "Everything up to this point is in the journal: run labtui again to resume."


class EventInbox:
    """Ordered hand-over of events from the pipeline thread to the UI thread.

    Every event goes into one FIFO, so the UI renders in emission order even though bursty
    events are drained by a timer and the others by their own message.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: deque[Event] = deque()

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def put(self, event: Event) -> bool:
        """Queue an event; True when the caller should post a message for it (not bursty)."""
        with self._lock:
            self._events.append(event)
        return not isinstance(event, BURSTY)

    def take_until(self, event: Event) -> list[Event]:
        """Everything queued up to and including ``event`` (bursty events before it included)."""
        taken: list[Event] = []
        with self._lock:
            while self._events:
                taken.append(self._events.popleft())
                if taken[-1] is event:
                    break
        return taken

    def take_bursty(self) -> list[Event]:
        """The bursty events at the head of the queue, stopping at the first posted one (its
        message will take it, and whatever follows it, in order)."""
        taken: list[Event] = []
        with self._lock:
            while self._events and isinstance(self._events[0], BURSTY):
                taken.append(self._events.popleft())
        return taken


class EngineEvent(Message):
    """An engine event was emitted; its handler renders it and the bursty events before it."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class _PendingAnswer:
    """A decision that the UI thread gives and the pipeline thread waits for."""

    def __init__(self) -> None:
        self._given = threading.Event()
        self.decision: Decision | None = None

    def give(self, decision: Decision | None) -> None:
        if not self._given.is_set():
            self.decision = decision
            self._given.set()

    def wait(self) -> Decision | None:
        self._given.wait()
        return self.decision


class CheckpointAsked(Message):
    """The pipeline asks a checkpoint; the handler shows the modal and gives its answer back."""

    def __init__(self, request: CheckpointRequest, answer: _PendingAnswer) -> None:
        super().__init__()
        self.request = request
        self.answer = answer


def _closed_error() -> Aborted:
    return Aborted("labtui was closed while a checkpoint was waiting for an answer.", RESUME_HINT)


class TuiCheckpointPort:
    """Answers checkpoints with ``CheckpointScreen``; ``ask`` blocks the pipeline thread only.

    It posts a message rather than using ``call_from_thread``: posting never blocks, so a
    checkpoint asked while the app shuts down cannot hang on a loop that no longer runs. If the
    app closes with a question open, ``ask`` raises ``Aborted`` instead of inventing a decision,
    so the journal records no answer the researcher never gave and resume asks again.
    """

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._closed = False
        self._waiting: set[_PendingAnswer] = set()

    def ask(self, request: CheckpointRequest) -> Decision:
        answer = _PendingAnswer()
        with self._lock:
            if self._closed:
                raise _closed_error()
            self._waiting.add(answer)
        try:
            if not self._app.post_message(CheckpointAsked(request, answer)):
                raise _closed_error()
            decision = answer.wait()
        finally:
            with self._lock:
                self._waiting.discard(answer)
        if decision is None:
            raise _closed_error()
        return decision

    def close(self) -> None:
        """Release every waiting ``ask`` (the app is going away) and refuse new ones."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
        for answer in waiting:
            answer.give(None)
