"""Whether a draft is a whole paper, checked by code before anyone calls it done.

Each check is one a demanding co-author makes on a draft, and none needs a model: every part the
template has (the abstract and each ``\\section``) is written, in words of its own; no template
placeholder is left, no paragraph opens with a label (``METHOD:``), the Results and the
conclusion report rather than promise ("we will …"); the Results carry numbers of every run
the paper stands on; every figure the plots stage made is in the paper and referenced; the
abstract states a finding. A Qwen2.5-Coder-1.5B draft that a whole pipeline called done had the
same sentence as its abstract, introduction and related work, "CONCLUSIONS HERE", a Results
section without a number, and Method and Setup as one paragraph twice.

Beyond the form, the paper is read as a reviewer reads it (core/writeup/part_gaps.py with
core/prose/: markup of another format, lost backslashes, text copied from labtui's prompts,
instructions, promises, stray lines, repeats) and held to the runs (core/writeup/results_gaps.py:
the table of every run, each run's numbers, the figures; core/provenance/setup_claims.py: the
hardware, data sizes, training lengths and parts of the model the records and code bear out).

The gaps are records (:class:`Gap`): the write-up's checkpoint lists them first and blocks
approval on them, ``--auto`` asks the sections again, and what is left is the paper's open
problems, said at the end of the pipeline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..prose.copied import Shingles
from ..provenance.numbers import Source
from ..provenance.record import run_sources
from ..provenance.setup_claims import RecordedSetup, recorded_setup, setup_defects
from ..workspace.artifacts import FIGURES, PROVENANCE
from ..workspace.run_folder import result_folders
from .paper_parts import ABSTRACT, Gap, Part, gap_key, markdown_parts, paper_parts
from .part_gaps import written_gaps
from .project_texts import project_shingles
from .results_gaps import (
    abstract_without_finding,
    figures_missing,
    results_without_table,
    runs_without_results,
    settings_that_never_ran,
)

__all__ = [
    "ABSTRACT",
    "Gap",
    "Part",
    "figure_names",
    "gap_key",
    "markdown_parts",
    "paper_gaps",
    "paper_parts",
    "project_gaps",
    "record_gaps",
    "written_gaps",
]

_REPORTING = ("result", "conclusion", "discussion")


def record_gaps(root: Path, gaps: Sequence[Gap], waived: dict[str, str]) -> None:
    """The draft's gaps beside its numbers in provenance.json ("gaps"), each with the
    researcher's waiver ('' when open), where load_waivers reads them back."""
    path = Path(root) / PROVENANCE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        data = {}
    data = data if isinstance(data, dict) else {}
    data["gaps"] = [{**asdict(g), "waived": waived.get(gap_key(g), "")} for g in gaps]
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def paper_gaps(
    tex_text: str,
    *,
    sources: Sequence[Source] = (),
    runs: Sequence[str] = (),
    figures: Sequence[str] = (),
    paper_dir: Path | None = None,
    baseline: str = "",
    known: Shingles | None = None,
    setup: RecordedSetup | None = None,
) -> list[Gap]:
    """Every gap of the draft ``tex_text``: by part (placeholders, unwritten, labels, the prose
    defects, promises, repeats), then held to the runs: each of ``runs`` (the runs the paper
    stands on, besides the ``baseline``) with a number of its own in the Results, every run
    and the baseline in a table there, each of ``figures`` (figures.json's names) included and
    referenced, a finding in the abstract, and (``setup``: what the runs recorded) no setup
    claim the records and code do not bear out. ``sources``: the runs' values
    (provenance.run_sources); ``known``: the texts no part may copy (labtui's own and the
    project's)."""
    parts = paper_parts(tex_text)
    gaps = written_gaps(parts, known=known)
    gaps += settings_that_never_ran(parts, sources)
    results = results_part(parts)
    gaps += runs_without_results(results, sources, runs)
    gaps += results_without_table(results, sources, [baseline, *runs] if baseline else runs)
    gaps += figures_missing(tex_text, figures, paper_dir)
    if setup is not None:
        gaps += unsupported_setup(parts, setup)
    abstract = next((p for p in parts if p.title == ABSTRACT), None)
    if abstract is not None and not any(g.part == ABSTRACT for g in gaps):
        gaps += abstract_without_finding(abstract, sources)
    return gaps


def results_part(parts: list[Part]) -> Part | None:
    """The part that reports the results: the first whose title says Results."""
    return next(
        (
            p
            for p in parts
            if any(w in p.title.lower() for w in _REPORTING) and "result" in p.title.lower()
        ),
        None,
    )


def unsupported_setup(parts: list[Part], setup: RecordedSetup) -> list[Gap]:
    """A sentence about this work, in any part, that states a setup the runs' records and code
    do not bear out (core/provenance/setup_claims.py): each thing stated once, where the paper
    first states it."""
    gaps: list[Gap] = []
    said: set[str] = set()
    for part in parts:
        others = any(word in part.title.lower() for word in ("background", "related"))
        for found in setup_defects(part.body, setup, others_part=others):
            claim = found.problem.split("”: ", 1)[-1]
            if claim in said:
                continue
            said.add(claim)
            line = part.line + part.body.count("\n", 0, found.at)
            gaps.append(Gap(part.title, found.kind, line, found.problem, found.fix))
    return gaps


def project_gaps(root: Path, tex: Path, baseline: str = "run_0") -> list[Gap]:
    """The gaps of the project's paper ``tex``, held to the project's runs (every finished run
    but the baseline has numbers in the Results, every run is in its table), to the figures the
    plots stage made, to what the runs recorded of their setup and to the texts labtui showed
    the model."""
    root = Path(root)
    finished = [run.name for run in result_folders(root)]
    return paper_gaps(
        Path(tex).read_text(encoding="utf-8"),
        sources=run_sources(root, baseline),
        runs=[name for name in finished if name != baseline],
        figures=figure_names(root),
        paper_dir=Path(tex).parent,
        baseline=baseline if baseline in finished else "",
        known=project_shingles(root),
        setup=recorded_setup(root),
    )


def figure_names(root: Path) -> list[str]:
    """The figures the plots stage made and described (figures.json), by file name."""
    try:
        described = json.loads((root / FIGURES).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    return [str(name) for name in described] if isinstance(described, dict) else []
