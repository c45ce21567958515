"""The facts a reviewer is given before it reads a paper, computed by code, and the scores they cap.

A reviewer model, small or large, can be talked into praise by a hollow paper: Qwen2.5-Coder-1.5B
gave a draft with one sentence as its abstract, introduction and related work, no result and a
placeholder for its conclusion Quality 4/4, Soundness 4/4 and "a comprehensive overview of
existing work". So before any model reads the paper, labtui establishes what code can: its pages,
the parts present and missing, placeholders left, parts that repeat another, and (for a project's
own paper) the numbers traced to runs, untraced and contradicted, the figures included, the runs
behind it and whether the idea's novelty was checked. The reviewer is shown the sheet, the review
record keeps it, and scores the facts contradict are capped, each with its reason.

A paper with open gaps is never accepted, whatever the reviewers said and whatever their mean: a
1.5B model's project paper, its gaps open, was reviewed "Accept, 7/10" while the decision followed
the mean Overall alone. Its Overall is capped at "Reject" and the panel's decision is Reject,
with its gaps as the reason (:meth:`FactSheet.rejection`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..workspace.run_folder import result_folders
from ..writeup.completeness import Gap, figure_names, markdown_parts, written_gaps
from ..writeup.section_text import placeholders_left
from .form import PaperReview
from .reviewer import ReviewPanel

# The parts every empirical paper has, by the words their headings use.
EXPECTED_PARTS = {
    "introduction": ("introduction",),
    "method": ("method", "approach", "model", "framework", "proposed"),
    "experiments or results": ("result", "experiment", "evaluation", "empirical"),
    "conclusion": ("conclusion", "discussion", "summary"),
}
_FIGURE_CAPTION = re.compile(r"^(?:Figure|Fig\.)\s*(\d+)\s*[:.]", re.M)
# The highest Overall of a paper with open gaps: 3 is "Reject" on the NeurIPS form's 1-10 scale
# (core/answers/review_answers.py), below its borderline 4 and 5.
REJECT_OVERALL = 3
# The gaps a PDF's text shows by itself that make it a Reject (see text_facts).
# What makes a PDF unfinished whoever reviews it: a placeholder, a part too short to say
# anything, and what any reader sees at once (core/prose/): markup of another format, commands
# that lost their backslash, labtui's own words or instructions, promises of finished work,
# stray lines. None fires on The AI Scientist's five papers in shared/corpus but their one
# placeholder.
UNFINISHED_KINDS = (
    "placeholder", "unwritten", "markup", "lost_backslash", "copied", "promise", "stray",
)  # fmt: skip
SHOWN_GAPS = 3  # gaps a rejection's reason names before "and N more"


@dataclass(frozen=True)
class Cap:
    """A score the facts bound: at most ``at_most``, because ``why``."""

    score: str
    at_most: int
    why: str


class CappedScore(BaseModel):
    """A score the facts lowered: ``score`` from ``was`` to ``to``, because ``why`` (review.json
    spells ``was`` "from")."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, serialize_by_alias=True)

    score: str
    was: int = Field(validation_alias="from", serialization_alias="from")
    to: int
    why: str

    @property
    def said(self) -> str:
        return f"{self.score} {self.was} capped at {self.to}: {self.why}"


