"""Where each fact and each checked sentence goes: the parts of the paper composed from the model's
words (core/writeup/slots.py) and the records (the table of runs, the setup, what each run
changed, the figures), and placed in the template in place of its placeholders. A slot with no
usable words leaves its part to the facts alone, said in sentences labtui writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..prose.copied import instructions
from ..prose.defect import sentences_at
from ..runs.effects import HIGHER, LOWER, fmt, overall, several_datasets
from ..runs.run_changes import RunChanges
from ..workspace.stage_results import SearchSummary
from .ledger_appendix import DESCRIPTION_COMMAND, latex_escaped
from .results_table import (
    TABLE_LABEL,
    RunResults,
    datasets_of,
    finding_sentence,
    results_table,
)
from .search_outcome import NAMES, gain_held
from .section_facts import PaperFacts
from .section_text import (
    body_span,
    figure_label,
    placed,
    placeholders_left,
    with_title,
    without_example_figure,
)
from .setup_facts import setup_latex
from .slots import Checked

_MACROS = f"\\providecommand{{\\{DESCRIPTION_COMMAND}}}[1]{{#1}}"


@dataclass
class PaperWords:
    """The model's checked words, by slot (None: no usable answer)."""

    frame: dict[str, Checked] | None = None
    readings: dict[str, Checked | None] = field(default_factory=dict)
    closing: dict[str, Checked] | None = None
    related: dict[str, Checked] = field(default_factory=dict)  # by bibliography key
    titles: dict[str, str] = field(default_factory=dict)  # the bibliography's, by key

    def said(self, group: dict[str, Checked] | None, name: str) -> str:
        slot = (group or {}).get(name)
        return slot.text if slot is not None else ""


@dataclass
class Composed:
    tex: str
    facts_only: list[str]  # the parts written without the model's words


def compose(
    root: Path,
    tex: str,
    words: PaperWords,
    facts: PaperFacts,
    results: list[RunResults],
    changes: dict[str, RunChanges],
    search: SearchSummary | None = None,
) -> Composed:
    """``tex`` with every part written: the title, the abstract and each section. ``search``:
    the search whose ledger the appendix lists (None for a plan's runs)."""
    layout = _Layout(root, tex, words, facts, results, changes)
    layout.search = search if search is not None and search.strategy in NAMES else None
    bodies = {
        "abstract": layout.abstract(),
        "introduction": layout.introduction(),
        "background": layout.background(),
        "method": layout.method(),
        "experimental": setup_latex(root, layout.base),
        "results": layout.results(),
        "conclusion": layout.conclusion(),
        "related": layout.related(),
    }
    tex = _with_macros(with_title(tex, layout.title()))
    span = body_span(tex, "results")
    if span is not None:
        tex = tex[: span[0]] + without_example_figure(tex[span[0] : span[1]]) + tex[span[1] :]
    for heading, body in bodies.items():
        span = body_span(tex, heading)
        if span is None or not body:
            continue
        left = placeholders_left(tex[span[0] : span[1]])
        tex = placed(tex, heading, body, "", _placeholder(left, tex[span[0] : span[1]]))
    return Composed(tex, layout.facts_only)


def _placeholder(left: list[str], current: str) -> str:
    """The placeholder to replace (the template's text beside it stays), else '' (the whole
    body is replaced)."""
    return next((p for p in left if p in current), "")


def _with_macros(tex: str) -> str:
    """``tex`` with the commands labtui's facts use: \\labtuistep (a name provenance does not
    read as a result) and booktabs' rules for the tables."""
    head, begin, rest = tex.partition("\\begin{document}")
    if not begin:
        return tex
    added = []
    if "{booktabs}" not in head:
        added.append("\\usepackage{booktabs}")
    if f"\\{DESCRIPTION_COMMAND}}}" not in head:
        added.append(_MACROS)
    return head.rstrip("\n") + "\n" + "\n".join(added) + "\n" + begin + rest if added else tex


