"""core.latex.compile: real TeX compiles (latexmk / pdflatex / bibtex), log parsing, chktex, checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import processes_in
from support.latex_documents import BIB, GOOD_BODY, document, requires_tex

from labtui.core.errors import LabtuiError
from labtui.core.events import CompileResult
from labtui.core.latex import chktex as chktex_module
from labtui.core.latex import compile as latex
from labtui.core.latex.bibliography import bib_text_of
from labtui.core.latex.checks import check_references, referenced_figures
from labtui.core.latex.chktex import chktex
from labtui.core.latex.compile import CompileOutcome, compile_latex, tool_available
from labtui.core.latex.log import LatexMessage, parse_blg, parse_log
from labtui.core.pdf.document import page_count, pdf_text

BN_ENTRY = r"""
@misc{ioffe2015batch,
  title         = {{Batch Normalization: Accelerating Deep Network Training by Reducing Internal Covariate Shift}},
  author        = {Sergey Ioffe and Christian Szegedy},
  year          = {2015},
  eprint        = {1502.03167},
  archivePrefix = {arXiv},
  primaryClass  = {cs.LG},
}
"""


@pytest.fixture
def paper_dir(tmp_path: Path) -> Path:
    d = tmp_path / "latex"
    d.mkdir()
    return d


# --------------------------------------------------------------------------------------------
# compile_latex with real TeX
# --------------------------------------------------------------------------------------------


@requires_tex
def test_good_document_compiles_and_installs_the_pdf(paper_dir: Path, tmp_path: Path) -> None:
    tex = paper_dir / "template.tex"
    tex.write_text(document(GOOD_BODY))
    out = tmp_path / "paper.pdf"

    outcome = compile_latex(tex, out, timeout_s=60)

    assert outcome.ok, outcome.log_tail
    assert outcome.pdf == out.resolve() and out.is_file()
    assert outcome.pages >= 1 and page_count(out) == outcome.pages
    assert outcome.errors == [] and not outcome.timed_out
    assert not [w for w in outcome.warnings if "undefined" in w.message.lower()]
    text = " ".join(pdf_text(out).split())
    assert "two moons dataset" in text
    assert "Kingma and Ba" in text  # the citation resolved through bibtex
    # build products stay in build/, the source folder stays clean
    assert sorted(p.name for p in paper_dir.iterdir()) == ["build", "template.tex"]
    # the outcome is exactly what a CompileResult event carries
    event = CompileResult(stage="compile", **outcome.to_dict())
    assert event.ok and event.pages == outcome.pages


@requires_tex
def test_undefined_control_sequence_is_an_error_with_its_line(
    paper_dir: Path, tmp_path: Path
) -> None:
    tex = paper_dir / "template.tex"
    tex.write_text(document("First line.\n\nSecond \\undefinedmacro line."))
    lines = tex.read_text().splitlines()
    expected_line = next(i for i, text in enumerate(lines, 1) if "undefinedmacro" in text)
    out = tmp_path / "paper.pdf"

    outcome = compile_latex(tex, out, timeout_s=60)

    assert not outcome.ok and outcome.pdf is None and outcome.pages == 0
    assert not out.exists()
    assert len(outcome.errors) == 1
    error = outcome.errors[0]
    assert (error.file, error.line, error.kind) == ("template.tex", expected_line, "error")
    assert "\\undefinedmacro" in error.message
    assert "undefinedmacro" in outcome.log_tail


@requires_tex
def test_failed_compile_never_touches_the_last_good_pdf(paper_dir: Path, tmp_path: Path) -> None:
    tex = paper_dir / "template.tex"
    out = tmp_path / "paper.pdf"
    tex.write_text(document(GOOD_BODY))
    assert compile_latex(tex, out, timeout_s=60).ok
    good = out.read_bytes()
    good_mtime = out.stat().st_mtime_ns

    tex.write_text(document(GOOD_BODY + "\n\\brokencommand"))
    outcome = compile_latex(tex, out, timeout_s=60)

    assert not outcome.ok
    assert out.read_bytes() == good and out.stat().st_mtime_ns == good_mtime


@requires_tex
def test_a_citation_added_to_the_filecontents_block_is_picked_up(
    paper_dir: Path, tmp_path: Path
) -> None:
    """LaTeX never overwrites a filecontents file, so a stale build/references.bib must go."""
    tex = paper_dir / "template.tex"
    out = tmp_path / "paper.pdf"
    tex.write_text(document(GOOD_BODY))
    assert compile_latex(tex, out, timeout_s=60).ok

    tex.write_text(document(GOOD_BODY + " Batch norm \\citep{ioffe2015batch}.", BIB + BN_ENTRY))
    outcome = compile_latex(tex, out, timeout_s=60)

    assert outcome.ok, outcome.log_tail
    assert not [w for w in outcome.warnings if "ioffe2015batch" in w.message], outcome.warnings
    assert "Ioffe and Szegedy" in " ".join(pdf_text(out).split())


@requires_tex
def test_undefined_citation_and_reference_are_warnings_with_lines(
    paper_dir: Path, tmp_path: Path
) -> None:
    tex = paper_dir / "template.tex"
    tex.write_text(document(GOOD_BODY + "\nSee \\citet{nosuchkey} and Figure~\\ref{fig:nope}."))
    line = next(i for i, t in enumerate(tex.read_text().splitlines(), 1) if "nosuchkey" in t)

    outcome = compile_latex(tex, tmp_path / "paper.pdf", timeout_s=60)

    assert outcome.ok  # undefined references do not stop a PDF
    cites = [w for w in outcome.warnings if "nosuchkey" in w.message and w.file == "template.tex"]
    refs = [w for w in outcome.warnings if "fig:nope" in w.message]
    assert cites and cites[0].line == line and cites[0].kind == "warning"
    assert refs and refs[0].line == line
    assert any("nosuchkey" in w.message and w.file == "bibtex" for w in outcome.warnings)


@requires_tex
def test_missing_figure_is_an_error(paper_dir: Path, tmp_path: Path) -> None:
    tex = paper_dir / "template.tex"
    tex.write_text(document(GOOD_BODY + "\n\\includegraphics{missing_figure}"))
    outcome = compile_latex(tex, tmp_path / "paper.pdf", timeout_s=60)
    assert not outcome.ok
    assert any("missing_figure" in e.message and "not found" in e.message for e in outcome.errors)


@requires_tex
@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="needs Linux /proc")
def test_timeout_kills_the_whole_process_group(paper_dir: Path, tmp_path: Path) -> None:
    tex = paper_dir / "loop.tex"
    tex.write_text(
        "\\documentclass{article}\n\\begin{document}\n\\def\\x{\\x}\\x\n\\end{document}\n"
    )
    out = tmp_path / "loop.pdf"

    outcome = compile_latex(tex, out, timeout_s=2)

    # The outcome proves the timeout ended it (TeX's loop never ends by itself); how long the
    # kill takes is the bench's to measure (tests/bench/stop_bench.py).
    assert outcome.timed_out and not outcome.ok and not out.exists()
    assert any("longer than 2 s" in e.message for e in outcome.errors)
    assert processes_in(paper_dir) == []  # latexmk and its pdflatex are both gone


@requires_tex
@pytest.mark.skipif(
    not (tool_available("pdflatex") and tool_available("bibtex")), reason="needs pdflatex+bibtex"
)
def test_without_latexmk_pdflatex_and_bibtex_do_the_job(
    paper_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latex, "tool_available", lambda name: name != "latexmk")
    tex = paper_dir / "template.tex"
    tex.write_text(document(GOOD_BODY))
    out = tmp_path / "paper.pdf"

    outcome = compile_latex(tex, out, timeout_s=60)

    assert outcome.ok, outcome.log_tail
    assert "Kingma and Ba" in " ".join(pdf_text(out).split())
    assert not [w for w in outcome.warnings if "undefined" in w.message.lower()]


def test_missing_tex_is_a_clear_error(
    paper_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(latex, "tool_available", lambda name: False)
    tex = paper_dir / "template.tex"
    tex.write_text(document(GOOD_BODY))
    with pytest.raises(LabtuiError) as info:
        compile_latex(tex, tmp_path / "paper.pdf")
    assert "latexmk" in info.value.message and "pdflatex" in info.value.message
    assert "apt-get install latexmk" in info.value.hint


def test_missing_source_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LabtuiError, match="LaTeX source not found"):
        compile_latex(tmp_path / "nope.tex", tmp_path / "paper.pdf")


# --------------------------------------------------------------------------------------------
# parse_log / parse_blg on fixed excerpts
# --------------------------------------------------------------------------------------------

FILE_LINE_LOG = r"""
(./template.tex
LaTeX2e <2022-11-01> patch level 1
./template.tex:42: Undefined control sequence.
l.42 We use \adamw
                   with a cosine schedule.
The control sequence at the end of the top line
of your error message was never \def'ed.

./template.tex:42:  ==> Fatal error occurred, no output PDF file produced!
"""

CLASSIC_LOG = r"""
! LaTeX Error: File `fig_accuracy.png' not found.

See the LaTeX manual or LaTeX Companion for explanation.
Type  H <return>  for immediate help.
 ...

l.57 \includegraphics{fig_accuracy.png}

! Emergency stop.
"""

WARNINGS_LOG = """\
LaTeX Warning: Citation `kingma2014adam' on page 1 undefined on input line 12.

LaTeX Warning: Reference `fig:moons' on page 2 undefined on input line 30.

Package natbib Warning: Citation `zhang2017mixup' on page 1 undefined on input line 14.

Package natbib Warning: There were undefined citations.

LaTeX Font Warning: Font shape `OT1/cmr/bx/sc' undefined
(Font)              using `OT1/cmr/bx/n' instead on input line 3.

Overfull \\hbox (12.0pt too wide) in paragraph at lines 20--22
LaTeX Warning: Reference `tab:main-results' on page 3 undefined on input line 4
4.

Package hyperref Warning: Token not allowed in a PDF string (Unicode):
(hyperref)                removing `math shift' on input line 8.

LaTeX Warning: Citation `kingma2014adam' on page 1 undefined on input line 12.

LaTeX Warning: There were undefined references.
"""


def test_parse_log_reads_file_line_errors_and_names_the_culprit() -> None:
    errors, warnings = parse_log(FILE_LINE_LOG, "template.tex")
    assert errors == [
        LatexMessage("template.tex", 42, "Undefined control sequence \\adamw", "error")
    ]
    assert warnings == []


def test_parse_log_reads_classic_errors_with_the_l_line() -> None:
    errors, _ = parse_log(CLASSIC_LOG, "template.tex")
    assert len(errors) == 1  # "Emergency stop" is a consequence, not a second error
    assert errors[0].line == 57 and errors[0].file == "template.tex"
    assert errors[0].message.startswith("LaTeX Error: File `fig_accuracy.png' not found.")


def test_parse_log_reads_warnings_once_with_lines_and_continuations() -> None:
    errors, warnings = parse_log(WARNINGS_LOG, "paper.tex")
    assert errors == []
    by_text = {w.message: w for w in warnings}
    assert by_text["Citation `kingma2014adam' on page 1 undefined on input line 12."].line == 12
    assert by_text["Reference `fig:moons' on page 2 undefined on input line 30."].line == 30
    assert by_text["Citation `zhang2017mixup' on page 1 undefined on input line 14."].line == 14
    # a line wrapped at TeX's default 79 columns is joined back
    wrapped = [w for w in warnings if "tab:main-results" in w.message]
    assert wrapped and wrapped[0].line == 44
    # package continuation lines "(hyperref) ..." belong to the warning
    assert any(
        w.message.startswith("Token not allowed")
        and "removing `math shift'" in w.message
        and w.line == 8
        for w in warnings
    )
    assert not any("Font shape" in w.message for w in warnings)  # font substitutions: noise
    assert sum("kingma2014adam" in w.message for w in warnings) == 1  # deduplicated
    assert all(w.file == "paper.tex" and w.kind == "warning" for w in warnings)
    assert any(w.message == "There were undefined references." and w.line is None for w in warnings)


def test_parse_log_ignores_package_info_lines_that_look_like_paths() -> None:
    log = "Package: natbib 2010/09/13 8.31b (PWD)\nFile: epstopdf-sys.cfg 2010/07/13 v1.3\n"
    assert parse_log(log, "template.tex") == ([], [])


def test_parse_blg_reports_missing_entries_and_bib_syntax() -> None:
    blg = (
        'Warning--I didn\'t find a database entry for "nosuchkey"\n'
        "I was expecting a `,' or a `}'---line 7 of file references.bib\n"
        "I couldn't open database file refs.bib\n"
    )
    messages = parse_blg(blg)
    assert messages[0].message == 'BibTeX: I didn\'t find a database entry for "nosuchkey"'
    assert (messages[1].file, messages[1].line) == ("references.bib", 7)
    assert "couldn't open database file refs.bib" in messages[2].message
    assert all(m.kind == "warning" for m in messages)


# --------------------------------------------------------------------------------------------
# chktex
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not tool_available("chktex"), reason="chktex is not installed")
def test_chktex_reports_known_issues_with_line_numbers(paper_dir: Path) -> None:
    tex = paper_dir / "template.tex"
    tex.write_text(
        "\\documentclass{article}\n"
        "\\begin{document}\n"
        "Fine text.\n"
        'We call it "moons" here.\n'
        "\\end{document}\n"
    )
    messages = chktex(tex)
    quotes = [m for m in messages if "chktex 18" in m.message]
    assert quotes and all(m.line == 4 and m.file == "template.tex" for m in quotes)
    assert all(m.kind in {"warning", "error"} for m in messages)


