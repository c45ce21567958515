"""A small synthetic reviewer benchmark, written in both formats ``labtui review --calibrate``
reads, and a scripted reviewer whose answers are known, so that every measure of a calibration
can be computed by hand (tests/review/test_calibration.py).

Each paper's text carries a line ``Scripted reviewer scores for <id>: 7`` (or ``4 8``: one
Overall per ensemble member); TEST-ONLY: the scripted reviewer answers the review form with
that Overall. The AI Scientist's TSV is written exactly as its ``ratings_subset.tsv`` is: the
same header, ratings as ``6.0``, blank cells where a paper had fewer reviewers.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.research_script import REVIEW, fenced_json, last_user_text

TSV_HEADER = "paper_id\t0\t1\t2\t3\t4\t5\t6\tdecision"
RATING_COLUMNS = 7
SCORES = re.compile(r"Scripted reviewer scores for (\S+): ([\d ]+)")


@dataclass(frozen=True)
class SyntheticPaper:
    paper_id: str
    decision: str  # as The AI Scientist's TSV writes it
    ratings: tuple[int, ...]
    scores: tuple[int, ...]  # the scripted reviewers' Overall, one per ensemble member

    @property
    def accepted(self) -> bool:
        return self.decision.startswith("Accept")

    def text(self) -> str:
        return (
            f"# A study numbered {self.paper_id}\n\n## 1 Introduction\n\n"
            "We study how the width of a small network changes its accuracy on two moons.\n\n"
            f"## 2 Results\n\nScripted reviewer scores for {self.paper_id}: "
            f"{' '.join(map(str, self.scores))}\n"
        )


# Ten papers: 4 accepted and 6 rejected by the humans; the reviewer (threshold 6) accepts
# p01, p02, p04 (right), p06 and p10 (wrong) and rejects p03 (wrong) and the rest (right).
PAPERS = (
    SyntheticPaper("tQ8kZ1mPaX3", "Accept (Poster)", (8, 6, 8), (7,)),
    SyntheticPaper("Hk_3Lp9WvE2", "Accept (Spotlight)", (6, 6, 5), (6,)),
    SyntheticPaper("z-4RmN8cYq0", "Accept (Oral)", (8, 8), (4,)),
    SyntheticPaper("Bq2VuT7sLwK", "Accept (Poster)", (6, 5, 6, 8), (6,)),
    SyntheticPaper("9xPcA1dFe_Q", "Reject", (3, 5, 3), (3,)),
    SyntheticPaper("mW5hJ0rTyGz", "Reject", (5, 5, 6), (6,)),
    SyntheticPaper("Lr7-eQ2nVb8", "Reject", (1, 3), (2,)),
    SyntheticPaper("cD4sK9wXpM1", "Reject", (5, 3, 5, 3), (5,)),
    SyntheticPaper("Y0fGh6jUiOa", "Reject", (6, 3, 5), (4,)),
    SyntheticPaper("Ns3bR8vEqZ7", "Reject", (3, 3, 3), (8,)),
)
# In the TSV only, as in the real file: a paper whose decision is Unknown (left out, counted).
UNKNOWN = SyntheticPaper("Ut6Wk2LmPo9", "Unknown", (5, 6, 5), (5,))

# Four papers for an ensemble of two: mean Overall 6, 5, 6.5, 3.5; spread 2, 0, 0.5, 1.5.
ENSEMBLE_PAPERS = (
    SyntheticPaper("q1", "Accept (Poster)", (8, 6), (4, 8)),
    SyntheticPaper("q2", "Reject", (3, 5), (5, 5)),
    SyntheticPaper("q3", "Reject", (5, 5), (6, 7)),
    SyntheticPaper("q4", "Reject", (1, 3), (2, 5)),
)


def tsv_line(cells: list[str]) -> str:
    return "\t".join(cells)


def tsv_row(paper: SyntheticPaper) -> str:
    ratings = [f"{r:.1f}" for r in paper.ratings]
    ratings += [""] * (RATING_COLUMNS - len(ratings))
    return tsv_line([paper.paper_id, *ratings, paper.decision])


def write_tsv_benchmark(folder: Path, papers: tuple[SyntheticPaper, ...] = PAPERS) -> Path:
    """The AI Scientist's layout: ratings_subset.tsv beside iclr_parsed/<paper_id>.txt."""
    parsed = folder / "iclr_parsed"
    parsed.mkdir(parents=True)
    rows = [tsv_row(paper) for paper in papers]
    rows.insert(3, tsv_row(UNKNOWN))
    (folder / "ratings_subset.tsv").write_text("\n".join([TSV_HEADER, *rows]) + "\n")
    for paper in papers:
        (parsed / f"{paper.paper_id}.txt").write_text(paper.text())
    return folder


CSV_LABELS = {"Accept (Poster)": "accept", "Accept (Spotlight)": "Accept", "Reject": "reject"}


def write_csv_benchmark(folder: Path, papers: tuple[SyntheticPaper, ...] = PAPERS) -> Path:
    """labtui's CSV: papers/<id>.txt or .md, one PDF named in the ``paper`` column."""
    (folder / "papers").mkdir(parents=True)
    lines = ["paper_id,decision,ratings,paper,venue"]
    for number, paper in enumerate(papers):
        label = CSV_LABELS.get(paper.decision, paper.decision)
        given = ""
        if number == 2:
            given = f"pdfs/{paper.paper_id}.pdf"
            write_pdf(folder / given, paper.text())
        else:
            suffix = ".md" if number % 2 else ".txt"
            (folder / "papers" / f"{paper.paper_id}{suffix}").write_text(paper.text())
        ratings = ";".join(str(r) for r in paper.ratings)
        lines.append(f"{paper.paper_id},{label},{ratings},{given},Synthetic 2025")
    (folder / "benchmark.csv").write_text("\n".join(lines) + "\n")
    return folder


def write_pdf(path: Path, text: str) -> None:
    """A one-page PDF of ``text`` (PyMuPDF; no TeX needed)."""
    import pymupdf

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    page = doc.new_page()
    y = 72
    for line in text.splitlines():
        if line.strip():
            size = 16 if line.startswith("#") else 10
            page.insert_text((72, y), line.lstrip("# "), fontsize=size)
        y += 18
    doc.save(path)


class ScriptedBenchReviewer:
    """TEST-ONLY: answers the review form with the Overall the paper's text names (ensemble
    member k of a paper gets its k-th score), the Area Chair with a fixed review."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.asked: Counter[str] = Counter()  # reviews asked per paper

    def __call__(self, request: dict[str, Any]) -> str:
        text = last_user_text(request)
        if text.startswith("You are the Area Chair"):
            return fenced_json({**REVIEW, "Overall": 5, "Decision": "Reject"})
        if text.startswith("Reflection round"):
            return json.dumps({"done": True})
        found = SCORES.search(text)
        assert found, "a review request carries the paper's text"
        paper_id, scores = found.group(1), [int(s) for s in found.group(2).split()]
        with self._lock:
            member = self.asked[paper_id]
            self.asked[paper_id] += 1
        overall = scores[member % len(scores)]
        decision = "Accept" if overall >= 6 else "Reject"
        return fenced_json({**REVIEW, "Overall": overall, "Decision": decision})
