"""How fast labtui reads a paper's structure (not run by pytest): `outline_of` (what
`labtui review PAPER.pdf --outline` prints) and `paper_markdown` (what the reviewer reads) on
the style fixtures of the tests, compiled here with TeX.

    .venv/bin/python tests/bench/outline_bench.py [--repeat 7] [--pdf PAPER.pdf ...]

Each number is the median of N runs in this process (PyMuPDF already imported), per paper;
"both" is outline_of followed by paper_markdown, as a review that also prints its outline does.
The goal for a 10-page paper is 0.5 s for both. `--pdf` adds papers of your own.

Prints one table and one JSON line, like bench.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from support.paper_styles import all_styles  # noqa: E402
from tui_bench import Row, print_report, slug  # noqa: E402

from labtui.core.pdf.document import page_count  # noqa: E402
from labtui.core.pdf.markdown import paper_markdown  # noqa: E402
from labtui.core.pdf.outline import outline_of  # noqa: E402

GOAL_S_PER_10_PAGES = 0.5


def median_s(read: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def paper_rows(name: str, pdf: Path, repeat: int) -> list[Row]:
    pages = page_count(pdf)
    outline = outline_of(pdf)  # warms the file cache
    outline_s = median_s(lambda: outline_of(pdf), repeat)
    markdown_s = median_s(lambda: paper_markdown(pdf), repeat)
    both = outline_s + markdown_s
    goal = f"≤ {GOAL_S_PER_10_PAGES * pages / 10:.2f} s"
    note = f"{pages} pages, {len(outline.headings)} headings; {both / pages * 1000:.0f} ms a page"
    key = slug(name)
    return [
        Row(f"{key}_outline_s", f"{name}: outline_of", outline_s, "s", note=note),
        Row(f"{key}_markdown_s", f"{name}: paper_markdown", markdown_s, "s"),
        Row(f"{key}_both_s", f"{name}: both", both, "s", goal=goal),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pdf", type=Path, nargs="*", default=[], help="more papers to time")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for paper in all_styles():
            rows += paper_rows(paper.name, paper.compile(Path(tmp)), args.repeat)
    for pdf in args.pdf:
        rows += paper_rows(pdf.stem, pdf, args.repeat)
    print_report(rows, load)


if __name__ == "__main__":
    main()
