"""Whether a draft is a whole paper, checked by code before anyone calls it done.

Each check is one a demanding co-author makes on a draft, and none needs a model: every part the
template has (the abstract and each ``\\section``) is written, in words of its own; no template
placeholder is left, no paragraph opens with a label (``METHOD:``), the Results and the
conclusion report rather than promise ("we will …"); the Results carry numbers of every run
the paper stands on; every figure the plots stage made is in the paper and referenced; the
abstract states a finding. A Qwen2.5-Coder-1.5B draft that a whole pipeline called done had the
same sentence as its abstract, introduction and related work, "CONCLUSIONS HERE", a Results
section without a number, and Method and Setup as one paragraph twice.

The gaps are records (:class:`Gap`): the write-up's checkpoint lists them first and blocks
approval on them, ``--auto`` asks the sections again, and what is left is the paper's open
problems, said at the end of the pipeline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from pathlib import Path

from ..latex.checks import referenced_figures
from ..latex.source import balanced_group, blank_out, line_of, strip_comments
from ..provenance.numbers import Source, numbers_to_check, trace_written
from ..provenance.record import run_sources
from ..workspace.artifacts import FIGURES, PROVENANCE
from ..workspace.run_folder import FINAL_INFO, result_folders
from .section_text import labelled_paragraph, placeholders_left, promises

ABSTRACT = "Abstract"
MIN_WORDS = 25  # fewer words than this in a part: not written
REPEAT_MIN_WORDS = 8  # paragraphs shorter than this are not compared
REPEAT_RATIO = 0.8  # word-sequence similarity from which a paragraph repeats another

_PART = re.compile(
    r"\\begin\s*\{abstract\}|\\section\*?\s*\{|\\appendix\b|\\bibliographystyle\b"
    r"|\\bibliography\s*\{|\\printbibliography\b|\\end\s*\{document\}"
)
_ABSTRACT_END = re.compile(r"\\end\s*\{abstract\}")
_LABEL_COMMAND = re.compile(r"\\label\s*\{[^}]*\}")
_SETTING_TITLES = ("method", "setup", "experiment", "implementation")
# Gaps whose problem is said after the part's name ("The Results reports no number of run_1").
_PHRASED = frozenset({"placeholder", "unwritten", "repeats", "no_results", "no_finding"})
_COMMAND = re.compile(r"\\[A-Za-z@]+\*?(?:\[[^\]]*\])?")
_REPORTING = ("result", "conclusion", "discussion")
# A finding, in words: a direction, a comparison, or the absence of an effect.
_FINDING = re.compile(
    r"\b(?:improv\w*|increas\w*|decreas\w*|reduc\w*|lower\w*|higher|better|worse|outperform\w*|"
    r"underperform\w*|fell|rose|drops?|dropped|gains?|hurts?|no (?:significant|measurable|clear) "
    r"(?:difference|effect|change|gain)|did not (?:change|improve|affect)|does not (?:change|"
    r"improve|affect)|identical|unchanged|comparable|similar|same|matche[sd]|significant\w*|"
    r"differ\w*|achiev\w*|reach(?:es|ed))\b",
    re.I,
)


@dataclass(frozen=True)
class Part:
    """The abstract or one section of the paper: its title and its body as written."""

    title: str
    body: str  # comments blanked
    line: int  # of its heading (or \begin{abstract})


@dataclass(frozen=True)
class Gap:
    """One reason the draft is not yet a paper, said so that a researcher or a model can act."""

    part: str  # "Abstract", "Results", … ("" for the paper as a whole)
    # placeholder | unwritten | repeats | label | promise | setting | no_results | figure |
    # no_finding
    kind: str
    line: int
    problem: str

    @property
    def sentence(self) -> str:
        """The gap as one sentence, for a model asked to mend it."""
        if self.kind in _PHRASED and self.part:
            return f"The {self.part} {self.problem}."
        text = self.problem[:1].upper() + self.problem[1:]
        return text if text.endswith(".") else f"{text}."

    @property
    def text(self) -> str:
        """How a listing names it."""
        where = f"{self.part}, line {self.line}" if self.part else f"line {self.line}"
        return f"{where}: {self.problem}"


def gap_key(gap: Gap) -> str:
    """How a waiver names a gap: its part, kind and problem (not its line, which moves)."""
    return f"gap | {gap.part} | {gap.kind} | {gap.problem}"


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


def paper_parts(tex_text: str) -> list[Part]:
    """The abstract and each \\section of a LaTeX source, in order (subsections stay in their
    section; the back matter and appendices are not parts)."""
    text = _LABEL_COMMAND.sub(blank_out, strip_comments(tex_text))
    parts = []
    for match in _PART.finditer(text):
        token = match.group(0)
        if token.startswith("\\begin"):
            end = _ABSTRACT_END.search(text, match.end())
            body_end = end.start() if end else len(text)
            parts.append(Part(ABSTRACT, text[match.end() : body_end], line_of(text, match.start())))
        elif token.startswith("\\section"):
            title = balanced_group(text, match.end() - 1)
            start = match.end() + len(title) + 1
            following = _PART.search(text, start)
            body = text[start : following.start() if following else len(text)]
            parts.append(Part(" ".join(title.split()), body, line_of(text, match.start())))
    return parts


def markdown_parts(markdown: str) -> list[Part]:
    """The parts of a paper as the reader gives it (core/pdf/markdown.py: '## ' before the
    abstract's and each section's heading), in order; the references are no part."""
    parts: list[Part] = []
    title, lines, start = "", [], 0
    for number, line in enumerate([*markdown.splitlines(), "## "], 1):
        if not line.startswith("## "):
            lines.append(line)
            continue
        if title and not re.match(r"(?:\d+\s+)?(?:references|bibliography)\b", title, re.I):
            parts.append(Part(title, "\n".join(lines), start))
        title, lines, start = re.sub(r"^(?:\d+(?:\.\d+)*\.?\s+)", "", line[3:].strip()), [], number
    return parts


def written_gaps(parts: list[Part]) -> list[Gap]:
    """The gaps a paper's text shows by itself, without its runs: parts unwritten or holding a
    placeholder, labels, promises, and parts that repeat an earlier one."""
    gaps: list[Gap] = []
    for part in parts:
        gaps += _part_gaps(part)
    return gaps + _repeats(parts)


def paper_gaps(
    tex_text: str,
    *,
    sources: Sequence[Source] = (),
    runs: Sequence[str] = (),
    figures: Sequence[str] = (),
    paper_dir: Path | None = None,
) -> list[Gap]:
    """Every gap of the draft ``tex_text``: by part (placeholders, unwritten, labels, promises,
    repeats), then the results: each of ``runs`` (the runs the paper stands on, besides the
    baseline) with a number of its own in the Results, each of ``figures`` (figures.json's
    names) included and referenced, and a finding in the abstract. ``sources``: the runs'
    values (provenance.run_sources)."""
    parts = paper_parts(tex_text)
    gaps = written_gaps(parts)
    gaps += _settings_that_never_ran(parts, sources)
    results = next((p for p in parts if _reports(p.title) and "result" in p.title.lower()), None)
    gaps += _runs_without_results(results, sources, runs)
    gaps += _figures_missing(tex_text, figures, paper_dir)
    abstract = next((p for p in parts if p.title == ABSTRACT), None)
    if abstract is not None and not any(g.part == ABSTRACT for g in gaps):
        gaps += _abstract_without_finding(abstract, sources)
    return gaps


def project_gaps(root: Path, tex: Path, baseline: str = "run_0") -> list[Gap]:
    """The gaps of the project's paper ``tex``, held to the project's runs (every finished run
    but the baseline has numbers in the Results) and to the figures the plots stage made."""
    root = Path(root)
    runs = [run.name for run in result_folders(root) if run.name != baseline]
    return paper_gaps(
        Path(tex).read_text(encoding="utf-8"),
        sources=run_sources(root, baseline),
        runs=runs,
        figures=figure_names(root),
        paper_dir=Path(tex).parent,
    )


def figure_names(root: Path) -> list[str]:
    """The figures the plots stage made and described (figures.json), by file name."""
    try:
        described = json.loads((root / FIGURES).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    return [str(name) for name in described] if isinstance(described, dict) else []


def _part_gaps(part: Part) -> list[Gap]:
    left = placeholders_left(part.body)
    if left:
        return [
            Gap(part.title, "placeholder", part.line, f"still holds the template's {left[0]!r}")
        ]
    words = len(_plain_words(part.body))
    if words < MIN_WORDS:
        return [
            Gap(
                part.title,
                "unwritten",
                part.line,
                f"is too short to be written ({words} words; at least {MIN_WORDS})",
            )
        ]
    gaps = []
    label = labelled_paragraph(part.body)
    if label:
        gaps.append(Gap(part.title, "label", part.line, label))
    if _reports(part.title):
        gaps += [Gap(part.title, "promise", part.line, p) for p in promises(part.body)]
    return gaps


def _reports(title: str) -> bool:
    """Whether a part reports what was found (Results, Conclusion, Discussion)."""
    return any(word in title.lower() for word in _REPORTING)


def _plain_words(body: str) -> list[str]:
    """The words of a body as a reader reads them: commands, math and braces left out."""
    text = re.sub(r"\$[^$]*\$", " ", body)
    text = re.sub(r"\\(?:label|ref|cite\w*|includegraphics)\*?(?:\[[^\]]*\])?\{[^}]*\}", " ", text)
    text = _COMMAND.sub(" ", text)
    return re.findall(r"[A-Za-z][A-Za-z'-]*", text)


def _paragraphs(part: Part) -> list[tuple[int, list[str]]]:
    """(line, lower-case words) of each paragraph of a part long enough to compare."""
    found = []
    offset = 0
    for block in re.split(r"(\n\s*\n)", part.body):
        words = [w.lower() for w in _plain_words(block)]
        if len(words) >= REPEAT_MIN_WORDS:
            found.append((part.line + part.body.count("\n", 0, offset), words))
        offset += len(block)
    return found


def _repeats(parts: list[Part]) -> list[Gap]:
    """A paragraph that says what a paragraph of an earlier part says (the same sentence as the
    abstract, introduction and related work; Method and Setup as one paragraph)."""
    gaps = []
    seen: list[tuple[str, list[str]]] = []
    for part in parts:
        for line, words in _paragraphs(part):
            twin = next((title for title, other in seen if _similar(words, other)), None)
            if twin is not None and twin != part.title:
                gaps.append(Gap(part.title, "repeats", line, f"repeats a paragraph of the {twin}"))
                break
        seen += [(part.title, words) for _, words in _paragraphs(part)]
    return gaps


def _similar(words: list[str], other: list[str]) -> bool:
    matcher = SequenceMatcher(None, words, other, autojunk=False)
    return matcher.quick_ratio() >= REPEAT_RATIO and matcher.ratio() >= REPEAT_RATIO


def _settings_that_never_ran(parts: list[Part], sources: Sequence[Source]) -> list[Gap]:
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


def _runs_without_results(
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


def _figures_missing(tex_text: str, figures: Sequence[str], paper_dir: Path | None) -> list[Gap]:
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


def _abstract_without_finding(abstract: Part, sources: Sequence[Source]) -> list[Gap]:
    """An abstract with no number of a run's results and no finding in words states none."""
    results = [s for s in sources if s.kind in ("result", "derived")]
    written = numbers_to_check(f"\\begin{{abstract}}{abstract.body}\\end{{abstract}}")
    if (results and trace_written(written, results).traced) or _FINDING.search(abstract.body):
        return []
    return [Gap(ABSTRACT, "no_finding", abstract.line, "states no finding of the runs")]
