"""Provenance: every number the paper reports must come from a run.

The numbers of the abstract, the Results section and every table are read from the LaTeX
source and matched, within the rounding they are written with, against what the runs recorded:
each run's ``final_info.json`` means (and standard errors), the differences from the baseline
that the notebook derives (absolute, and relative in percent), and the run's configuration
constants (so "200 epochs" traces to ``EPOCHS = 200`` of the commit that ran). A number that
matches nothing is *untraced*: the write-up checkpoint shows it with its line, and the
researcher fixes it or waives it. ``provenance.json`` maps each traced number to its run,
metric and commit.

Claims are checked too: a sentence of the abstract, the introduction, the Results section or the
conclusion that states a direction (an improvement, a decline, a significant effect) which every
run's effect against the baseline contradicts is listed like an untraced number (``core/runs/effects.py`` computes the effects,
``core/provenance/claims.py`` reads the sentences) and waived the same way, keyed by the sentence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..runs.script_constants import run_settings
from ..search.ledger import LEDGERS, SearchLedger
from ..workspace.artifacts import PROVENANCE
from ..workspace.ideas import NoveltyStatus, novelty_status
from ..workspace.run_folder import (
    FINAL_INFO,
    RunFolderError,
    read_final_info,
    recorded_commit,
    result_folders,
)
from .checks import paper_contradictions
from .numbers import (
    Contradiction,
    Source,
    Traced,
    Written,
    numbers_on_line,
    numbers_to_check,
    trace_written,
)


@dataclass
class Report(Traced):
    """A paper's numbers as traced, its sentences the runs contradict and the idea's novelty
    check: what provenance.json records."""

    contradicted: list[Contradiction] = field(default_factory=list)
    novelty: NoveltyStatus | None = None  # the chosen idea's check: never "novel" unchecked

    def to_json(self, waived: dict[str, str] | None = None) -> dict[str, Any]:
        waived = waived or {}
        return {
            "novelty": asdict(self.novelty) if self.novelty else None,
            "traced": [
                {"number": w.text, "line": w.line, **asdict(s), "value": s.value}
                for w, s in self.traced
            ],
            "untraced": [
                {
                    "number": w.text,
                    "line": w.line,
                    "context": w.context,
                    "waived": waived.get(key(w), ""),
                }
                for w in self.untraced
            ],
            "contradicted": [
                {
                    "sentence": c.sentence,
                    "line": c.line,
                    "claims": c.claims,
                    "runs_say": c.says,
                    "waived": waived.get(claim_key(c), ""),
                }
                for c in self.contradicted
            ],
        }

    def open_issues(self, waived: dict[str, str]) -> list[Written]:
        """Untraced numbers the researcher has not waived."""
        return [w for w in self.untraced if key(w) not in waived]

    def open_claims(self, waived: dict[str, str]) -> list[Contradiction]:
        """Contradicted sentences the researcher has not waived."""
        return [c for c in self.contradicted if claim_key(c) not in waived]


def key(written: Written) -> str:
    """How a waiver names a number: its text and the line it stands in (not the line number,
    which moves whenever text above it changes)."""
    return f"{written.text} | {written.context}"


def claim_key(claim: Contradiction) -> str:
    """How a waiver names a contradicted sentence: the sentence itself."""
    return f"claim | {claim.sentence}"


# -- what the runs recorded ---------------------------------------------------------------------


def run_sources(root: Path, baseline: str = "run_0") -> list[Source]:
    """Every value the project's finished runs recorded, and the differences from the baseline."""
    root = Path(root)
    runs = result_folders(root)
    sources: list[Source] = []
    recorded: dict[str, dict[str, float]] = {}
    for run in runs:
        commit = recorded_commit(run)
        values = _recorded_values(run)
        recorded[run.name] = values
        sources += [Source(v, run.name, what, commit) for what, v in values.items()]
        settings = run_settings(root, run)
        sources += [
            Source(v, run.name, name, commit, kind="config") for name, v in settings.items()
        ]
    base = recorded.get(baseline, {})
    for run_name, values in recorded.items():
        if run_name == baseline:
            continue
        for what, value in values.items():
            if what in base:
                sources += _differences(run_name, what, value, base[what], baseline)
    return sources + ledger_sources(root)


def ledger_sources(root: Path) -> list[Source]:
    """What the searches' ledgers recorded (core/search/ledger.py): every step's run (kept in
    the project or not), the baseline's repeats and the best code's seed runs, each under the
    name its table gives it, and the mean and spread of those seed runs."""
    sources: list[Source] = []
    for folder in sorted((Path(root) / LEDGERS).glob("*/")):
        for path in sorted(folder.rglob(FINAL_INFO)):
            where = path.parent.relative_to(folder).as_posix()
            values = _recorded_values(path.parent)
            sources += [
                Source(v, f"{folder.name}: {where}", what, recorded_commit(path.parent))
                for what, v in values.items()
            ]
        strategy, _, idea = folder.name.partition("-")
        final = SearchLedger(root, strategy, idea, "").final()
        if final is not None and final.mean is not None:
            name = f"{folder.name}: step {final.best_step}'s seed runs"
            sources.append(Source(final.mean, name, "mean", final.commit, kind="derived"))
            if final.std is not None:
                sources.append(
                    Source(final.std, name, "standard deviation", final.commit, kind="derived")
                )
    return sources


