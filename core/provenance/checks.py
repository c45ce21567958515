"""Where claims are checked (the claims themselves are read by ``core/provenance/claims.py``): a run's
analysis, whose numbers are traced and whose claims are held against that run's effects
(:func:`check_analysis`), and the paper's abstract and Results, held against every run
(:func:`paper_contradictions`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LabtuiError
from ..latex.source import strip_comments
from ..prose.check import prose_defects
from ..prose.defect import Defect
from ..runs.effects import (
    Effect,
    effects_of_runs,
    metric_directions,
    project_effects,
)
from ..workspace.run_folder import has_results, run_number
from .claims import CITATION, SENTENCE_BREAK, contradictions, sentences, unmeasured_claims
from .numbers import Contradiction, Source, Written, claim_spans, numbers_in_text, trace_written

# -- a run's analysis ----------------------------------------------------------------------------


@dataclass
class AnalysisCheck:
    """What :func:`check_analysis` found in a model's analysis of a run."""

    traced: list[tuple[Written, Source]] = field(default_factory=list)
    untraced: list[Written] = field(default_factory=list)
    contradicted: list[Contradiction] = field(default_factory=list)
    # what any reader sees at once: markup, lost backslashes, labtui's own words, instructions
    prose: list[Defect] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.untraced and not self.contradicted and not self.prose

    def problems(self) -> list[str]:
        """One sentence per problem, for a re-ask."""
        numbers = [
            f"The number {w.text} (in “{w.context}”) is no value a run recorded, no difference "
            "between the runs and no setting of the experiment: quote the effects table or "
            "leave it out."
            for w in self.untraced
        ]
        return numbers + [c.problem for c in self.contradicted] + [d.sentence for d in self.prose]

    def markdown(self) -> str:
        """For the checkpoint: each untraced number and each contradicted claim."""
        if self.ok:
            return f"The analysis agrees with the effects ({len(self.traced)} number(s) traced)."
        lines = []
        if self.untraced:
            listed = ", ".join(f"`{w.text}`" for w in self.untraced)
            lines.append(f"**{len(self.untraced)} number(s) match no run**: {listed}")
        for c in self.contradicted:
            lines.append(f"**Contradicted**: “{c.sentence}” — {c.problem}")
        lines += [f"**Not a report of the run**: {d.problem}" for d in self.prose]
        return "\n\n".join(lines)


def _small_count(written: Written) -> bool:
    """Whole numbers below 10 that are not percentages: "3 seeds", "2 runs", "step 1"."""
    return written.decimals == 0 and abs(written.value) < 10 and not written.percent


def check_analysis(text: str, found: list[Effect], sources: list[Source]) -> AnalysisCheck:
    """Trace the numbers of a model's analysis of a run to ``sources`` (see
    ``provenance.run_sources``; the effects' own numbers count too) and check its claims
    against the run's effects ``found``. Whole numbers below 10 (seed counts, list items) are
    not checked, unless they are percentages."""
    written = [w for w in numbers_in_text(text) if not _small_count(w)]
    report = trace_written(written, [*sources, *effect_sources(found)])
    run = found[0].run if found else "this run"
    analysed = run if run_number(run) is not None else None  # other runs named: comparisons
    contradicted = [
        c
        for sentence in sentences(text)
        if (c := contradictions(sentence, {run: found}, analysed)) is not None
    ]
    # a plain text: no LaTeX to hold to, but labtui's own words and other formats' markup
    prose = prose_defects(text, latex=False, reports=True)
    return AnalysisCheck(report.traced, report.untraced, contradicted, prose)


# -- the paper -----------------------------------------------------------------------------------

_FLOATS = r"table\*?|tabular\*?|figure\*?|equation\*?|align\*?"
_LATEX_DROPS = (
    (re.compile(r"\\cite[tp]?\*?(?:\[[^\]]*\])*\{[^}]*\}"), f" {CITATION} "),
    (re.compile(r"\\label\{[^}]*\}"), " "),
    (re.compile(r"\\(?:ref|eqref|autoref|cref|Cref)\{[^}]*\}"), "X"),
    (re.compile(r"\\(?:begin|end)\{[^}]*\}"), " "),
    (re.compile(r"\\(?:section|subsection|subsubsection|paragraph)\*?\{[^}]*\}"), " "),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\_"), "_"),
    (re.compile(r"\\pm"), "±"),
    (re.compile(r"\\\\|\\[,;!: ]"), " "),
    (re.compile(r"\\[a-zA-Z]+\*?"), ""),
    (re.compile(r"[{}$~]"), " "),
)


