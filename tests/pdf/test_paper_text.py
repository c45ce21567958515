"""core.pdf.markdown: a paper PDF as Markdown-ish text (title, sections, paragraphs) for the reviewer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.latex_documents import document, requires_tex

from labtui.core.errors import LabtuiError
from labtui.core.pdf import outline as paper_outline
from labtui.core.pdf.document import pdf_text
from labtui.core.pdf.markdown import paper_markdown

# Long words make TeX hyphenate at the right margin; \clearpage makes a second page.
PAPER_BODY = r"""
\title{Counterintuitive Regularisation of Overparameterised Networks}
\author{Ada Lovelace}
\date{}
\maketitle
\begin{abstract}
We study how regularisation interacts with overparameterisation in small networks.
\end{abstract}
\section{Introduction}
Overparameterised networks generalise surprisingly well. Understanding the counterintuitive
interplay between regularisation, overparameterisation, initialisation and characterisation of
implicit biases remains an extraordinarily unresolved phenomenological question for contemporary
representational theories. Incomprehensibilities notwithstanding, electroencephalographically
motivated characterisations of internationalisation demonstrate counterrevolutionary
misrepresentations of institutionalisation and compartmentalisation.

\paragraph{Run-in.} This paragraph starts with a bold run-in heading and carries on in the same
line with ordinary text, as \verb|\paragraph| typesets it.
\clearpage
\section{Experiments}
We train a small MLP on the two moons dataset with Adam \citep{kingma2014adam}.
\subsection{Setup}
\begin{table}[h]
\centering
\caption{Accuracy on two moons.}
\begin{tabular}{lcc}
Method & Accuracy & Loss \\
MLP & 0.93 & 0.21 \\
Linear baseline & 0.85 & 0.40 \\
\end{tabular}
\end{table}
Every run uses five seeds.
"""


@pytest.fixture(scope="module")
def tex_paper(tmp_path_factory: pytest.TempPathFactory, latex_pdfs) -> Path:
    """A two-page article made with real TeX, compiled once for the session."""
    root = tmp_path_factory.mktemp("paper")
    latex = root / "latex"
    latex.mkdir()
    (latex / "paper.tex").write_text(document(PAPER_BODY))
    outcome = latex_pdfs.compile(latex / "paper.tex", root / "paper.pdf", timeout_s=120)
    assert outcome.ok, outcome.log_tail
    assert outcome.pages >= 2
    return root / "paper.pdf"


@pytest.fixture(scope="module")
def tex_markdown(tex_paper: Path) -> str:
    return paper_markdown(tex_paper)


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# A real LaTeX article
# --------------------------------------------------------------------------------------------


@requires_tex
def test_the_title_comes_first_as_a_level_one_heading(tex_markdown: str) -> None:
    first = lines_of(tex_markdown)[0]
    assert first == "# Counterintuitive Regularisation of Overparameterised Networks"
    assert sum(line.startswith("# ") for line in tex_markdown.splitlines()) == 1


@requires_tex
def test_sections_keep_their_numbers_and_subsections_rank_below(tex_markdown: str) -> None:
    lines = tex_markdown.splitlines()
    assert "## Abstract" in lines
    assert "## 1 Introduction" in lines
    assert "## 2 Experiments" in lines
    assert "### 2.1 Setup" in lines
    assert "## References" in lines
    order = [lines.index(h) for h in ("## Abstract", "## 1 Introduction", "### 2.1 Setup")]
    assert order == sorted(order)


@requires_tex
def test_the_author_line_is_not_a_heading(tex_markdown: str) -> None:
    assert "Ada Lovelace" in tex_markdown.splitlines()


@requires_tex
def test_a_run_in_paragraph_heading_stays_inside_its_paragraph(tex_markdown: str) -> None:
    paragraph = next(p for p in tex_markdown.split("\n\n") if p.startswith("Run-in."))
    assert paragraph.startswith("Run-in. This paragraph starts with a bold run-in heading")
    assert "ordinary text, as \\paragraph typesets it." in paragraph
    assert "\n" not in paragraph, "the lines of a paragraph are joined"


@requires_tex
def test_page_numbers_are_dropped(tex_paper: Path, tex_markdown: str) -> None:
    assert re.search(r"^\s*2\s*$", pdf_text(tex_paper), re.MULTILINE), "TeX numbered the pages"
    assert not [line for line in lines_of(tex_markdown) if line.strip().isdigit()]


@requires_tex
def test_words_hyphenated_at_a_line_break_are_rejoined(tex_paper: Path, tex_markdown: str) -> None:
    broken = re.findall(r"([a-z]+)-\n([a-z]+)", pdf_text(tex_paper))
    assert broken, "the test paper should make TeX hyphenate a word"
    for head, tail in broken:
        assert head + tail in tex_markdown
    assert not re.search(r"[a-z]-\s+[a-z]", tex_markdown)


@requires_tex
def test_paragraphs_are_separated_by_blank_lines(tex_markdown: str) -> None:
    intro = tex_markdown.split("## 1 Introduction\n\n", 1)[1].split("\n\n")[0]
    assert intro.startswith("Overparameterised networks generalise surprisingly well.")
    assert intro.endswith("institutionalisation and compartmentalisation.")
    assert "\n" not in intro


@requires_tex
def test_a_table_keeps_its_rows_as_lines_and_its_caption(tex_markdown: str) -> None:
    assert "Table 1: Accuracy on two moons." in tex_markdown
    rows = [line for line in tex_markdown.splitlines() if "0.93" in line or "0.85" in line]
    assert len(rows) == 2
    assert "MLP" in rows[0] and "0.21" in rows[0]
    assert "Linear baseline" in rows[1] and "0.40" in rows[1]


@requires_tex
def test_the_text_is_all_there(tex_paper: Path, tex_markdown: str) -> None:
    flat = " ".join(tex_markdown.split())
    assert "two moons dataset with Adam [Kingma and Ba, 2014]." in flat
    assert "Every run uses five seeds." in flat


# --------------------------------------------------------------------------------------------
# PDFs made with PyMuPDF: no TeX needed
# --------------------------------------------------------------------------------------------


def make_pdf(path: Path, pages: list[list[tuple[float, str, float, str]]]) -> Path:
    """Each page a list of (y, text, font size, PyMuPDF base-14 font name)."""
    import pymupdf

    doc = pymupdf.open()
    for items in pages:
        page = doc.new_page()
        for y, text, size, font in items:
            page.insert_text((72, y), text, fontsize=size, fontname=font)
    doc.save(path)
    doc.close()
    return path


BODY_LINES = [
    "A sentence of body text that runs for a while and then stops.",
    "Another line of body text in the same paragraph as the first one.",
    "A third line of body text so that the body size clearly dominates.",
]


def body(y: float) -> list[tuple[float, str, float, str]]:
    return [(y + 14 * i, line, 10, "helv") for i, line in enumerate(BODY_LINES)]


def test_plain_same_size_text_falls_back_to_the_plain_text(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "plain.pdf", [body(100) + body(200)])
    text = paper_markdown(pdf)
    assert text == pdf_text(pdf)
    assert "body size clearly dominates" in text


def test_headings_running_heads_and_page_numbers_in_a_generated_pdf(tmp_path: Path) -> None:
    def page(number: int, content: list[tuple[float, str, float, str]]) -> list:
        furniture = [(40, "Preprint. Under review.", 9, "helv"), (780, str(number), 9, "helv")]
        return furniture + content

    pdf = make_pdf(
        tmp_path / "generated.pdf",
        [
            page(1, [(100, "A Generated Paper", 20, "hebo"), (160, "1 Introduction", 14, "hebo")])
            + body(190),
            page(2, [(100, "2 Method", 14, "hebo"), (130, "2.1 Details", 10, "hebo"), *body(160)]),
            page(3, [(100, "3 Results", 14, "hebo"), *body(130)]),
        ],
    )
    lines = lines_of(paper_markdown(pdf))
    assert lines[0] == "# A Generated Paper"
    assert "## 1 Introduction" in lines and "## 3 Results" in lines
    assert "### 2.1 Details" in lines
    assert not [line for line in lines if "Preprint" in line or line.isdigit()]
    assert " ".join(BODY_LINES) in lines


def test_a_failing_layout_analysis_falls_back_to_the_plain_text(tmp_path, monkeypatch) -> None:
    pdf = make_pdf(tmp_path / "paper.pdf", [[(100, "1 Introduction", 14, "hebo"), *body(130)]])
    assert paper_markdown(pdf).startswith("## 1 Introduction")

    def broken(*_args: object) -> None:
        raise RuntimeError("odd layout")

    monkeypatch.setattr(paper_outline, "page_lines", broken)
    assert paper_markdown(pdf) == pdf_text(pdf)


def test_a_pdf_without_text_is_a_clear_error(tmp_path: Path) -> None:
    blank = make_pdf(tmp_path / "blank.pdf", [[]])
    with pytest.raises(LabtuiError, match="has no extractable text") as caught:
        paper_markdown(blank)
    assert caught.value.hint


@pytest.mark.parametrize("content", [b"%PDF-1.7\nthis is not really a PDF", b""])
def test_a_corrupt_or_empty_file_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(content)
    with pytest.raises(LabtuiError, match="not a valid PDF"):
        paper_markdown(bad)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LabtuiError, match="PDF not found"):
        paper_markdown(tmp_path / "nope.pdf")