def test_chktex_missing_returns_nothing(paper_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chktex_module, "tool_available", lambda name: False)
    tex = paper_dir / "template.tex"
    tex.write_text('"quotes"\n')
    assert chktex(tex) == []


# --------------------------------------------------------------------------------------------
# check_references / bib_text_of
# --------------------------------------------------------------------------------------------

CHECKED = r"""\documentclass{article}
\graphicspath{{figures/}}
\begin{document}
\section{Introduction}
Adam \citep{kingma2014adam} and mixup \citet[p.~3]{zhang2017mixup, kingma2014adam}.
% \cite{commented_out_key} and \includegraphics{commented.png}
\section{Method}
The loss $L_{train} = \sum_i x_i$ and \label{sec:method_a} and \ref{sec:method_a}.
\begin{equation}
  w_{t+1} = w_t - \eta g_t
\end{equation}
We store results in run_1 folders.
Accuracy improved by 5% over the baseline, and by 3\% elsewhere. % 50% of the time
\includegraphics[width=0.5\linewidth]{moons}
\includegraphics{missing_plot.png}
\section{ Introduction }
\includegraphics{moons}
\label{sec:method_a}
\end{document}
"""


def test_check_references_finds_the_classic_mistakes(tmp_path: Path) -> None:
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "moons.png").write_bytes(b"png")
    problems = check_references(CHECKED, BIB, tmp_path, [])
    text = "\n".join(problems)

    assert any("'zhang2017mixup'" in p and p.startswith("Line 5:") for p in problems)
    assert "kingma2014adam" not in text and "commented_out_key" not in text
    assert any("'missing_plot.png' does not exist" in p and "Line 15" in p for p in problems)
    assert "commented.png" not in text
    assert any("Section 'Introduction' appears 2 times (lines 4, 16)" in p for p in problems)
    assert any("'moons' is included 2 times (lines 14, 17)" in p for p in problems)
    assert any("Label 'sec:method_a' is defined 2 times (lines 8, 18)" in p for p in problems)
    underscores = [p for p in problems if "underscore" in p]
    assert len(underscores) == 1 and underscores[0].startswith("Line 12:")  # not math, labels
    percent = [p for p in problems if "starts a comment" in p]
    assert len(percent) == 1 and percent[0].startswith("Line 13:") and "5\\%" in percent[0]