@dataclass
class FactSheet:
    """What code established about a paper before a model read it. ``None``: not known here
    (a PDF reviewed without its project has no runs to trace its numbers to)."""

    pages: int | None
    parts: list[str]
    missing: list[str]
    placeholders: list[str]
    repeated: list[str]
    unwritten: list[str]
    figures: int
    traced: int | None = None
    untraced: int | None = None
    contradicted: int | None = None
    figures_made: int | None = None
    runs: list[str] | None = None
    runs_without_results: list[str] = field(default_factory=list)
    novelty: str | None = None
    # Gaps that make the paper unfinished (a project's: the write-up's unwaived gaps, each as
    # Gap.text; a PDF's: its placeholders and unwritten parts). Older review.json: none.
    open_gaps: list[str] = field(default_factory=list)

    def caps(self) -> list[Cap]:
        """The scores the facts bound: a paper without results cannot be sound or of quality,
        one with placeholders or missing parts cannot be clear or well presented, and one with
        open gaps cannot be better than a Reject overall."""
        caps = []
        no_results = self._no_results()
        if no_results:
            caps += [Cap(score, 1, no_results) for score in ("Quality", "Soundness")]
        unfinished = self._unfinished()
        if unfinished:
            caps += [Cap(score, 2, unfinished) for score in ("Presentation", "Clarity")]
        if self.open_gaps:
            caps.append(Cap("Overall", REJECT_OVERALL, self.rejection))
        return caps

    @property
    def rejection(self) -> str:
        """Why the paper is a Reject whatever its reviews say ('' when the facts leave the
        decision to them): its open gaps, the first few named."""
        if not self.open_gaps:
            return ""
        count, shown = len(self.open_gaps), "; ".join(self.open_gaps[:SHOWN_GAPS])
        more = f"; and {count - SHOWN_GAPS} more" if count > SHOWN_GAPS else ""
        return f"the paper has {count} open gap(s): {shown}{more}"

    @property
    def unverified(self) -> list[str]:
        """Scores no code could back: Originality, where the idea's novelty was not checked."""
        return ["Originality"] if self.novelty == "unchecked" else []

    def _no_results(self) -> str:
        if self.traced == 0 and self.runs:
            return "no number in the paper is traced to a run"
        if self.runs_without_results:
            return f"the Results report no number of {', '.join(self.runs_without_results)}"
        if "experiments or results" in self.missing:
            return "the paper has no experiments or results section"
        return ""

    def _unfinished(self) -> str:
        if self.placeholders:
            return f"template placeholders are left ({', '.join(self.placeholders)})"
        if self.missing:
            return f"parts are missing ({', '.join(self.missing)})"
        if self.unwritten:
            return f"parts are not written ({', '.join(self.unwritten)})"
        return ""

    def text(self) -> str:
        """The sheet for the reviewer's prompt: facts, one a line, then the bounds they set."""
        lines = [
            "Facts about this paper, established by code before you read it (trust them over "
            "the paper's own words):",
            f"- pages: {self.pages if self.pages is not None else 'unknown'}",
            f"- parts: {', '.join(self.parts) or 'none found'}",
            f"- parts missing: {', '.join(self.missing) or 'none'}",
            f"- template placeholders left: {', '.join(self.placeholders) or 'none'}",
            f"- parts that repeat another: {'; '.join(self.repeated) or 'none'}",
            f"- parts too short to be written: {', '.join(self.unwritten) or 'none'}",
            f"- figures: {self.figures}"
            + (f" of the {self.figures_made} the runs' plots made" if self.figures_made else ""),
        ]
        if self.open_gaps:
            lines.append(f"- open gaps (the paper is unfinished): {'; '.join(self.open_gaps)}")
        if self.traced is not None:
            lines.append(
                f"- numbers traced to a run: {self.traced}; matching no run: {self.untraced}; "
                f"sentences the runs contradict: {self.contradicted}"
            )
        if self.runs is not None:
            lines.append(f"- runs behind the paper: {', '.join(self.runs) or 'none'}")
        if self.novelty is not None:
            lines.append(f"- novelty of the idea: {self.novelty}")
        bounds = [f"{c.score} at most {c.at_most} ({c.why})" for c in self.caps()]
        if bounds:
            lines.append("So: " + "; ".join(bounds) + ".")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "caps": [asdict(c) for c in self.caps()]}


