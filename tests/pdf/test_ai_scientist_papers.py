"""The paper reader on papers The AI Scientist writes: their ICLR 2024 template sets headings in
faked small capitals with the number a span of its own, and draws a watermark across every page.

- the real papers of tests/corpus/papers (Apache-2.0, copied from The AI Scientist): their section and subsection titles from the LaTeX source
  (outlines.json) found with their levels, in order, and nothing else but "References";
- a paper compiled here with the real ICLR 2024 style and the template's watermark
  (tests/support/ai_scientist_paper.py; its exact outline is checked in test_paper_outline.py
  with the other styles): the watermark is neither a heading nor text the reviewer reads;
- PDFs made with PyMuPDF: text drawn at a slant or up the page hides no heading.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest
from support.ai_scientist_paper import RUNNING_HEAD, WATERMARK
from support.latex_documents import requires_tex
from support.paper_styles import ai_scientist

from labtui.core.pdf.markdown import paper_markdown
from labtui.core.pdf.outline import Heading, outline_of

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "papers"  # Apache-2.0, see its README
CORPUS_PAPERS = (
    "adaptive_dual_scale_denoising",
    "dual_expert_denoiser",
    "gan_diffusion",
    "grid_based_noise_adaptation",
    "rl_lr_adaptation",
)
MIN_RECALL = 0.95


def words(title: str) -> str:
    """A title as words only: the PDF prints "INTRODUCTION" for \\section{Introduction}."""
    return re.sub(r"[^a-z0-9]+", " ", title.lower()).strip()


def found_in_order(true: list[tuple[int, str]], read: list[tuple[int, str]]) -> int:
    """How many of the true (level, title) headings are read, each after the one before."""
    found, position = 0, 0
    for heading in true:
        if heading in read[position:]:
            position = read.index(heading, position) + 1
            found += 1
    return found


def corpus_file(name: str) -> Path:
    return CORPUS / name


def corpus_pdf(name: str) -> Path:
    return corpus_file(f"{name}.pdf")


def true_outlines() -> dict[str, list[tuple[int, str]]]:
    truth = json.loads(corpus_file("outlines.json").read_text(encoding="utf-8"))
    return {
        name: [(heading["level"], words(heading["title"])) for heading in headings]
        for name, headings in truth.items()
    }


def read_outline(headings: tuple[Heading, ...]) -> list[tuple[int, str]]:
    return [(heading.level, words(heading.text)) for heading in headings]


# --------------------------------------------------------------------------------------------
# The real papers
# --------------------------------------------------------------------------------------------


def test_the_corpus_headings_are_read_with_their_levels_in_order() -> None:
    truth = true_outlines()  # every paper outlines.json has, the five below and any added
    assert set(CORPUS_PAPERS) <= set(truth)
    found = {
        name: found_in_order(true, read_outline(outline_of(corpus_pdf(name)).headings))
        for name, true in truth.items()
    }
    total = sum(len(true) for true in truth.values())
    assert sum(found.values()) >= MIN_RECALL * total, {
        name: f"{found[name]}/{len(truth[name])}" for name in truth
    }


@pytest.mark.parametrize("name", CORPUS_PAPERS)
def test_a_corpus_paper_has_no_heading_but_its_own_and_the_references(name: str) -> None:
    true = true_outlines()[name]
    read = read_outline(outline_of(corpus_pdf(name)).headings)
    assert [heading for heading in read if heading not in true] == [(1, "references")]


@pytest.mark.parametrize("name", CORPUS_PAPERS)
def test_a_corpus_papers_watermark_is_not_read(name: str) -> None:
    text = paper_markdown(corpus_pdf(name))
    assert "CAUTION" not in text and "AUTONOMOUSLY GENERATED" not in text
    assert RUNNING_HEAD not in text


# --------------------------------------------------------------------------------------------
# A paper compiled with the real style
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory, latex_pdfs) -> Path:
    return ai_scientist().compile(tmp_path_factory.mktemp("iclr2024"), latex_pdfs)


@requires_tex
def test_the_watermark_is_neither_a_heading_nor_text_to_read(compiled: Path) -> None:
    with pymupdf.open(compiled) as doc:
        printed = [" ".join(page.get_text().split()) for page in doc]
    assert all("CAUTION!!!" in page for page in printed), "the fixture draws it on every page"
    text = paper_markdown(compiled)
    for part in ("CAUTION", *WATERMARK.split("!!! ")[1:]):
        assert part not in text
    assert not [h for h in outline_of(compiled).headings if "CAUTION" in h.text.upper()]


@requires_tex
def test_each_heading_is_read_as_printed_and_the_title_whole(compiled: Path) -> None:
    headings = [line for line in paper_markdown(compiled).splitlines() if line.startswith("#")]
    assert headings[0].endswith("ON SMALL AND NOISY DATA"), "its last line has no full capital"
    assert "## 1 INTRODUCTION" in headings
    assert "### 2.1 REGULARISATION IN OVERPARAMETERISED NETWORKS" in headings


# --------------------------------------------------------------------------------------------
# PDFs made with PyMuPDF: no TeX needed
# --------------------------------------------------------------------------------------------

BODY = (
    "The stamped paper says what it found in lines of ordinary body text,",
    "set smaller than its headings and long enough to be read as prose,",
    "so that its body size is the one that most of its letters are set in.",
)


def stamped_pdf(path: Path, pages: int) -> Path:
    """Three numbered sections a page under a title; an arXiv stamp up the left margin of page
    1, and a watermark drawn at 30 degrees across the middle of every page."""
    doc = pymupdf.open()
    for number in range(pages):
        page = doc.new_page()
        if number == 0:
            page.insert_text((72, 70), "A Stamped Paper", fontsize=18, fontname="hebo")
            stamp = "arXiv:2401.01234v1 [cs.LG] 3 Jan 2024"
            page.insert_text((30, 600), stamp, fontsize=14, fontname="helv", rotate=90)
        turn = (pymupdf.Point(150, 600), pymupdf.Matrix(30))
        page.insert_text((150, 600), "DRAFT NOT FOR CIRCULATION", fontsize=30, morph=turn)
        for index in range(3):
            y, section = 110 + 150 * index, str(3 * number + index + 1)
            page.insert_text((72, y), section, fontsize=12, fontname="hebo")
            page.insert_text((97, y), f"Section {section}", fontsize=12, fontname="hebo")
            for line, text in enumerate(BODY):
                page.insert_text((72, y + 20 + 12 * line), text, fontsize=10, fontname="helv")
    doc.save(path)
    doc.close()
    return path


def test_text_at_a_slant_or_up_the_page_hides_no_heading(tmp_path: Path) -> None:
    pdf = stamped_pdf(tmp_path / "stamped.pdf", pages=2)
    outline = outline_of(pdf)
    assert [(h.number, h.text) for h in outline.headings] == [
        (str(n), f"Section {n}") for n in range(1, 7)
    ]
    text = paper_markdown(pdf)
    assert "DRAFT" not in text, "a watermark is no text to read"
    assert text.count(" ".join(BODY)) == 6, "nor does it split a paragraph"
