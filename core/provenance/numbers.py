"""The numbers a paper writes, and whether each is a value some run recorded.

A number is read from the LaTeX source (or a plain text such as a model's analysis) with the
rounding it is written with; numbers that are names (Figure 2, run 1-3, a year, 2-D) are not read.
A written number *matches* a value when it is that value rounded to the decimals it shows (or the
value in percent); ``trace_written`` pairs each number with the first source it matches. What the
sources are (the runs' records, their differences, the code's settings) is ``core/provenance/record.py``'s
business; the records here cross into ``core/provenance/claims.py`` and ``core/provenance/checks.py``, which is
why they live below both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..latex.source import strip_comments
from ..machine.metric_lines import is_time_like


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
class Traced:
    """Each number that matched a source, with the source, and each that matched none."""

    traced: list[tuple[Written, Source]] = field(default_factory=list)
    untraced: list[Written] = field(default_factory=list)


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
# A run named by its number is a name, and so is each number of a list or range of runs: "run 1",
# "runs 1 and 2", "run 1-3" (a 1.5B model's abstract, whose "1" and "3" were traced to a learning
# rate of 0.01 read as 1 % and to N_SEEDS).
_RUN_NAMES = re.compile(
    r"\bruns?(?:\\?_|~|\s)*\d+(?:\s*(?:-{1,3}|–|to|,|and|&|or)\s*(?:run(?:\\?_|~|\s)*)?\d+"
    r"(?![.\d]|\s*\\?%))*",
    re.I,
)
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
            written += numbers_on_line(lines[index], index + 1)
    return written


def numbers_in_text(text: str) -> list[Written]:
    """The numbers of a plain (not LaTeX) text, such as a model's analysis of a run: read like
    the paper's, but a bare % is a percent sign rather than a comment."""
    written: list[Written] = []
    for index, line in enumerate(text.splitlines()):
        written += numbers_on_line(line, index + 1, latex=False)
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


def numbers_on_line(raw: str, line_no: int, latex: bool = True) -> list[Written]:
    """The numbers of one line (line number ``line_no``) that are not names."""
    text = strip_comments(raw) if latex else raw
    if not text.strip() or re.match(r"\s*\\(?:label|caption\{\}|includegraphics)", text):
        return []
    blank = lambda m: " " * len(m.group(0))  # noqa: E731 - keeps columns for the context
    for names in (_SKIPPED_COMMANDS, _EXPONENTS, _DIMENSIONS, _RUN_NAMES):
        text = names.sub(blank, text)
    found = []
    for match in _NUMBER.finditer(text):
        before = text[: match.start()]
        if _NAMING.search(before) or re.search(r"[A-Za-z]$", before):
            continue
        if not before.strip() and re.match(r"(?:\.|\))\s", text[match.end() :]):
            continue  # a list's "1." or "2)" at the start of a line
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


def trace(tex_text: str, sources: list[Source]) -> Traced:
    """Each checked number of the paper with the first source it matches, or untraced."""
    return trace_written(numbers_to_check(tex_text), sources)


def trace_written(written_numbers: list[Written], sources: list[Source]) -> Traced:
    """Each number with the first source it matches (results first, then derived values, then
    configuration; within each, a measured time last: it varies from run to run, and a number
    that matches both a time and an accuracy is the accuracy's), or untraced."""
    ordered = sorted(
        sources,
        key=lambda s: (("result", "derived", "config").index(s.kind), _a_measured_time(s)),
    )
    report = Traced()
    for written in written_numbers:
        source = next(
            (s for s in ordered if _plausible(written, s) and _matches_source(written, s)), None
        )
        if source is None:
            report.untraced.append(written)
        else:
            report.traced.append((written, source))
    return report


def _a_measured_time(source: Source) -> bool:
    words = source.what.split()
    return (
        source.kind != "config"
        and bool(words)
        and is_time_like(words[1] if len(words) > 1 else words[0])
    )


def _plausible(written: Written, source: Source) -> bool:
    """Small integers match too easily by chance: only a configuration constant (an epoch
    count, a seed count) may account for a whole number below 10."""
    if written.decimals == 0 and abs(written.value) < 10:
        return source.kind == "config"
    return True


def _matches_source(written: Written, source: Source) -> bool:
    """A setting is the value the code holds: a whole number written without a percent sign is
    never that setting times 100 (the "1" of "run 1" is no learning rate of 0.01)."""
    if source.kind == "config" and written.decimals == 0 and not written.percent:
        return abs(written.value - source.value) <= 0.5 + 1e-9
    return matches(written, source.value)
