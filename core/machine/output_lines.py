"""A child's output read as lines: bytes split into whole lines as they complete (universal
newlines, a newline-free flood cut into pieces), a bounded tail of them kept in memory, and a
thread that drains one pipe in blocks, each block one LogLine event (and the metrics it reports).
``core.machine.processes`` runs the child; ``core.slurm.follow`` reads a job's files the same way.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO

from ..events import Event, LogLine
from .metric_lines import metrics_reported
from .run_log import CappedLog

Emit = Callable[[Event], None]

MAX_LINE_CHARS = 16_384  # longer lines arrive cut into pieces of this size
READ_BYTES = 1 << 18  # at most this much output per LogLine event
PIPE_BYTES = 1 << 20  # the pipe's buffer: a chatty child writes on while a read is handled
COALESCE_S = 0.02  # how long one event may gather a chatty child's writes


class Tail:
    """The last ``limit`` characters of a stream, kept as whole lines where possible.

    Locked because a reader may still be appending when the result is read (a grandchild that
    escaped the process group can hold the pipe open after the run is over).
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(0, limit)
        self._lines: deque[str] = deque()
        self._chars = 0
        self._lock = threading.Lock()

    def extend(self, lines: list[str]) -> None:
        with self._lock:
            for line in lines[self._surviving(lines) :]:
                line = line[-self._limit :] if self._limit else ""
                self._lines.append(line)
                self._chars += len(line) + 1
            # Drop whole old lines while the rest still covers the limit.
            while self._lines and self._chars - len(self._lines[0]) - 1 >= self._limit:
                self._chars -= len(self._lines.popleft()) + 1

    def _surviving(self, lines: list[str]) -> int:
        """Where the newest lines that cover the limit begin (the last line at least): older ones
        never survive, and a flood's read of hundreds of lines is not walked through."""
        start, chars = len(lines), 0
        while start and (chars < self._limit or start == len(lines)):
            start -= 1
            chars += len(lines[start]) + 1
        return start

    def text(self) -> str:
        with self._lock:
            joined = "\n".join(self._lines)
        return joined[-self._limit :] if self._limit else ""


class StreamPump(threading.Thread):
    """Reads one pipe to its end in blocks, emitting the lines of each block as one LogLine
    (its text holds them joined with newlines) and keeping the tail.

    One event per read, not per line: a child printing 100k lines as fast as it can then costs
    tens of events, which keeps the journal, the bus and the UI thread out of its way.

    With a ``log`` every byte also goes to the run's log file as it was read (run_log.py).

    A failing subscriber must not stop the draining: a child whose pipe is not read blocks on
    its next write and would hang until the timeout. So the first error is kept and re-raised
    by the caller once the child is done, and further lines are only kept in the tail.
    """

    def __init__(
        self,
        pipe: IO[bytes],
        stream: str,
        emit: Emit,
        stage: str,
        run_id: str,
        tail_chars: int,
        log: CappedLog | None = None,
    ) -> None:
        super().__init__(name=f"labtui-{run_id}-{stream}", daemon=True)
        self._pipe = pipe
        self._log = log
        self._stream = stream
        self._emit = emit
        self._stage = stage
        self._run_id = run_id
        self.tail = Tail(tail_chars)
        self.error: Exception | None = None
        self.last_output = 0.0  # time.monotonic() of the last output: the stall watchdog reads it

    def _blocks(self) -> Iterator[list[str]]:
        """Lines as they arrive, a block per read."""
        splitter = LineSplitter()
        fd = self._pipe.fileno()
        _widen_pipe(fd)
        while chunk := _read_block(fd):
            if self._log is not None:
                self._log.write(chunk)
            if lines := splitter.feed(chunk):
                yield lines
        if rest := splitter.end():
            yield rest

    def run(self) -> None:
        try:
            for lines in self._blocks():
                self.last_output = time.monotonic()
                self.tail.extend(lines)
                if self.error is None:
                    try:
                        emit_lines(self._emit, self._stage, self._run_id, self._stream, lines)
                    except Exception as exc:
                        self.error = exc
        except (OSError, ValueError):
            pass  # the pipe was closed under us while killing the group: nothing more to read
        finally:
            self._pipe.close()


class LineSplitter:
    """Bytes of a stream in, whole lines out, as they complete. Universal newlines ('\n', '\r'
    and '\r\n', as Python's text files): '\r' progress bars arrive as separate lines; a '\r\n'
    split across two chunks is one line break; a newline-free flood is cut into MAX_LINE_CHARS
    pieces. A flood's read is split by str.split, never walked line by line in Python."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, chunk: bytes) -> list[str]:
        text = self._pending + self._decoder.decode(chunk)
        held = ""
        if text.endswith("\r"):  # perhaps the first half of a '\r\n'
            text, held = text[:-1], "\r"
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        *lines, pending = text.split("\n")
        pending += held
        if lines and max(map(len, lines)) > MAX_LINE_CHARS:
            lines = [piece for line in lines for piece in _cut(line)]
        while len(pending) > MAX_LINE_CHARS:  # a newline-free flood: cut it, keep reading
            lines.append(pending[:MAX_LINE_CHARS])
            pending = pending[MAX_LINE_CHARS:]
        self._pending = pending
        return lines

    def end(self) -> list[str]:
        """The last line, when the stream ended without a newline."""
        rest = (self._pending + self._decoder.decode(b"", final=True)).rstrip("\r\n")
        self._pending = ""
        return _cut(rest) if rest else []


def emit_lines(emit: Emit, stage: str, run_id: str, stream: str, lines: list[str]) -> None:
    """A block of a run's lines as one LogLine, and the metrics they report, if any."""
    log = LogLine(stage=stage, run_id=run_id, stream=stream, text="\n".join(lines))
    emit(log)
    if reported := metrics_reported(log):
        emit(reported)


def _widen_pipe(fd: int) -> None:
    """A 1 MB pipe instead of 64 KB (Linux), as far as the system allows: the child blocks
    only when a whole megabyte waits, not at every hiccup of the reader."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):
        pass  # not Linux, not a pipe, or over /proc/sys/fs/pipe-max-size: the default stays


def _read_block(fd: int) -> bytes:
    """What the child wrote within COALESCE_S of its first byte (b"" at the end of the pipe).

    An unbuffered child writes line by line; gathering for a few milliseconds turns a flood of
    small writes into a few large events while a quiet child's line still shows at once."""
    block = os.read(fd, READ_BYTES)
    deadline = time.monotonic() + COALESCE_S
    while block and len(block) < READ_BYTES:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            break
        more = os.read(fd, READ_BYTES - len(block))
        if not more:
            break  # the end of the pipe: the next read says so again
        block += more
    return block


def _cut(line: str) -> list[str]:
    """A line in pieces of at most MAX_LINE_CHARS: one huge line must not become one huge event."""
    if len(line) <= MAX_LINE_CHARS:
        return [line]
    return [line[i : i + MAX_LINE_CHARS] for i in range(0, len(line), MAX_LINE_CHARS)]
