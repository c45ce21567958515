"""The estimate: per stage the model calls, tokens, dollars, model time and experiment time, a
low–high range, and the inputs each number was computed from, named.

A stage the journal says is done counts what it spent. A stage still to do is sized by the
calibration table (calls, tokens per call, less the project text the calibrated prompts carried),
with this project's own text in its prompts, this project's replies where it has made calls
(their sizes and re-asks against the table's, as a ratio), the model's speed measured on this
machine, and run time from the baseline's wall time. Nothing is guessed: a model never timed
gives no model time, and the estimate says how to time it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..events import Event
from ..settings.config import Config
from ..stage_list import STAGES
from .calibration import Calibration, StageCalibration, load_calibration
from .history import History, StageActual, history_of, read_estimate_events
from .project_sizes import ProjectSizes, measure_project
from .speeds import ModelSpeed, read_speeds

# How far this project's replies may pull the table's numbers (a few calls say little).
RATIO_BOUNDS = (0.25, 4.0)
CALLS_FOR_A_RATIO = 3
DOCTOR_HINT = "run `labtui doctor` to time it"
# A run made by code (settings only) costs no edit, only its analysis: one call, re-asked when
# its claims fail the checks. Measured (diffusion_2d, the 1.5B model, 2026-12-07): 6 calls for
# two runs, 11,843 tokens in and 724 out.
ANALYSIS_PROMPT_TOKENS = 2000.0
ANALYSIS_REPLY_TOKENS = 120.0


@dataclass(frozen=True)
class Range:
    low: float = 0.0
    expected: float = 0.0
    high: float = 0.0

    @classmethod
    def exactly(cls, value: float) -> Range:
        return cls(value, value, value)

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, self.expected + other.expected, self.high + other.high)

    def scaled(self, factor: float) -> Range:
        return Range(self.low * factor, self.expected * factor, self.high * factor)


@dataclass(frozen=True)
class StageEstimate:
    """One stage: what it spent (``done``) or is expected to spend."""

    stage: str
    done: bool
    model: str = ""
    calls: Range = Range()
    tokens_in: float = 0.0
    tokens_out: float = 0.0
    usd: float = 0.0
    model_s: Range = Range()  # zero where the speed is unknown (``speed_known``)
    experiment_s: Range = Range()  # experiment runs; a LaTeX compile; a done stage's other work
    speed_known: bool = True

    @property
    def wall_s(self) -> Range:
        return self.model_s + self.experiment_s


@dataclass(frozen=True)
class Estimate:
    stages: tuple[StageEstimate, ...]
    inputs: tuple[str, ...]  # each input, in words with its number and where it came from
    unknown: tuple[str, ...] = ()  # what could not be estimated, and how to learn it
    running: str = ""  # the stage under way when it was made
    running_for_s: float = 0.0
    made_at: float = field(default_factory=time.time)

    @property
    def total_s(self) -> Range:
        return sum((stage.wall_s for stage in self.stages), Range())

    @property
    def remaining_s(self) -> Range:
        """The stages not done; the one under way less the time it has run."""
        left = Range()
        for stage in self.stages:
            if stage.done:
                continue
            wall = stage.wall_s
            if stage.stage == self.running:
                spent = self.running_for_s
                wall = Range(*(max(0.0, part - spent) for part in vars(wall).values()))
            left = left + wall
        return left

    @property
    def tokens(self) -> tuple[float, float]:
        return sum(s.tokens_in for s in self.stages), sum(s.tokens_out for s in self.stages)

    @property
    def usd(self) -> float:
        return sum(stage.usd for stage in self.stages)

    @property
    def unknown_speed(self) -> bool:
        return any(not stage.speed_known for stage in self.stages if not stage.done)

    def left_undone(self) -> list[str]:
        return [stage.stage for stage in self.stages if not stage.done]


@dataclass(frozen=True)
class Facts:
    """Everything an estimate is computed from."""

    config: Config
    sizes: ProjectSizes
    history: History
    speeds: dict[str, ModelSpeed]
    calibration: Calibration
    now: float


def estimate_project(root: Path, config: Config, events: list[Event] | None = None) -> Estimate:
    """The estimate of the project at ``root`` as it stands (``events``: its journal's, when
    the caller has them; else read)."""
    if events is None:
        events = read_estimate_events(root)
    facts = Facts(
        config=config,
        sizes=measure_project(root, config),
        history=history_of(events),
        speeds=read_speeds(),
        calibration=load_calibration(),
        now=time.time(),
    )
    return estimate(facts)


def estimate(facts: Facts) -> Estimate:
    history, sizes = facts.history, facts.sizes
    reply_ratio, calls_ratio = _project_ratios(facts)
    stages = tuple(
        _spent(history.stages.get(stage, StageActual(stage)), facts)
        if stage in history.done
        else _expected(stage, facts, reply_ratio, calls_ratio)
        for stage in STAGES
    )
    inputs = _inputs(facts, stages, reply_ratio, calls_ratio)
    unknown = tuple(
        dict.fromkeys(
            f"the speed of {stage.model or 'the model'} on this machine: never timed; {DOCTOR_HINT}"
            for stage in stages
            if not stage.speed_known
        )
    )
    if not sizes.run0_s:
        unknown += ("the experiments' run time: no baseline (run_0) has run yet",)
    running_for = max(0.0, facts.now - history.running_since) if history.running else 0.0
    return Estimate(stages, inputs, unknown, history.running, running_for, made_at=facts.now)


def _spent(actual: StageActual, facts: Facts) -> StageEstimate:
    other = max(0.0, actual.wall_s - actual.model_s)
    return StageEstimate(
        stage=actual.stage,
        done=True,
        model=_model_name(facts.config, actual.stage),
        calls=Range.exactly(actual.calls),
        tokens_in=actual.tokens_in,
        tokens_out=actual.tokens_out,
        usd=actual.usd,
        model_s=Range.exactly(actual.model_s),
        experiment_s=Range.exactly(other),
    )


def _expected(stage: str, facts: Facts, reply_ratio: float, calls_ratio: float) -> StageEstimate:
    calibrated = facts.calibration.stage(stage, facts.sizes.chars_per_token)
    calls = _calls(stage, calibrated, facts).scaled(calls_ratio)
    prompt = calibrated.prompt_tokens_per_call + facts.sizes.tokens(calibrated.reads)
    reply = calibrated.reply_tokens_per_call * reply_ratio
    analyses = _analysis_calls(stage, facts)
    if analyses.high:  # runs made by code: their analyses, at their own size
        total = calls.expected + analyses.expected
        if total:
            prompt = (calls.expected * prompt + analyses.expected * ANALYSIS_PROMPT_TOKENS) / total
            reply = (calls.expected * reply + analyses.expected * ANALYSIS_REPLY_TOKENS) / total
        calls = calls + analyses
    model = _model_name(facts.config, stage)
    speed = facts.speeds.get(model)
    known = calls.high == 0 or (speed is not None and speed.known)
    per_call = prompt / speed.prompt_tps + reply / speed.output_tps if speed and known else 0.0
    return StageEstimate(
        stage=stage,
        done=False,
        model=model,
        calls=calls,
        tokens_in=calls.expected * prompt,
        tokens_out=calls.expected * reply,
        usd=calls.expected * _usd_per_call(facts.config, stage, prompt, reply),
        model_s=calls.scaled(per_call),
        experiment_s=_experiment_s(stage, calibrated, facts),
        speed_known=known,
    )


def _calls(stage: str, calibrated: StageCalibration, facts: Facts) -> Range:
    calls = Range(calibrated.calls_low, calibrated.calls, calibrated.calls_high)
    if stage != "experiments":
        return calls
    per_run = calls.scaled(1 / _calibrated_runs(facts.calibration))
    runs = _runs(facts)
    if facts.config.search is None and facts.sizes.settings_runs:
        runs = Range.exactly(max(0, facts.sizes.planned_runs - facts.sizes.settings_runs))
    return Range(per_run.low * runs.low, per_run.expected * runs.expected, per_run.high * runs.high)


def _analysis_calls(stage: str, facts: Facts) -> Range:
    """The calls of the planned runs made by code: one analysis each, re-asked up to [llm]
    reasks times (none before the plan, or under a search)."""
    if stage != "experiments" or facts.config.search is not None:
        return Range()
    made = float(facts.sizes.settings_runs)
    return Range(made, 2 * made, made * (1 + max(0, facts.config.llm.reasks)))


def _calibrated_runs(calibration: Calibration) -> float:
    runs = [run.planned_runs for run in calibration.runs]
    return max(1.0, sum(runs) / len(runs)) if runs else 1.0


def _runs(facts: Facts) -> Range:
    """Runs the experiments make: the plan's (or, before it, one to [limits] max_runs); a
    search's attempts, its baseline repeats and seed runs."""
    config = facts.config
    search = config.search
    if search is not None:
        return Range.exactly(float(search.limit + search.baseline_repeats + search.seeds))
    planned = facts.sizes.planned_runs
    if planned:
        return Range.exactly(planned)
    usual = _calibrated_runs(facts.calibration)
    return Range(1.0, usual, float(max(1, config.limits.max_runs)))


