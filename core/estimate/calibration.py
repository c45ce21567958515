"""The calibration table: what the real-model bench measured per stage, shipped as data
(``calibration.json``, per model size class, each run dated and its source named).

A stage's calibration is the spread over the table's runs: the fewest, the mean and the most
calls, and per call the tokens read and written, with the re-ask rate (replies refused per
call). Tokens read per call are kept apart from the project text the call carries (the code,
the paper's template), so that another project's prompts are sized by its own text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from statistics import mean

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
SMALL_LOCAL = "small-local"

# Which project text a stage's prompts carry whole, each call (the calibration's tokens read
# per call include it): aider sends experiment.py, the plotting script reads the code, the
# write-up fills the paper's template.
STAGE_READS: dict[str, str] = {"experiments": "code", "plots": "code", "writeup": "template"}


@dataclass(frozen=True)
class CalibratedRun:
    name: str
    date: str
    source: str
    code_chars: int
    template_chars: int
    planned_runs: int
    stages: dict[str, dict[str, float]]


@dataclass(frozen=True)
class StageCalibration:
    """One stage over the table's runs."""

    stage: str
    calls_low: float
    calls: float
    calls_high: float
    prompt_tokens_per_call: float  # less the project text the call carries
    reply_tokens_per_call: float
    reask_rate: float  # replies refused per call
    wall_s: float  # the stage's wall time, for a stage with no model call (compile)
    reads: str  # "code", "template" or "" (no project text)


@dataclass(frozen=True)
class Calibration:
    size_class: str
    describes: str
    runs: tuple[CalibratedRun, ...]

    @property
    def reask_rate(self) -> float:
        """Replies refused per call, over every stage of every run of the table."""
        rows = [row for run in self.runs for row in run.stages.values()]
        calls = sum(row.get("calls", 0.0) for row in rows)
        return sum(row.get("refused", 0.0) for row in rows) / calls if calls else 0.0

    @property
    def dates(self) -> str:
        return ", ".join(sorted({run.date for run in self.runs}))

    def stage(self, stage: str, chars_per_token: float) -> StageCalibration:
        rows = [(run, run.stages.get(stage, {})) for run in self.runs]
        calls = [row.get("calls", 0.0) for _, row in rows]
        total_calls = sum(calls)
        reads = STAGE_READS.get(stage, "")
        carried = sum(
            _project_chars(run, reads) / chars_per_token * row.get("calls", 0.0)
            for run, row in rows
        )
        prompt = sum(row.get("tokens_in", 0.0) for _, row in rows) - carried
        return StageCalibration(
            stage=stage,
            calls_low=min(calls, default=0.0),
            calls=mean(calls) if calls else 0.0,
            calls_high=max(calls, default=0.0),
            prompt_tokens_per_call=max(0.0, prompt / total_calls) if total_calls else 0.0,
            reply_tokens_per_call=_per_call(rows, "tokens_out", total_calls),
            reask_rate=_per_call(rows, "refused", total_calls),
            wall_s=mean(row.get("wall_s", 0.0) for _, row in rows) if rows else 0.0,
            reads=reads,
        )


def _per_call(rows: list[tuple[CalibratedRun, dict[str, float]]], key: str, calls: float) -> float:
    return sum(row.get(key, 0.0) for _, row in rows) / calls if calls else 0.0


def _project_chars(run: CalibratedRun, reads: str) -> int:
    return {"code": run.code_chars, "template": run.template_chars}.get(reads, 0)


@cache
def load_calibration(size_class: str = SMALL_LOCAL, path: Path = CALIBRATION_FILE) -> Calibration:
    """The table's class ``size_class`` (the small local class where it has no such class)."""
    classes = json.loads(path.read_text(encoding="utf-8"))["classes"]
    data = classes.get(size_class) or classes[SMALL_LOCAL]
    runs = tuple(
        CalibratedRun(
            name=run["name"],
            date=run["date"],
            source=run["source"],
            code_chars=int(run.get("code_chars", 0)),
            template_chars=int(run.get("template_chars", 0)),
            planned_runs=int(run.get("planned_runs", 1)),
            stages=run["stages"],
        )
        for run in data["runs"]
    )
    return Calibration(
        size_class if size_class in classes else SMALL_LOCAL, data["describes"], runs
    )
