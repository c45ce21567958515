"""A run's whole output on disk: ``run_i/stdout.log`` and ``run_i/stderr.log``, written as the
bytes arrive (before any decoding or parsing, so the file is the output exactly), capped by
``[limits] run_log_mb``. While the run goes the logs grow in a staging folder outside the run
folder (``.labtui/logs/``, where ``tail -f`` follows them): an experiment that refuses to start
in an existing output folder, or that a disk cap on its folder watches, must not meet them
there. They move into the run folder when the run ends.

Over the cap a log keeps its head and its tail: the first half of the cap is written through,
then the newest bytes go to two alternating segment files beside it of a quarter of the cap
each, so that at most the cap is ever on disk and at least its last quarter survives. When the
stream ends the segments are appended after a line that says how much was cut and where, and
removed. The journal keeps only the first and last lines of a run; this file is where a
researcher reads the rest.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

LOG_NAMES = {"stdout": "stdout.log", "stderr": "stderr.log"}


@dataclass(frozen=True)
class RunLogs:
    """Where a run's output goes: the run folder at the end, the staging folder meanwhile, and
    the cap per stream (0: no cap)."""

    folder: Path
    staging: Path
    cap_bytes: int = 0

    def open(self, stream: str) -> CappedLog:
        name = LOG_NAMES[stream]
        growing = self.staging / f"{self.folder.name}.{name}"
        return CappedLog(growing, self.cap_bytes, final=self.folder / name)

    @staticmethod
    def from_mb(folder: Path, staging: Path, cap_mb: int) -> RunLogs:
        return RunLogs(folder, staging, cap_mb * 1024 * 1024)


class CappedLog:
    """One stream's bytes into a file, head and tail kept past ``cap_bytes``. Thread-safe:
    the pump writes while the runner may close it after a stuck grandchild is stopped."""

    def __init__(self, path: Path, cap_bytes: int, final: Path | None = None) -> None:
        self.path = path
        self.final = final or path  # where the log ends up once the stream has ended
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO = path.open("wb")
        self._head_left = cap_bytes // 2 if cap_bytes else -1  # -1: no cap
        self._segment_cap = max(1, cap_bytes // 4)
        self._segments = [path.with_name(f".{path.name}.tail{i}") for i in (0, 1)]
        self._segment: BinaryIO | None = None
        self._current = 0  # index of the segment being written
        self._written_to_segment = 0
        self.total_bytes = 0
        self._dropped = 0  # bytes overwritten in the tail: what the file will not have
        self._lock = threading.Lock()
        self._closed = False

    @property
    def cut(self) -> bool:
        """Whether bytes were dropped between head and tail (a rotated-over segment)."""
        return self._dropped > 0

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:
                return
            self.total_bytes += len(data)
            if self._head_left < 0:
                self._file.write(data)
                return
            if self._head_left:
                head, data = data[: self._head_left], data[self._head_left :]
                self._file.write(head)
                self._head_left -= len(head)
            if data:
                self._write_tail(data)

    def _write_tail(self, data: bytes) -> None:
        while data:
            if self._segment is None or self._written_to_segment >= self._segment_cap:
                self._next_segment()
            assert self._segment is not None
            room = self._segment_cap - self._written_to_segment
            piece, data = data[:room], data[room:]
            self._segment.write(piece)
            self._written_to_segment += len(piece)

    def _next_segment(self) -> None:
        """Start the other segment afresh: the one being replaced is the oldest tail."""
        if self._segment is not None:
            self._segment.close()
            self._current = 1 - self._current
            older = self._segments[self._current]
            self._dropped += older.stat().st_size if older.exists() else 0
        self._segment = self._segments[self._current].open("wb")
        self._written_to_segment = 0

    def close(self) -> None:
        """Join head and tail, saying how much was cut between them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._segment is not None:
                self._segment.close()
                self._append_tail()
            self._file.close()
            if self.final != self.path:
                self.final.parent.mkdir(parents=True, exist_ok=True)
                self.path.replace(self.final)

    def _append_tail(self) -> None:
        older, newer = self._segments[1 - self._current], self._segments[self._current]
        parts = [p for p in (older, newer) if p.exists()]
        tail_bytes = sum(p.stat().st_size for p in parts)
        head_bytes = self._file.tell()
        if self.cut:
            self._file.write(
                f"\n[labtui: {self._dropped:,} bytes cut here; {head_bytes:,} bytes kept before "
                f"and {tail_bytes:,} after, of {self.total_bytes:,} ([limits] run_log_mb)]\n".encode()
            )
        for part in parts:
            with part.open("rb") as source:
                while block := source.read(1 << 20):
                    self._file.write(block)
            part.unlink()
