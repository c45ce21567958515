"""The ledger of a hill-climb or a tree search: every attempt (climb) or node (tree) as a record,
and ``results.tsv``, one line each, in the project.

A search keeps its ledger in ``ledgers/<strategy>-<idea>/`` of the project, committed after each
step, so a killed search resumes from it without repeating what was finished:

    results.tsv            one line per step (the baseline and its repeats first)
    steps/0007/step.json   the step's record (its numbers, its commits, why it crashed)
    steps/0007/change.diff the code change against the code it was made from
    steps/0007/run/        its run's final_info.json and labtui_run.json (the numbers' source)
    noise.json, noise/     the baseline's repeats with other seeds, and the noise they give
    final.json, final/     the best code's seed runs, and the result the paper reports

A step's folder is written under a ``.partial`` name and renamed when whole: a folder without
that suffix is a finished step. The TSV is written from the records after each step; the records
are the truth.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..workspace.run_folder import RECORD_FILES

LEDGERS = "ledgers"  # the project folder of every search's ledger
TSV = "results.tsv"
STEPS = "steps"
NOISE = "noise"
FINAL = "final"
PARTIAL = ".partial"

# Status words: a climb keeps, discards or gives up a crash; a tree's node is ok or buggy.
KEEP, DISCARD, CRASH = "keep", "discard", "crash"
OK, BUGGY = "ok", "buggy"
MODEL, LABTUI = "model", "labtui"  # who proposed a step


def ledger_folder(strategy: str, idea: str) -> str:
    """The ledger's folder, relative to the project."""
    return f"{LEDGERS}/{strategy}-{idea}"


@dataclass
class Step:
    """One attempt of a climb or node of a tree, as the ledger keeps it."""

    step: int
    status: str  # keep | discard | crash (climb); ok | buggy (tree)
    description: str  # one line: what the change is
    change: str = ""  # what was asked of the coder
    explanation: str = ""  # what the coder said it did, in its own words
    computed: str = ""  # what changed in the code, computed from the files
    action: str = ""  # tree: draft | debug | improve
    parent: int = 0  # tree: the node it was made from (0: the project's code)
    depth: int = 0  # tree: debug steps in a row that led here
    base_commit: str = ""  # the code it was made from
    commit: str = ""  # the commit of its code ('' when the edit changed nothing)
    tip: str = ""  # where its branch ends with its results committed ('' when not kept)
    run_id: str = ""
    value: float | None = None  # the metric (None: no usable result)
    best_before: float | None = None
    new_best: bool = False
    problem: str = ""  # why it crashed or is buggy
    verdict: str = ""  # why it was kept or discarded, computed
    stderr_tail: str = ""  # the end of a failed run's standard error (what a debug step reads)
    tried: list[str] = field(default_factory=list)  # one line per edit-and-run attempt
    digest: str = ""  # of the code it ran (an identical change is never run twice)
    memory_mb: float = 0.0  # the run's peak memory: its GPUs' when it had any, else the host's
    wall_s: float = 0.0  # the whole step: proposal, edits, runs, bookkeeping
    run_s: float = 0.0  # of that, the runs themselves
    model_s: float = 0.0  # of that, waiting for the model
    tokens: int = 0
    proposer: str = MODEL  # who proposed it: the model, or labtui when the model gave nothing

    @property
    def overhead_s(self) -> float:
        """labtui's own time in the step: everything but the runs and the model's thinking."""
        return max(0.0, self.wall_s - self.run_s - self.model_s)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Noise:
    """The baseline run again with other seeds: its values (seed 0's first), the standard errors
    the runs reported of their own means (over their seeds; none when they report none), and the
    threshold a change must beat: ``sigmas`` times the larger of the two estimates of a run's
    noise, the spread of the repeats and the runs' own standard error. Repeats of a coarse
    metric (an accuracy in steps of 0.001) can tie by chance; the runs' standard error still
    says how far a single run moves."""

    values: list[float]
    sigmas: float
    commit: str = ""  # the code they ran: where the search starts
    wall_s: float = 0.0  # the repeats' time, which counts toward max_hours
    stderrs: list[float] = field(default_factory=list)

    @property
    def spread(self) -> float:
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    @property
    def reported(self) -> float:
        return statistics.fmean(self.stderrs) if self.stderrs else 0.0

    @property
    def std(self) -> float:
        """A run's noise: the larger estimate."""
        return max(self.spread, self.reported)

    @property
    def threshold(self) -> float:
        return self.sigmas * math.sqrt(2) * self.std

    def to_dict(self) -> dict[str, Any]:
        return {
            "values": self.values,
            "stderrs": self.stderrs,
            "sigmas": self.sigmas,
            "spread": self.spread,
            "reported": self.reported,
            "std": self.std,
            "threshold": self.threshold,
            "commit": self.commit,
            "wall_s": self.wall_s,
        }


