"""The project's memory: the events appended to ``.labtui/journal.jsonl``, one flushed line each.

Replaying the journal rebuilds where a project is (which stages finished, with what result, and
which checkpoint decisions were taken), which is what makes resume after a crash possible, and
rebuilds the panes of an app that attaches later. Secrets never reach the file: anything that
looks like an API key is redacted before writing.

It stays small whatever the runs print (``OutputBudget``): of each run's output it keeps the
first and the last lines and a thinned series of its metrics (the whole output is in the run
folder's stdout.log and stderr.log, core/machine/run_log.py), and of a streamed model reply the
whole message, not its chunks.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .events import (
    AgentChunk,
    CheckpointDecided,
    CodeDiff,
    CostUpdate,
    Event,
    LogLine,
    MetricsReported,
    Rewound,
    RunAbandoned,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    event_from_dict,
)
from .stage_list import STAGES

JOURNAL_NAME = "journal.jsonl"
TORN_NAME = "journal.torn"  # beside the journal: fragments of writes a crash cut short
REDACTED = "[REDACTED]"

# Shapes of common provider keys and bearer tokens. Generic on purpose: a false positive costs a
# redacted word in the journal, a false negative leaks a credential.
_KEY_PATTERNS = re.compile(
    r"(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|(?i:bearer)\s+[A-Za-z0-9._\-]{16,})"
)
_SECRET_ENV_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def _secret_env_values() -> list[str]:
    values = [
        v for k, v in os.environ.items() if k.upper().endswith(_SECRET_ENV_SUFFIXES) and len(v) >= 8
    ]
    return sorted(values, key=len, reverse=True)


class Redactor:
    """Removes secrets from text: the values of secret-looking environment variables, read once
    (scanning the environment per string made journaling a chatty run cost ~0.4 ms a line), and
    anything shaped like a provider key."""

    def __init__(self) -> None:
        self._secrets = _secret_env_values()

    def text(self, text: str) -> str:
        for value in self._secrets:
            if value in text:
                text = text.replace(value, REDACTED)
        return _KEY_PATTERNS.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def redact(text: str) -> str:
    return Redactor().text(text)


# What the journal keeps of each run's output, per stream: the first and the last characters
# of its lines (the rest is counted and said); and of its metrics, the first points, then every
# 2nd, every 4th … (at most twice as many in all, however long the run).
HEAD_CHARS = 32_000
TAIL_CHARS = 32_000
METRIC_POINTS = 2_000
BUDGETED_STREAMS = ("stdout", "stderr")  # labtui's own lines about a run ("labtui") all stay


@dataclass
class _StreamKept:
    """One run stream's lines as the journal keeps them."""

    stage: str
    head_left: int = HEAD_CHARS
    tail: deque[str] = field(default_factory=deque)
    tail_chars: int = 0
    dropped_lines: int = 0
    dropped_chars: int = 0

    def admit_text(self, text: str) -> str | None:
        """``admit`` of one read's lines joined by newlines: the head's text (None: no line).
        Once the head is full, a read longer than the tail is counted, and only its end is
        split into lines: the lines before cannot survive (a flood is not walked through)."""
        if self.head_left > 0 or len(text) <= TAIL_CHARS + 1:
            head = self.admit(text.split("\n"))
            return "\n".join(head) if head else None
        # The break before the newest lines that could fit; what precedes it never will.
        cut = text.rfind("\n", 0, len(text) - TAIL_CHARS - 1) + 1
        rest = text[cut:].split("\n")
        self._hold(rest, skipped=(text.count("\n", 0, cut), cut))
        return None

    def admit(self, lines: list[str]) -> list[str]:
        """The lines that go to the journal now (the head); the rest wait in the tail."""
        taken = 0
        while taken < len(lines) and len(lines[taken]) < self.head_left:
            self.head_left -= len(lines[taken]) + 1
            taken += 1
        if taken < len(lines):
            self.head_left = 0  # the head ends at the first line that does not fit
        self._hold(lines[taken:])
        return lines[:taken]

    def _hold(self, rest: list[str], skipped: tuple[int, int] = (0, 0)) -> None:
        """Keep the newest lines in the tail, counting what falls out (``skipped``: lines and
        characters of the read before ``rest``, known not to fit). Only the lines that can
        survive are looked at one by one: a flood's read of 64 lines costs a sum, not a loop."""
        start, chars = len(rest), 0
        while start and chars + len(rest[start - 1]) + 1 <= TAIL_CHARS:
            start -= 1
            chars += len(rest[start]) + 1
        if start or skipped[0]:  # the read alone fills the tail: the old tail falls out
            self._drop(len(self.tail), self.tail_chars)
            self.tail.clear()
            self.tail_chars = 0
            self._drop(start + skipped[0], sum(map(len, rest[:start])) + start + skipped[1])
        self.tail.extend(rest[start:])
        self.tail_chars += chars
        while self.tail_chars > TAIL_CHARS:
            dropped = self.tail.popleft()
            self.tail_chars -= len(dropped) + 1
            self._drop(1, len(dropped) + 1)

    def _drop(self, lines: int, chars: int) -> None:
        self.dropped_lines += lines
        self.dropped_chars += chars


