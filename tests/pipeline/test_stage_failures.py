"""Weak models and broken artifacts, stage by stage: each is repaired, re-asked, or fails the stage
with a clear message — never a crash, never a silent carry-on."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY, wire_project
from support.research_script import (
    IDEA,
    REVIEW,
    MoonsResearch,
    fenced_json,
    last_user_text,
    whole_file_edit,
)

from labtui.core.errors import LLMError, StageFailed
from labtui.core.events import CompileResult, StageFinished
from labtui.core.pipeline.session import Session
from labtui.core.review.reviewer import review_text
from labtui.core.stage_context import StageContext
from labtui.core.stages import compile as compile_stage
from labtui.core.stages import experiments as experiments_stage
from labtui.core.stages import ideas as ideas_stage
from labtui.core.stages import plots as plots_stage
from labtui.core.steps.baseline import run_baseline
from labtui.core.workspace.project import Project

BROKEN_TEX = r"""\documentclass{article}
\begin{document}
Our optimiser is \adamw{} with weight decay.
\end{document}
"""


@pytest.fixture
def session(tmp_path, llm_server, arxiv_server, monkeypatch):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "p", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url)
    session = Session.open(project.root)
    session.events = []
    session.bus.subscribe(session.events.append)
    return session


def context(session, stage: str) -> StageContext:
    return session.context_for(stage)


def test_broken_latex_is_repaired_from_the_parsed_error(session, llm_server):
    root = session.project.root
    (root / "latex" / "template.tex").write_text(BROKEN_TEX)

    def fix(request):
        assert "Undefined control sequence" in last_user_text(
            request
        ) and "line 3" in last_user_text(request)
        return whole_file_edit(
            "latex/template.tex", BROKEN_TEX.replace(r"\adamw{}", "AdamW"), "Fixed."
        )

    llm_server.default("scripted-writeup", fix)
    output = compile_stage.run(context(session, "compile"))
    results = [e for e in session.events if isinstance(e, CompileResult)]
    assert [r.ok for r in results] == [False, True]
    assert results[0].errors[0]["line"] == 3
    assert output.result.pages == 1 and (root / "paper.pdf").exists()
    assert "compile: fix LaTeX" in session.project.repo.git.log("--format=%s")


def test_latex_that_stays_broken_fails_the_stage_and_keeps_the_last_pdf(session, llm_server):
    root = session.project.root
    (root / "paper.pdf").write_bytes(b"%PDF-1.4 last good paper")
    (root / "latex" / "template.tex").write_text(BROKEN_TEX)
    llm_server.default("scripted-writeup", "I am not sure what to change.")
    with pytest.raises(StageFailed, match=r"does not compile .*Undefined control sequence") as info:
        compile_stage.run(context(session, "compile"))
    assert "latex/template.tex" in info.value.hint
    assert (root / "paper.pdf").read_bytes() == b"%PDF-1.4 last good paper"


def test_an_experiment_that_keeps_failing_gets_its_error_back_then_fails_the_stage(
    session, llm_server
):
    root = session.project.root
    session.config.limits.fix_attempts = 2
    run_baseline(session.project, session.emit)
    MoonsResearch(root).install(llm_server)
    (root / "ideas.json").write_text(
        json.dumps(
            [
                {
                    "Name": "wider_hidden_layer",
                    "Title": "T",
                    "Experiment": "E",
                    "Interestingness": 3,
                    "Feasibility": 3,
                    "Novelty": 3,
                }
            ]
        )
    )
    session.state.finished["novelty"] = StageFinished(
        stage="novelty", result={"idea": "wider_hidden_layer"}
    )

    def crash(request):
        code = (root / "experiment.py").read_text()
        return whole_file_edit(
            "experiment.py", code + "\nraise RuntimeError('exploding gradients')\n", "Try."
        )

    llm_server.default("scripted-experiments", crash)
    with pytest.raises(StageFailed, match="no planned run of wider_hidden_layer succeeded"):
        experiments_stage.run(context(session, "experiments"))
    prompts = [last_user_text(r) for r in llm_server.requests_for("scripted-experiments")]
    assert any("exploding gradients" in p for p in prompts), (
        "the error tail must go back to the coder"
    )
    # the failed run is kept for the record, out of the project root, and its code reverted
    record = json.loads(
        (root / ".labtui" / "failed_runs" / "run_1" / "labtui_run.json").read_text()
    )
    assert record["returncode"] != 0
    assert "exploding gradients" not in (root / "experiment.py").read_text()


def test_malformed_idea_json_is_re_asked_then_fails_clearly(session, llm_server):
    # Without seed ideas to fall back on (tests/stages/test_ideas.py covers the fallback).
    (session.project.root / "seed_ideas.json").write_text("[]")
    llm_server.default("scripted-ideas", "Sure! Here are some great ideas: {Name: oops")
    with pytest.raises(LLMError, match="scripted-ideas") as info:
        ideas_stage.run(context(session, "ideas"))
    assert info.value.hint
    assert len(llm_server.requests_for("scripted-ideas")) == 1 + session.config.llm.reasks


def test_out_of_range_review_score_is_re_asked_never_clamped(session, llm_server):
    llm_server.script(
        "scripted-review", fenced_json({**REVIEW, "Overall": 12}), fenced_json(REVIEW)
    )
    ctx = context(session, "review")
    paper = "A paper about the width of an MLP on two moons."  # what REVIEW's points name
    review = review_text(ctx.llm(role="reviewer"), ctx.prompt, paper)
    assert review.overall == REVIEW["Overall"]
    second = last_user_text(llm_server.requests_for("scripted-review")[1])
    assert "Overall" in second and "12" in second


def test_a_baseline_without_means_fails_the_stage_clearly(session):
    root = session.project.root
    (root / "run_0").mkdir()
    (root / "run_0" / "final_info.json").write_text('{"moons": {"accuracy": 0.9}}')
    (root / "ideas.json").write_text(json.dumps([{**IDEA, "status": "novel"}]))
    session.state.finished["novelty"] = StageFinished(
        stage="novelty", result={"idea": IDEA["Name"]}
    )
    with pytest.raises(StageFailed, match=r"baseline is unusable: .*\"means\"") as info:
        experiments_stage.run(context(session, "experiments"))
    assert "run_0" in info.value.hint


def test_a_paper_over_the_page_limit_goes_back_to_be_shortened(session, llm_server):
    root = session.project.root
    long_tex = BROKEN_TEX.replace(r"\adamw{}", "AdamW" + "\n\n\\newpage\nMore.\n" * 2)
    (root / "latex" / "template.tex").write_text(long_tex)
    session.config.limits.page_limit = 1
    asked = []

    def shorten(request):
        asked.append(last_user_text(request))
        return whole_file_edit(
            "latex/template.tex", BROKEN_TEX.replace(r"\adamw{}", "AdamW"), "Cut."
        )

    llm_server.default("scripted-writeup", shorten)
    output = compile_stage.run(context(session, "compile"))
    assert "more than [limits] page_limit = 1" in asked[0]
    results = [e for e in session.events if isinstance(e, CompileResult)]
    assert [r.pages for r in results] == [3, 1]
    assert output.result.pages == 1 and output.result.problems == []


def test_plots_that_keep_failing_leave_plot_py_and_the_figures_as_they_last_worked(
    session, llm_server
):
    root = session.project.root
    session.config.limits.fix_attempts = 2
    run_baseline(session.project, session.emit)
    good_plot = (root / "plot.py").read_text()
    (root / "old_figure.png").write_bytes(b"\x89PNG last good figure")
    session.project.commit("test: a figure that worked")

    def broken(request):
        if "Describe each figure" in json.dumps(request["messages"]):
            described = "training loss of the baseline, from the plot that last worked"
            return fenced_json({"figures": {"old_figure.png": described}})
        broken_code = (root / "plot.py").read_text() + (
            "\nimport pathlib\npathlib.Path('half.png').write_bytes(b'x')\nraise SystemExit(3)\n"
        )
        return whole_file_edit("plot.py", broken_code, "Try this.")

    llm_server.default("scripted-plots", broken)
    output = plots_stage.run(context(session, "plots"))
    assert output.result.plot_failed is True
    assert (root / "plot.py").read_text() == good_plot
    assert not (root / "half.png").exists(), "a failed attempt's figure is not kept"
    assert (root / "old_figure.png").read_bytes() == b"\x89PNG last good figure"
    assert output.result.figures == ["old_figure.png"]
    assert "plots: plot.py failed (exit status 3); plot.py and figures as of" in (
        session.project.repo.git.log("--format=%s")
    )