def _experiment_s(stage: str, calibrated: StageCalibration, facts: Facts) -> Range:
    if stage == "compile":  # LaTeX as measured: this project's earlier compile, else the bench's
        earlier = facts.history.stages.get("compile")
        return Range.exactly(earlier.wall_s if earlier and earlier.wall_s else calibrated.wall_s)
    if stage != "experiments":
        return Range()
    search = facts.config.search
    if search is not None:  # a climb's budget × attempts, under its hours
        return Range.exactly(
            min(search.run_budget_s * _runs(facts).expected, search.max_hours * 3600)
        )
    return _runs(facts).scaled(facts.sizes.run0_s)


def _usd_per_call(config: Config, stage: str, prompt: float, reply: float) -> float:
    spec = config.model_for(stage)
    if spec is None:
        return 0.0
    return (prompt * spec.input_usd_per_mtok + reply * spec.output_usd_per_mtok) / 1e6


def _model_name(config: Config, stage: str) -> str:
    spec = config.model_for(stage)
    return spec.name if spec is not None else ""


def _project_ratios(facts: Facts) -> tuple[float, float]:
    """This project's replies against the table's, in the stages done: (tokens written per
    call, calls per stage), each 1 until it has made a few calls."""
    done = [facts.history.stages[s] for s in facts.history.done if s in facts.history.stages]
    made = [actual for actual in done if actual.calls]
    if sum(actual.calls for actual in made) < CALLS_FOR_A_RATIO:
        return 1.0, 1.0
    ratio = facts.sizes.chars_per_token
    table = [facts.calibration.stage(actual.stage, ratio) for actual in made]
    reply = sum(a.tokens_out for a in made) / max(
        1.0, sum(c.reply_tokens_per_call * a.calls for a, c in zip(made, table, strict=True))
    )
    calls = sum(a.calls for a in made) / max(1.0, sum(c.calls for c in table))
    return _bounded(reply), _bounded(calls)


