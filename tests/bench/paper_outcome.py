"""What a real-model bench's project came out with, read from its files: the chosen idea's
novelty decision, which parts of the paper were written, the PDF's pages and the review's
decision (tests/bench/bench_report.py reports them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

PDF, REVIEW = "paper.pdf", "review.json"  # core/stages/compile.py, core/stages/review.py


def novelty_outcome(root: Path) -> str:
    """The chosen idea's novelty decision, with how many papers it rests on."""
    try:
        ideas = json.loads((root / "ideas.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ""
    for idea in ideas if isinstance(ideas, list) else []:
        if isinstance(idea, dict) and idea.get("status") in ("chosen", "done"):
            evidence = idea.get("novelty_evidence") or {}
            return (
                f"{evidence.get('decision', 'not checked')} "
                f"({len(evidence.get('papers_seen') or [])} papers seen, "
                f"{len(evidence.get('closest') or [])} named)"
            )
    return ""


_SECTION = re.compile(
    r"\\section\*?\{([^}]*)\}(.*?)(?=\\section\*?\{|\\bibliography|\\end\{document\})", re.S
)
_ABSTRACT = re.compile(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", re.S)
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z ]{2,40} HERE\b")


def paper_sections(tex: Path) -> dict[str, str]:
    """Each part of the paper (the abstract and every \\section) as written or not: "written",
    "placeholder" (the template's text is still there) or "empty"."""
    try:
        text = tex.read_text(encoding="utf-8")
    except OSError:
        return {}
    parts = [("Abstract", m.group(1)) for m in _ABSTRACT.finditer(text)]
    parts += [(m.group(1), m.group(2)) for m in _SECTION.finditer(text)]
    states = {}
    for title, body in parts:
        body = re.sub(r"\\label\{[^}]*\}|%.*", "", body).strip()
        states[title] = (
            "placeholder" if _PLACEHOLDER.search(body) else "empty" if not body else "written"
        )
    return states


def pdf_pages(root: Path) -> int:
    """Pages of the compiled paper (0 when there is none)."""
    import pymupdf  # a labtui dependency, slow to import: only a finished paper needs it

    for pdf in [root / PDF, *sorted((root / "latex").glob("*.pdf"))]:
        if pdf.exists():
            with pymupdf.open(pdf) as document:
                return int(document.page_count)
    return 0


def review_outcome(path: Path) -> dict[str, Any]:
    """The review's decision and mean Overall (review.json, core/stages/review.py)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return {"unreadable": str(exc)}
    if not isinstance(data, dict):
        return {"unreadable": "not a JSON object"}
    outcome = {k: data[k] for k in ("decision", "overall", "threshold") if k in data}
    outcome["reviews"] = len(data.get("reviews") or [])
    outcome["improvements"] = len(data.get("improvements") or [])
    return outcome
