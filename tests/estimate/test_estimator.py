"""The estimator: every number computed from the inputs it names (the calibration table shipped
as data, the project's own text, its journal, the model's speed measured on this machine)."""

from __future__ import annotations

import pytest

from labtui.core.estimate.calibration import load_calibration
from labtui.core.estimate.estimator import (
    ANALYSIS_PROMPT_TOKENS,
    DOCTOR_HINT,
    Facts,
    estimate,
    estimate_project,
)
from labtui.core.estimate.history import History, history_of
from labtui.core.estimate.project_sizes import ProjectSizes
from labtui.core.estimate.render import estimate_text
from labtui.core.estimate.speeds import ModelSpeed
from labtui.core.events import (
    CheckpointDecided,
    CheckpointRequested,
    CostUpdate,
    Refused,
    StageFinished,
    StageStarted,
)
from labtui.core.settings.config import Config

MODEL = "openai/scripted"
# 100 prompt tokens a second, 10 written: numbers a reader can check by hand
SPEED = ModelSpeed(
    MODEL, calls=4, prompt_tokens=4000, prompt_s=40.0, output_tokens=400, output_s=40.0
)


def config(**prices: float) -> Config:
    made = Config()
    made.models.default = MODEL
    made.models.api_base = "http://127.0.0.1:9"
    made.models.input_usd_per_mtok = prices.get("input", 0.0)
    made.models.output_usd_per_mtok = prices.get("output", 0.0)
    return made


def facts(
    *,
    history: History | None = None,
    speeds: dict | None = None,
    planned: int = 2,
    by_code: int = 0,
    **prices,
) -> Facts:
    return Facts(
        config=config(**prices),
        sizes=ProjectSizes(
            code_chars=12_000,
            template_chars=3_000,
            planned_runs=planned,
            run0_s=30.0,
            settings_runs=by_code,
        ),
        history=history or History(),
        speeds={MODEL: SPEED} if speeds is None else speeds,
        calibration=load_calibration(),
        now=1_000_000.0,
    )


def stage_of(made, name):
    return next(stage for stage in made.stages if stage.stage == name)


def test_a_stage_to_do_is_the_calibration_with_this_projects_text_and_speed():
    made = estimate(facts(input=3.0, output=15.0))
    table = load_calibration().stage("experiments", 4.0)
    experiments = stage_of(made, "experiments")
    # runs: the plan's 2 against the table's one run each
    assert experiments.calls.expected == pytest.approx(table.calls * 2)
    prompt = table.prompt_tokens_per_call + 12_000 / 4.0  # the project's code, 4 chars a token
    assert experiments.tokens_in == pytest.approx(experiments.calls.expected * prompt)
    assert experiments.tokens_out == pytest.approx(
        experiments.calls.expected * table.reply_tokens_per_call
    )
    per_call = prompt / 100.0 + table.reply_tokens_per_call / 10.0
    assert experiments.model_s.expected == pytest.approx(experiments.calls.expected * per_call)
    assert experiments.experiment_s.expected == pytest.approx(30.0 * 2)  # run_0 × runs × 1 seed
    assert experiments.usd == pytest.approx(
        (experiments.tokens_in * 3.0 + experiments.tokens_out * 15.0) / 1e6
    )
    assert experiments.calls.low <= experiments.calls.expected <= experiments.calls.high
    # a stage that reads no project text: the table's prompts as measured
    ideas = stage_of(made, "ideas")
    assert ideas.tokens_in == pytest.approx(
        ideas.calls.expected * load_calibration().stage("ideas", 4.0).prompt_tokens_per_call
    )


def test_a_planned_run_made_by_code_costs_its_analysis_not_an_edit():
    # diffusion_2d's plan of two settings runs took 6 calls and 11.8k tokens in (2026-12-07);
    # counted as edits, the estimate said 7 calls and 44k
    table = load_calibration().stage("experiments", 4.0)
    both = stage_of(estimate(facts(planned=2, by_code=2)), "experiments")
    assert (both.calls.low, both.calls.expected, both.calls.high) == (2, 4, 2 * (1 + 2))
    assert both.tokens_in == pytest.approx(4 * ANALYSIS_PROMPT_TOKENS)
    assert both.experiment_s.expected == pytest.approx(30.0 * 2), "the runs still run"
    one = stage_of(estimate(facts(planned=2, by_code=1)), "experiments")
    assert one.calls.expected == pytest.approx(table.calls + 2)
    said = "\n".join(estimate(facts(planned=2, by_code=2)).inputs)
    assert "2 planned (2 made by code: an analysis each, no edit)" in said


def test_the_output_names_each_input():
    text = estimate_text(estimate(facts(input=3.0, output=15.0)))
    for said in (
        "small-local",
        "2026-11-28",  # the calibration's dates
        "code 12,000 chars, paper template 3,000 chars, at 4 chars a token",
        f"speed of {MODEL}: in 100.0 tok/s, out 10.0 tok/s (4 timed calls",
        "$3 in, $15 out per million tokens",
        "runs 2 planned × 1 seed; run_0 took 30 s",
    ):
        assert said in text
    header = next(line for line in text.splitlines() if line.startswith("stage"))
    assert header.split() == [
        "stage",
        "calls",
        "tok",
        "in",
        "tok",
        "out",
        "$",
        "model",
        "run/TeX",
        "total",
        "range",
    ]


def test_a_model_never_timed_has_no_model_time_and_names_doctor():
    made = estimate(facts(speeds={}))
    assert made.unknown_speed
    assert all(stage.model_s.high == 0 for stage in made.stages)
    assert any(DOCTOR_HINT in said and MODEL in said for said in made.unknown)
    text = estimate_text(made)
    assert "labtui doctor" in text and "unknown" in text
    assert "ETA" not in text, "no time left is claimed without the model's speed"