def _bounded(ratio: float) -> float:
    low, high = RATIO_BOUNDS
    return min(high, max(low, ratio))


def _inputs(
    facts: Facts, stages: tuple[StageEstimate, ...], reply_ratio: float, calls_ratio: float
) -> tuple[str, ...]:
    sizes, calibration = facts.sizes, facts.calibration
    said = [
        f"calibration: {calibration.size_class} ({calibration.describes}), "
        f"{len(calibration.runs)} bench runs of {calibration.dates}",
        f"prompts: code {sizes.code_chars:,} chars, paper template {sizes.template_chars:,} "
        f"chars, at {sizes.chars_per_token:g} chars a token",
    ]
    for model in dict.fromkeys(stage.model for stage in stages if stage.model):
        speed = facts.speeds.get(model)
        said.append(
            f"speed of {model}: "
            + (
                f"in {speed.prompt_tps:.1f} tok/s, out {speed.output_tps:.1f} tok/s "
                f"({speed.calls} timed calls, last by {speed.measured_by})"
                if speed is not None and speed.known
                else f"unknown; {DOCTOR_HINT}"
            )
        )
    spec = facts.config.model_for("experiments")
    if spec is not None and (spec.input_usd_per_mtok or spec.output_usd_per_mtok):
        said.append(
            f"price: ${spec.input_usd_per_mtok:g} in, ${spec.output_usd_per_mtok:g} out per "
            "million tokens ([models])"
        )
    elif spec is not None and spec.local is None:
        # litellm's price list costs a second to load: the estimate reads labtui.toml's only
        said.append(
            "price: none in [models] input_usd_per_mtok/output_usd_per_mtok, so $0 here "
            "(a model litellm prices is still charged and capped by [budget] usd)"
        )
    said.append(_runs_input(facts))
    said.append(f"re-asks: {calibration.reask_rate:.0%} of the table's calls refused")
    if facts.history.calls:
        refused = sum(actual.refused for actual in facts.history.stages.values())
        said.append(
            f"this project's {facts.history.calls} calls ({refused / facts.history.calls:.0%} "
            f"refused): replies ×{reply_ratio:.2f}, calls ×{calls_ratio:.2f} the table's"
        )
    return tuple(said)


def _runs_input(facts: Facts) -> str:
    runs = _runs(facts)
    baseline = f"run_0 took {facts.sizes.run0_s:.0f} s" if facts.sizes.run0_s else "no run_0 yet"
    search = facts.config.search
    if search is not None:
        return (
            f"experiments: {facts.config.experiment.strategy}, {runs.expected:.0f} runs at "
            f"most at {search.run_budget_s:.0f} s each, under {search.max_hours:g} h; {baseline}"
        )
    by_code = facts.sizes.settings_runs
    planned = (
        f"{facts.sizes.planned_runs} planned"
        + (f" ({by_code} made by code: an analysis each, no edit)" if by_code else "")
        if facts.sizes.planned_runs
        else f"not planned yet: {runs.low:.0f}–{runs.high:.0f} ([limits] max_runs)"
    )
    return f"experiments: runs {planned} × 1 seed; {baseline}"