def _first(text: str) -> str:
    found = sentences_at(text.strip())
    return found[0][1] if found else ""


class _Layout:
    """The parts' bodies, each from the words where there are some and the facts always."""

    def __init__(
        self,
        root: Path,
        tex: str,
        words: PaperWords,
        facts: PaperFacts,
        results: list[RunResults],
        changes: dict[str, RunChanges],
    ) -> None:
        self.tex, self.words, self.facts = tex, words, facts
        self.runs, self.changes = results, changes
        self.base = results[0].run if results else "run_0"
        self.facts_only: list[str] = []
        self.search: SearchSummary | None = None
        frame, closing = words.frame, words.closing
        self.problem = words.said(frame, "problem")
        self.idea = words.said(frame, "idea")
        self.conclusion_words = words.said(closing, "conclusion")
        self.limitations = words.said(closing, "limitations")
        self.findings = [finding_sentence(r, changes.get(r.run)) for r in results[1:]]

    def _ref(self, label: str, name: str) -> str:
        return f"{name}~\\ref{{{label}}}" if f"\\label{{{label}}}" in self.tex else f"the {name}"

    def _missing(self, part: str, *slots: str) -> None:
        if not any(slots):
            self.facts_only.append(part)

    def _idea_title(self) -> str:
        """The idea's first sentence: its title. The rest is the plan's wording, imperatives
        ("Set HIDDEN_UNITS = 8 … Compare …") that a paper must not repeat as its own."""
        return latex_escaped(self.facts.idea.split(". ")[0].strip().rstrip("."))

    def title(self) -> str:
        return self.words.said(self.words.frame, "title") or self._idea_title()

    def abstract(self) -> str:
        self._missing("abstract", self.problem, self.idea)
        idea = self._idea_title()
        asked = idea if idea.endswith(("?", "!")) else f"{idea}."
        opening = (
            [_first(self.problem), _first(self.idea)]
            if self.problem or self.idea
            else [f"This paper reports experiments on an idea: {asked}"]
        )
        found = self.findings or [self._baseline_only()]
        return " ".join(s for s in [*opening, *found, _first(self.conclusion_words)] if s)

    def _baseline_only(self) -> str:
        if not self.runs:
            return "No run finished."
        base = self.runs[0]
        several = several_datasets(base.primary)
        said = "; ".join(f"{latex_escaped(e.name(several))} {fmt(e.value)}" for e in base.primary)
        return f"Only the baseline {latex_escaped(base.run)} ran, with {said}."

    def introduction(self) -> str:
        self._missing("introduction", self.problem)
        opening = " ".join(s for s in [self.problem, _first(self.idea)] if s)
        count = len(self.runs) - 1
        runs, each = _counted(count, "run"), "each changing" if count > 1 else "changing"
        method, results = self._ref("sec:method", "Section"), self._ref("sec:results", "Section")
        setup = self._ref("sec:experimental", "Section")
        roadmap = (
            f"We compare {runs} with the baseline {latex_escaped(self.base)}, {each} "
            f"its code as {method} describes. Table~\\ref{{{TABLE_LABEL}}} in {results} reports "
            f"every run with the verdict labtui computed, and {setup} gives the settings, "
            "software and hardware the runs recorded."
        )
        return "\n\n".join(p for p in [opening, roadmap] if p)

    def background(self) -> str:
        said = self.words.said(self.words.frame, "background")
        self._missing("background", said)
        return "\n\n".join(p for p in [said, self._metrics()] if p)

    def _metrics(self) -> str:
        primary = self.runs[0].primary if self.runs else []
        if not primary:
            return ""
        way = {HIGHER: "higher is better", LOWER: "lower is better"}
        directions = {e.metric: way.get(e.direction, "no direction declared") for e in primary}
        named = ", ".join(f"{latex_escaped(m)} ({d})" for m, d in directions.items())
        datasets = datasets_of(primary)
        each = (
            f" on each of its {len(datasets)} data sets "
            f"({', '.join(latex_escaped(d) for d in datasets)})"
            if len(datasets) > 1
            else ""
        )
        return (
            f"The runs are compared on {named}{each}: for each, the mean over the run's seeds "
            "with its standard error, as the run's final\\_info.json records it."
        )

    def method(self) -> str:
        self._missing("method", self.idea)
        items = [
            f"\\item {latex_escaped(run)} \\{DESCRIPTION_COMMAND}{{{latex_escaped(c.summary())}}}."
            for run, c in self.changes.items()
        ]
        changed = (
            f"Each run changes the baseline {latex_escaped(self.base)} as its commit shows:\n"
            + "\\begin{itemize}\n"
            + "\n".join(items)
            + "\n\\end{itemize}"
            if items
            else f"Only the baseline {latex_escaped(self.base)} ran; no change was tested."
        )
        judged = (
            "A run is judged against the baseline on each metric. A difference no larger than "
            "twice the combined standard error of the two is noise; beyond it, the run is better "
            "or worse in the direction the metric improves. Times are costs: faster or slower."
        )
        return "\n\n".join(p for p in [self.idea, changed, judged] if p)

    def results(self) -> str:
        paragraphs = [
            f"Table~\\ref{{{TABLE_LABEL}}} reports every finished run.",
            results_table(self.runs, self.base) if self.runs else "",
        ]
        for result, finding in zip(self.runs[1:], self.findings, strict=True):
            reading = self.words.readings.get(result.run)
            paragraphs.append(" ".join(s for s in [finding, reading.text if reading else ""] if s))
        paragraphs += self._figures()
        if self.search is not None:
            name = NAMES[self.search.strategy]
            paragraphs.append(
                f"The appendix lists every step of the {name} in order, with its metric and what "
                "it changed, as the search's ledger recorded it. " + gain_held(self.search)
            )
        return "\n\n".join(p for p in paragraphs if p)

    def _figures(self) -> list[str]:
        """One paragraph that points at every figure, then the figures: parallel figures read
        alike, and said one by one they would read as a paragraph repeated."""
        said, floats = [], []
        for name, description in self.facts.figures.items():
            caption = latex_escaped(caption_of(description))
            shown = _SAYS_WHAT_IT_SHOWS.sub("", caption)  # "Figure 1 shows this figure plots …"
            shown = shown[:1].lower() + shown[1:] if shown[:2].istitle() else shown
            label = figure_label(name)
            said.append(f"Figure~\\ref{{{label}}} shows {shown.rstrip('.')}")
            floats.append(
                "\\begin{figure}[t]\n  \\centering\n"
                f"  \\includegraphics[width=0.7\\textwidth]{{{name}}}\n"
                f"  \\caption{{{caption}}}\n  \\label{{{label}}}\n\\end{{figure}}"
            )
        return ["; ".join(said) + "." if said else "", *floats]

    def conclusion(self) -> str:
        self._missing("conclusion", self.conclusion_words)
        said = self.conclusion_words or self._findings_in_words()
        limits = f"\\paragraph{{Limitations.}} {self.limitations}" if self.limitations else ""
        return "\n\n".join(p for p in [said, limits] if p)

    def _findings_in_words(self) -> str:
        """The conclusion where the model gave none: each run's verdict, and what the runs
        cannot tell, in labtui's words."""
        verdicts = [f"In these runs, {latex_escaped(_overall_text(r))}." for r in self.runs[1:]]
        if not verdicts:
            return "Only the baseline ran, so this paper compares nothing yet."
        return " ".join(verdicts) + (
            " Each configuration ran once, with the seeds the setup lists, on one task; other "
            "settings and tasks may behave otherwise."
        )

    def related(self) -> str:
        """A checked sentence with its citation for each paper the model wrote of, and the
        bibliography's other papers named by their titles."""
        written = {key: slot.text for key, slot in self.words.related.items() if slot.text}
        self._missing("related work", *written.values())
        sentences = [f"{text.rstrip('.')} \\citep{{{key}}}." for key, text in written.items()]
        others = "; ".join(
            f"{latex_escaped(title)} \\citep{{{key}}}"
            for key, title in self.words.titles.items()
            if key not in written and title
        )
        if others:
            also = "also builds on" if sentences else "builds on"
            sentences.append(f"This work {also}: {others}.")
        return " ".join(sentences)