def test_check_references_accepts_a_clean_document(tmp_path: Path) -> None:
    figures = tmp_path / "plots"
    figures.mkdir()
    (figures / "train_loss.pdf").write_bytes(b"%PDF")
    tex = document("Adam \\citep{kingma2014adam}.\n\\includegraphics{train_loss}")
    assert check_references(tex, bib_text_of(tex, tmp_path), tmp_path, [Path("plots")]) == []


def test_bib_text_of_prefers_the_filecontents_block(tmp_path: Path) -> None:
    tex = document(GOOD_BODY)
    (tmp_path / "other.bib").write_text("@misc{other2020x, title={X}}")
    assert "kingma2014adam" in bib_text_of(tex, tmp_path)
    assert "other2020x" not in bib_text_of(tex, tmp_path)


def test_bib_text_of_reads_bib_files_beside(tmp_path: Path) -> None:
    (tmp_path / "refs.bib").write_text(BIB)
    (tmp_path / "unused.bib").write_text("@misc{unused2020x, title={X}}")
    tex = "\\documentclass{article}\\begin{document}\\bibliography{refs}\\end{document}"
    text = bib_text_of(tex, tmp_path)
    assert "kingma2014adam" in text and "unused2020x" not in text
    no_command = "\\documentclass{article}\\begin{document}\\end{document}"
    assert "unused2020x" in bib_text_of(no_command, tmp_path)


