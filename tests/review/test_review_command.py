"""`labtui review` as a researcher types it: which use the arguments ask for (a review, the
outline, a calibration, a probe), and a review that says how far its reviewer is trusted: the
calibration measured for the same reviewer, or that it has none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TEST_API_KEY
from support.review_bench import PAPERS, ScriptedBenchReviewer, write_pdf, write_tsv_benchmark

from labtui.tui.cli import main

pytestmark = pytest.mark.usefixtures("hosted_profile")  # review on the scripted server: as hosted


MODEL = "openai/scripted-review"
ONE_REVIEWER = ["--ensemble", "1", "--reflections", "0", "--few-shot", "0"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "no paper given"),
        (["paper.pdf", "--outline", "--probe"], "--outline and --probe cannot be combined"),
        (["paper.pdf", "--calibrate", "bench"], "--calibrate reviews the benchmark's papers"),
        (["paper.pdf", "--n", "5"], "--n applies only to --calibrate"),
        (["paper.pdf", "--seed", "3", "--skip-missing"], "--seed, --skip-missing apply only"),
    ],
)
def test_arguments_that_mean_nothing_are_named_before_any_work(argv, says, capsys):
    assert main(["review", *argv]) == 2
    assert says in capsys.readouterr().err


@pytest.fixture
def scripted_reviewer(llm_server, monkeypatch) -> ScriptedBenchReviewer:
    reviewer = ScriptedBenchReviewer()
    llm_server.default("scripted-review", reviewer)
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    return reviewer


def test_a_review_says_the_calibration_of_its_own_reviewer_and_no_other(
    tmp_path: Path, scripted_reviewer, capsys
):
    paper = tmp_path / "draft.pdf"
    write_pdf(paper, PAPERS[0].text())
    assert main(["review", str(paper), "--model", MODEL, *ONE_REVIEWER]) == 0
    assert "uncalibrated reviewer" in capsys.readouterr().out

    bench = write_tsv_benchmark(tmp_path / "bench")
    calibrated = main(
        ["review", "--calibrate", str(bench), "--n", "10", "--model", MODEL, *ONE_REVIEWER]
    )
    assert calibrated == 0, capsys.readouterr().err
    assert (bench / "calibration.json").is_file()
    capsys.readouterr()

    assert main(["review", str(paper), "--model", MODEL, *ONE_REVIEWER]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "this reviewer: balanced accuracy 0.71 (95% CI" in out
    assert "on 10 bench papers" in out

    assert main(["review", str(paper), "--model", MODEL, *ONE_REVIEWER, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["calibration"]["metrics"]["balanced_accuracy"] == pytest.approx(17 / 24)

    other = main(["review", str(paper), "--model", MODEL, *ONE_REVIEWER, "--threshold", "5"])
    assert other == 0
    assert "uncalibrated reviewer" in capsys.readouterr().out, "another threshold: another reviewer"


def test_the_outline_is_printed_without_a_model(tmp_path: Path, capsys):
    paper = tmp_path / "draft.pdf"
    write_pdf(paper, PAPERS[0].text())
    assert main(["review", str(paper), "--outline"]) == 0
    listing = capsys.readouterr().out
    assert "Introduction" in listing and "Results" in listing
    assert main(["review", str(paper), "--outline", "--json"]) == 0
    outline = json.loads(capsys.readouterr().out)
    assert [h["text"] for h in outline["headings"]][-2:] == ["Introduction", "Results"]
