"""A paper section's text as a model answers it (core/writeup/sections.py asks): what it must not
hold, checked before labtui places it, and where it goes, placed by code.

A small model cannot return a whole LaTeX file in an editor's format, but it can return one
section's body. So the model never edits the paper: it answers the body, these checks refuse what
would break the paper or misreport the runs (each problem one sentence quoting the offending
text, so a re-ask can fix it), and the functions below put the body between the section's
heading and the next one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..latex.checks import check_references, referenced_figures
from ..latex.source import balanced_group, section_span, section_titles, strip_comments
from ..prose.check import prose_defects
from ..prose.copied import Shingles
from ..prose.defect import QUOTED_CHARS, clipped, line_at
from ..prose.tense import promises
from ..provenance.checks import AnalysisCheck, paper_contradictions
from ..provenance.numbers import Source, numbers_to_check, trace_written
from .ledger_appendix import latex_escaped

_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z ]{2,40} HERE\b")


def placeholders_left(text: str) -> list[str]:
    """The template's placeholders (TITLE HERE, RESULTS HERE, …) still in ``text``."""
    return sorted(set(_PLACEHOLDER.findall(text)))


# -- what a section's body must not hold --------------------------------------------------------

# What belongs to the document around a section, never inside one.
_PREAMBLE = re.compile(
    r"\\(?:documentclass|usepackage|begin\s*\{document\}|end\s*\{document\}|maketitle\b|"
    r"title\s*\{|author\s*\{|bibliography(?:style)?\s*\{|appendix\b|section\*?\s*\{|"
    r"(?:begin|end)\s*\{abstract\}|begin\s*\{filecontents)"
)
# A paragraph that opens with a label: "METHOD:", "Background:", "\textbf{Results:}".
_LABEL = re.compile(
    r"^\s*(?:\\textbf\{|\\emph\{|\*\*)?\s*([A-Za-z][A-Za-z ]{1,40}?)\s*\}?\s*:", re.M
)
# A paragraph that opens with a part's name in bold, no colon: "\textbf{Introduction} \\".
_BOLD_NAME = re.compile(
    r"^\s*\\(?:textbf|textsc|emph|textit)\{\s*([A-Za-z][A-Za-z ]{1,40}?)\s*\}", re.M
)
SECTION_WORDS = frozenset(
    "title abstract introduction related work background method methods experimental setup "
    "experiments results conclusion conclusions future".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_BRACE = re.compile(r"(?<!\\)[{}]")
_ENV = re.compile(r"\\(begin|end)\s*\{([^}]*)\}")


@dataclass(frozen=True)
class SectionRules:
    """What one section's body is checked against."""

    name: str  # as the prompts say it: "results"
    bib_text: str  # the bibliography labtui built: \cite keys must be its keys
    paper_dir: Path  # where the paper compiles (figures resolve from there)
    graphics_dirs: tuple[Path, ...] = ()
    figures: bool = False  # only the Results hold figures
    reports: bool = False  # Results, conclusion, abstract: a report, not a promise
    root: Path | None = None  # the project, whose runs trace numbers and claims (None: no trace)
    sources: list[Source] = field(default_factory=list)  # provenance.run_sources(root)
    claims: bool = False  # the paper's claims are checked where its results are stated
    instructions: tuple[str, ...] = ()  # the request's own phrases (instruction_phrases)
    known: Shingles | None = None  # texts it must not copy (default: labtui's own)


def section_problems(body: str, rules: SectionRules) -> list[str]:
    """Why ``body`` cannot be placed as the section ``rules.name``: one sentence per problem,
    quoting the text; [] when it can."""
    problems = _form_problems(body, rules)
    if problems:  # the form first: numbers in a preamble or a placeholder say nothing
        return problems
    problems += check_references(body, rules.bib_text, rules.paper_dir, list(rules.graphics_dirs))
    if rules.reports:
        problems += [d.sentence for d in promises(body)]
    if rules.root is not None:
        problems += _untraced(body, rules)
    return problems


def _form_problems(body: str, rules: SectionRules) -> list[str]:
    # Markup of another format, lost backslashes (a JSON escape ate "\t" of "\textbf"), text
    # copied from labtui's prompts or giving instructions, stray lines: as a reviewer reads them.
    problems = [d.sentence for d in prose_defects(body, known=rules.known)]
    left = placeholders_left(body)
    if left:
        problems.append(
            f"The text still holds the template's placeholder {left[0]!r}: write the "
            f"{rules.name} itself."
        )
    copied = copied_instructions(body, rules.instructions)
    if copied:
        shown = clipped(copied)
        problems.append(
            f"The text copies the request's own words (“{shown}”): write the {rules.name} "
            "itself, about this project's idea and runs."
        )
    preamble = _PREAMBLE.search(body)
    if preamble:
        problems.append(
            f"The text contains “{preamble.group(0).rstrip('{')}” (in “{line_at(body, preamble.start())}”), "
            "which is not part of a section's body: answer only the body of the "
            f"{rules.name}, without \\documentclass, \\usepackage, \\begin{{document}}, a "
            "\\section heading or the title; labtui places it under the heading."
        )
    label = labelled_paragraph(body)
    if label:
        problems.append(label)
    if not rules.figures and re.search(r"\\includegraphics|\\begin\s*\{figure", body):
        problems.append(
            f"Figures belong in the Results section only: leave the figure out of the {rules.name}."
        )
    problems += _unbalanced(body) or _math_problems(body)
    return problems


def labelled_paragraph(body: str) -> str:
    """The problem of the first paragraph that opens with a part's label ("METHOD:",
    "\\textbf{Results:}", or any label in capitals at the very start); '' when none does."""
    matches = sorted([*_LABEL.finditer(body), *_BOLD_NAME.finditer(body)], key=lambda m: m.start())
    for match in matches:
        label = match.group(1).strip()
        opens = match.start() == 0 or not body[: match.start()].strip()
        named = set(label.lower().split()) <= SECTION_WORDS
        if named or (opens and label.isupper() and match.re is _LABEL):
            return (
                f"A paragraph begins with the label “{label}:” (in “{line_at(body, match.start(1))}”): "
                "write the paragraph without a label; labtui adds the section's heading."
            )
    return ""


_DOLLAR = re.compile(r"(?<!\\)\$")
# What never belongs inside $…$: a heading, an environment, or a paragraph of running text.
_TEXT_IN_MATH = re.compile(r"\\(?:sub)*section\*?\{|\\paragraph\{|\\begin\{|\n\s*\n")


def _math_problems(body: str) -> list[str]:
    """Inline math that cannot compile: an odd number of unescaped $, or $…$ around headings
    or paragraphs (Qwen2.5-Coder-1.5B put `$` between its subsections; pdflatex stopped at
    "Missing $ inserted")."""
    text = strip_comments(body)
    dollars = [m.start() for m in _DOLLAR.finditer(text)]
    if len(dollars) % 2:
        return [
            f"A $ opens math that no $ closes (in “{line_at(body, dollars[-1])}”): write \\$ "
            "for a dollar sign, or close the math."
        ]
    for start, end in zip(dollars[::2], dollars[1::2], strict=True):
        if _TEXT_IN_MATH.search(text, start, end):
            return [
                f"Math ($…$) holds a heading or running text (in “{line_at(body, start)}”): "
                "use $ only around a formula."
            ]
    return []


def _unbalanced(body: str) -> list[str]:
    depth = 0
    for match in _BRACE.finditer(strip_comments(body)):
        depth += 1 if match.group(0) == "{" else -1
        if depth < 0:
            return [f"A closing brace has no opening one (in “{line_at(body, match.start())}”)."]
    if depth:
        return [f"{depth} opening brace(s) are never closed: close every {{ with }}."]
    opened: list[str] = []
    for match in _ENV.finditer(strip_comments(body)):
        if match.group(1) == "begin":
            opened.append(match.group(2))
        elif not opened or opened.pop() != match.group(2):
            return [
                f"\\end{{{match.group(2)}}} closes no matching \\begin (in "
                f"“{line_at(body, match.start())}”)."
            ]
    return [f"\\begin{{{opened[-1]}}} is never ended: add \\end{{{opened[-1]}}}."] if opened else []


# -- the last resort: a refused text without the sentences that failed ----------------------------

SALVAGE_MIN_WORDS = 40  # what is left must still be a section, not a line


@dataclass(frozen=True)
class Salvaged:
    body: str
    dropped: tuple[str, ...]  # the sentences left out


def salvaged(body: str, rules: SectionRules) -> Salvaged | None:
    """``body`` without each sentence that fails the checks on its own (an untraced number, a
    contradicted claim, a promise, a copied instruction, a stray brace), when what is left
    passes every check, keeps at least half of the sentences and SALVAGE_MIN_WORDS words; None
    otherwise. The write-up's last resort after the re-asks: a 1.5B model kept one wrong
    percentage in an otherwise sound introduction through three answers."""
    paragraphs, dropped, total = [], [], 0
    for paragraph in re.split(r"\n\s*\n", body.strip()):
        kept = []
        for sentence in _SENTENCE.split(paragraph.strip()):
            total += 1
            if section_problems(sentence, rules):
                dropped.append(sentence)
            else:
                kept.append(sentence)
        if kept:
            paragraphs.append(" ".join(kept))
    text = "\n\n".join(paragraphs)
    if not dropped or 2 * len(dropped) > total or len(text.split()) < SALVAGE_MIN_WORDS:
        return None
    if section_problems(text, rules):
        return None
    return Salvaged(text, tuple(dropped))


def _untraced(body: str, rules: SectionRules) -> list[str]:
    """Numbers no run recorded and claims the runs' effects contradict, read as the paper's
    Results are read (core/provenance/record.py, core/provenance/checks.py) and said as a run's analysis
    is refused (AnalysisCheck)."""
    assert rules.root is not None
    # As a Results section, so the paper's own reading of numbers and claims applies to it.
    as_results = f"\\section{{Results}}\n{body}\n"
    report = trace_written(numbers_to_check(as_results), rules.sources)
    claims = paper_contradictions(rules.root, as_results) if rules.claims else []
    return AnalysisCheck(report.traced, report.untraced, claims).problems()


def title_problems(title: str) -> list[str]:
    """Why ``title`` is not a paper's title: [] when it is."""
    if "\n" in title.strip():
        return [f"The title {title.strip()[:QUOTED_CHARS]!r} spans lines: give it on one line."]
    if placeholders_left(title) or "\\" in title or "{" in title:
        return [
            f"The title {title.strip()[:QUOTED_CHARS]!r} is not plain text: give the paper's "
            "title itself, without LaTeX commands or placeholders."
        ]
    if len(title.split()) > 20:
        return [f"The title has {len(title.split())} words: say it in at most 20."]
    return []


def instruction_phrases(*texts: str) -> tuple[str, ...]:
    """The phrases of a request's own instructions (a prompt's fixed text, a section's tips),
    each long enough that a section holding it copied it: what ``copied_instructions`` looks
    for."""
    phrases = []
    for text in texts:
        for piece in re.split(r"\$\w+|[\n;:]|(?<=[.!?])\s", text):
            normal = " ".join(piece.split()).lower()
            if len(normal) >= 24:
                phrases.append(normal)
    return tuple(dict.fromkeys(phrases))


def copied_instructions(body: str, phrases: tuple[str, ...]) -> str | None:
    """The first instruction phrase ``body`` repeats word for word, or None."""
    normal = " ".join(body.split()).lower()
    return next((phrase for phrase in phrases if phrase in normal), None)


# -- where a section's text goes ---------------------------------------------------------------


def with_title(tex: str, title: str) -> str:
    """``tex`` with ``title`` as the argument of its \\title (unchanged without one)."""
    found = re.search(r"\\title\s*\{", strip_comments(tex))
    if found is None:
        return tex
    old = balanced_group(tex, found.end() - 1)
    return tex[: found.end()] + title + tex[found.end() + len(old) :]


def abstract_span(tex: str) -> tuple[int, int] | None:
    """Where the abstract's text lies (inside its environment)."""
    found = re.search(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", strip_comments(tex), re.DOTALL)
    return found.span(1) if found else None


def title_of(tex: str) -> str:
    found = re.search(r"\\title\s*\{", strip_comments(tex))
    return balanced_group(tex, found.end() - 1).strip() if found else ""


def body_span(tex: str, heading: str) -> tuple[int, int] | None:
    """Where the body of the first section whose title contains ``heading`` lies: after its
    \\section line and the \\label lines under it, up to the next section or the back matter."""
    if heading == "abstract":
        return abstract_span(tex)
    title = next((t for t in section_titles(tex) if heading.lower() in t.lower()), None)
    span = section_span(tex, title) if title is not None else None
    if span is None:
        return None
    text = strip_comments(tex)
    start = text.index("{", span[0])
    start += len(balanced_group(text, start)) + 2
    labels = re.compile(r"\s*\\label\{[^}]*\}").match(text, start)
    if labels:
        start = labels.end()
    return start, span[1]


def placed(tex: str, heading: str, body: str, old: str, placeholder: str) -> str:
    """``tex`` with ``body`` as the section ``heading``'s text: in place of its placeholder
    (keeping what the template wrote beside it), else of ``old`` (the text placed before, on a
    revision), else of the whole body. Unchanged when there is no such section."""
    span = body_span(tex, heading)
    if span is None:
        return tex
    start, end = span
    current = tex[start:end]
    for target in (placeholder, old):
        if target and current.count(target) == 1:
            return tex[:start] + current.replace(target, body.strip()) + tex[end:]
    return tex[:start] + "\n" + body.strip() + "\n\n" + tex[end:]


# -- the Results' figures ------------------------------------------------------------------------

_EXAMPLE_FIGURE = re.compile(
    r"(?:%[^\n]*EXAMPLE FIGURE[^\n]*\n)?\\begin\{figure\*?\}(?:(?!\\end\{figure).)*?"
    r"PLEASE FILL IN CAPTION HERE.*?\\end\{figure\*?\}\n?",
    re.DOTALL,
)


def without_example_figure(section: str) -> str:
    """A section without the template's example figure (its caption a placeholder): labtui
    places the plots' figures itself, with their descriptions as captions."""
    return _EXAMPLE_FIGURE.sub("", section)


def figure_label(name: str) -> str:
    return "fig:" + Path(name).stem


def with_figures(body: str, figures: dict[str, str], paper_dir: Path) -> tuple[str, list[str]]:
    """``body`` with a figure environment (the description as its caption) for each figure it
    does not include, and a sentence pointing at each it neither includes nor references; the
    figures added."""
    included = {Path(f["path"]).stem for f in referenced_figures(body, paper_dir)}
    added = []
    for name, description in figures.items():
        stem = Path(name).stem
        if stem in included:
            continue
        label = figure_label(name)
        if f"\\ref{{{label}}}" not in body:
            body = body.rstrip() + f"\nFigure~\\ref{{{label}}} shows {latex_escaped(description)}."
        body = body.rstrip() + (
            "\n\n\\begin{figure}[t]\n  \\centering\n"
            f"  \\includegraphics[width=0.7\\textwidth]{{{name}}}\n"
            f"  \\caption{{{latex_escaped(description)}}}\n  \\label{{{label}}}\n\\end{{figure}}\n"
        )
        added.append(name)
    return body, added