# --------------------------------------------------------------------------------------------
# PDFs
# --------------------------------------------------------------------------------------------


def test_unreadable_pdfs_are_clear_errors(tmp_path: Path) -> None:
    import pymupdf

    with pytest.raises(LabtuiError, match="PDF not found"):
        pdf_text(tmp_path / "missing.pdf")
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(LabtuiError, match="empty or not a valid PDF"):
        page_count(tmp_path / "empty.pdf")
    (tmp_path / "junk.pdf").write_bytes(b"this is not a pdf")
    with pytest.raises(LabtuiError, match="not a valid PDF"):
        pdf_text(tmp_path / "junk.pdf")

    doc = pymupdf.open()
    doc.new_page()
    doc.save(tmp_path / "blank.pdf")
    doc.save(
        tmp_path / "locked.pdf",
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        owner_pw="owner",
        user_pw="user",
    )
    doc.close()
    assert page_count(tmp_path / "blank.pdf") == 1
    with pytest.raises(LabtuiError, match="no extractable text"):
        pdf_text(tmp_path / "blank.pdf")
    with pytest.raises(LabtuiError, match="encrypted"):
        pdf_text(tmp_path / "locked.pdf")


def test_outcome_and_message_serialise() -> None:
    message = LatexMessage("a.tex", 3, "Undefined control sequence \\x", "error")
    outcome = CompileOutcome(False, None, 0, [message], [], "tail", False)
    assert outcome.to_dict()["errors"] == [
        {"file": "a.tex", "line": 3, "message": "Undefined control sequence \\x", "kind": "error"}
    ]
    assert str(message) == "a.tex:3: Undefined control sequence \\x"


