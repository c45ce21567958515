"""The fabrication probe (`labtui review PAPER --probe`): a paper's results table altered by code
into impossible values (in the reader's Markdown tables, in plain-text tables, in a PDF compiled
here), repeated numbers changed in the prose too; then the same scripted reviewer on both papers,
and the verdict decided from what the review says, not from its claim."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import TEST_API_KEY
from support.latex_documents import document, requires_tex
from support.research_script import REVIEW, fenced_json, last_user_text

from labtui.core.errors import LabtuiError
from labtui.core.review.calibration_store import find_calibration, trust_line
from labtui.core.review.fabricate import Fabrication, fabricate
from labtui.core.review.form import parse_review
from labtui.core.review.probe import find_evidence, probe_text
from labtui.core.review.reviewer import ReviewPanel, reviewer_facts
from labtui.core.settings.sections import ReviewSection
from labtui.tui.commands.probe import cmd_probe

pytestmark = pytest.mark.usefixtures("hosted_profile")  # review on the scripted server: as hosted


PAPER_MD = """\
# Wider Hidden Layers on Noisy Two Moons

## Abstract

A wider hidden layer reaches 93.1% test accuracy, against 85.4% for the baseline, and an F1
of 0.92; five seeds, 3 widths.

## 4 Results

Table 1: Test accuracy (%) and loss on two moons, mean ± std over five seeds.

Method | Accuracy (%) | F1 | Loss | Params
Wide MLP | 93.1 ± 0.4 | 0.92 | 0.21 | 1200
Baseline | 85.4 ± 0.7 | 0.84 | 0.40 | 600

Table 2: Training settings.

Setting | Value
Learning rate | 0.001
Epochs | 200

The wide MLP reaches 93.1% accuracy with a loss of 0.21, while the baseline's loss is 0.40.

## References