def text_facts(markdown: str, pages: int | None) -> FactSheet:
    """What the paper's text shows by itself (any PDF, with or without its project).

    Its open gaps are the template placeholders left, the parts too short to be written and the
    defects any reader sees (UNFINISHED_KINDS): a paper with "PLEASE FILL IN CAPTION HERE" in it
    (one of The AI Scientist's own, in shared/corpus), a one-line conclusion or HTML in its
    Method is not finished, and no reviewer's enthusiasm makes it acceptable. A part that repeats another is a fact the reviewer weighs, not a gap that
    decides: read from a PDF it is often a conclusion restating the results (most of The AI
    Scientist's papers in the corpus), a fault of style in an otherwise whole paper. (For a
    project's own paper the write-up's gaps replace these: project_facts.)"""
    parts = markdown_parts(markdown)
    gaps = written_gaps(parts, latex=False)
    titles = [p.title for p in parts]
    return FactSheet(
        pages=pages,
        parts=titles,
        missing=[
            name
            for name, words in EXPECTED_PARTS.items()
            if not any(word in title.lower() for title in titles for word in words)
        ],
        placeholders=sorted({left for part in parts for left in placeholders_left(part.body)}),
        repeated=[f"{g.part} {g.problem}" for g in gaps if g.kind == "repeats"],
        unwritten=[g.part for g in gaps if g.kind == "unwritten"],
        figures=len(set(_FIGURE_CAPTION.findall(markdown))),
        # the line a gap names is the extracted text's, which the reader of the PDF never sees
        open_gaps=[f"{g.part}: {g.problem}" for g in gaps if g.kind in UNFINISHED_KINDS],
    )


def project_facts(
    markdown: str, pages: int | None, root: Path, gaps: list[Gap], provenance: dict[str, Any]
) -> FactSheet:
    """A project's own paper: its text's facts, and what its runs and its provenance.json say
    (``gaps``: the write-up's check of the LaTeX, core/writeup/completeness.py, less those the
    researcher waived). Its open gaps are those ``gaps``, which the pipeline asked to be mended
    or waived, not what its text shows: a waived gap does not reject it, and a researcher's own
    draft (no gaps checked) is left to its reviewers."""
    sheet = text_facts(markdown, pages)
    sheet.open_gaps = [gap.text for gap in gaps]
    sheet.traced = len(provenance.get("traced") or [])
    sheet.untraced = len([u for u in provenance.get("untraced") or [] if not u.get("waived")])
    sheet.contradicted = len(
        [c for c in provenance.get("contradicted") or [] if not c.get("waived")]
    )
    sheet.runs = [run.name for run in result_folders(root)]
    sheet.runs_without_results = [
        found.group(1)
        for g in gaps
        if g.kind == "no_results" and (found := re.search(r"number of (\S+)", g.problem))
    ]
    sheet.figures_made = len(figure_names(root)) or None
    novelty = provenance.get("novelty")
    sheet.novelty = str(novelty.get("decision")) if isinstance(novelty, dict) else None
    return sheet


def capped(review: PaperReview, caps: list[Cap]) -> tuple[PaperReview, list[CappedScore]]:
    """The review with each score above its cap set to the cap, and what was changed: never
    silently, the record keeps both."""
    fields = dict(review.fields)
    changed = []
    for cap in caps:
        if int(fields[cap.score]) > cap.at_most:
            changed.append(
                CappedScore(score=cap.score, was=fields[cap.score], to=cap.at_most, why=cap.why)
            )
            fields[cap.score] = cap.at_most
    return replace(review, fields=fields), changed


@dataclass(frozen=True)
class Reviewed:
    """A panel's reviews with their scores capped by the paper's facts (its decision Reject,
    with the reason, where they reject the paper), the sheet they were given and what the caps
    changed: what review.json keeps of a review (``core.review.record.ReviewRecord.of``)."""

    panel: ReviewPanel
    facts: FactSheet
    capped: list[CappedScore]


def capped_panel(panel: ReviewPanel, facts: FactSheet) -> Reviewed:
    """Each review and the meta-review with the scores the facts bound capped, and the panel
    rejecting the paper where its facts do (:meth:`FactSheet.rejection`)."""
    caps = facts.caps()
    reviews, changed = [], []
    for review in panel.reviews:
        kept, changes = capped(review, caps)
        reviews.append(kept)
        changed += changes
    meta, meta_changes = capped(panel.meta, caps)
    if panel.meta is panel.reviews[0]:  # one reviewer: its review is the meta-review
        meta = reviews[0]
    else:
        changed += meta_changes
    panel = replace(panel, reviews=reviews, meta=meta, rejected_because=facts.rejection)
    return Reviewed(panel, facts, changed)
