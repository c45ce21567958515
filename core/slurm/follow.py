"""Following a cluster job from the login node: its stdout and stderr files as they grow, read
into LogLine events (the same events, metrics and tails a local run's pipes give), labtui's own
lines from the node as notices, and the node's GPU readings as GpuSample events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..events import Event, GpuSample, Notice
from ..machine.output_lines import LineSplitter, Tail, emit_lines
from .node import NOTE_PREFIX

Emit = Callable[[Event], None]

READ_BYTES = 1 << 20  # at most this much of a file per poll: a flood arrives over a few polls
# submitit's own log lines in the job's stderr ("submitit INFO (2026-…) - Starting with …"):
# the run's log is the run's, as it is locally.
SUBMITIT_LOG = tuple(f"submitit {level} (" for level in ("INFO", "WARNING", "ERROR", "DEBUG"))


class _FollowedFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def read_new(self) -> bytes:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read(READ_BYTES)
        except FileNotFoundError:
            return b""  # not written yet: the job has not started
        self.offset += len(chunk)
        return chunk


class _Stream:
    def __init__(self, path: Path, name: str, tail_chars: int) -> None:
        self.file = _FollowedFile(path)
        self.name = name
        self.splitter = LineSplitter()
        self.tail = Tail(tail_chars)


class JobFollower:
    """Reads what a job wrote since the last ``poll`` and emits it; ``finish`` reads the rest."""

    def __init__(
        self,
        stdout: Path,
        stderr: Path,
        gpu_log: Path,
        *,
        emit: Emit,
        stage: str,
        run_id: str,
        tail_chars: int = 4000,
    ) -> None:
        self._streams = [
            _Stream(stdout, "stdout", tail_chars),
            _Stream(stderr, "stderr", tail_chars),
        ]
        self._gpus = _FollowedFile(gpu_log)
        self._gpu_pending = b""
        self._emit = emit
        self._stage = stage
        self._run_id = run_id

    @property
    def stdout_tail(self) -> str:
        return self._streams[0].tail.text()

    @property
    def stderr_tail(self) -> str:
        return self._streams[1].tail.text()

    def poll(self) -> None:
        for stream in self._streams:
            while chunk := stream.file.read_new():
                self._give(stream, stream.splitter.feed(chunk))
                if len(chunk) < READ_BYTES:
                    break
        self._read_gpus()

    def finish(self) -> None:
        self.poll()
        for stream in self._streams:
            self._give(stream, stream.splitter.end())

    def _give(self, stream: _Stream, lines: list[str]) -> None:
        run_lines = []
        for line in lines:
            if line.startswith(SUBMITIT_LOG):
                continue
            if stream.name == "stderr" and line.startswith(NOTE_PREFIX):
                text = f"{self._run_id} on the cluster: {line[len(NOTE_PREFIX) :]}"
                self._emit(Notice(stage=self._stage, text=text))
                continue
            run_lines.append(line)
        if run_lines:
            stream.tail.extend(run_lines)
            emit_lines(self._emit, self._stage, self._run_id, stream.name, run_lines)

    def _read_gpus(self) -> None:
        self._gpu_pending += self._gpus.read_new()
        *complete, self._gpu_pending = self._gpu_pending.split(b"\n")
        for line in complete:
            try:
                reading = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # a line the node was cut off writing
            if isinstance(reading, dict) and isinstance(reading.get("gpus"), list):
                self._emit(
                    GpuSample(
                        stage=self._stage,
                        gpus=reading["gpus"],
                        host=str(reading.get("host", "")),
                        job_id=str(reading.get("job_id", "")),
                    )
                )
