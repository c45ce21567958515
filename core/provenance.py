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
run's effect against the baseline contradicts is listed like an untraced number (``core/effects.py`` computes the effects,
``core/claims.py`` reads the sentences) and waived the same way, keyed by the sentence.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .artifacts import PROVENANCE, result_folders
from .ideas import NoveltyStatus, novelty_status
from .latex_text import strip_comments
from .run_settings import RUN_RECORD, run_settings


@dataclass(frozen=True)
class Source:
    """A value a run recorded (or the notebook derives from two runs)."""

    value: float
    run: str
    what: str  # "moons test_accuracy_mean", "moons test_accuracy_mean − run_0", "EPOCHS"
    commit: str = ""
    kind: str = "result"  # result | derived | config


@dataclass(frozen=True)
class Written:
    """A number as the paper writes it."""

    text: str  # as written: "93.4", "0.934", "1{,}000"
    value: float
    decimals: int  # digits after the point: the rounding it promises
    percent: bool  # written with \\% or "percent"
    line: int
    context: str  # the line, trimmed, for the checkpoint


@dataclass(frozen=True)
class Contradiction:
    """A sentence whose claim about the results the computed effects contradict."""

    sentence: str  # as written (LaTeX markup removed), whitespace collapsed
    claims: str  # what it claims: "test accuracy improved", "the change is significant"
    says: str  # what the runs say: "run_1's test_accuracy_mean is 0.8047 against 0.9367 …"
    line: int = 0  # in the paper; 0 for text without lines (an analysis)

    @property
    def text(self) -> str:
        """How a listing names it (beside the numbers' texts)."""
        short = self.sentence if len(self.sentence) <= 80 else self.sentence[:77] + "…"
        return f'"{short}"'

    @property
    def problem(self) -> str:
        """One sentence a model can act on."""
        return f"You wrote that {self.claims}, but {self.says}."


