"""The model's speed on this machine, per model, kept in the user's cache.

``labtui doctor`` times a model and every timed call of a run adds to its totals
(``SpeedRecorder`` on the bus), so an estimate reads prompt and generation tokens per second
that were measured here, never a guess. The totals are sums of tokens and seconds: a rate
read from them weighs long calls as the run does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..events import CostUpdate, Event
from ..local_model.catalog import CacheDirs
from ..workspace.json_records import read_json, write_json

SPEEDS_FILE = "model_speeds.json"


@dataclass(frozen=True)
class ModelSpeed:
    """A model's measured totals: tokens read and the seconds until the first token, tokens
    written and the seconds after it."""

    model: str
    calls: int = 0
    prompt_tokens: int = 0
    prompt_s: float = 0.0
    output_tokens: int = 0
    output_s: float = 0.0
    measured_by: str = ""  # the last to time it: "doctor" or "run"
    updated: float = 0.0  # when, as time.time()

    @property
    def prompt_tps(self) -> float:
        return self.prompt_tokens / self.prompt_s if self.prompt_s > 0 else 0.0

    @property
    def output_tps(self) -> float:
        return self.output_tokens / self.output_s if self.output_s > 0 else 0.0

    @property
    def known(self) -> bool:
        return self.prompt_tps > 0 and self.output_tps > 0

    def plus(self, cost: CostUpdate, by: str) -> ModelSpeed:
        writing = max(0.0, cost.seconds - cost.first_token_s)
        return replace(
            self,
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + cost.tokens_in,
            prompt_s=self.prompt_s + cost.first_token_s,
            output_tokens=self.output_tokens + (cost.tokens_out if writing > 0 else 0),
            output_s=self.output_s + writing,
            measured_by=by,
            updated=time.time(),
        )


def speeds_path() -> Path:
    return CacheDirs.here().root / SPEEDS_FILE


def read_speeds(path: Path | None = None) -> dict[str, ModelSpeed]:
    """Every model timed on this machine, by name; {} when none was (or the file is broken)."""
    data = read_json(path or speeds_path()) or {}
    speeds: dict[str, ModelSpeed] = {}
    for name, values in data.items():
        try:
            speeds[name] = ModelSpeed(**{**values, "model": name})
        except TypeError:
            continue  # a record of another labtui's shape: as if never timed
    return speeds


def record_speed(cost: CostUpdate, by: str, path: Path | None = None) -> None:
    """Add a timed call to its model's totals. Two processes writing at once may lose one
    call's timing: the totals are an estimate's input, not an account."""
    if cost.first_token_s <= 0 or not cost.model:
        return
    path = path or speeds_path()
    speeds = read_speeds(path)
    speeds[cost.model] = speeds.get(cost.model, ModelSpeed(cost.model)).plus(cost, by)
    try:
        write_json(path, {name: _fields(speed) for name, speed in speeds.items()})
    except OSError:
        pass  # a read-only cache: the estimate says the speed is unknown, the run goes on


def _fields(speed: ModelSpeed) -> dict[str, object]:
    values = asdict(speed)
    values.pop("model")
    return values


class SpeedRecorder:
    """A bus subscriber: each timed call's speed added to the user's cache."""

    def __init__(self, by: str, path: Path | None = None) -> None:
        self.by = by
        self.path = path

    def __call__(self, event: Event) -> None:
        if isinstance(event, CostUpdate):
            record_speed(event, self.by, self.path)
