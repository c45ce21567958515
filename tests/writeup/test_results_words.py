"""The paper's words beside its facts: its findings where the runs span several data sets
(diffusion_2d's four each report a train_loss_mean), every metric named with its data set, the
sentence of findings short enough to read, the table with all of them; and a review's refusals,
which quote the paper, are no text the paper copied."""

from __future__ import annotations

from labtui.core.events import Refused
from labtui.core.journal import Journal
from labtui.core.prose.copied import copied_text
from labtui.core.runs.effects import effects, overall
from labtui.core.writeup.project_texts import project_shingles
from labtui.core.writeup.results_table import (
    TABLE_LABEL,
    RunResults,
    finding_sentence,
    results_table,
)

DATASETS = ("moons", "circles", "line", "spiral")


def _means(shift: dict[str, float]) -> dict[str, dict[str, float]]:
    return {
        d: {"energy_distance_mean": 0.0019 + shift.get(d, 0.0), "eval_loss_mean": 0.58}
        for d in DATASETS
    }


SE = {d: {"energy_distance_stderr": 0.0001, "eval_loss_stderr": 0.0002} for d in DATASETS}


def _runs(shift: dict[str, float]) -> list[RunResults]:
    base = _means({})
    return [
        RunResults("run_0", tuple(effects(base, base, stderrs=SE, base_stderrs=SE, run="run_0"))),
        RunResults(
            "run_1",
            tuple(effects(_means(shift), base, stderrs=SE, base_stderrs=SE, run="run_1")),
        ),
    ]


def test_eight_metrics_quote_only_those_beyond_noise_each_with_its_data_set():
    run = _runs({"spiral": -0.0010})[1]
    sentence = finding_sentence(run, None)
    assert "better than run\\_0 on spiral energy\\_distance\\_mean" in sentence
    assert "spiral energy\\_distance\\_mean 0.0009000 against 0.001900" in sentence
    assert f"Table~\\ref{{{TABLE_LABEL}}} gives all 8" in sentence
    assert "moons" not in sentence, "a metric within noise is left to the table"
    assert overall(list(run.primary)).text.endswith(
        "on spiral energy_distance_mean (the other primary metrics within noise or identical)"
    )


def test_an_identical_run_points_at_the_table_and_the_table_names_every_data_set():
    runs = _runs({})
    assert finding_sentence(runs[1], None) == (
        "Run\\_1 is identical to run\\_0 on every primary metric "
        f"(Table~\\ref{{{TABLE_LABEL}}} gives all 8)."
    )
    table = results_table(runs)
    for dataset in DATASETS:
        assert f"run\\_1 & {dataset} eval\\_loss\\_mean & 0.5800" in table
    assert "\\begin{table}[tbp]" in table, "a tall table may have a page of its own"


def test_a_single_data_set_keeps_its_plain_metric_names_and_all_its_numbers():
    base = {"moons": {"test_accuracy_mean": 0.9367}}
    fell = {"moons": {"test_accuracy_mean": 0.8497}}
    run = RunResults("run_1", tuple(effects(fell, base, run="run_1")))
    assert finding_sentence(run, None) == (
        "Run\\_1 is worse than run\\_0 on test\\_accuracy\\_mean "
        "(test\\_accuracy\\_mean 0.8497 against 0.9367)."
    )


def test_a_review_refusal_quoting_the_paper_makes_no_copy_of_it(tmp_path):
    """labtui check after a review: the reviewer quoted the paper's own limitations, labtui
    refused them, and the refusal is no text the paper copied (the real refusal of issue 40's
    moons bench; a short 'summary' quoted in between had paired the quotes the wrong way)."""

    reason = (
        "Strengths item 1 ('The paper provides a clear and concise summary of its main "
        "findings') names nothing this paper contains (it has no 'summary'): say which "
        "experiment, section, table or claim of this paper it is about; Weaknesses item 1 ('The "
        "paper does not provide information about the generalization error or perfor…') names "
        "nothing this paper contains: say which experiment, section, table or claim of this "
        "paper it is about"
    )
    journal = Journal(tmp_path / ".labtui")
    journal.append(Refused(stage="review", what="answer", reason=reason))
    journal.close()
    known = project_shingles(tmp_path)
    paper = (
        "The runs do not provide information about the generalization error or the performance "
        "of the model on unseen data."
    )
    assert copied_text(paper, known) == []
    own = "Say which experiment, section, table or claim of this paper it is about."
    assert copied_text(own, known), "labtui's own words in the refusal still count"
