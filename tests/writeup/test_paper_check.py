"""``labtui check``: the moons b8 paper (Qwen2.5-Coder-1.5B, compiled and reviewed Accept 7/10 in
issue 28's bench) is named defect class by defect class, each with file, line and fix; the same
project's paper written by hand from its runs gets no gap; a .tex alone and a PDF are read too;
what cannot be checked is said, with the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.review_bench import write_pdf

from labtui.tui.commands.check import cmd_check

B8 = Path(__file__).resolve().parents[1] / "recorded" / "real_model" / "qwen15_moons_b8_paper"
BY_HAND = Path(__file__).resolve().parent / "material" / "b8_by_hand.tex"
EXIT_OK, EXIT_GAPS, EXIT_USAGE = 0, 1, 2


@pytest.fixture
def b8(tmp_path) -> Path:
    """The b8 project's files as a project (its labtui.toml all defaults)."""
    root = tmp_path / "b8"
    shutil.copytree(B8, root)
    (root / "labtui.toml").write_text("")
    return root


def checked(capsys, path: Path, as_json: bool = False) -> tuple[int, str]:
    status = cmd_check(path, as_json=as_json)
    return status, capsys.readouterr().out


def test_the_b8_paper_is_named_defect_class_by_defect_class(b8, capsys):
    status, said = checked(capsys, b8)
    assert status == EXIT_GAPS and said.rstrip().endswith("(LaTeX held to the runs of " + f"{b8})")
    tex = f"{b8}/latex/template.tex"
    for line, kind, words in (
        (77, "lost_backslash", "“\\textbf” in “extbf{Introduction}”"),  # the class, and its place
        (85, "unsupported", "it names “GPU”, but the runs' code uses no GPU"),
        (85, "unsupported", "it states 50 epochs, which no setting of the runs holds"),
        (85, "unsupported", "it says the runs used batch normalization"),
        (95, "unwritten", "The Method is too short to say anything (38 words; at least 60)"),
        (97, "promise", "“\\ The experiment will be performed as follows: 1.” promises"),
        (103, "markup", "HTML markup (“<p>”)"),
        (113, "unsupported", "it states a learning rate of 1e-3, which no setting"),
        (127, "no_results", "The Results reports no number of run_1"),
        (127, "no_table", "The Results has no table of the runs"),
        (129, "copied", "“The experiment should compare early stopping"),
        (131, "copied", "“The reader should look for the final accuracy value"),
    ):
        assert f"{tex}:{line}: {kind} (" in said and words in said, (line, kind, words)
    listed = [
        line for line in said.splitlines() if line.startswith(f"{tex}:") and "gap(s)" not in line
    ]
    assert said.count("\n    fix: ") == len(listed) >= 12, "each gap with its fix"
    status, report = checked(capsys, b8, as_json=True)
    data = json.loads(report)
    assert status == EXIT_GAPS and data["count"] == len(data["findings"]) >= 12
    kinds = {f["kind"] for f in data["findings"]}
    assert kinds >= {"lost_backslash", "unsupported", "unwritten", "promise", "markup",
                     "no_results", "no_table", "copied"}  # fmt: skip
    assert all(f["fix"] and f["line"] > 0 and f["file"] == tex for f in data["findings"])


def test_the_same_runs_written_up_by_hand_have_no_gap(b8, capsys):
    shutil.copyfile(BY_HAND, b8 / "latex" / "template.tex")
    status, said = checked(capsys, b8)
    assert status == EXIT_OK, said
    assert said.strip() == f"{b8}/latex/template.tex: no gap (LaTeX held to the runs of {b8})"
    status, report = checked(capsys, b8 / "latex" / "template.tex", as_json=True)
    assert status == EXIT_OK and json.loads(report)["findings"] == []


def test_a_tex_alone_is_read_by_its_text(tmp_path, capsys):
    paper = tmp_path / "draft.tex"
    shutil.copyfile(B8 / "latex" / "template.tex", paper)
    status, said = checked(capsys, paper)
    assert status == EXIT_GAPS and "(LaTeX, by its text alone (no project around it))" in said
    assert "HTML markup" in said and "unsupported" not in said, "no runs to hold it to"


def test_a_pdfs_text_is_read_as_a_reviewer_reads_it(tmp_path, capsys):
    pdf = tmp_path / "paper.pdf"
    write_pdf(
        pdf,
        "# Abstract\nextbfIntroduction We study early stopping on two moons and how it changes "
        "the accuracy of small networks.\n# Results\nThe reader should look for the final "
        "accuracy value in each run of the experiments here.\ndone\n",
    )
    status, said = checked(capsys, pdf)
    assert status == EXIT_GAPS and "(the text of its 1 page(s))" in said
    for kind in ("lost_backslash", "copied", "stray"):
        assert f": {kind} (" in said, kind


def test_what_cannot_be_checked_is_said_with_the_fix(tmp_path, capsys):
    assert cmd_check(tmp_path / "nowhere.tex") == EXIT_USAGE
    assert "no such file or folder" in capsys.readouterr().err
    assert cmd_check(tmp_path) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "not a labtui project (no labtui.toml)" in err and "fix: give the paper itself" in err
    (tmp_path / "notes.txt").write_text("hello")
    assert cmd_check(tmp_path / "notes.txt") == EXIT_USAGE
    assert "neither a .tex nor a PDF" in capsys.readouterr().err
    broken = tmp_path / "broken.pdf"
    broken.write_text("not a pdf")
    assert cmd_check(broken) == EXIT_USAGE
    assert "cannot read broken.pdf" in capsys.readouterr().err
