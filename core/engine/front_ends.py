"""The engine's side of one attached front end: a bounded outbox, a thread that sends it the
replay and then the outbox, a thread that reads what it says and hands it to the host
(``core.engine.host``), and the attach message that must come first.

A slow front end never slows the run: each has a bounded outbox, filled under the bus's delivery
and drained by its own thread; one that falls too far behind is dropped and may attach again.
A run's output is the one thing that can outpace any front end (a flood of a gigabyte): past
``LOG_CHARS_BEHIND`` queued, its lines are left out rather than the front end, and a line says
how many when the front end has caught up (the run folder's log has them all).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from .wire import BATCH_EVENTS, CLIENT_KINDS, PROTOCOL, WireError, decode, encode, events_message


class Host(Protocol):
    """What a front end's threads use of the engine (core/engine/host.py's EngineHost, which
    imports this module)."""

    journal_path: Path

    def forget(self, client: AttachedClient) -> None: ...

    def handle(self, client: AttachedClient, message: dict[str, Any]) -> None: ...


OUTBOX_LIMIT = 20_000  # messages a front end may lag behind before it is dropped
LOG_CHARS_BEHIND = 4_000_000  # queued run output past which a front end is shown less of it
_RUN_OUTPUT = ("stdout", "stderr")
_RUN_ENDS = ("RunFinished", "RunAbandoned", "StageFinished")


class Outbox:
    """What is waiting to be sent to one front end: raw messages and events, in order."""

    def __init__(self, limit: int | None = None, log_chars: int = LOG_CHARS_BEHIND) -> None:
        self._limit = limit or OUTBOX_LIMIT
        self._items: deque[bytes | dict[str, Any]] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._log_chars_limit = log_chars
        self._log_chars = 0  # of run output queued
        self._left_out: dict[tuple[str, str, str], int] = {}  # (stage, run, stream) -> lines

    def offer(self, item: bytes | dict[str, Any]) -> bool:
        """Queue a message (bytes) or an event (its dict); False when the front end is too far
        behind to take more (or already closed). Run output over the queued limit is counted,
        not queued (and True: the front end is not behind on anything else)."""
        with self._ready:
            if self._closed or len(self._items) >= self._limit:
                return False
            if isinstance(item, dict) and not self._queue_run_output(item):
                return True
            self._items.append(item)
            self._ready.notify()
            return True

    def _queue_run_output(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` is queued: run output while under the limit, anything else always;
        before either, the count of the lines left out of the runs it concerns."""
        if event.get("type") == "LogLine" and event.get("stream") in _RUN_OUTPUT:
            key = (event.get("stage", ""), event.get("run_id", ""), event["stream"])
            text = event.get("text", "")
            if self._log_chars + len(text) > self._log_chars_limit:
                self._left_out[key] = self._left_out.get(key, 0) + text.count("\n") + 1
                return False
            self._log_chars += len(text)
            self._say_left_out(lambda k: k == key)
        elif event.get("type") in _RUN_ENDS:
            self._say_left_out(lambda k: k[1] == event.get("run_id") or k[0] == event.get("stage"))
        return True

    def _say_left_out(self, concerns: Callable[[tuple[str, str, str]], bool]) -> None:
        for key in [k for k in self._left_out if concerns(k)]:
            stage, run_id, stream = key
            lines = self._left_out.pop(key)
            text = (
                f"… {lines:,} lines not shown: this view fell behind the run "
                f"(the run folder's {stream}.log has them all)"
            )
            line = {"type": "LogLine", "stage": stage, "run_id": run_id, "stream": stream}
            self._items.append({**line, "ts": time.time(), "text": text})

    def close(self) -> None:
        """Nothing more will be offered; what is queued is still sent."""
        with self._ready:
            self._closed = True
            self._ready.notify()

    def take(self) -> list[bytes] | None:
        """Everything queued, as wire lines (consecutive events batched); None once closed and
        drained."""
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            items, self._items = list(self._items), deque()
            self._log_chars = 0
        if not items:
            return None
        return batched(items)


def batched(items: list[bytes | dict[str, Any]]) -> list[bytes]:
    lines: list[bytes] = []
    events: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict):
            events.append(item)
            if len(events) >= BATCH_EVENTS:
                lines.append(events_message("events", events))
                events = []
            continue
        if events:
            lines.append(events_message("events", events))
            events = []
        lines.append(item)
    if events:
        lines.append(events_message("events", events))
    return lines


class AttachedClient:
    """One front end: a thread sends it the replay and then its outbox; another reads what it
    says and hands each message to the host."""

    def __init__(self, conn: socket.socket, host: Host) -> None:
        self.conn = conn
        self.host = host
        self.outbox = Outbox()
        self._gone = threading.Event()
        self._closing = threading.Lock()
        self._sides_done = 0

    def start(self, hello: bytes, replay_to: int | None, reader: Iterable[dict[str, Any]]) -> None:
        threading.Thread(
            target=self._send, args=(hello, replay_to), name="engine-send", daemon=True
        ).start()
        threading.Thread(target=self._read, args=(reader,), name="engine-read", daemon=True).start()

    def _send(self, hello: bytes, replay_to: int | None) -> None:
        try:
            self.conn.sendall(hello)
            if replay_to is not None:
                for line in replay_lines(self.host.journal_path, replay_to):
                    self.conn.sendall(line)
            self.conn.sendall(encode("live"))
            while (lines := self.outbox.take()) is not None:
                self.conn.sendall(b"".join(lines))
        except OSError:
            # The front end left. What it said before leaving (`labtui rewind` says one thing
            # and goes) is still in the socket: the reader reads it to the end first.
            self.host.forget(self)
            self._one_side_done()
            return
        self.host.forget(self)
        self.close()  # the run ended: the front end reads EOF, and the reader stops with it

    def _read(self, reader: Iterable[dict[str, Any]]) -> None:
        try:
            for message in reader:
                self.host.handle(self, message)
        except WireError as exc:
            self.outbox.offer(encode("error", message=str(exc)))
        finally:
            self.host.forget(self)
            self.outbox.close()
            self._one_side_done()

    def _one_side_done(self) -> None:
        """The socket closes when both the reader and a failed sender are done with it."""
        with self._closing:
            self._sides_done += 1
            both = self._sides_done == 2
        if both:
            self.close()

    def close(self) -> None:
        with self._closing:
            if self._gone.is_set():
                return
            self._gone.set()
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()

    def wait_closed(self, timeout: float) -> bool:
        return self._gone.wait(timeout)


def replay_lines(journal: Path, upto: int) -> list[bytes]:
    """The journal's first ``upto`` bytes as replay messages. Those bytes are whole lines (the
    host records the size after each appended event); one unreadable line is left out, not the
    whole replay."""
    with journal.open("rb") as handle:
        data = handle.read(upto)
    events: list[dict[str, Any]] = []
    for line in data.splitlines():
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(event, dict):
            events.append(event)
    return [
        events_message("replay", events[start : start + BATCH_EVENTS])
        for start in range(0, len(events), BATCH_EVENTS)
    ]


def decode_attach(line: bytes) -> dict[str, Any]:
    message = decode(line, CLIENT_KINDS)
    if message["kind"] != "attach":
        raise WireError(f"the first message must be attach, not {message['kind']}")
    if message.get("protocol") != PROTOCOL:
        raise WireError(
            f"protocol {message.get('protocol')} is not this engine's ({PROTOCOL}): "
            "the engine and labtui are different versions; stop the engine and start it again"
        )
    return message