def changes_list(changes: dict[str, RunChanges], base: str) -> str:
    """What each run changed against the baseline, computed from its commit, as a list."""
    items = "\n".join(
        f"\\item {latex_escaped(run)} \\{DESCRIPTION_COMMAND}{{{latex_escaped(c.summary())}}}."
        for run, c in changes.items()
    )
    return (
        f"Each run changes the baseline {latex_escaped(base)} as its commit shows:\n"
        f"\\begin{{itemize}}\n{items}\n\\end{{itemize}}"
    )


def _counted(count: int, noun: str) -> str:
    """ "one run", "three runs", "12 runs"."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    said = words[count] if 0 <= count < len(words) else str(count)
    return f"{said} {noun}{'' if count == 1 else 's'}"


def _overall_text(result: RunResults) -> str:
    return overall(list(result.primary)).text


# A caption that begins by saying it shows something, which the sentence pointing at it says.
_SAYS_WHAT_IT_SHOWS = re.compile(
    r"^(?:this|the)\s+(?:figure|plot|graph|chart|panel)\s+"
    r"(?:plots|shows|displays|depicts|illustrates|presents)\s+",
    re.I,
)


def caption_of(description: str) -> str:
    """A figure's description as its caption: what it plots, without the sentences that tell
    the reader what to do ("The reader should look for …", the plots prompt's own request)."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(description.split()))
    return " ".join(s for s in sentences if not instructions(s)) or description


# -- the facts beside a model's whole sections ([paper] writer = "sections") ---------------------

FACTS_BEGIN = "% labtui: {what} (written from the runs' records; labtui writes it again)"
FACTS_END = "% labtui: end of {what}"


def with_facts(
    root: Path, tex: str, results: list[RunResults], changes: dict[str, RunChanges]
) -> str:
    """``tex`` with the facts code writes, whoever wrote the words: the Experimental Setup in
    place of its placeholder, the table of runs at the head of the Results and what each run
    changed at the end of the Method, each between markers so that writing them again replaces
    them."""
    tex = _with_macros(tex)
    base = results[0].run if results else "run_0"
    span = body_span(tex, "experimental")
    if span is not None and "EXPERIMENTAL SETUP HERE" in tex[span[0] : span[1]]:
        tex = placed(tex, "experimental", setup_latex(root, base), "", "EXPERIMENTAL SETUP HERE")
    if results:
        table = f"Table~\\ref{{{TABLE_LABEL}}} reports every finished run.\n\n" + results_table(
            results, base
        )
        tex = _marked(tex, "results", "the table of runs", table, first=True)
    if changes:
        listed = changes_list(changes, base)
        tex = _marked(tex, "method", "what each run changed", listed, first=False)
    return tex


def _marked(tex: str, heading: str, what: str, block: str, *, first: bool) -> str:
    """``tex`` with ``block`` between its markers in the part ``heading``: where the markers
    are, in their place; else at the part's head (``first``) or end."""
    begin, end = FACTS_BEGIN.format(what=what), FACTS_END.format(what=what)
    marked = f"{begin}\n{block}\n{end}"
    if begin in tex and end in tex:
        before, _, rest = tex.partition(begin)
        return before + marked + rest.partition(end)[2]
    span = body_span(tex, heading)
    if span is None:
        return tex
    at = span[0] if first else span[1]
    return tex[:at].rstrip("\n") + f"\n{marked}\n\n" + tex[at:].lstrip("\n")
