"""``labtui check``: the whole check of a paper, read as a reviewer reads it, for a project, a
``.tex`` or a PDF, with nothing written anywhere.

A project (or a file inside one) is held to its runs: the write-up's gaps
(core/writeup/completeness.py), the numbers that match no run and the sentences the runs
contradict (core/provenance/), less what the researcher waived. A ``.tex`` outside a project is
read by its text alone; a PDF by the text labtui's reader takes out of it (core/pdf/), where the
line is that text's line. Each finding names the file, the line, what is wrong and the fix.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..pdf.document import UnreadablePdf, page_count
from ..pdf.markdown import paper_markdown
from ..provenance.checks import paper_contradictions
from ..provenance.numbers import numbers_to_check, trace_written
from ..provenance.record import claim_key, key, load_waivers, run_sources
from ..provenance.setup_claims import recorded_setup
from ..settings.config import load_config
from ..workspace.run_folder import result_folders
from .completeness import (
    gap_key,
    markdown_parts,
    paper_gaps,
    project_gaps,
    results_part,
    unsupported_setup,
)
from .paper_parts import Gap
from .part_gaps import written_gaps
from .project_texts import project_shingles
from .results_gaps import results_without_table, runs_without_results

UNTRACED_FIX = (
    "Quote the number as a run recorded it (final_info.json, labtui_run.json or the code's "
    "settings), or remove it; `labtui run` waives it at the write-up's checkpoint (w) with a reason."
)
CLAIM_FIX = "Say what the runs show (the effects in notes.md), or remove the claim."


@dataclass(frozen=True)
class Finding:
    """One thing wrong with the paper, where it is and how to fix it."""

    file: str
    line: int
    kind: str
    part: str
    problem: str
    fix: str

    def text(self) -> str:
        where = f"{self.file}:{self.line}"
        part = f" ({self.part})" if self.part else ""
        return f"{where}: {self.kind}{part}: {self.problem}\n    fix: {self.fix}"


@dataclass(frozen=True)
class CheckReport:
    target: str  # what was checked
    read_as: str  # how: "LaTeX held to the project's runs", "PDF text", …
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "read_as": self.read_as,
            "count": len(self.findings),
            "findings": [asdict(f) for f in self.findings],
        }


class CheckError(LabtuiError):
    """What ``labtui check`` cannot read."""


def check_path(path: Path) -> CheckReport:
    """The check of ``path``: a project folder, a .tex or a PDF."""
    path = Path(path)
    if not path.exists():
        raise CheckError(
            f"{path}: no such file or folder", "give a project folder, a .tex or a PDF"
        )
    if path.is_dir():
        if not (path / "labtui.toml").is_file():
            raise CheckError(
                f"{path}: not a labtui project (no labtui.toml)",
                "give the paper itself (labtui check paper.tex or paper.pdf), or a project folder",
            )
        return _check_tex(path / load_config(path).paper.tex, path)
    root = _project_of(path)
    if path.suffix.lower() == ".pdf":
        return _check_pdf(path, root)
    if path.suffix.lower() == ".tex":
        return _check_tex(path, root)
    raise CheckError(f"{path}: neither a .tex nor a PDF", "give a .tex, a .pdf or a project folder")


def _project_of(path: Path) -> Path | None:
    """The project a file lies in (the nearest folder above it with labtui.toml), or None."""
    for folder in Path(path).resolve().parents:
        if (folder / "labtui.toml").is_file():
            return folder
    return None


def _check_tex(tex: Path, root: Path | None) -> CheckReport:
    if not tex.is_file():
        raise CheckError(f"{tex}: missing", "write the paper, or set [paper] tex in labtui.toml")
    text = tex.read_text(encoding="utf-8", errors="replace")
    if root is None:
        findings = [_finding(tex, g) for g in paper_gaps(text, paper_dir=tex.parent)]
        return CheckReport(str(tex), "LaTeX, by its text alone (no project around it)", findings)
    waived = load_waivers(root)
    gaps = [g for g in project_gaps(root, tex) if gap_key(g) not in waived]
    findings = [_finding(tex, g) for g in gaps] + _provenance_findings(root, tex, text, waived)
    findings.sort(key=lambda f: f.line)
    return CheckReport(str(tex), f"LaTeX held to the runs of {root}", findings)


def _provenance_findings(root: Path, tex: Path, text: str, waived: dict[str, str]) -> list[Finding]:
    """Numbers that match no run and sentences the runs contradict, less those waived."""
    traced = trace_written(numbers_to_check(text), run_sources(root))
    found = [
        Finding(
            str(tex),
            w.line,
            "untraced",
            "",
            f"“{w.text}” (in “{w.context[:70]}”) matches no value a run recorded.",
            UNTRACED_FIX,
        )
        for w in traced.untraced
        if key(w) not in waived
    ]
    found += [
        Finding(str(tex), c.line, "contradicted", "", c.problem, CLAIM_FIX)
        for c in paper_contradictions(root, text)
        if claim_key(c) not in waived
    ]
    return found


def _check_pdf(pdf: Path, root: Path | None) -> CheckReport:
    try:
        markdown = paper_markdown(pdf)
        pages = page_count(pdf)
    except UnreadablePdf as exc:
        raise CheckError(f"{pdf}: not a readable PDF ({exc})", "give the compiled paper") from None
    parts = markdown_parts(markdown)
    known = project_shingles(root) if root is not None else None
    gaps = written_gaps(parts, latex=False, known=known)
    if root is not None:
        gaps += _pdf_against_runs(parts, root)
    where = f"{pdf} (the text of its {pages} page(s))"
    read_as = f"PDF text held to the runs of {root}" if root is not None else "PDF text alone"
    return CheckReport(where, read_as, [_finding(pdf, g) for g in gaps])


def _pdf_against_runs(parts: list, root: Path) -> list[Gap]:
    """A project's PDF held to its runs, as its text allows: each run's numbers in the Results,
    every run in a table, the setup the records bear out (figures are checked in the LaTeX,
    where they are named)."""
    finished = [run.name for run in result_folders(root)]
    sources = run_sources(root)
    results = results_part(parts)
    gaps = runs_without_results(results, sources, finished[1:])
    gaps += results_without_table(results, sources, finished, latex=False)
    gaps += unsupported_setup(parts, recorded_setup(root))
    return gaps


def _finding(file: Path, gap: Gap) -> Finding:
    return Finding(str(file), gap.line, gap.kind, gap.part, gap.sentence, gap.remedy)
