"""core.pdf.outline: the outline of real papers (title, headings with level, number and page)
in the typography of ML-conference styles, and the reading the reviewer gets from the same
analysis (core.pdf.markdown.paper_markdown).

The style fixtures (tests/support/paper_styles.py) are compiled once for the module; each test
checks the exact outline recovered, or what must not become a heading.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest
from support.ai_scientist_paper import AI_SCIENTIST_OUTLINE
from support.latex_documents import requires_tex
from support.paper_styles import StyledPaper, all_styles

from labtui.core.errors import LabtuiError
from labtui.core.pdf.markdown import paper_markdown
from labtui.core.pdf.outline import Heading, Outline, outline_of, outline_text, read_layout

STYLES = {paper.name: paper for paper in all_styles()}

EXPECTED: dict[str, Outline] = {
    "iclr": Outline(
        "COUNTERINTUITIVE REGULARISATION OF OVERPARAMETERISED NETWORKS",
        4,
        (
            Heading(1, "1", "INTRODUCTION", 1),
            Heading(1, "2", "RELATED WORK", 1),
            Heading(1, "3", "METHOD", 1),
            Heading(2, "3.1", "Setup", 2),
            Heading(2, "3.2", "Objective", 2),
            Heading(1, "4", "EXPERIMENTS", 2),
            Heading(2, "4.1", "Datasets", 2),
            Heading(2, "4.2", "Results", 2),
            Heading(1, "5", "CONCLUSION", 3),
            Heading(1, "", "REFERENCES", 3),
            Heading(1, "A", "PROOFS", 3),
            Heading(2, "A.1", "Proof of the First Lemma", 3),
            Heading(1, "B", "ADDITIONAL RESULTS", 4),
        ),
    ),
    "neurips": Outline(
        "Sharpness-Aware Warmup for Small Transformers",
        10,
        (
            Heading(1, "1", "Introduction", 1),
            Heading(1, "2", "Background", 1),
            Heading(2, "2.1", "Warmup Schedules", 1),
            Heading(2, "2.2", "Sharpness", 2),
            Heading(1, "3", "Method", 2),
            Heading(2, "3.1", "The Warmup Objective", 2),
            Heading(2, "3.2", "Scaling the Step", 3),
            Heading(3, "3.2.1", "Ablation of the Penalty", 3),
            Heading(1, "4", "Experiments", 3),
            Heading(2, "4.1", "Setup", 3),
            Heading(2, "4.2", "Results", 4),
            Heading(1, "5", "Analysis", 4),
            Heading(2, "5.1", "Sensitivity to the Batch Size", 4),
            Heading(2, "5.2", "Sensitivity to the Depth", 5),
            Heading(
                2,
                "5.3",
                "Where the Warmup Helps Most: Small Batches, Deep Stacks, Noisy Labels and Other "
                "Hard Regimes of Training",
                5,
            ),
            Heading(1, "6", "Discussion", 6),
            Heading(1, "7", "Limitations and Future Work", 6),
            Heading(1, "8", "Conclusion", 6),
            Heading(1, "", "References", 7),
            Heading(1, "A", "Proofs", 7),
            Heading(2, "A.1", "Proof of the Main Theorem", 7),
            Heading(2, "A.2", "Proof of the Corollary", 8),
            Heading(1, "B", "Experimental Details", 8),
            Heading(2, "B.1", "Hyperparameters", 8),
            Heading(1, "", "NeurIPS Paper Checklist", 9),
        ),
    ),
    "twocolumn": Outline(
        "Sparse Attention Without Tears",
        3,
        (
            Heading(1, "1", "INTRODUCTION", 1),
            Heading(1, "2", "RELATED WORK", 1),
            Heading(1, "3", "METHOD", 1),
            Heading(2, "3.1", "Sparse Patterns", 1),
            Heading(2, "3.2", "Training", 2),
            Heading(1, "4", "EXPERIMENTS", 2),
            Heading(2, "4.1", "Results", 2),
            Heading(1, "5", "CONCLUSION", 2),
            Heading(1, "", "REFERENCES", 2),
        ),
    ),
    "tables": Outline(
        "How Many Seeds Does a Benchmark Need?",
        5,
        (
            Heading(1, "1", "Introduction", 1),
            Heading(1, "2", "Setup", 1),
            Heading(2, "2.1", "Benchmarks", 1),
            Heading(2, "2.2", "Protocol", 2),
            Heading(1, "3", "Results", 2),
            Heading(2, "3.1", "Main Results", 2),
            Heading(2, "3.2", "Ablations", 2),
            Heading(3, "3.2.1", "Penalty Strength", 3),
            Heading(1, "4", "Analysis", 3),
            Heading(1, "5", "Conclusion", 3),
            Heading(1, "", "Limitations", 4),
            Heading(1, "", "Acknowledgments", 4),
            Heading(1, "", "References", 4),
            Heading(1, "A", "Additional Tables", 4),
            Heading(2, "A.1", "Per-Seed Results", 4),
        ),
    ),
    "iclr2024": AI_SCIENTIST_OUTLINE,
}


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory: pytest.TempPathFactory, latex_pdfs) -> dict[str, Path]:
    """Each style fixture compiled once for the session."""
    folder = tmp_path_factory.mktemp("styles")
    return {name: paper.compile(folder, latex_pdfs) for name, paper in STYLES.items()}


@pytest.fixture(scope="module")
def markdown(pdfs: dict[str, Path]) -> dict[str, str]:
    return {name: paper_markdown(pdf) for name, pdf in pdfs.items()}


def flat(text: str) -> str:
    return " ".join(text.split())


def heading_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


# --------------------------------------------------------------------------------------------
# The exact outline of each style
# --------------------------------------------------------------------------------------------


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_the_outline_of_each_style_is_recovered_exactly(pdfs: dict[str, Path], style: str) -> None:
    outline = outline_of(pdfs[style])
    assert (outline.title, outline.pages) == (EXPECTED[style].title, EXPECTED[style].pages)
    assert list(outline.headings) == list(EXPECTED[style].headings)


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_the_reviewer_reads_the_same_headings_as_the_outline(
    pdfs: dict[str, Path], markdown: dict[str, str], style: str
) -> None:
    layout = read_layout(pdfs[style])
    assert layout.abstract is not None
    expected = [
        f"# {EXPECTED[style].title}",
        f"## {layout.abstract.text}",
        *(f"{'#' * (h.heading.level + 1)} {h.printed}" for h in layout.headings),
    ]
    assert heading_lines(markdown[style]) == expected
    numbered = [h for h in layout.headings if h.heading.number]
    assert all(h.printed.startswith(h.heading.number) for h in numbered)


@requires_tex
def test_an_iclr_heading_is_printed_as_the_paper_prints_it(markdown: dict[str, str]) -> None:
    lines = heading_lines(markdown["iclr"])
    assert "## 1 INTRODUCTION" in lines
    assert "### 3.1 Setup" in lines
    assert "## A PROOFS" in lines
    assert "## ABSTRACT" in lines, "the abstract's heading in faked small capitals"


# --------------------------------------------------------------------------------------------
# What is not a heading
# --------------------------------------------------------------------------------------------


@requires_tex
@pytest.mark.parametrize(
    ("style", "text"),
    [
        ("iclr", "Anonymous authors"),
        ("neurips", "Anonymous Author(s)"),
        ("twocolumn", "Anonymous Authors"),
        ("tables", "Grace Hopper"),
        ("iclr2024", "Anonymous authors"),
    ],
)
def test_authors_are_text_not_headings(markdown: dict[str, str], style: str, text: str) -> None:
    assert text in markdown[style]
    assert not [line for line in heading_lines(markdown[style]) if text in line]


@requires_tex
@pytest.mark.parametrize(
    ("style", "caption"),
    [
        ("iclr", "Table 1: Test accuracy after training, mean over five seeds."),
        ("neurips", "Figure 1: Overview of the method: the encoder and decoder are trained"),
        ("neurips", "Table 1: Validation perplexity of small transformers (lower is better)."),
        ("twocolumn", "Table 1: Speed and accuracy of attention patterns."),
        ("tables", "Table 3: Standard deviation over seeds."),
        ("tables", "Table 6: Accuracy with a larger budget."),
    ],
)
def test_captions_are_paragraphs_of_their_own(
    markdown: dict[str, str], style: str, caption: str
) -> None:
    paragraphs = markdown[style].split("\n\n")
    assert any(paragraph.startswith(caption) for paragraph in paragraphs)


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_no_caption_table_cell_or_figure_label_becomes_a_heading(
    markdown: dict[str, str], style: str
) -> None:
    not_headings = re.compile(
        r"#+ (Figure|Table|Ours|Baselines?|Method|Encoder|Decoder|Loss|Warmup|Pattern|"
        r"Dense|Local|Linear|Datasets\.|Implementation details|\d+\. Claims|Claims)"
    )
    assert not [line for line in heading_lines(markdown[style]) if not_headings.match(line)]


@requires_tex
def test_tables_keep_their_rows_and_bold_group_rows_stay_in_the_table(
    markdown: dict[str, str],
) -> None:
    tables = [part for part in markdown["tables"].split("\n\n") if " | " in part]
    assert len(tables) >= 6
    grouped = next(part for part in tables if "Baselines" in part)
    assert grouped.splitlines()[:3] == [
        "Method | CIFAR | SVHN | MNIST",
        "Baselines",
        "Baseline | 71.2 | 88.1 | 98.9",
    ]
    assert "Ours + tuning | 75.3 | 90.8 | 99.2" in grouped
    seeds = next(part for part in tables if part.startswith("Method") and "\n1 | 70.7" in part)
    assert seeds.splitlines()[-1] == "5 | 73.5 | 87.5 | 98.5", "a column of seeds is no ruler"


@requires_tex
def test_a_table_as_wide_as_both_columns_keeps_its_rows_whole(markdown: dict[str, str]) -> None:
    text = markdown["twocolumn"]
    caption = "Table 2: Accuracy on six benchmarks: a table as wide as the page."
    table = text.split(f"{caption}\n\n", 1)[1].split("\n\n")[0]
    assert table.splitlines() == [
        "Method | CIFAR | SVHN | MNIST | STL | Tiny | Cars",
        "Dense | 71.2 | 88.1 | 98.9 | 60.1 | 40.2 | 80.0",
        "Local | 70.4 | 87.5 | 98.8 | 59.0 | 39.9 | 79.1",
        "Ours | 74.9 | 90.2 | 99.1 | 63.3 | 44.0 | 83.1",
    ]


@requires_tex
def test_a_displayed_equation_is_text_not_a_heading(markdown: dict[str, str]) -> None:
    text = markdown["neurips"]
    assert "Accuracy =" in text and "correct predictions" in text
    assert not [line for line in heading_lines(text) if "=" in line or "predictions" in line]


@requires_tex
def test_run_in_paragraph_headings_stay_in_their_paragraph(markdown: dict[str, str]) -> None:
    paragraphs = markdown["neurips"].split("\n\n")
    assert any(p.startswith("Datasets. ") and len(p) > 200 for p in paragraphs)
    assert any(p.startswith("Implementation details ") and len(p) > 200 for p in paragraphs)


# --------------------------------------------------------------------------------------------
# Reading order, line numbers and page furniture
# --------------------------------------------------------------------------------------------


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_every_paragraph_reads_whole_and_in_order(markdown: dict[str, str], style: str) -> None:
    """Two columns in column order, page breaks joined, no line number inside the text."""
    text = flat(markdown[style])
    position = 0
    paper: StyledPaper = STYLES[style]
    for paragraph in paper.paragraphs:
        for sentence in re.findall(r"[^.]+\.", paragraph):
            found = text.find(sentence.strip(), position)
            assert found >= 0, f"{style}: {sentence.strip()!r} is not whole after {position}"
            position = found


@requires_tex
def test_a_sentence_split_by_the_column_break_reads_in_order(
    pdfs: dict[str, Path], markdown: dict[str, str]
) -> None:
    with pymupdf.open(pdfs["twocolumn"]) as doc:
        page = doc[0]
        middle = page.rect.width / 2
        words = [w for w in page.get_text("words") if not w[4].isdigit()]
    left = [w for w in words if w[2] < middle]
    right = [w for w in words if w[0] > middle and w[1] > 120]  # below the title block
    bottom_left = max(w[3] for w in left)
    top_right = min(w[1] for w in right)
    end_of_left = " ".join(w[4] for w in left if abs(w[3] - bottom_left) < 2)
    start_of_right = " ".join(w[4] for w in right if abs(w[1] - top_right) < 2)
    assert not end_of_left.endswith("."), "the fixture should break a sentence at the column"
    assert f"{end_of_left} {start_of_right}" in flat(markdown["twocolumn"])


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_line_numbers_and_page_numbers_are_dropped(
    pdfs: dict[str, Path], markdown: dict[str, str], style: str
) -> None:
    with pymupdf.open(pdfs[style]) as doc:
        bare_numbers = [w for page in doc for w in page.get_text("words") if w[4].isdigit()]
    assert len(bare_numbers) >= EXPECTED[style].pages, "the fixture prints numbers to drop"
    assert not [line for line in markdown[style].splitlines() if line.strip().isdigit()]


@requires_tex
@pytest.mark.parametrize(
    ("style", "running_head"),
    [
        ("iclr", "Under review as a conference paper at ICLR 2026"),
        ("twocolumn", "Sparse Attention Without Tears"),
        ("iclr2024", "AI-Scientist Generated Preprint"),
    ],
)
def test_running_heads_are_dropped(markdown: dict[str, str], style: str, running_head: str) -> None:
    text = markdown[style]
    title = EXPECTED[style].title
    assert text.count(running_head) == (1 if running_head == title else 0)


@requires_tex
@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_each_reference_reads_as_one_paragraph(markdown: dict[str, str], style: str) -> None:
    references = re.split(r"^#+ REFERENCES$|^#+ References$", markdown[style], flags=re.M)[1]
    entries = references.split("\n\n")
    ioffe = next(entry for entry in entries if entry.startswith("Sergey Ioffe"))
    # plainnat writes "pages 448–456", the ICLR style "pp. 448–456"
    assert re.search(r"(pages|pp\.) 448–456, 2015\.$", ioffe), (
        "an entry and a range broken at a dash"
    )


# --------------------------------------------------------------------------------------------
# The listing and the JSON
# --------------------------------------------------------------------------------------------


@requires_tex
def test_the_listing_of_an_iclr_paper(pdfs: dict[str, Path]) -> None:
    assert outline_text(outline_of(pdfs["iclr"])) == (
        "COUNTERINTUITIVE REGULARISATION OF OVERPARAMETERISED NETWORKS\n"
        "4 pages · 8 sections · 5 subsections\n"
        "  1      INTRODUCTION                p. 1\n"
        "  2      RELATED WORK                p. 1\n"
        "  3      METHOD                      p. 1\n"
        "    3.1    Setup                     p. 2\n"
        "    3.2    Objective                 p. 2\n"
        "  4      EXPERIMENTS                 p. 2\n"
        "    4.1    Datasets                  p. 2\n"
        "    4.2    Results                   p. 2\n"
        "  5      CONCLUSION                  p. 3\n"
        "         REFERENCES                  p. 3\n"
        "  A      PROOFS                      p. 3\n"
        "    A.1    Proof of the First Lemma  p. 3\n"
        "  B      ADDITIONAL RESULTS          p. 4\n"
    )


def test_the_listing_indents_by_level_and_counts_each_level() -> None:
    outline = Outline(
        "A Paper",
        1,
        (
            Heading(1, "1", "Introduction", 1),
            Heading(2, "1.1", "Setup", 1),
            Heading(3, "1.1.1", "Details", 1),
            Heading(1, "", "References", 1),
        ),
    )
    assert outline_text(outline) == (
        "A Paper\n"
        "1 page · 2 sections · 1 subsection · 1 subsubsection\n"
        "  1          Introduction  p. 1\n"
        "    1.1        Setup       p. 1\n"
        "      1.1.1      Details   p. 1\n"
        "             References    p. 1\n"
    )


def test_a_long_heading_runs_past_the_page_column_of_the_others() -> None:
    long = "Where the Warmup Helps Most: Small Batches, Deep Stacks and Noisy Labels"
    listing = outline_text(
        Outline("A Paper", 2, (Heading(1, "1", "Setup", 1), Heading(1, "2", long, 2)))
    ).splitlines()
    assert listing[2] == "  1  Setup" + " " * 55 + "  p. 1"
    assert listing[3] == f"  2  {long}  p. 2"


def test_an_outline_without_headings_says_so() -> None:
    assert outline_text(Outline("", 2, ())) == "(no title found)\n2 pages\n  (no headings found)\n"


def test_the_json_has_the_title_pages_and_every_heading() -> None:
    outline = Outline("A Paper", 3, (Heading(1, "1", "Introduction", 1), Heading(2, "", "X", 3)))
    data = json.loads(json.dumps(outline.to_json()))
    assert data == {
        "title": "A Paper",
        "pages": 3,
        "headings": [
            {"level": 1, "number": "1", "text": "Introduction", "page": 1},
            {"level": 2, "number": "", "text": "X", "page": 3},
        ],
    }


# --------------------------------------------------------------------------------------------
# PDFs made with PyMuPDF: no TeX needed
# --------------------------------------------------------------------------------------------

BODY = (
    "A sentence of body text that runs for a while and then it stops here.",
    "Another line of body text in the same paragraph as the first one was.",
    "A third line of body text so that the body size clearly dominates it.",
)


def generated_pdf(path: Path, pages: list[list[tuple[float, float, str, float, str]]]) -> Path:
    """Each page a list of (x, y, text, font size, PyMuPDF base-14 font name)."""
    doc = pymupdf.open()
    for items in pages:
        page = doc.new_page()
        for x, y, text, size, font in items:
            page.insert_text((x, y), text, fontsize=size, fontname=font)
    doc.save(path)
    doc.close()
    return path


def body(x: float, y: float, numbered_from: int | None = None) -> list:
    lines: list = [(x, y + 12 * i, line, 10, "helv") for i, line in enumerate(BODY)]
    if numbered_from is not None:  # a review copy's line numbers in the margin beside the text
        lines += [(x - 22, y + 12 * i, str(numbered_from + i), 6, "helv") for i in range(3)]
    return lines


def sectioned(title: str, headings: list[tuple[str, str, float, str]], numbered: bool) -> list:
    """A page: the title, then each (number, name, size, font) heading with a paragraph below
    it, the paragraphs with line numbers in the margin when ``numbered``."""
    items: list = [(72, 70, title, 18, "hebo")]
    for index, (number, name, size, font) in enumerate(headings):
        y = 110 + 80 * index
        if number:  # LaTeX sets a quad between a heading's number and its name
            items += [(72, y, number, size, font), (97, y, name, size, font)]
        else:
            items.append((72, y, name, size, font))
        items += body(72, y + 20, 1 + 3 * index if numbered else None)
    return items


def test_uppercase_headings_at_body_size_are_found(tmp_path: Path) -> None:
    page = sectioned(
        "Reading Papers in Capitals",
        [
            ("1", "INTRODUCTION", 10, "hebo"),
            ("1.1", "Motivation", 10, "hebo"),
            ("", "REFERENCES", 10, "hebo"),
        ],
        numbered=True,
    )
    pdf = generated_pdf(tmp_path / "caps.pdf", [page])
    assert outline_of(pdf) == Outline(
        "Reading Papers in Capitals",
        1,
        (
            Heading(1, "1", "INTRODUCTION", 1),
            Heading(2, "1.1", "Motivation", 1),
            Heading(1, "", "REFERENCES", 1),
        ),
    )
    paragraphs = [p for p in paper_markdown(pdf).split("\n\n") if p.startswith(BODY[0])]
    assert len(paragraphs) == 3
    assert not [p for p in paragraphs if re.search(r"\d", p)], "line numbers are dropped"


def test_unnumbered_headings_are_ranked_by_size(tmp_path: Path) -> None:
    headings = [("Introduction", 14), ("Earlier Work", 11), ("Discussion", 14), ("References", 14)]
    page = sectioned("An Essay", [("", name, size, "hebo") for name, size in headings], False)
    outline = outline_of(generated_pdf(tmp_path / "unnumbered.pdf", [page]))
    assert [(h.level, h.number, h.text) for h in outline.headings] == [
        (1, "", "Introduction"),
        (2, "", "Earlier Work"),
        (1, "", "Discussion"),
        (1, "", "References"),
    ]


def test_roman_sections_have_lettered_subsections(tmp_path: Path) -> None:
    """IEEE: "II. METHOD" in capitals at body size, "A. Data" in italics under it."""
    headings = [
        ("I.", "INTRODUCTION", 10, "helv"),
        ("A.", "Setup", 10, "heit"),
        ("II.", "METHOD", 10, "helv"),
        ("A.", "Data", 10, "heit"),
        ("III.", "RESULTS", 10, "helv"),
    ]
    page = sectioned("Learning Rates in the Wild", headings, numbered=False)
    outline = outline_of(generated_pdf(tmp_path / "ieee.pdf", [page]))
    assert [(h.level, h.number, h.text) for h in outline.headings] == [
        (1, "I", "INTRODUCTION"),
        (2, "A", "Setup"),
        (1, "II", "METHOD"),
        (2, "A", "Data"),
        (1, "III", "RESULTS"),
    ]


COLUMN = (
    "Words set in a narrow column of text",
    "that wraps after some forty letters",
    "and ends its paragraph here.",
)


def column(x: float, y: float, paragraphs: int) -> list:
    return [
        (x, y + 40 * p + 12 * i, line, 10, "helv")
        for p in range(paragraphs)
        for i, line in enumerate(COLUMN)
    ]


def test_two_columns_are_read_left_then_right(tmp_path: Path) -> None:
    left = [(50, 120, "1", 10, "hebo"), (68, 120, "Left Column", 10, "hebo"), *column(50, 140, 3)]
    right = [(320, 120, "2", 10, "hebo"), (338, 120, "Right Column", 10, "hebo")]
    right += column(320, 140, 3)
    title = (150, 70, "Two Columns Side by Side", 18, "hebo")
    pdf = generated_pdf(tmp_path / "columns.pdf", [[title, *left, *right]])
    outline = outline_of(pdf)
    assert [(h.number, h.text) for h in outline.headings] == [
        ("1", "Left Column"),
        ("2", "Right Column"),
    ]
    text = paper_markdown(pdf)
    right_starts = text.index("## 2 Right Column")
    assert text.index("## 1 Left Column") < right_starts
    assert text[:right_starts].count(" ".join(COLUMN)) == 3, "the left column is read whole first"
    assert text[right_starts:].count(" ".join(COLUMN)) == 3


def test_an_unreadable_pdf_is_the_same_clear_error_as_for_the_reviewer(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pdf"
    with pytest.raises(LabtuiError, match="PDF not found"):
        outline_of(missing)
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\nthis is not really a PDF")
    with pytest.raises(LabtuiError, match="not a valid PDF"):
        outline_of(bad)
    blank = generated_pdf(tmp_path / "blank.pdf", [[]])
    with pytest.raises(LabtuiError, match="has no extractable text") as caught:
        outline_of(blank)
    assert caught.value.hint


def test_a_pdf_with_text_but_no_headings_has_an_empty_outline(tmp_path: Path) -> None:
    pdf = generated_pdf(tmp_path / "plain.pdf", [body(72, 100) + body(72, 200)])
    assert outline_of(pdf) == Outline("", 1, ())
