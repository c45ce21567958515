"""A paper as its parts (the abstract and each section, from LaTeX source or from the text a PDF
reader gives) and the record of a gap: one reason the draft is not yet a paper, with where it is,
what is wrong and how to fix it. The checks that find gaps are core/writeup/part_gaps.py (what
the text shows by itself) and core/writeup/results_gaps.py (held to the runs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..latex.source import balanced_group, blank_out, line_of, strip_comments

ABSTRACT = "Abstract"

_PART = re.compile(
    r"\\begin\s*\{abstract\}|\\section\*?\s*\{|\\appendix\b|\\bibliographystyle\b"
    r"|\\bibliography\s*\{|\\printbibliography\b|\\end\s*\{document\}"
)
_ABSTRACT_END = re.compile(r"\\end\s*\{abstract\}")
_LABEL_COMMAND = re.compile(r"\\label\s*\{[^}]*\}")
_COMMAND = re.compile(r"\\[A-Za-z@]+\*?(?:\[[^\]]*\])?")
# Gaps whose problem is said after the part's name ("The Results reports no number of run_1").
_PHRASED = frozenset(
    {"placeholder", "unwritten", "repeats", "no_results", "no_finding", "no_table"}
)
# How to mend each kind of gap, where the gap does not say it itself.
FIXES = {
    "placeholder": "Write the part's text in place of the template's placeholder.",
    "unwritten": "Write the part: what it must say, in sentences of its own.",
    "repeats": "Say it once, and write this part's own content.",
    "label": "Remove the label: the heading names the part.",
    "setting": "Quote only the settings the runs used (the code at the run's commit and "
    "labtui_run.json have them), or remove the number.",
    "no_results": "Report the run's numbers from its final_info.json in the table of runs.",
    "no_table": "Give the table of every finished run by its primary metric (mean ± standard "
    "error, difference against the baseline, verdict); labtui's write-up writes it.",
    "figure": "Include the figure with \\includegraphics and refer to it with \\ref.",
    "no_finding": "State what the runs found, with the numbers of the table of runs.",
}


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
    # placeholder | unwritten | repeats | label | promise | setting | no_results | no_table |
    # figure | no_finding | markup | lost_backslash | copied | stray | unsupported
    kind: str
    line: int
    problem: str
    fix: str = ""  # '' : the kind's own (FIXES)

    @property
    def remedy(self) -> str:
        """How to mend it."""
        return self.fix or FIXES.get(self.kind, "")

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


def paper_parts(tex_text: str) -> list[Part]:
    """The abstract and each \\section of a LaTeX source, in order (subsections stay in their
    section; the back matter and appendices are not parts)."""
    text = _LABEL_COMMAND.sub(blank_out, strip_comments(tex_text))
    parts = []
    for match in _PART.finditer(text):
        token = match.group(0)
        if token.startswith("\\appendix"):
            break  # what follows is no part of the paper's argument (a search's ledger)
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


def plain_words(body: str) -> list[str]:
    """The words of a body as a reader reads them: commands, math and braces left out."""
    text = re.sub(r"\$[^$]*\$", " ", body)
    text = re.sub(r"\\(?:label|ref|cite\w*|includegraphics)\*?(?:\[[^\]]*\])?\{[^}]*\}", " ", text)
    text = _COMMAND.sub(" ", text)
    return re.findall(r"[A-Za-z][A-Za-z'-]*", text)
