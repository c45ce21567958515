"""`labtui review --calibrate DIR`: a benchmark folder in either format (The AI Scientist's TSV,
labtui's CSV) read into rows with clear errors naming the row; the measures computed exactly; a
calibration by a scripted reviewer whose answers are known, so that each measure is checked
against its value computed by hand; the review cache, the seeded sample, the budget cap."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import TEST_API_KEY
from support.review_bench import (
    ENSEMBLE_PAPERS,
    PAPERS,
    TSV_HEADER,
    UNKNOWN,
    ScriptedBenchReviewer,
    tsv_line,
    tsv_row,
    write_csv_benchmark,
    write_tsv_benchmark,
)

from labtui.core.errors import LabtuiError, LLMError
from labtui.core.review import measures as measure
from labtui.core.review.benchmark import load_benchmark
from labtui.core.review.calibration import sample
from labtui.core.review.calibration_store import find_calibration, trust_line
from labtui.tui.commands.calibrate import cmd_calibrate

MODEL = "scripted-review"
ONE = {"ensemble": 1, "reflections": 0, "few_shot": 0, "threshold": None}

# -- the measures, by hand ------------------------------------------------------------------------

HUMAN = [True, True, True, True, False, False, False, False, False, False]
PREDICTED = [True, True, False, True, False, True, False, False, False, True]
OVERALL = [7, 6, 4, 6, 3, 6, 2, 5, 4, 8]


def test_counting_measures_are_exact_fractions():
    # TP 3, FN 1, TN 4, FP 2: recall 3/4, specificity 4/6, (3/4 + 4/6) / 2 = 17/24 exactly
    # (in floats, (3 / 4 + 2 / 3) / 2 is one bit off 17 / 24: the fractions keep it exact)
    assert measure.balanced_accuracy(HUMAN, PREDICTED) == 17 / 24
    assert measure.accuracy(HUMAN, PREDICTED) == 7 / 10
    assert measure.f1(HUMAN, PREDICTED) == 6 / 9  # 2TP / (2TP + FP + FN)
    assert measure.rate(PREDICTED) == 1 / 2 and measure.rate(HUMAN) == 2 / 5
    assert measure.mean([0.5, 1.0, 1.5]) == 1.0


def test_roc_auc_counts_each_pair_and_a_tie_as_half():
    # accepted 7, 6, 4, 6 against rejected 3, 6, 2, 5, 4, 8: 5 + 4.5 + 2.5 + 4.5 of 24 pairs
    assert measure.roc_auc(HUMAN, OVERALL) == 16.5 / 24 == 11 / 16
    assert measure.roc_auc([True, False], [5, 5]) == 0.5
    assert measure.roc_auc([True, False, False], [1, 2, 3]) == 0.0


def test_pearson_and_spearman_against_values_computed_by_hand():
    # r = sum dx dy / sqrt(sum dx^2 sum dy^2) = 1 / sqrt(1 * 1) on perfectly linear data
    assert measure.pearson([1, 2, 3], [2, 4, 6]) == 1.0
    assert measure.pearson([1, 2, 3], [6, 4, 2]) == -1.0
    # x 1..4, y 1,3,2,4: dx = -1.5,-.5,.5,1.5, dy = -1.5,.5,-.5,1.5 → 4 / sqrt(5 * 5)
    assert measure.pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, abs=1e-15)
    assert measure.ranks([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    # ranks 1, 2.5, 2.5, 4 against 1, 2, 3, 4: sum dx dy = 4.5, dx^2 = 4.5, dy^2 = 5
    assert measure.spearman([10, 20, 20, 30], [1, 2, 3, 4]) == pytest.approx(
        4.5 / math.sqrt(4.5 * 5), abs=1e-15
    )


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (lambda: measure.balanced_accuracy([True, True], [True, False]), "no rejected paper"),
        (lambda: measure.roc_auc([False, False], [3, 4]), "no accepted paper"),
        (lambda: measure.f1([False, False], [False, False]), "no Accept anywhere"),
        (lambda: measure.accuracy([], []), "no paper"),
        (lambda: measure.pearson([5, 5, 5], [1, 2, 3]), "a reviewer without variance"),
        (lambda: measure.pearson([1], [2]), "one pair"),
        (lambda: measure.spearman([1, 2], [4, 4]), "humans without variance"),
        (lambda: measure.mean([]), "nothing to average"),
        (lambda: measure.bootstrap_balanced_accuracy([True], [True], seed=1), "one class"),
    ],
)
def test_an_undefined_measure_is_none_not_a_crash(call, why):
    assert call() is None, why


def test_the_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    first = measure.bootstrap_balanced_accuracy(HUMAN, PREDICTED, seed=3)
    assert first == measure.bootstrap_balanced_accuracy(HUMAN, PREDICTED, seed=3)
    assert first != measure.bootstrap_balanced_accuracy(HUMAN, PREDICTED, seed=4)
    low, high = first
    assert 0.0 <= low < 17 / 24 < high <= 1.0
    assert measure.bootstrap_balanced_accuracy(HUMAN, HUMAN, seed=1) == (1.0, 1.0)
    assert measure.quantile([0.0, 1.0, 2.0, 3.0], 0.5) == 1.5


# -- the benchmark folder -------------------------------------------------------------------------


@pytest.fixture(params=["tsv", "csv"])
def bench(request, tmp_path: Path) -> Path:
    """The synthetic benchmark in one of its two formats."""
    if request.param == "tsv":
        return write_tsv_benchmark(tmp_path / "review_iclr_bench")
    return write_csv_benchmark(tmp_path / "synthetic_csv")


def test_both_formats_read_into_the_same_rows(bench):
    benchmark = load_benchmark(bench)
    assert [p.paper_id for p in benchmark.papers] == [p.paper_id for p in PAPERS]
    assert [p.accepted for p in benchmark.papers] == HUMAN
    assert [p.ratings for p in benchmark.papers] == [tuple(map(float, p.ratings)) for p in PAPERS]
    assert benchmark.papers[0].human_mean == 22 / 3
    assert all(f"Scripted reviewer scores for {p.paper_id}" in p.text() for p in benchmark.papers)
    if benchmark.format == "ai-scientist-tsv":
        assert benchmark.unknown_decision == 1, "Unknown is left out, as iclr_analysis.py does"
        assert benchmark.default_name == "review_iclr_bench"
    else:
        assert benchmark.papers[2].source.suffix == ".pdf", "the paper column names a PDF"
        assert benchmark.default_name == "Synthetic 2025", "the venue every row names"


def _tsv(folder: Path, rows: list[str]) -> Path:
    (folder / "iclr_parsed").mkdir(parents=True)
    for paper in PAPERS:
        (folder / "iclr_parsed" / f"{paper.paper_id}.txt").write_text(paper.text())
    (folder / "ratings_subset.tsv").write_text("\n".join(rows) + "\n")
    return folder


GOOD = [tsv_row(paper) for paper in PAPERS[:3]]
FIRST, SECOND = PAPERS[0].paper_id, PAPERS[1].paper_id


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (
            [TSV_HEADER, GOOD[0], tsv_line([SECOND, "6.0", "6.0", "Reject"])],
            f"ratings_subset.tsv line 3 (paper_id {SECOND}): 4 tab-separated columns, the "
            "header has 9",
        ),
        (
            [TSV_HEADER, tsv_line([FIRST, "6.0", "six", *[""] * 5, "Reject"])],
            f"line 2 (paper_id {FIRST}): rating 'six' in column 1 is not a number from 1 to 10",
        ),
        (
            [TSV_HEADER, GOOD[0], tsv_line([SECOND, "11.0", *[""] * 6, "Reject"])],
            f"line 3 (paper_id {SECOND}): rating '11.0' in column 0 is not a number from 1 to 10",
        ),
        (
            [TSV_HEADER, *GOOD[:2], GOOD[2].replace("Accept (Oral)", "Accept (Maybe)")],
            f"line 4 (paper_id {PAPERS[2].paper_id}): unknown decision 'Accept (Maybe)'",
        ),
        (
            [TSV_HEADER, GOOD[0], GOOD[1], GOOD[0].replace("Accept (Poster)", "Reject")],
            f"line 4 (paper_id {FIRST}): paper_id {FIRST} is already on line 2, with other "
            "ratings or another decision",
        ),
        (
            [TSV_HEADER, GOOD[0], tsv_row(UNKNOWN).replace("Unknown", "Reject")],
            f"line 3 (paper_id {UNKNOWN.paper_id}): no paper text; looked for "
            f"iclr_parsed/{UNKNOWN.paper_id}.txt, papers/{UNKNOWN.paper_id}.txt, "
            f"papers/{UNKNOWN.paper_id}.md, papers/{UNKNOWN.paper_id}.pdf",
        ),
        (
            ["paper_id\t0\t1\tverdict", GOOD[0]],
            "line 1: the header is 'paper_id\\t0\\t1\\tverdict'; it must be paper_id, then",
        ),
        ([TSV_HEADER], "ratings_subset.tsv has a header but no rows"),
        ([""], "ratings_subset.tsv is empty"),
    ],
)
def test_a_malformed_tsv_is_an_error_naming_the_row(rows, says, tmp_path):
    with pytest.raises(LabtuiError) as caught:
        load_benchmark(_tsv(tmp_path / "bench", rows))
    assert says in caught.value.message


def test_an_unknown_decision_lists_the_labels_and_a_missing_paper_names_skip_missing(tmp_path):
    bad = [TSV_HEADER, GOOD[0].replace("Accept (Poster)", "Withdrawn")]
    with pytest.raises(LabtuiError) as caught:
        load_benchmark(_tsv(tmp_path / "one", bad))
    assert "Accept (Oral), Accept (Poster), Accept (Spotlight), Accept, Reject, Unknown" in (
        caught.value.hint
    )
    missing = [TSV_HEADER, GOOD[0], tsv_row(UNKNOWN).replace("Unknown", "Reject")]
    with pytest.raises(LabtuiError) as caught:
        load_benchmark(_tsv(tmp_path / "two", missing))
    assert "--skip-missing" in caught.value.hint
    kept = load_benchmark(tmp_path / "two", skip_missing=True)
    assert [p.paper_id for p in kept.papers] == [FIRST] and kept.missing_paper == 1
    # a row repeated word for word is left out, as The AI Scientist's analysis drops it
    repeated = load_benchmark(_tsv(tmp_path / "three", [TSV_HEADER, *GOOD, GOOD[0]]))
    assert len(repeated.papers) == 3 and repeated.duplicate_row == 1


def _csv(folder: Path, text: str) -> Path:
    (folder / "papers").mkdir(parents=True)
    for paper in PAPERS:
        (folder / "papers" / f"{paper.paper_id}.md").write_text(paper.text())
    (folder / "benchmark.csv").write_text(text)
    return folder


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            f"paper_id,decision,ratings\n{FIRST},accept,6;8\n{SECOND},reject\n",
            f"benchmark.csv line 3 (paper_id {SECOND}): 2 columns, the header has 3",
        ),
        (
            f"paper_id,decision,ratings\n{FIRST},accept,6;8;x\n",
            f"line 2 (paper_id {FIRST}): rating 'x' in column ratings is not a number",
        ),
        (
            f"paper_id,decision,ratings\n{FIRST},maybe,6\n",
            f"line 2 (paper_id {FIRST}): unknown decision 'maybe'",
        ),
        (
            f"paper_id,decision,ratings,paper\n{FIRST},accept,6,pdfs/gone.pdf\n",
            f"line 2 (paper_id {FIRST}): no paper text; looked for pdfs/gone.pdf",
        ),
        ("paper_id,decision\np1,accept\n", "line 1: the header lacks ratings"),
        ("paper_id,decision,ratings,score\n", "line 1: the header has unknown score"),
        ("paper_id,decision,ratings\n\n", "benchmark.csv has a header but no rows"),
        (
            "paper_id,decision,ratings\n,accept,6\n",
            "benchmark.csv line 2: the paper_id is empty",
        ),
        (
            f"paper_id,decision,ratings\n{FIRST},unknown,6\n",
            "no paper left to review (1 row(s) with decision Unknown, 0 without a paper file)",
        ),
    ],
)
def test_a_malformed_csv_is_an_error_naming_the_row(text, says, tmp_path):
    with pytest.raises(LabtuiError) as caught:
        load_benchmark(_csv(tmp_path / "bench", text))
    assert says in caught.value.message


def test_a_folder_without_one_table_says_what_it_needs(tmp_path):
    (tmp_path / "none").mkdir()
    with pytest.raises(LabtuiError, match="holds no ratings table"):
        load_benchmark(tmp_path / "none")
    both = write_tsv_benchmark(tmp_path / "both")
    (both / "benchmark.csv").write_text("paper_id,decision,ratings\n")
    with pytest.raises(
        LabtuiError, match=r"two ratings tables: benchmark\.csv and ratings_subset\.tsv"
    ):
        load_benchmark(both)
    two = write_tsv_benchmark(tmp_path / "two")
    (two / "more.tsv").write_text(TSV_HEADER + "\n")
    with pytest.raises(LabtuiError, match=r"2 \.tsv tables: more\.tsv, ratings_subset\.tsv"):
        load_benchmark(two)
    with pytest.raises(LabtuiError, match="benchmark folder not found"):
        load_benchmark(tmp_path / "nowhere")


def test_the_sample_is_seeded_and_a_longer_one_begins_with_the_shorter():
    papers = list(range(50))
    assert sample(papers, 10, seed=1) == sample(papers, 10, seed=1)
    assert sample(papers, 10, seed=1) != sample(papers, 10, seed=2)
    assert sample(papers, 25, seed=1)[:10] == sample(papers, 10, seed=1)
    assert sorted(sample(papers, 80, seed=1)) == papers, "n above the rows: all of them"


# -- calibration with a scripted reviewer ---------------------------------------------------------


@pytest.fixture
def reviewer(llm_server, monkeypatch) -> ScriptedBenchReviewer:
    scripted = ScriptedBenchReviewer()
    llm_server.default(MODEL, scripted)
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    return scripted


def _calibrate(directory: Path, **given) -> int:
    settings = {
        "model": f"openai/{MODEL}",
        "budget": 1.0,
        "n": 100,
        "seed": 1,
        "skip_missing": False,
        "name": "",
        "out": None,
        "as_json": True,
        "overrides": ONE,
        "project": None,
        **given,
    }
    return cmd_calibrate(directory, **settings)


# The hand-computed measures of the synthetic set (see PAPERS and the tests above).
HUMAN_MEANS = [22 / 3, 17 / 3, 8, 25 / 4, 11 / 3, 16 / 3, 2, 4, 14 / 3, 3]
EXPECTED = {
    "papers": 10,
    "balanced_accuracy": 17 / 24,
    "accuracy": 7 / 10,
    "f1": 2 / 3,
    "roc_auc": 11 / 16,
    "accept_rate": 1 / 2,
    "human_accept_rate": 2 / 5,
    "ensemble_spread": 0.0,
    "mean_overall": 51 / 10,
    "rated_papers": 10,
}
# sum dx dy = 397/40, sum dx^2 = 309/10, sum dy^2 = 46729/1440: r = 1191 / sqrt(14439261)
PEARSON = 1191 / math.sqrt(14439261)
# ranks of Overall 9,7,3.5,7,2,7,1,5,3.5,10 against 9,7,10,8,3,6,1,4,5,2: 25 / sqrt(80 * 82.5)
SPEARMAN = 25 / math.sqrt(80 * 82.5)


def test_calibration_on_the_synthetic_set_gives_the_measures_computed_by_hand(
    bench, reviewer, llm_server, capsys
):
    assert _calibrate(bench) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    metrics = record["metrics"]
    assert {key: metrics[key] for key in EXPECTED} == EXPECTED
    assert metrics["pearson_r"] == pytest.approx(PEARSON, rel=1e-12)
    assert metrics["spearman_rho"] == pytest.approx(SPEARMAN, rel=1e-12)
    assert metrics["human_mean_rating"] == pytest.approx(sum(HUMAN_MEANS) / 10, rel=1e-12)
    low, high = metrics["balanced_accuracy_ci"]
    assert low < 17 / 24 < high
    by_id = {row["paper_id"]: row for row in record["papers"]}
    assert [by_id[p.paper_id]["overall"] for p in PAPERS] == OVERALL
    assert by_id[PAPERS[2].paper_id] == {
        "paper_id": PAPERS[2].paper_id,
        "human_decision": "Accept",
        "human_mean": 8.0,
        "overall": 4.0,
        "spread": 0.0,
        "decision": "Reject",
        "cached": False,
    }
    assert record["complete"] is True and record["failed"] == []
    assert record["sample"]["n"] == 100 and record["benchmark"]["sampled"] == 10
    assert sorted(record["sample"]["paper_ids"]) == sorted(p.paper_id for p in PAPERS)
    assert record["reviewer"]["model"] == f"openai/{MODEL}"
    assert (record["reviewer"]["ensemble"], record["reviewer"]["threshold"]) == (1, 6.0)
    assert record["cost"]["tokens_in"] > 0 and record["cost"]["cached_papers"] == 0
    assert len(llm_server.requests_for(MODEL)) == 10, "one review per paper"
    assert "--n 100, but the benchmark has 10 papers: reviewing all of them" in err
    assert f"{PAPERS[2].paper_id}: Overall 4.00 Reject · human Accept 8.00 · $0.0000" in err
    saved = json.loads((bench / "calibration.json").read_text())
    assert saved == record and saved["fingerprint"]
    assert find_calibration(record["reviewer"]) == saved, "registered for this reviewer"
    if record["benchmark"]["format"] == "ai-scientist-tsv":
        left_out = {"unknown_decision": 1, "missing_paper": 0, "duplicate_row": 0}
        assert record["benchmark"]["left_out"] == left_out


def test_the_table_shows_each_measure_beside_the_humans_and_the_trust_line(
    tmp_path, reviewer, capsys
):
    bench = write_tsv_benchmark(tmp_path / "review_iclr_bench")
    assert _calibrate(bench, as_json=False, name="synthetic ICLR") == 0
    out = capsys.readouterr().out
    print(out)  # the table for the closing note (pytest -s shows it)
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert any(line.startswith("balanced accuracy 0.71 (95% CI") for line in lines)
    assert "accuracy 0.70" in lines and "F1 (Accept) 0.67" in lines
    assert "ROC AUC of mean Overall 0.69" in lines
    assert "Pearson r: Overall vs human mean 0.31" in lines
    assert "accept rate 50% 40%" in lines and "mean Overall (1-10) 5.10 4.99" in lines
    assert "papers 10 (0 cached)" in lines and "cost $0.0000" in lines
    record = json.loads((bench / "calibration.json").read_text())
    assert trust_line(record) in " ".join(out.split())
    assert trust_line(record).startswith(
        "this reviewer: balanced accuracy 0.71 (95% CI "
    ) and trust_line(record).endswith(
        "on 10 synthetic ICLR papers · AUC 0.69 · accepts 50% (humans 40%)"
    )


def test_a_second_run_takes_every_review_from_the_cache(bench, reviewer, llm_server, capsys):
    assert _calibrate(bench) == 0
    first = json.loads(capsys.readouterr().out)
    asked = len(llm_server.requests)
    assert _calibrate(bench, out=bench / "again.json") == 0
    out, err = capsys.readouterr()
    second = json.loads(out)
    assert len(llm_server.requests) == asked, "no model call the second time"
    assert second["metrics"] == first["metrics"]
    assert second["cost"] == {"tokens_in": 0, "tokens_out": 0, "usd": 0.0, "cached_papers": 10}
    assert err.count(" · cached") == 10
    # other settings are another reviewer: nothing of the first is reused
    assert _calibrate(bench, overrides={**ONE, "threshold": 5.0}) == 0
    assert len(llm_server.requests) == asked + 10
    assert json.loads(capsys.readouterr().out)["metrics"]["accept_rate"] == 6 / 10


def test_a_smaller_seeded_sample_then_a_larger_one_pays_only_for_the_new_papers(
    bench, reviewer, llm_server, capsys
):
    assert _calibrate(bench, n=4, seed=7) == 0
    four = json.loads(capsys.readouterr().out)
    assert four["metrics"]["papers"] == 4 and four["benchmark"]["sampled"] == 4
    assert _calibrate(bench, n=6, seed=7) == 0
    six = json.loads(capsys.readouterr().out)
    assert six["sample"]["paper_ids"][:4] == four["sample"]["paper_ids"]
    assert six["cost"]["cached_papers"] == 4 and len(llm_server.requests) == 6


def test_an_ensemble_of_two_reports_its_spread(tmp_path, reviewer, llm_server, capsys):
    bench = write_csv_benchmark(tmp_path / "ensemble", ENSEMBLE_PAPERS)
    two = {**ONE, "ensemble": 2}
    assert _calibrate(bench, overrides=two) == 0
    record = json.loads(capsys.readouterr().out)
    rows = {row["paper_id"]: (row["overall"], row["spread"]) for row in record["papers"]}
    assert rows == {"q1": (6.0, 2.0), "q2": (5.0, 0.0), "q3": (6.5, 0.5), "q4": (3.5, 1.5)}
    metrics = record["metrics"]
    assert metrics["ensemble_spread"] == 1.0
    assert metrics["balanced_accuracy"] == 5 / 6 and metrics["accuracy"] == 3 / 4  # (1 + 2/3) / 2
    assert metrics["roc_auc"] == 2 / 3  # q1's 6 against 5, 6.5, 3.5
    assert len(llm_server.requests_for(MODEL)) == 4 * 3, "two reviewers and an Area Chair each"


def _priced_project(root: Path, url: str) -> Path:
    root.mkdir()
    (root / "labtui.toml").write_text(
        "[models]\n"
        'review = "openai/scripted-priced"\n'
        f'api_base = "{url}"\n'
        "input_usd_per_mtok = 1000.0\n"
        "output_usd_per_mtok = 1000.0\n"
        "[review]\nensemble = 1\nreflections = 0\nfew_shot = 0\n"
    )
    return root


def test_the_budget_stops_a_run_that_a_later_run_continues_from_the_cache(
    bench, llm_server, capsys, tmp_path
):
    scripted = ScriptedBenchReviewer()
    llm_server.default("scripted-priced", scripted)
    project = _priced_project(tmp_path / "project", llm_server.url)
    tiny = {"model": "", "overrides": {}, "project": project}
    assert _calibrate(bench, budget=0.000001, **tiny) == 1, "incomplete: not a success"
    out, err = capsys.readouterr()
    stopped = json.loads(out)
    assert stopped["complete"] is False and stopped["stopped"] == "budget"
    assert stopped["metrics"]["papers"] == 1 and stopped["cost"]["usd"] > 0.000001
    assert len(llm_server.requests) == 1, "no call once the budget is spent"
    assert "budget spent after 1 of 10 papers: run the same command with a larger --budget" in err
    assert trust_line(stopped).startswith("this reviewer: balanced accuracy n/a on 1 of 10 ")
    # the project's review stage is what was measured: its model, settings and profile
    facts = stopped["reviewer"]
    assert facts["model"] == "openai/scripted-priced" and facts["paper_chars"] == 16000

    assert _calibrate(bench, budget=10.0, **tiny) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["complete"] is True and done["cost"]["cached_papers"] == 1
    assert len(llm_server.requests) == 10, "the first paper was not reviewed again"
    assert {key: done["metrics"][key] for key in EXPECTED} == EXPECTED


def test_a_reviewer_that_never_answers_usably_stops_after_three_papers(
    bench, llm_server, monkeypatch
):
    from support.reviews import HAND_WRITTEN_DOTS_REVIEW

    llm_server.default(MODEL, json.dumps(HAND_WRITTEN_DOTS_REVIEW))
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    with pytest.raises(LLMError, match="no paper of the benchmark was reviewed: the reviewer"):
        _calibrate(bench)
    assert len(llm_server.requests) == 3 * 3, "three papers of three attempts each, then stop"
    assert not (bench / "calibration.json").exists()


def test_benchmark_errors_come_before_any_model_call(tmp_path, reviewer, llm_server):
    bad = _tsv(tmp_path / "bad", [TSV_HEADER, *GOOD[:2], GOOD[2].replace("Oral", "Maybe")])
    with pytest.raises(LabtuiError, match="line 4"):
        _calibrate(bad)
    assert llm_server.requests == []