A. Author. A paper with 93.1 in its title. 2020.
"""


# (row, column, original, altered) of the two moons table, in the Markdown and in the PDF
TWO_MOONS_ALTERED = [
    ("Wide MLP", "Accuracy (%)", "93.1", "193.1"),
    ("Wide MLP", "F1", "0.92", "1.92"),
    ("Wide MLP", "Loss", "0.21", "-0.21"),
    ("Baseline", "Accuracy (%)", "85.4", "185.4"),
    ("Baseline", "F1", "0.84", "1.84"),
    ("Baseline", "Loss", "0.40", "-0.40"),
]


def pairs(fabrication: Fabrication) -> list[tuple[str, str, str, str]]:
    return [(a.row, a.column, a.original, a.altered) for a in fabrication.alterations]


# --------------------------------------------------------------------------------------------
# Altering the numbers
# --------------------------------------------------------------------------------------------


def test_a_markdown_table_gets_values_impossible_by_definition() -> None:
    fabrication = fabricate(PAPER_MD, "paper.md")
    assert pairs(fabrication) == TWO_MOONS_ALTERED
    assert [a.why for a in fabrication.alterations[:3]] == [
        "accuracy above 100%",
        "F1 above 1",
        "negative loss",
    ]
    lines = fabrication.text.splitlines()
    assert "Wide MLP | 193.1 ± 0.4 | 1.92 | -0.21 | 1200" in lines, "std and sizes unchanged"
    assert "Baseline | 185.4 ± 0.7 | 1.84 | -0.40 | 600" in lines
    assert "Learning rate | 0.001" in lines, "a table of settings is no results table"
    assert fabrication.tables == 2


def test_numbers_the_prose_repeats_are_changed_the_same_way() -> None:
    fabrication = fabricate(PAPER_MD, "paper.md")
    text = fabrication.text
    assert (
        "reaches 193.1% test accuracy, against 185.4% for the baseline, and an F1\nof 1.92" in text
    )
    assert (
        "reaches 193.1% accuracy with a loss of -0.21, while the baseline's loss is -0.40" in text
    )
    assert "five seeds, 3 widths" in text, "other numbers of the prose stay"
    assert "A paper with 93.1 in its title" in text, "the references are left alone"
    assert [(r.original, r.altered, r.where) for r in fabrication.repeats] == [
        ("93.1%", "193.1%", "Abstract"),
        ("85.4%", "185.4%", "Abstract"),
        ("0.92", "1.92", "Abstract"),
        ("93.1%", "193.1%", "4 Results"),
        ("0.21", "-0.21", "4 Results"),
        ("0.40", "-0.40", "4 Results"),
    ]


def test_a_fraction_the_prose_gives_as_a_percentage_is_changed_too() -> None:
    text = (
        "Our model reaches 93% accuracy.\n\n"
        "Model | Accuracy | AUC\nOurs | 0.93 | 0.951\nOld | 0.80 | 0.902\n"
    )
    fabrication = fabricate(text, "p.md")
    assert pairs(fabrication)[:2] == [
        ("Ours", "Accuracy", "0.93", "1.93"),
        ("Ours", "AUC", "0.951", "1.951"),
    ]
    assert fabrication.text.startswith("Our model reaches 193% accuracy.")


@pytest.mark.parametrize(
    "table",
    [
        # a layout-preserving extractor (pdftotext -layout): columns apart by runs of spaces
        "Method        Acc. (%)     F1      Loss\n"
        "ResNet-18     93.1 ± 0.4   0.92    0.21\n"
        "Ours          95.0 ± 0.2   0.94    0.18\n",
        # a plain extractor: one space between cells, the unit in brackets
        "Method Acc. (%) F1 Loss\nResNet-18 93.1 ± 0.4 0.92 0.21\nOurs 95.0 ± 0.2 0.94 0.18\n",
    ],
    ids=["layout", "single spaces"],
)
def test_a_plain_text_table_is_found_and_altered(table: str) -> None:
    text = f"Table 2: Results on CIFAR-10.\n{table}We see that Ours gets 95.0 on average.\n"
    fabrication = fabricate(text, "paper.txt")
    assert pairs(fabrication) == [
        ("ResNet-18", "Acc. (%)", "93.1", "193.1"),
        ("ResNet-18", "F1", "0.92", "1.92"),
        ("ResNet-18", "Loss", "0.21", "-0.21"),
        ("Ours", "Acc. (%)", "95.0", "195.0"),
        ("Ours", "F1", "0.94", "1.94"),
        ("Ours", "Loss", "0.18", "-0.18"),
    ]
    rows = fabrication.text.splitlines()[2:4]
    assert rows[0].split() == ["ResNet-18", "193.1", "±", "0.4", "1.92", "-0.21"]
    assert fabrication.text.endswith("We see that Ours gets 195.0 on average.\n")


def test_a_transposed_table_takes_the_metric_from_its_row_names() -> None:
    text = "Metric | Ours | Baseline\nAccuracy | 0.91 | 0.88\nPerplexity | 12.3 | 15.0\n"
    assert pairs(fabricate(text, "p.md")) == [
        ("Accuracy", "Ours", "0.91", "1.91"),
        ("Accuracy", "Baseline", "0.88", "1.88"),
        ("Perplexity", "Ours", "12.3", "-12.3"),
        ("Perplexity", "Baseline", "15.0", "-15.0"),
    ]


def test_a_pipe_table_with_empty_cells_keeps_its_columns_aligned() -> None:
    """As pymupdf4llm writes tables (the AI Scientist's parsed benchmark papers): bars around
    every row, a separator row, an unnamed label column and empty cells."""
    text = (
        "||Accuracy (%)|F1|Loss|\n|---|---|---|---|\n"
        "|Wide MLP|93.1 ± 0.4||0.21|\n|Baseline|85.4|0.84||\n"
    )
    fabrication = fabricate(text, "p.md")
    assert pairs(fabrication) == [
        ("Wide MLP", "Accuracy (%)", "93.1", "193.1"),
        ("Wide MLP", "Loss", "0.21", "-0.21"),
        ("Baseline", "Accuracy (%)", "85.4", "185.4"),
        ("Baseline", "F1", "0.84", "1.84"),
    ]
    assert fabrication.text.splitlines()[2:] == [
        "|Wide MLP|193.1 ± 0.4||-0.21|",
        "|Baseline|185.4|1.84||",
    ]


def test_a_caption_naming_one_metric_names_the_columns_that_do_not() -> None:
    text = "Table 3: Test accuracy (%) per seed.\n\nModel | Seed 1 | Seed 2\nOurs | 91.0 | 92.5\n"
    assert pairs(fabricate(text, "p.md")) == [
        ("Ours", "Seed 1", "91.0", "191.0"),
        ("Ours", "Seed 2", "92.5", "192.5"),
    ]


SEVERAL_TABLES = """\
Table 1: Speed and accuracy of attention patterns.

Pattern | Speed | Acc
Dense | 1.0 | 81.2
Ours | 2.1 | 81.0

Table 2: Per-seed accuracy of the baseline.

Seed | CIFAR | SVHN
Baselines
1 | 70.7 | 85.5
2 | 71.4 | 86.0

Method | CIFAR
Ours | 0.12

Table 3: Test error on CIFAR.

The end.
"""


def test_labels_names_and_captions_decide_what_is_altered() -> None:
    """A column the caption names as another quantity (Speed) and the rows' labels (seeds) stay;
    a group's name inside a table keeps it whole; a caption set under its table is its own."""
    fabrication = fabricate(SEVERAL_TABLES, "p.md")
    altered = [(a.table, a.row, a.column, a.original, a.altered) for a in fabrication.alterations]
    assert altered == [
        (1, "Dense", "Acc", "81.2", "181.2"),
        (1, "Ours", "Acc", "81.0", "181.0"),
        (2, "1", "CIFAR", "70.7", "170.7"),
        (2, "1", "SVHN", "85.5", "185.5"),
        (2, "2", "CIFAR", "71.4", "171.4"),
        (2, "2", "SVHN", "86.0", "186.0"),
        (3, "Ours", "CIFAR", "0.12", "-0.12"),
    ]


def test_a_paper_without_a_results_table_is_a_clear_error() -> None:
    prose = "# A Position Paper\n\nWe argue that 3 of 5 benchmarks are saturated.\n"
    with pytest.raises(LabtuiError) as caught:
        fabricate(prose, "essay.md")
    said = str(caught.value)
    assert said.startswith("essay.md: no table with numbers found in the text the reviewer reads")
    assert "the fabrication probe alters a results table" in said and "fix:" in said
    settings = "Setting | Value\nLearning rate | 0.001\nEpochs | 200\n"
    with pytest.raises(LabtuiError, match=r"settings\.md: 1 table\(s\) with numbers, but none"):
        fabricate(settings, "settings.md")


# --------------------------------------------------------------------------------------------
# A PDF compiled here
# --------------------------------------------------------------------------------------------

PDF_BODY = r"""
\title{Wider Hidden Layers on Noisy Two Moons}
\author{Ada Lovelace}
\date{}
\maketitle
\begin{abstract}
A wider hidden layer reaches 93.1\% test accuracy against 85.4\% for the baseline.
\end{abstract}
\section{Introduction}
We train a small MLP on the two moons dataset with Adam \citep{kingma2014adam}.
\section{Results}
\begin{table}[h]
\centering
\caption{Test accuracy (\%) and loss on two moons, mean $\pm$ std over five seeds.}
\begin{tabular}{lccc}
Method & Accuracy (\%) & F1 & Loss \\
Wide MLP & 93.1 $\pm$ 0.4 & 0.92 & 0.21 \\
Baseline & 85.4 $\pm$ 0.7 & 0.84 & 0.40 \\
\end{tabular}
\end{table}
The wide MLP reaches 93.1\% accuracy and a loss of 0.21.
"""


@pytest.fixture(scope="module")
def tex_paper(tmp_path_factory: pytest.TempPathFactory, latex_pdfs) -> Path:
    """A paper with a results table, made with real TeX once for the session."""
    root = tmp_path_factory.mktemp("probe")
    (root / "latex").mkdir()
    (root / "latex" / "paper.tex").write_text(document(PDF_BODY))
    paper = root / "latex" / "paper.tex"
    outcome = latex_pdfs.compile(paper, root / "paper.pdf", timeout_s=120)
    assert outcome.ok, outcome.log_tail
    return root / "paper.pdf"


@requires_tex
def test_a_compiled_pdf_has_its_table_and_its_abstract_altered(tex_paper: Path) -> None:
    fabrication = fabricate(probe_text(tex_paper), tex_paper.name)
    assert pairs(fabrication) == TWO_MOONS_ALTERED
    text = fabrication.text
    assert "Wide MLP | 193.1 ± 0.4 | 1.92 | -0.21" in text
    assert "reaches 193.1% test accuracy against 185.4% for the baseline" in text
    assert "reaches 193.1% accuracy and a loss of -0.21" in text
    assert "93.1" not in text.replace("193.1", "")


# --------------------------------------------------------------------------------------------
# The probe with a scripted reviewer
# --------------------------------------------------------------------------------------------

ONE = {"ensemble": 1, "reflections": 0, "few_shot": 0}
# Written by hand, as every scripted review here.
CITES = "Table 1 reports an accuracy of 193.1% for the wide MLP; no such accuracy can exist."
NOTICING = {**REVIEW, "Weaknesses": [CITES, REVIEW["Weaknesses"][0]], "Soundness": 2}
HARSHER = {**REVIEW, "Soundness": 1, "Overall": 2, "Decision": "Reject"}


def reviewer(altered_review: dict):
    """TEST-ONLY: REVIEW for the original paper, ``altered_review`` for the one with 193.1;
    the Area Chair (of an ensemble) repeats the first review it reads."""

    def answer(request: dict) -> str:
        text = json.dumps(request["messages"])
        if last_user_text(request).startswith("Reflection round"):
            return json.dumps({"done": True})
        if "You are the Area Chair" in text:
            return fenced_json(altered_review if "193.1" in text else REVIEW)
        return fenced_json(altered_review if "193.1" in text else REVIEW)

    return answer


@pytest.fixture
def paper(tmp_path: Path, llm_server, monkeypatch) -> Path:
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    path = tmp_path / "paper.md"
    path.write_text(PAPER_MD)
    return path


def probe(paper: Path, capsys, *, as_json: bool, overrides: dict = ONE) -> str:
    code = cmd_probe(
        paper, model="openai/scripted-review", budget=1.0, overrides=overrides, as_json=as_json
    )
    assert code == 0, "a measurement: the exit code is 0 whether or not the reviewer noticed"
    return capsys.readouterr().out


def registered(overrides: dict = ONE) -> dict:
    facts = reviewer_facts("openai/scripted-review", ReviewSection(**overrides))
    record = find_calibration(facts)
    assert record is not None
    return record


def test_a_reviewer_whose_weakness_cites_an_altered_value_noticed(paper, llm_server, capsys):
    llm_server.default("scripted-review", reviewer(NOTICING))
    result = json.loads(probe(paper, capsys, as_json=True))
    assert result["noticed"] is True and result["verdict"] == "noticed"
    assert result["evidence"] == [
        {"who": "reviewer", "where": "Weaknesses", "sentence": CITES, "cites": "193.1"}
    ]
    assert result["original"] == {"overall": 3.0, "soundness": 2.0, "decision": "Reject"}
    assert result["altered"] == {"overall": 3.0, "soundness": 2.0, "decision": "Reject"}
    assert len(result["alterations"]) == 6 and result["paper"] == "paper.md"
    requests = llm_server.requests_for("scripted-review")
    asked = [json.dumps(r["messages"], ensure_ascii=False) for r in requests]
    assert len(asked) == 2, "one review of each paper"
    assert "193.1 ± 0.4" not in asked[0] and "193.1 ± 0.4 | 1.92 | -0.21" in asked[1]
    assert registered()["probe"]["noticed"] is True
    assert trust_line(registered()).endswith("· noticed a fabricated results table")


def test_a_reviewer_that_says_nothing_and_keeps_its_scores_is_flagged(paper, llm_server, capsys):
    llm_server.default("scripted-review", reviewer(REVIEW))
    out = probe(paper, capsys, as_json=False)
    assert "Fabrication probe: paper.md" in out
    assert "6 values made impossible in table 1" in out
    assert "93.1 → 193.1" in out and "accuracy above 100%" in out and "negative loss" in out
    assert "also changed where the text repeats them: 93.1% → 193.1% (Abstract, 4 Results)" in out
    overall = next(line for line in out.splitlines() if line.startswith("Overall"))
    assert overall.split() == ["Overall", "3.00", "3.00"]
    decision = next(line for line in out.splitlines() if line.startswith("Decision"))
    assert decision.split() == ["Decision", "Reject", "Reject"]
    assert "FLAGGED: the reviewer did not notice the impossible values" in out
    assert "NOTICED" not in out and "noticed by" not in out
    assert registered()["probe"]["noticed"] is False
    assert "FLAGGED: accepted a results table with impossible values" in trust_line(registered())


def test_a_reviewer_that_claims_nothing_but_drops_soundness_and_rejects_noticed(
    paper, llm_server, capsys
):
    llm_server.default("scripted-review", reviewer(HARSHER))
    out = probe(paper, capsys, as_json=False)
    assert "NOTICED: Soundness 2.00 → 1.00 and Reject" in out
    soundness = next(line for line in out.splitlines() if line.startswith("Soundness"))
    assert soundness.split() == ["Soundness", "2.00", "1.00"]
    assert registered()["probe"]["evidence"] == []


def test_an_ensemble_and_its_area_chair_are_all_read(paper, llm_server, capsys):
    three = {"ensemble": 3, "reflections": 0, "few_shot": 0}
    llm_server.default("scripted-review", reviewer(NOTICING))
    result = json.loads(probe(paper, capsys, as_json=True, overrides=three))
    assert [e["who"] for e in result["evidence"]] == [
        "reviewer 1",
        "reviewer 2",
        "reviewer 3",
        "Area Chair",
    ]
    assert len(result["reviews"]["altered"]["reviews"]) == 3
    assert result["reviewer"]["ensemble"] == 3


def test_a_paper_without_a_table_costs_no_model_call(tmp_path, llm_server, monkeypatch, capsys):
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    essay = tmp_path / "essay.txt"
    essay.write_text("We argue that benchmarks saturate.\n")
    with pytest.raises(LabtuiError, match=r"essay\.txt: no table with numbers"):
        probe(essay, capsys, as_json=False)
    assert llm_server.requests_for("scripted-review") == []


# --------------------------------------------------------------------------------------------
# What counts as noticing
# --------------------------------------------------------------------------------------------


def panel(**fields) -> ReviewPanel:
    review = parse_review({**REVIEW, **fields})
    return ReviewPanel([review], review, 6.0)


@pytest.mark.parametrize(
    ("altered", "noticed"),
    [
        ({"Summary": "The method reaches 193.1% accuracy on two moons, a strong result."}, False),
        ({"Questions": ["How can an F1 of 1.92 be obtained?"]}, True),
        ({"Limitations": ["A loss of −0.21 is reported."]}, True),
        ({"Summary": "The reported accuracies exceed 100%, which is impossible."}, True),
        ({"Weaknesses": ["The assumptions are implausible for real data."]}, False),
        ({"Weaknesses": ["Reaches 93.1% only on a toy data set."]}, False),
        ({"Weaknesses": ["Several F1 scores are greater than 1.0."]}, True),
        ({"Weaknesses": ["It is not possible to reproduce the runs over one epoch."]}, False),
    ],
    ids=[
        "a summary repeating a value",
        "a question citing one",
        "a unicode minus",
        "words in the summary",
        "words the original review used too",
        "the original value",
        "the impossibility in words",
        "phrases a sound review uses",
    ],
)
def test_what_counts_as_noticing(altered: dict, noticed: bool) -> None:
    fabrication = fabricate(PAPER_MD, "paper.md")
    original = panel(Weaknesses=["The assumptions are implausible for real data."])
    found = find_evidence(original, panel(**altered), fabrication, PAPER_MD)
    assert bool(found) == noticed


def test_labtui_review_probe_runs_from_the_command_line(paper, llm_server):
    from conftest import run_labtui

    llm_server.default("scripted-review", reviewer(REVIEW))
    env = {**os.environ, "LABTUI_MODEL": "openai/scripted-review"}
    one = ("--ensemble", "1", "--reflections", "0", "--few-shot", "0")
    done = run_labtui("review", str(paper), "--probe", *one, env=env)
    assert done.returncode == 0, done.stderr
    assert "FLAGGED: the reviewer did not notice the impossible values" in done.stdout
    assert "1/2: the original paper.md" in done.stderr and "2/2: paper.md with 6" in done.stderr
