"""The project's memory: every event appended to ``.labtui/journal.jsonl``, one flushed line each.

Replaying the journal rebuilds where a project is (which stages finished, with what result, and
which checkpoint decisions were taken), which is what makes resume after a crash possible.
Secrets never reach the file: anything that looks like an API key is redacted before writing.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .events import CheckpointDecided, CostUpdate, Event, StageFinished, event_from_dict
from .stage_list import STAGES

JOURNAL_NAME = "journal.jsonl"
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


class Journal:
    """Append-only JSONL of events. Use ``append`` as a bus subscriber."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / JOURNAL_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = self.path.open("a", encoding="utf-8")
        self._redactor = Redactor()

    def append(self, event: Event) -> None:
        line = json.dumps(self._redactor.value(event.to_dict()), ensure_ascii=False, default=str)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def events(self) -> list[Event]:
        return read_events(self.path)


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


@dataclass
class PipelineState:
    """What replaying the journal tells: finished stages with their results, and decisions."""

    finished: dict[str, StageFinished] = field(default_factory=dict)
    decisions: list[CheckpointDecided] = field(default_factory=list)
    total_cost_usd: float = 0.0

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
    """Rebuild pipeline state. A failed or aborted stage is not finished: resume redoes it."""
    state = PipelineState()
    for event in events:
        if isinstance(event, StageFinished):
            if event.status in ("done", "skipped"):
                state.finished[event.stage] = event
            else:
                state.finished.pop(event.stage, None)
        elif isinstance(event, CheckpointDecided):
            state.decisions.append(event)
        elif isinstance(event, CostUpdate):
            state.total_cost_usd = max(state.total_cost_usd, event.total_cost_usd)
    return state