def test_before_the_plan_the_runs_span_one_to_max_runs():
    made = estimate(facts(planned=0))
    experiments = stage_of(made, "experiments")
    assert experiments.experiment_s.low == pytest.approx(30.0)
    assert experiments.experiment_s.high == pytest.approx(30.0 * Config().limits.max_runs)
    assert "not planned yet: 1–5 ([limits] max_runs)" in estimate_text(made)


def test_a_climb_is_its_run_budget_times_its_attempts():
    made_facts = facts()
    made_facts.config.experiment.strategy = "climb"
    climb = made_facts.config.climb
    climb.max_runs, climb.run_budget_s, climb.baseline_repeats, climb.seeds = 10, 60.0, 1, 1
    experiments = stage_of(estimate(made_facts), "experiments")
    assert experiments.experiment_s.expected == pytest.approx(60.0 * 12)


def journal_of_two_stages() -> list:
    """A journal as a session writes it: literature done with a checkpoint the researcher sat
    at for 500 s, ideas started and running."""

    def cost(stage, tokens_in, tokens_out, seconds, ts):
        return CostUpdate(
            stage=stage, model=MODEL, tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=0.0,
            stage_tokens_in=0, stage_tokens_out=0, stage_cost_usd=0.0, total_cost_usd=0.0,
            budget_usd=10.0, first_token_s=seconds / 2, seconds=seconds, ts=ts,
        )  # fmt: skip

    return [
        StageStarted(stage="literature", ts=100.0),
        cost("literature", 2000, 100, 20.0, 120.0),
        cost("literature", 2000, 100, 20.0, 140.0),
        Refused(stage="literature", what="summary", reason="names no paper", ts=141.0),
        cost("literature", 2000, 100, 20.0, 160.0),
        CheckpointRequested(stage="literature", checkpoint_id="c1", title="t", body="b", ts=200.0),
        CheckpointDecided(stage="literature", checkpoint_id="c1", action="approve", ts=700.0),
        StageFinished(stage="literature", status="done", summary="", ts=710.0),
        StageStarted(stage="ideas", ts=720.0),
    ]


def test_a_stage_done_counts_what_the_journal_says_it_spent():
    history = history_of(journal_of_two_stages())
    literature = history.stages["literature"]
    assert (literature.calls, literature.tokens_in, literature.tokens_out) == (3, 6000, 300)
    assert literature.refused == 1 and literature.model_s == pytest.approx(60.0)
    assert literature.wall_s == pytest.approx(110.0), "the 500 s at the checkpoint are not work"
    assert history.done == ("literature",) and history.running == "ideas"
    made = estimate(facts(history=history))
    done = stage_of(made, "literature")
    assert done.done and done.wall_s.expected == pytest.approx(110.0)
    assert made.running == "ideas" and made.remaining_s.expected < made.total_s.expected


def test_this_projects_replies_pull_the_table_by_their_ratio():
    history = history_of(journal_of_two_stages())
    made = estimate(facts(history=history))
    table = load_calibration().stage("literature", 4.0)
    reply_ratio = 300 / (table.reply_tokens_per_call * 3)
    calls_ratio = 3 / table.calls
    ideas = stage_of(made, "ideas")
    ideas_table = load_calibration().stage("ideas", 4.0)
    assert ideas.calls.expected == pytest.approx(ideas_table.calls * calls_ratio)
    assert ideas.tokens_out == pytest.approx(
        ideas.calls.expected * ideas_table.reply_tokens_per_call * reply_ratio
    )
    text = estimate_text(made)
    assert (
        f"this project's 3 calls (33% refused): replies ×{reply_ratio:.2f}, calls ×{calls_ratio:.2f}"
        in text
    )
    assert f"re-asks: {load_calibration().reask_rate:.0%} of the table's calls refused" in text


def test_a_project_with_no_history_and_no_baseline(tmp_path):
    from labtui.core.workspace.project import Project

    project = Project.create(tmp_path / "p", "moons")
    made = estimate_project(project.root, project.config)
    assert not any(stage.done for stage in made.stages)
    assert made.stages[0].stage == "literature" and made.running == ""
    assert any("no baseline (run_0)" in said for said in made.unknown)
    text = estimate_text(made)
    assert "code 12,576 chars" in text, "the moons template's experiment.py, as a prompt shows it"


def test_a_hosted_model_with_no_price_set_says_its_dollars_are_not_counted():
    text = estimate_text(estimate(facts()))
    assert "price: none in [models] input_usd_per_mtok/output_usd_per_mtok, so $0 here" in text


def test_the_headless_printer_prints_the_estimate_whole():
    import io

    from rich.console import Console

    from labtui.core.events import EstimateMade
    from labtui.tui.headless import HeadlessPrinter

    out = io.StringIO()
    text = estimate_text(estimate(facts()), "estimate before the run")
    HeadlessPrinter(Console(file=out, width=200))(EstimateMade(text=text))
    assert out.getvalue().strip() == text


def test_latex_compiles_as_measured_here_else_as_the_bench_measured():
    bench = load_calibration().stage("compile", 4.0).wall_s
    assert stage_of(estimate(facts()), "compile").wall_s.expected == pytest.approx(bench)
    failed_once = history_of(
        [
            StageStarted(stage="compile", ts=10.0),
            StageFinished(stage="compile", status="failed", summary="", ts=17.0),
        ]
    )
    compile_ = stage_of(estimate(facts(history=failed_once)), "compile")
    assert not compile_.done and compile_.wall_s.expected == pytest.approx(7.0)