class OutputBudget:
    """Which events the journal writes, and when: a run's output is cut to its head and tail
    (the tail written when the run ends), its metric points thinned, and streamed chunks left
    to the whole message that follows them."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, str], _StreamKept] = {}
        self._points_seen: dict[str, int] = {}

    def admit(self, event: Event) -> list[Event]:
        """The events to write for ``event``, in order (none, itself, or held output first)."""
        match event:
            case AgentChunk():
                return []
            case LogLine() if event.stream in BUDGETED_STREAMS:
                return self._lines(event)
            case MetricsReported():
                return self._points(event)
            case RunStarted():
                self._points_seen.pop(event.run_id, None)
                return [*self.flush(run_id=event.run_id), event]
            case RunFinished() | RunAbandoned():
                return [*self.flush(run_id=event.run_id), event]
            case StageFinished():
                return [*self.flush(stage=event.stage), event]
        return [event]

    def _lines(self, event: LogLine) -> list[Event]:
        kept = self._streams.setdefault((event.run_id, event.stream), _StreamKept(event.stage))
        head = kept.admit_text(event.text)
        return [replace(event, text=head)] if head is not None else []

    def _points(self, event: MetricsReported) -> list[Event]:
        seen = self._points_seen.get(event.run_id, 0)
        kept = []
        for offset, point in enumerate(event.points):
            index = seen + offset
            if index % (1 << (index // METRIC_POINTS)) == 0:
                kept.append(point)
        self._points_seen[event.run_id] = seen + len(event.points)
        return [replace(event, points=kept)] if kept else []

    def flush(self, *, run_id: str | None = None, stage: str | None = None) -> list[Event]:
        """The held tails (of one run, of one stage's runs, or all), each after a line that
        says what was left out between head and tail."""
        held: list[Event] = []
        for key in list(self._streams):
            kept = self._streams[key]
            if (run_id is not None and key[0] != run_id) or (
                stage is not None and kept.stage != stage
            ):
                continue
            del self._streams[key]
            held += _tail_events(key[0], key[1], kept)
        return held


def _tail_events(run_id: str, stream: str, kept: _StreamKept) -> list[Event]:
    texts = []
    if kept.dropped_lines:
        texts.append(
            f"… {kept.dropped_lines:,} lines ({kept.dropped_chars / 1e6:.1f} MB) of {stream} not "
            f"kept in the journal (an experiment's run folder keeps them all in {stream}.log)"
        )
    if kept.tail:
        texts.append("\n".join(kept.tail))
    return [LogLine(stage=kept.stage, run_id=run_id, stream=stream, text=t) for t in texts]


class Journal:
    """Append-only JSONL of events, bounded by an ``OutputBudget``. Use ``append`` as a bus
    subscriber; ``close`` writes what the budget still holds."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / JOURNAL_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # What opening repaired ('' when nothing): a front end may say it.
        self.repaired = repair_torn_tail(self.path)
        self._file = self.path.open("a", encoding="utf-8")
        self._redactor = Redactor()
        self._budget = OutputBudget()

    def append(self, event: Event) -> None:
        with self._lock:
            self._write(self._budget.admit(event))

    def _write(self, events: list[Event]) -> None:
        if self._file.closed or not events:
            return
        for event in events:
            record = self._redactor.value(event.to_dict())
            self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._write(self._budget.flush())
            self._file.close()

    def events(self) -> list[Event]:
        return read_events(self.path)


def repair_torn_tail(path: Path) -> str:
    """Make the journal end on a whole line before anything is appended to it.

    A process killed mid-write leaves a last line without its newline. Reading skips it, but
    an append after it would glue the next event onto it: an unreadable line in the middle,
    which stops every later resume. A fragment that is a whole event only lacks its newline
    and gets it; any other is moved to ``journal.torn`` beside the journal (kept, not lost)
    and cut from the journal. Returns what was done, '' when the journal was whole.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            if size == 0:
                return ""
            handle.seek(max(0, size - 1))
            if handle.read(1) == b"\n":
                return ""
            handle.seek(0)
            data = handle.read()
    except FileNotFoundError:
        return ""
    start = data.rfind(b"\n") + 1
    fragment = data[start:]
    if _is_event(fragment):
        with path.open("ab") as handle:
            handle.write(b"\n")
        return f"{path}: the last event lacked its line end (a write was cut short); added"
    torn = path.with_name(TORN_NAME)
    with torn.open("ab") as handle:
        handle.write(fragment + b"\n")
    with path.open("r+b") as handle:
        handle.truncate(start)
    return (
        f"{path}: a write cut short by a crash left {len(fragment)} bytes of a last line; "
        f"moved to {torn}"
    )


def _is_event(line: bytes) -> bool:
    try:
        event_from_dict(json.loads(line.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, TypeError, AttributeError):
        return False
    return True


def read_events(path: Path) -> list[Event]:
    """All events of a journal. A torn last line (the process was killed mid-write) is skipped."""
    if not path.exists():
        return []
    events: list[Event] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            events.append(event_from_dict(json.loads(line)))
        except (json.JSONDecodeError, ValueError, TypeError):
            if number == len(lines):
                continue  # torn final write from a crash: nothing after it depends on it
            raise ValueError(
                f"{path}:{number}: unreadable journal line. Fix or delete that line; "
                "everything after it is kept."
            ) from None
    return events


@dataclass(frozen=True)
class StageStart:
    """Where a stage first started in the project's current history: what a rewind returns
    to. ``head`` is '' in journals older than that field; ``commits_before`` (the newest last)
    are the commits the journal saw before it, for core/workspace/rewind.py to find the start from."""

    stage: str
    head: str
    ts: float
    commits_before: tuple[str, ...] = ()


# How many earlier commits a start without ``head`` keeps for finding where it was.
_COMMITS_KEPT = 50


@dataclass
class PipelineState:
    """What replaying the journal tells: finished stages with their results, and decisions."""

    finished: dict[str, StageFinished] = field(default_factory=dict)
    decisions: list[CheckpointDecided] = field(default_factory=list)
    total_cost_usd: float = 0.0
    # The first start of each stage since the project last went back before it.
    started: dict[str, StageStart] = field(default_factory=dict)
    _commits: list[str] = field(default_factory=list, repr=False)

    def apply(self, event: Event) -> None:
        """Take what ``event`` tells about where the project is."""
        if isinstance(event, StageFinished):
            if event.status in ("done", "skipped"):
                self.finished[event.stage] = event
            else:
                self.finished.pop(event.stage, None)
        elif isinstance(event, StageStarted):
            if event.stage not in self.started:
                before = () if event.head else tuple(self._commits[-_COMMITS_KEPT:])
                self.started[event.stage] = StageStart(event.stage, event.head, event.ts, before)
        elif isinstance(event, CodeDiff):
            self._commits.append(event.commit)
        elif isinstance(event, CheckpointDecided):
            self.decisions.append(event)
        elif isinstance(event, CostUpdate):
            self.total_cost_usd = max(self.total_cost_usd, event.total_cost_usd)
        elif isinstance(event, Rewound):
            self._forget_from(event)

    def _forget_from(self, rewound: Rewound) -> None:
        """Back to before ``rewound.stage``: it and every later stage are as if never run,
        their decisions (and revision notes) dropped; the reason given for the rewind is the
        stage's one note. The money spent stays spent."""
        dropped = set(stages_from(rewound.stage))
        for stage in dropped:
            self.finished.pop(stage, None)
            self.started.pop(stage, None)
        self.decisions = [d for d in self.decisions if d.stage not in dropped]
        if rewound.note:
            self.decisions.append(
                CheckpointDecided(
                    stage=rewound.stage, checkpoint_id="", action="rewind", note=rewound.note
                )
            )
        self._commits.append(rewound.to_commit)

    @property
    def next_stage(self) -> str | None:
        passed_over = self.passed_over()
        for stage in STAGES:
            if stage not in self.finished and stage not in passed_over:
                return stage
        return None

    def passed_over(self) -> list[str]:
        """Stages that never ran although a later one finished: the project began before
        labtui had them (the literature review, say). A resume goes on from where it stood."""
        last = max((STAGES.index(s) for s in self.finished if s in STAGES), default=0)
        return [stage for stage in STAGES[:last] if stage not in self.finished]

    def result(self, stage: str) -> dict[str, Any]:
        finished = self.finished.get(stage)
        return dict(finished.result) if finished else {}

    def notes_for(self, stage: str) -> list[str]:
        """Revision notes the researcher gave for a stage, oldest first."""
        return [d.note for d in self.decisions if d.stage == stage and d.note]


def replay(events: list[Event]) -> PipelineState:
    """Rebuild pipeline state. A failed or aborted stage is not finished: resume redoes it; a
    rewind forgets the stage it went back to and every stage after it."""
    state = PipelineState()
    for event in events:
        state.apply(event)
    return state


def stages_from(stage: str) -> tuple[str, ...]:
    """``stage`` and every stage after it, in order (none when it is no stage)."""
    return STAGES[STAGES.index(stage) :] if stage in STAGES else ()
