"""The gaps of a paper held to its runs: numbers of the method and setup that no run used, runs
the Results report no number of, Results without the table of every run, figures the plots stage
made left out or never referenced, and an abstract that states no finding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..latex.checks import referenced_figures
from ..latex.source import strip_comments
from ..provenance.numbers import Source, numbers_to_check, trace_written
from ..workspace.run_folder import FINAL_INFO
from .paper_parts import ABSTRACT, Gap, Part

_SETTING_TITLES = ("method", "setup", "experiment", "implementation")
# A finding, in words: a direction, a comparison, or the absence of an effect.
_FINDING = re.compile(
    r"\b(?:improv\w*|increas\w*|decreas\w*|reduc\w*|lower\w*|higher|better|worse|outperform\w*|"
    r"underperform\w*|fell|rose|drops?|dropped|gains?|hurts?|no (?:significant|measurable|clear) "
    r"(?:difference|effect|change|gain)|did not (?:change|improve|affect)|does not (?:change|"
    r"improve|affect)|identical|unchanged|comparable|similar|same|matche[sd]|significant\w*|"
    r"differ\w*|achiev\w*|reach(?:es|ed))\b",
    re.I,
)


def settings_that_never_ran(parts: list[Part], sources: Sequence[Source]) -> list[Gap]:
    """The numbers of the method and setup that are no setting, argument or result of a run
    (a sweep "256, 512, and 1024" of which 1024 never ran; a "70-30 split" in no code)."""
    if not sources:
        return []
    gaps = []
    for part in parts:
        if not any(word in part.title.lower() for word in _SETTING_TITLES):
            continue
        written = numbers_to_check(f"\\section{{{part.title}}}\n" + part.body, [part.title])
        untraced = trace_written(written, list(sources)).untraced
        if untraced:
            first = untraced[0]
            numbers = ", ".join(dict.fromkeys(f"“{w.text}”" for w in untraced))
            gaps.append(
                Gap(
                    part.title,
                    "setting",
                    part.line + first.line - 1,
                    f"{numbers} (in “{first.context[:70]}”) match no setting, argument or "
                    "result of a run that ran",
                )
            )
    return gaps


def runs_without_results(
    results: Part | None, sources: Sequence[Source], runs: Sequence[str]
) -> list[Gap]:
    if not runs:
        return []
    if results is None:
        return [Gap("", "no_results", 1, "has no Results section")]
    written = numbers_to_check("\\section{Results}\n" + results.body)
    gaps = []
    for run in runs:
        own = [s for s in sources if s.run == run and s.kind in ("result", "derived")]
        if own and not trace_written(written, own).traced:
            gaps.append(
                Gap(
                    results.title,
                    "no_results",
                    results.line,
                    f"reports no number of {run} (its results are in {run}/{FINAL_INFO})",
                )
            )
    return gaps


def figures_missing(tex_text: str, figures: Sequence[str], paper_dir: Path | None) -> list[Gap]:
    if not figures:
        return []
    included = {Path(f["path"]).stem for f in referenced_figures(tex_text, paper_dir or Path("."))}
    text = strip_comments(tex_text)
    gaps = []
    for name in figures:
        stem = Path(name).stem
        if stem not in included:
            gaps.append(
                Gap("", "figure", 1, f"the figure {name} (figures.json) is not in the paper")
            )
        elif not _referenced(text, stem):
            gaps.append(Gap("", "figure", 1, f"the figure {name} is included but never referenced"))
    return gaps


def _referenced(text: str, stem: str) -> bool:
    """Whether a \\ref points at the figure whose \\includegraphics names ``stem``."""
    for figure in re.finditer(r"\\begin\{figure\*?\}(.*?)\\end\{figure\*?\}", text, re.DOTALL):
        if stem in figure.group(1):
            labels = re.findall(r"\\label\{([^}]*)\}", figure.group(1))
            return any(re.search(rf"\\(?:c|auto|eq)?ref\{{{re.escape(x)}\}}", text) for x in labels)
    return False


def abstract_without_finding(abstract: Part, sources: Sequence[Source]) -> list[Gap]:
    """An abstract with no number of a run's results and no finding in words states none."""
    results = [s for s in sources if s.kind in ("result", "derived")]
    written = numbers_to_check(f"\\begin{{abstract}}{abstract.body}\\end{{abstract}}")
    if (results and trace_written(written, results).traced) or _FINDING.search(abstract.body):
        return []
    return [Gap(ABSTRACT, "no_finding", abstract.line, "states no finding of the runs")]


_TABULAR = re.compile(r"\\begin\{tabular\*?\}(.*?)\\end\{tabular\*?\}", re.DOTALL)


def results_without_table(
    results: Part | None, sources: Sequence[Source], runs: Sequence[str], latex: bool = True
) -> list[Gap]:
    """A Results section whose tables leave out a finished run (``runs``: every one, the
    baseline first): a reader compares the runs in a table, not in scattered sentences. A run
    is in a table when the table names it or holds one of its results."""
    if results is None or not runs:
        return []
    tables = _TABULAR.findall(results.body) if latex else _text_tables(results.body)
    left_out = [run for run in runs if not any(_holds(t, run, sources) for t in tables)]
    if not left_out:
        return []
    missing = "no table of the runs" if not tables else f"no table row for {', '.join(left_out)}"
    return [Gap(results.title, "no_table", results.line, f"has {missing}")]


def _text_tables(body: str) -> list[str]:
    """The tables of a PDF's text as the reader gives them: runs of lines with cells."""
    tables, rows = [], []
    for line in [*body.splitlines(), ""]:
        if line.count("|") >= 2:
            rows.append(line)
        elif rows:
            tables.append("\n".join(rows))
            rows = []
    return tables


def _holds(table: str, run: str, sources: Sequence[Source]) -> bool:
    """Whether a table names ``run`` (``run\\_1`` in LaTeX) or holds one of its results."""
    if re.search(rf"\b{re.escape(run)}\b", table.replace("\\_", "_")):
        return True
    own = [s for s in sources if s.run == run and s.kind == "result"]
    written = numbers_to_check("\\section{Results}\n" + table)
    return bool(own) and bool(trace_written(written, own).traced)
