"""The project text a stage's prompts carry, measured in characters and turned into tokens by a
stated ratio (no tokenizer is loaded: ``labtui run --estimate`` answers in a moment, and the
ratio is said beside the number it makes)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import LabtuiError
from ..settings.config import Config
from ..settings.contract import code_text
from ..workspace.artifacts import PLAN
from ..workspace.run_folder import RUN_RECORD, RunRecord, read_run_record, run_name

# Characters per token of English prose and Python code in the tokenizers of the small models
# the calibration table was measured with (Qwen2.5: about 3.5 for code, 4.5 for prose): 4.
CHARS_PER_TOKEN = 4.0
TEMPLATE = Path("latex") / "template.tex"


@dataclass(frozen=True)
class ProjectSizes:
    code_chars: int  # the code the agents edit, as a prompt shows it
    template_chars: int  # the paper's LaTeX template
    planned_runs: int  # plan.json's runs (0: not planned yet)
    run0_s: float  # the baseline's wall time (0: no baseline yet)
    chars_per_token: float = CHARS_PER_TOKEN
    settings_runs: int = 0  # of the planned runs, those made by code (settings only: no edit)

    def chars(self, reads: str) -> int:
        return {"code": self.code_chars, "template": self.template_chars}.get(reads, 0)

    def tokens(self, reads: str) -> float:
        return self.chars(reads) / self.chars_per_token


def measure_project(root: Path, config: Config) -> ProjectSizes:
    return ProjectSizes(
        code_chars=_code_chars(root, config),
        template_chars=_file_chars(root / TEMPLATE),
        planned_runs=len(planned := _planned_runs(root / PLAN)),
        run0_s=_run0_seconds(root),
        settings_runs=sum(1 for run in planned if isinstance(run, dict) and run.get("settings")),
    )


def _code_chars(root: Path, config: Config) -> int:
    try:
        return len(code_text(root, config.experiment))
    except (LabtuiError, OSError):
        return 0  # no code yet (a topic's project): its scaffold is written by the plan


def _file_chars(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return 0


def _planned_runs(plan: Path) -> list[object]:
    """The runs plan.json holds, read leniently: an estimate must not fail on a broken plan."""
    try:
        runs = json.loads(plan.read_text(encoding="utf-8")).get("runs", [])
    except (OSError, ValueError, AttributeError):
        return []
    return runs if isinstance(runs, list) else []


def _run0_seconds(root: Path) -> float:
    baseline = root / run_name(0)
    if not (baseline / RUN_RECORD).is_file():
        return 0.0
    try:
        record = read_run_record(baseline)
    except LabtuiError:
        return 0.0
    return record.wall_s if isinstance(record, RunRecord) else 0.0