def paper_sentences(tex_text: str) -> list[tuple[str, int]]:
    """The sentences of the abstract and the Results section (tables, figures and equations
    aside), LaTeX markup removed, each with the line it starts on."""
    lines = tex_text.splitlines()
    found: list[tuple[str, int]] = []
    for start, end in claim_spans(tex_text):
        text, starts, numbers = "", [], []
        depth = 0
        for index in range(start, end):
            line = strip_comments(lines[index])
            opened = len(re.findall(rf"\\begin\{{(?:{_FLOATS})\}}", line))
            closed = len(re.findall(rf"\\end\{{(?:{_FLOATS})\}}", line))
            skip = depth > 0 or opened > 0
            depth = max(depth + opened - closed, 0)
            if skip or re.match(r"\s*\\(?:sub)*section", line):
                text += "\n\n"
                continue
            starts.append(len(text))
            numbers.append(index + 1)
            text += (_plain(line) or "\n") + "\n"
        found += _located_sentences(text, starts, numbers)
    return found


def _plain(line: str) -> str:
    for pattern, replacement in _LATEX_DROPS:
        line = pattern.sub(replacement, line)
    return line.strip()


def _located_sentences(text: str, starts: list[int], numbers: list[int]) -> list[tuple[str, int]]:
    located = []
    position = 0
    for part in SENTENCE_BREAK.split(text):
        at = text.find(part, position) if part else position
        position = at + len(part)
        sentence = " ".join(part.split())
        if len(sentence) < 12 or not starts:
            continue
        offset = at + (len(part) - len(part.lstrip()))
        line = numbers[max(bisect.bisect_right(starts, offset) - 1, 0)]
        located.append((sentence, line))
    return located


def paper_contradictions(root: Path, tex_text: str) -> list[Contradiction]:
    """The sentences of the abstract and Results whose claims every run's effects against the
    baseline contradict (a paper does not say which run it means, so it must be wrong for all
    of them to be flagged)."""
    runs = project_effects(root)
    if not runs:
        keys = baseline_keys(root)
        return [
            c
            for sentence, line in paper_sentences(tex_text)
            if keys
            if (c := unmeasured_claims(sentence, keys, line)) is not None
        ]
    return [
        c
        for sentence, line in paper_sentences(tex_text)
        if (c := contradictions(sentence, runs, None, line)) is not None
    ]


def baseline_keys(root: Path) -> list[tuple[str, str]]:
    """(data set, metric) of every metric the baseline run_0 recorded ([] without it)."""
    base = Path(root) / "run_0"
    if not has_results(base):
        return []
    try:
        found = effects_of_runs(base, base, metric_directions(root))
    except LabtuiError:
        return []
    return list(dict.fromkeys((e.dataset, e.metric) for e in found))


def text_contradiction(root: Path, text: str) -> str:
    """The first sentence of a plain ``text`` (a reviewer's summary of the project's paper)
    whose claim every run's effects against the baseline contradict, as a problem; ''."""
    runs = project_effects(root)
    for sentence in sentences(text) if runs else []:
        found = contradictions(sentence, runs, None)
        if found is not None:
            return f"says that {found.claims}, but {found.says}"
    return ""


def effect_sources(found: Iterable[Effect]) -> list[Source]:
    """The numbers an effects table shows, as provenance sources (a model may quote them)."""
    sources = []
    for e in found:
        what = f"{e.dataset} {e.metric}"
        sources += [
            Source(e.value, e.run, what),
            Source(e.baseline, e.baseline_run, what),
            Source(e.difference, e.run, f"{what} − {e.baseline_run}", kind="derived"),
        ]
        if e.relative is not None:
            sources.append(
                Source(e.relative, e.run, f"{what} vs {e.baseline_run} (%)", kind="derived")
            )
        for value, run in ((e.stderr, e.run), (e.base_stderr, e.baseline_run)):
            if value is not None:
                sources.append(Source(value, run, f"{what} standard error"))
        if e.noise is not None:
            sources.append(Source(e.noise, e.run, f"{what} noise threshold", kind="derived"))
    return sources