@dataclass
class Final:
    """What the search ends with: the best step, its seed runs and their mean and spread."""

    best_step: int  # 0: nothing beat the baseline (the project's code is the result)
    best_value: float
    commit: str
    seeds: dict[str, list[float]] = field(default_factory=dict)  # step -> values (seed 1, 2, …)
    reason: str = ""

    def seed_values(self, step: int | None = None) -> list[float]:
        return self.seeds.get(str(self.best_step if step is None else step), [])

    @property
    def mean(self) -> float | None:
        values = self.seed_values()
        return statistics.fmean(values) if values else None

    @property
    def std(self) -> float | None:
        values = self.seed_values()
        return statistics.stdev(values) if len(values) > 1 else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean": self.mean, "std": self.std}


class SearchLedger:
    """The ledger folder of one search, in the project at ``root``."""

    def __init__(self, root: Path, strategy: str, idea: str, metric: str) -> None:
        self.root = Path(root)
        self.strategy = strategy
        self.metric = metric
        self.relative = ledger_folder(strategy, idea)
        self.folder = self.root / self.relative

    @property
    def tsv(self) -> Path:
        return self.folder / TSV

    # -- steps ----------------------------------------------------------------------------------

    def steps(self) -> list[Step]:
        """The finished steps, in order; half-written ones (a kill mid-step) are removed."""
        found: list[Step] = []
        folder = self.folder / STEPS
        for entry in sorted(folder.iterdir()) if folder.is_dir() else ():
            if entry.name.endswith(PARTIAL):
                shutil.rmtree(entry, ignore_errors=True)
                continue
            record = entry / "step.json"
            if record.is_file():
                found.append(Step.from_dict(json.loads(record.read_text(encoding="utf-8"))))
        return sorted(found, key=lambda s: s.step)

    def write_step(self, step: Step, *, diff: str = "", run_dir: Path | None = None) -> Path:
        """The step's folder, written whole (under a temporary name first)."""
        final = self.folder / STEPS / f"{step.step:04d}"
        partial = final.with_name(final.name + PARTIAL)
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        if diff:
            (partial / "change.diff").write_text(diff, encoding="utf-8")
        if run_dir is not None:
            copy_run_record(run_dir, partial / "run")
        _write_json(partial / "step.json", step.to_dict())
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
        return final

    def update_step(self, step: Step) -> None:
        """A finished step's record written anew (what is known only once it is recorded);
        its diff and run stay."""
        record = self.folder / STEPS / f"{step.step:04d}" / "step.json"
        partial = record.with_name(record.name + PARTIAL)
        _write_json(partial, step.to_dict())
        os.replace(partial, record)

    def step_run(self, step: int) -> Path:
        return self.folder / STEPS / f"{step:04d}" / "run"

    # -- noise and the end -----------------------------------------------------------------------

    def noise(self) -> Noise | None:
        data = _read_json(self.folder / "noise.json")
        if not isinstance(data, dict) or not isinstance(data.get("values"), list):
            return None
        return Noise(
            [float(v) for v in data["values"]],
            float(data.get("sigmas", 0.0)),
            str(data.get("commit", "")),
            float(data.get("wall_s", 0.0)),
            [float(v) for v in data.get("stderrs") or []],
        )

    def write_noise(self, noise: Noise) -> None:
        _write_json(self.folder / "noise.json", noise.to_dict())

    def noise_run(self, seed: int) -> Path:
        return self.folder / NOISE / f"seed_{seed}"

    def final(self) -> Final | None:
        data = _read_json(self.folder / "final.json")
        if not isinstance(data, dict) or "best_step" not in data:
            return None
        return Final(
            best_step=int(data["best_step"]),
            best_value=float(data["best_value"]),
            commit=str(data.get("commit", "")),
            seeds={str(k): [float(v) for v in vs] for k, vs in (data.get("seeds") or {}).items()},
            reason=str(data.get("reason", "")),
        )

    def write_final(self, final: Final) -> None:
        _write_json(self.folder / "final.json", final.to_dict())

    def seed_run(self, step: int, seed: int) -> Path:
        return self.folder / FINAL / f"step_{step}" / f"seed_{seed}"

    # -- the table ------------------------------------------------------------------------------

    def write_tsv(self, baseline: float, base_commit: str) -> Path:
        """results.tsv from the records: the baseline and its repeats, every step, the seeds."""
        rows = [self._columns()]
        noise = self.noise()
        base_values = noise.values if noise else [baseline]
        for seed, value in enumerate(base_values):
            what = "the project's code (run_0)" if seed == 0 else f"run_0's code with seed {seed}"
            rows.append(
                self._row(
                    "0" if seed == 0 else f"0/seed{seed}", base_commit, value, 0.0, "baseline", what
                )
            )
        steps = self.steps()
        for step in steps:
            rows.append(
                self._row(
                    str(step.step),
                    step.commit,
                    step.value,
                    step.memory_mb,
                    step.status,
                    step.description,
                    step.wall_s,
                    step.tokens,
                    step,
                )
            )
        final = self.final()
        commits = {str(step.step): step.commit for step in steps}
        for name, values in final.seeds.items() if final is not None else ():
            for seed, value in enumerate(values, 1):
                what = f"step {name}'s code with seed {seed}"
                rows.append(
                    self._row(f"{name}/seed{seed}", commits.get(name, ""), value, 0.0, "seed", what)
                )
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tsv.write_text("\n".join("\t".join(row) for row in rows) + "\n", encoding="utf-8")
        return self.tsv

    def _columns(self) -> list[str]:
        step = "node\tparent\taction" if self.strategy == "tree" else "attempt"
        return [
            *step.split("\t"),
            "commit",
            self.metric,
            "memory_mb",
            "status",
            "description",
            "wall_s",
            "tokens",
        ]

    def _row(
        self,
        name: str,
        commit: str,
        value: float | None,
        memory_mb: float,
        status: str,
        description: str,
        wall_s: float = 0.0,
        tokens: int = 0,
        step: Step | None = None,
    ) -> list[str]:
        first = [name]
        if self.strategy == "tree":
            first += [str(step.parent) if step else "", step.action if step else ""]
        return [
            *first,
            commit[:7],
            "" if value is None else f"{value:.6g}",
            f"{memory_mb:.0f}" if memory_mb else "",
            status,
            _one_line(description),
            f"{wall_s:.1f}" if wall_s else "",
            str(tokens) if tokens else "",
        ]


def copy_run_record(run_dir: Path, target: Path) -> None:
    """What a step keeps of its run folder: its numbers and its record (not its checkpoints)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in RECORD_FILES:
        source = Path(run_dir) / name
        if source.is_file():
            shutil.copy2(source, target / name)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def finite(value: Any) -> float | None:
    """A metric's value as a float, or None when it is no finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