# --------------------------------------------------------------------------------------------
# referenced_figures
# --------------------------------------------------------------------------------------------


def test_referenced_figures_are_listed_once_in_order_with_missing_ones_marked(
    tmp_path: Path,
) -> None:
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "moons.png").write_bytes(b"png")  # found through \graphicspath
    # CHECKED includes moons twice, a missing plot, and commented.png in a comment only.
    assert referenced_figures(CHECKED, tmp_path) == [
        {"path": "moons", "exists": True, "line": 14},
        {"path": "missing_plot.png", "exists": False, "line": 15},
    ]


def test_referenced_figures_ignore_comments_and_verbatim_but_not_escaped_percents(
    tmp_path: Path,
) -> None:
    tex = (
        "% \\includegraphics{commented.png}\n"
        "\\begin{verbatim}\n\\includegraphics{quoted.png}\n\\end{verbatim}\n"
        "100\\% of runs \\includegraphics[width=2cm]{kept.png} % \\includegraphics{tail.png}\n"
    )
    assert referenced_figures(tex, tmp_path) == [{"path": "kept.png", "exists": False, "line": 5}]


def test_referenced_figures_resolve_like_tex_from_the_tex_folder(tmp_path: Path) -> None:
    latex_dir = tmp_path / "latex"
    latex_dir.mkdir()
    (tmp_path / "train_loss.png").write_bytes(b"png")  # plots land in the project root
    include = "\\includegraphics{train_loss}"
    assert referenced_figures(include, latex_dir)[0]["exists"] is False
    assert referenced_figures("\\graphicspath{{../}}" + include, latex_dir)[0]["exists"] is True
    assert referenced_figures(include, latex_dir, [Path("..")])[0]["exists"] is True
    assert referenced_figures(include, latex_dir, [tmp_path])[0]["exists"] is True


