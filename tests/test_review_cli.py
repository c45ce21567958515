"""`labtui review PAPER.pdf`: any PDF reviewed on the NeurIPS form without a project, printed
readably or as JSON; a corrupt, empty or missing PDF is a clear error that costs no model call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import TEST_API_KEY, run_labtui
from research_script import REVIEW, fenced_json
from test_latex import GOOD_BODY, document, requires_tex

from labtui.core.latex import compile_latex


def _env(llm_server) -> dict[str, str]:
    return {
        **os.environ,
        "LABTUI_API_BASE": llm_server.url,
        "LABTUI_MODEL": "openai/scripted-review",
        "LABTUI_API_KEY": TEST_API_KEY,
    }


@pytest.fixture
def tex_pdf(tmp_path: Path) -> Path:
    """A paper made here with real TeX."""
    latex = tmp_path / "latex"
    latex.mkdir()
    (latex / "paper.tex").write_text(document("\\section{Introduction}\n" + GOOD_BODY))
    outcome = compile_latex(latex / "paper.tex", tmp_path / "paper.pdf", timeout_s=120)
    assert outcome.ok, outcome.log_tail
    return tmp_path / "paper.pdf"


@requires_tex
def test_a_pdf_made_with_tex_is_reviewed_and_printed_readably(tex_pdf, llm_server, tmp_path):
    llm_server.default("scripted-review", fenced_json(REVIEW))
    done = run_labtui("review", str(tex_pdf), cwd=tmp_path, env=_env(llm_server))
    assert done.returncode == 0, done.stderr
    assert "paper.pdf: Reject, overall 3/10" in done.stdout
    assert "Originality" in done.stdout and "Confidence" in done.stdout and "4/5" in done.stdout
    assert "• A single toy data set" in done.stdout
    asked = json.dumps(llm_server.requests_for("scripted-review")[0]["messages"])
    assert "two moons dataset with Adam" in asked, "the reviewer read the PDF's text"
    assert not (tmp_path / ".labtui").exists(), "no project needed, nothing written"


@requires_tex
def test_json_output_is_the_validated_form(tex_pdf, llm_server, tmp_path):
    llm_server.script(
        "scripted-review", fenced_json({**REVIEW, "Overall": 11}), fenced_json(REVIEW)
    )
    done = run_labtui("review", str(tex_pdf), "--json", env=_env(llm_server))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Overall"] == REVIEW["Overall"], "11 was asked again"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"%PDF-1.7\nthis is not really a PDF", "is empty or not a valid PDF"),
        (b"", "is empty or not a valid PDF"),
    ],
)
def test_a_corrupt_or_empty_file_is_a_clear_error_and_costs_nothing(
    content, says, llm_server, tmp_path
):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(content)
    done = run_labtui("review", str(bad), env=_env(llm_server))
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert llm_server.requests_for("scripted-review") == []


def test_a_pdf_without_text_and_a_missing_file_say_what_to_do(llm_server, tmp_path):
    import pymupdf

    blank = tmp_path / "blank.pdf"
    doc = pymupdf.open()
    doc.new_page()
    doc.save(blank)
    done = run_labtui("review", str(blank), env=_env(llm_server))
    assert done.returncode == 2 and "has no extractable text" in done.stderr
    missing = run_labtui("review", str(tmp_path / "nope.pdf"), env=_env(llm_server))
    assert missing.returncode == 2 and "check the path" in missing.stderr


def test_without_a_model_the_error_says_how_to_name_one(tex_pdf, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LABTUI_MODEL"}
    done = run_labtui("review", str(tex_pdf), env=env)
    assert done.returncode == 2 and "no reviewer model given" in done.stderr
    assert "--model" in done.stderr