def _recorded_values(folder: Path) -> dict[str, float]:
    """The means and standard errors of a folder's final_info.json, by "dataset metric" ({}
    when it cannot be read)."""
    try:
        info = read_final_info(folder)
    except RunFolderError:
        return {}
    return {
        f"{dataset} {metric}": float(value)
        for dataset, entry in info.datasets.items()
        for group in (entry.means, entry.stderrs)
        for metric, value in group.items()
        if _is_number(value)
    }


def _differences(run: str, what: str, value: float, base: float, baseline: str) -> list[Source]:
    found = [Source(value - base, run, f"{what} − {baseline}", kind="derived")]
    if base:
        relative = (value - base) / abs(base) * 100
        found.append(Source(relative, run, f"{what} vs {baseline} (%)", kind="derived"))
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- the project's report ------------------------------------------------------------------------


def check_paper(
    root: Path, tex: Path, waived: dict[str, str] | None = None, parts: Sequence[str] = ()
) -> Report:
    """Trace the paper's numbers, check its claims against every run's effects, and write
    provenance.json beside the project's runs. ``parts``: the sections of a researcher's draft
    that labtui writes (``[paper] sections``), checked too: a section title, or a file the paper
    inputs (all of whose numbers are checked)."""
    root = Path(root)
    tex_text = Path(tex).read_text(encoding="utf-8")
    files = [part_file(root, Path(tex), part) for part in parts]
    titles = [part for part, file in zip(parts, files, strict=True) if file is None]
    written = numbers_to_check(tex_text, titles)
    for file in filter(None, files):
        lines = file.read_text(encoding="utf-8").splitlines()
        written += [w for i, line in enumerate(lines) for w in numbers_on_line(line, i + 1)]
    traced = trace_written(written, run_sources(root))
    report = Report(traced.traced, traced.untraced)
    report.contradicted = paper_contradictions(root, tex_text)
    report.novelty = novelty_status(root)
    record = report.to_json(waived)
    # the draft's gaps (core/writeup/completeness.py) are checked and recorded by the write-up;
    # a trace of the numbers keeps them and their waivers
    record["gaps"] = _recorded_gaps(root)
    (root / PROVENANCE).write_text(
        json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return report


def _recorded_gaps(root: Path) -> list[Any]:
    try:
        data = json.loads((root / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    gaps = data.get("gaps") if isinstance(data, dict) else None
    return gaps if isinstance(gaps, list) else []


def part_file(root: Path, tex: Path, part: str) -> Path | None:
    """The file a part of ``[paper] sections`` names (as \\input resolves it: beside the paper,
    then from the project), or None: the part is a section title."""
    if not (part.endswith(".tex") or "/" in part):
        return None
    for candidate in (tex.parent / part, tex.parent / f"{part}.tex", root / part):
        if candidate.is_file():
            return candidate
    return None


def load_waivers(root: Path) -> dict[str, str]:
    """The researcher's waivers recorded in provenance.json: {key: reason}, for numbers and
    for contradicted sentences."""
    try:
        data = json.loads((Path(root) / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    waivers = {}
    for entry in data.get("untraced", []):
        if isinstance(entry, dict) and entry.get("waived"):
            waivers[f"{entry.get('number')} | {entry.get('context')}"] = str(entry["waived"])
    for entry in data.get("contradicted", []):
        if isinstance(entry, dict) and entry.get("waived"):
            waivers[f"claim | {entry.get('sentence')}"] = str(entry["waived"])
    for entry in data.get("gaps", []):  # core/writeup/completeness.py: gap_key
        if isinstance(entry, dict) and entry.get("waived"):
            key = f"gap | {entry.get('part')} | {entry.get('kind')} | {entry.get('problem')}"
            waivers[key] = str(entry["waived"])
    return waivers


def report_markdown(report: Report, waived: dict[str, str]) -> str:
    """For the checkpoint: how many numbers were traced, and each one that was not."""
    lines = [f"Provenance: {len(report.traced)} number(s) traced to runs."]
    if report.novelty is not None:
        lines.append(f"\n{report.novelty.line}")
    open_issues = report.open_issues(waived)
    if open_issues:
        lines.append(
            f"\n**{len(open_issues)} number(s) match no run** (fix them, or waive each):\n"
        )
        lines += [f"- `{w.text}` on line {w.line}: {w.context}" for w in open_issues]
    open_claims = report.open_claims(waived)
    if open_claims:
        lines.append(
            f"\n**{len(open_claims)} sentence(s) claim what the runs contradict** "
            "(fix them, or waive each):\n"
        )
        lines += [f"- line {c.line}: {c.text}: {c.problem}" for c in open_claims]
    waived_here = [w for w in report.untraced if key(w) in waived]
    waived_claims = [c for c in report.contradicted if claim_key(c) in waived]
    if waived_here or waived_claims:
        lines.append("\nWaived by you:\n")
        lines += [f"- `{w.text}` on line {w.line}: {waived[key(w)]}" for w in waived_here]
        lines += [f"- {c.text} on line {c.line}: {waived[claim_key(c)]}" for c in waived_claims]
    return "\n".join(lines)