def test_a_document_without_figures_references_none(tmp_path: Path) -> None:
    assert referenced_figures(document(GOOD_BODY), tmp_path) == []


@requires_tex
def test_referenced_figures_agree_with_the_compile(paper_dir: Path, tmp_path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page(width=100, height=100)
    doc.save(tmp_path / "found.pdf")  # beside latex/, as the plots stage leaves figures
    doc.close()
    body = GOOD_BODY + "\n\\graphicspath{{../}}\n\\includegraphics[width=1cm]{found}"
    tex = paper_dir / "template.tex"
    tex.write_text(document(body))
    assert [f["exists"] for f in referenced_figures(tex.read_text(), paper_dir)] == [True]
    assert compile_latex(tex, tmp_path / "paper.pdf", timeout_s=60).ok

    tex.write_text(document(body.replace("{found}", "{lost}")))
    assert [f["exists"] for f in referenced_figures(tex.read_text(), paper_dir)] == [False]
    assert not compile_latex(tex, tmp_path / "paper.pdf", timeout_s=60).ok


def test_bibliography_entries_are_added_once_where_the_document_keeps_them(tmp_path):
    from labtui.core.latex.bibliography import add_bib_entries, bib_keys, bib_text_of

    entry = "@misc{kingma2014adam,\n  title = {{Adam}},\n  year = {2014},\n}"
    inline = tmp_path / "inline.tex"
    inline.write_text(
        "\\begin{filecontents}{references.bib}\n@article{old, title={Old}, year={1999}}\n"
        "\\end{filecontents}\n\\documentclass{article}\n\\begin{document}x\\end{document}\n"
    )
    assert add_bib_entries(inline, {"kingma2014adam": entry, "old": "@misc{old, title={X}}"}) == [
        "kingma2014adam"
    ]
    text = inline.read_text()
    assert bib_keys(bib_text_of(text, tmp_path)) == {"old", "kingma2014adam"}
    assert text.index("kingma2014adam") < text.index("\\end{filecontents}")
    assert add_bib_entries(inline, {"kingma2014adam": entry}) == [], "never twice"

    named = tmp_path / "named.tex"
    named.write_text("\\documentclass{article}\\begin{document}\\bibliography{refs}\\end{document}")
    (tmp_path / "refs.bib").write_text("@misc{a, title={A}}\n")
    assert add_bib_entries(named, {"kingma2014adam": entry}) == ["kingma2014adam"]
    assert bib_keys((tmp_path / "refs.bib").read_text()) == {"a", "kingma2014adam"}


def test_adding_citations_to_a_document_without_a_bibliography_says_how_to_fix_it(tmp_path):
    from labtui.core.errors import LabtuiError
    from labtui.core.latex.bibliography import add_bib_entries

    bare = tmp_path / "sub" / "bare.tex"
    bare.parent.mkdir()
    bare.write_text("\\documentclass{article}\\begin{document}x\\end{document}")
    with pytest.raises(LabtuiError, match="has no bibliography") as info:
        add_bib_entries(bare, {"k": "@misc{k, title={K}}"})
    assert "filecontents" in info.value.hint