@dataclass
class Report:
    traced: list[tuple[Written, Source]] = field(default_factory=list)
    untraced: list[Written] = field(default_factory=list)
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
        commit = _commit_of(run)
        values = _final_info_values(run / "final_info.json")
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
    """What the searches' ledgers recorded (core/search_ledger.py): every step's run (kept in
    the project or not), the baseline's repeats and the best code's seed runs, each under the
    name its table gives it, and the mean and spread of those seed runs."""
    from .search_ledger import LEDGERS, SearchLedger

    sources: list[Source] = []
    for folder in sorted((Path(root) / LEDGERS).glob("*/")):
        for path in sorted(folder.rglob("final_info.json")):
            where = path.parent.relative_to(folder).as_posix()
            values = _final_info_values(path)
            sources += [
                Source(v, f"{folder.name}: {where}", what, _commit_of(path.parent))
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


def _final_info_values(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    values: dict[str, float] = {}
    for dataset, entry in data.items() if isinstance(data, dict) else ():
        if not isinstance(entry, dict):
            continue
        for group in ("means", "stderrs"):
            for metric, value in (entry.get(group) or {}).items():
                if _is_number(value):
                    values[f"{dataset} {metric}"] = float(value)
    return values


def _differences(run: str, what: str, value: float, base: float, baseline: str) -> list[Source]:
    found = [Source(value - base, run, f"{what} − {baseline}", kind="derived")]
    if base:
        relative = (value - base) / abs(base) * 100
        found.append(Source(relative, run, f"{what} vs {baseline} (%)", kind="derived"))
    return found


def _commit_of(run: Path) -> str:
    try:
        return str(json.loads((run / RUN_RECORD).read_text(encoding="utf-8")).get("commit", ""))
    except (OSError, json.JSONDecodeError, AttributeError):
        return ""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# -- what the paper writes ------------------------------------------------------------------------

# A number: not part of a word, a command or a reference; thousands may be grouped with {,}.
_NUMBER = re.compile(
    r"(?<![\w\\.])(?P<sign>[-−](?=\d))?(?P<num>\d{1,3}(?:\{,\}\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<tail>\s*(?:\\%|\\,\\%|%|\s?percent\b))?"
)
# Powers of ten and exponent notation ("$10^{-3}$", "1e-3", "2\times 10^{4}") are settings,
# not measured results: blanked before the numbers are read.
_EXPONENTS = re.compile(
    r"\d+(?:\.\d+)?\s*\\times\s*10\^\{?[-−]?\d+\}?|10\^\{?[-−]?\d+\}?|\d+(?:\.\d+)?[eE][-+]?\d+"
)
# Numbers that are names, not results: "Figure 2", "Table 1", "Section 3", "Eq. 4", years, and a
# search's "attempt 3" or "node 7".
_NAMING = re.compile(
    r"(?:Figure|Fig\.|Table|Section|Sec\.|Eq\.|Equation|Appendix|run\\?_|seed|attempt|node)~?\s*$",
    re.I,
)
# A dimensionality is the data's shape, not a measured result: "a synthetic 2-D binary
# classification task" (the moons template's own words, which Qwen2.5-Coder-1.5B repeated and
# labtui refused in three sections, 16 times).
_DIMENSIONS = re.compile(r"\b\d+(?:-|\s)?D\b|\b\d+-dimensional\b", re.I)
_SKIPPED_COMMANDS = re.compile(
    r"\\(?:ref|eqref|cite[tp]?|label|includegraphics|usepackage|documentclass|vspace|hspace|labtuistep|"
    r"graphicspath|begin|end|bibliography|bibliographystyle|multicolumn|multirow|cmidrule"
    r"(?:\([^)]*\))?)\*?(?:\[[^\]]*\])?\{[^}]*\}"
)


def numbers_to_check(tex_text: str, sections: Sequence[str] = ()) -> list[Written]:
    """The numbers of the abstract, the Results section, every table and the ``sections`` named
    (the parts of a researcher's draft that labtui writes), in order."""
    lines = tex_text.splitlines()
    written: list[Written] = []
    for start, end in _checked_spans(lines, sections=sections):
        for index in range(start, end):
            written += _numbers_in_line(lines[index], index + 1)
    return written


def numbers_in_text(text: str) -> list[Written]:
    """The numbers of a plain (not LaTeX) text, such as a model's analysis of a run: read like
    the paper's, but a bare % is a percent sign rather than a comment."""
    written: list[Written] = []
    for index, line in enumerate(text.splitlines()):
        written += _numbers_in_line(line, index + 1, latex=False)
    return written


# Sections whose sentences state what the runs showed: the Results, and the introduction and
# conclusion that sum them up (the 1.5B model's introduction said label smoothing "can improve
# test accuracy" where its run was worse, and nothing checked it).
_CLAIMING_TITLES = ("result", "introduction", "conclusion")


def claim_spans(tex_text: str) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the abstract, the introduction, the Results and the
    conclusion, where the paper states its results in sentences (tables are read for numbers
    only)."""
    return _checked_spans(tex_text.splitlines(), tables=False, keywords=_CLAIMING_TITLES)


def _checked_spans(
    lines: list[str],
    tables: bool = True,
    sections: Sequence[str] = (),
    keywords: Sequence[str] = ("result",),
) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the abstract, the sections whose title has one of
    ``keywords`` (the Results), the ``sections`` named and (unless ``tables`` is false)
    tables."""
    named = {" ".join(title.split()).lower() for title in sections}
    envs = "abstract|table\\*?|tabular\\*?|longtable" if tables else "abstract"
    spans: list[tuple[int, int]] = []
    section_start: int | None = None
    env_start: int | None = None
    for i, raw in enumerate(lines):
        line = strip_comments(raw)
        if re.search(rf"\\begin\{{({envs})\}}", line) and env_start is None:
            env_start = i
        if re.search(r"\\end\{(abstract|table\*?|longtable)\}", line) and env_start is not None:
            spans.append((env_start, i + 1))
            env_start = None
        heading = re.search(r"\\section\*?\{([^}]*)\}", line)
        if heading:
            if section_start is not None:
                spans.append((section_start, i))
                section_start = None
            title = " ".join(heading.group(1).split()).lower()
            if any(word in title for word in keywords) or title in named:
                section_start = i + 1
    if section_start is not None:
        spans.append((section_start, len(lines)))
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _numbers_in_line(raw: str, line_no: int, latex: bool = True) -> list[Written]:
    text = strip_comments(raw) if latex else raw
    if not text.strip() or re.match(r"\s*\\(?:label|caption\{\}|includegraphics)", text):
        return []
    blank = lambda m: " " * len(m.group(0))  # noqa: E731 - keeps columns for the context
    text = _DIMENSIONS.sub(blank, _EXPONENTS.sub(blank, _SKIPPED_COMMANDS.sub(blank, text)))
    found = []
    for match in _NUMBER.finditer(text):
        before = text[: match.start()]
        if _NAMING.search(before) or re.search(r"[A-Za-z]$", before):
            continue
        digits = match.group("num").replace("{,}", "")
        value = float(digits)
        if "." not in digits and 1900 <= value <= 2099:
            continue  # a year
        if match.group("sign"):
            value = -value
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        found.append(
            Written(
                text=match.group(0).strip(),
                value=value,
                decimals=decimals,
                percent=bool(match.group("tail")),
                line=line_no,
                context=raw.strip()[:160],
            )
        )
    return found


# -- matching ------------------------------------------------------------------------------------


def matches(written: Written, value: float) -> bool:
    """Whether ``written`` is ``value`` as rounded to the decimals it shows; a percentage may
    be the value itself (93.4 %) or a fraction written in percent (0.934 -> 93.4 %)."""
    tolerance = 0.5 * 10 ** (-written.decimals) + 1e-9
    candidates = [value, abs(value)]
    if written.percent or written.decimals <= 2:
        candidates += [value * 100, abs(value) * 100]
    return any(abs(written.value - c) <= tolerance for c in candidates)


def trace(tex_text: str, sources: list[Source]) -> Report:
    """Each checked number of the paper with the first source it matches, or untraced."""
    return trace_written(numbers_to_check(tex_text), sources)


def trace_written(written_numbers: list[Written], sources: list[Source]) -> Report:
    """Each number with the first source it matches (results first, then derived values, then
    configuration), or untraced."""
    ordered = sorted(sources, key=lambda s: ("result", "derived", "config").index(s.kind))
    report = Report()
    for written in written_numbers:
        source = next(
            (s for s in ordered if _plausible(written, s) and matches(written, s.value)), None
        )
        if source is None:
            report.untraced.append(written)
        else:
            report.traced.append((written, source))
    return report


def _plausible(written: Written, source: Source) -> bool:
    """Small integers match too easily by chance: only a configuration constant (an epoch
    count, a seed count) may account for a whole number below 10."""
    if written.decimals == 0 and abs(written.value) < 10:
        return source.kind == "config"
    return True


# -- the project's report ------------------------------------------------------------------------


def check_paper(
    root: Path, tex: Path, waived: dict[str, str] | None = None, parts: Sequence[str] = ()
) -> Report:
    """Trace the paper's numbers, check its claims against every run's effects, and write
    provenance.json beside the project's runs. ``parts``: the sections of a researcher's draft
    that labtui writes (``[paper] sections``), checked too: a section title, or a file the paper
    inputs (all of whose numbers are checked)."""
    # claims builds on this module's number reading, so it is imported here, where it is used
    from .claim_checks import paper_contradictions

    root = Path(root)
    tex_text = Path(tex).read_text(encoding="utf-8")
    files = [part_file(root, Path(tex), part) for part in parts]
    titles = [part for part, file in zip(parts, files, strict=True) if file is None]
    written = numbers_to_check(tex_text, titles)
    for file in filter(None, files):
        lines = file.read_text(encoding="utf-8").splitlines()
        written += [w for i, line in enumerate(lines) for w in _numbers_in_line(line, i + 1)]
    report = trace_written(written, run_sources(root))
    report.contradicted = paper_contradictions(root, tex_text)
    report.novelty = novelty_status(root)
    (root / PROVENANCE).write_text(
        json.dumps(report.to_json(waived), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return report


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
