"""What the section writer's prompts draw on, gathered once per stage: the idea, the runs'
effects tables, the notebook's computed facts, the figures with their descriptions and the
literature, each clipped to what a small model reads in time, and for each section only the part
it is about (a 1.5B model copies what it is shown). core/writeup/sections.py asks with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..runs.effect_text import effects_markdown
from ..runs.effects import project_effects
from ..workspace.artifacts import NOTES
from ..workspace.notebook import computed_facts
from .section_text import figure_label

EFFECTS_HEAD = (
    "Effects of the runs (computed by labtui; quote a number exactly as written here, or leave "
    "it out):"
)
NOTEBOOK_HEAD = "The plan, and what each run changed (computed from its commit):"
LITERATURE_HEAD = "Papers from the literature review:"
CITING_HEAD = "Bibliography keys you may cite, as \\citep{key}:"
FIGURES_HEAD = "Figures (labtui places each; refer to it as Figure~\\ref{label}):"
# The prompt's own lines, refused when an answer copies one.
PROMPT_HEADS = (EFFECTS_HEAD, NOTEBOOK_HEAD, LITERATURE_HEAD, FIGURES_HEAD, CITING_HEAD)
NOTEBOOK_CHARS = 1500  # ~400 tokens: a 1.5B model on a CPU reads ~50 tokens/s
EFFECTS_CHARS = 1800
LITERATURE_CHARS = 1500

# What each section's prompt shows besides the idea, by the section's heading word: only what
# the section is about. A 1.5B model copies what it is shown (its background was the effects
# table and the notebook, pasted).
_READS = {
    "abstract": ("effects",),
    "introduction": ("effects", "literature"),
    "background": ("notebook",),  # the model, the task, the metric: what the runs used
    "method": ("notebook",),
    "experimental": ("notebook",),
    "results": ("effects", "figures"),
    "conclusion": ("effects",),
    "related": ("literature",),
}


@dataclass(frozen=True)
class PaperFacts:
    """What every section's prompt draws on, gathered once."""

    idea: str
    effects: str  # the runs' effects tables (every number in them traces to a run)
    notebook: str  # an excerpt of notes.md
    figures: dict[str, str]  # file -> the plots stage's description
    literature: str = ""  # the literature review's papers, for the introduction and related work


def paper_facts(root: Path, idea: str, figures: dict[str, str], literature: str) -> PaperFacts:
    """The facts of the project at ``root``, each clipped to its share of the prompt."""
    tables = [effects_markdown(found) for found in project_effects(root).values()]
    effects = "\n\n".join(tables) or "Only the baseline run_0 ran; its numbers are in the notebook."
    notes_path = root / NOTES
    notes = notes_path.read_text(encoding="utf-8") if notes_path.is_file() else ""
    return PaperFacts(
        idea=idea,
        effects=_clipped(effects, EFFECTS_CHARS),
        notebook=_clipped(computed_facts(notes), NOTEBOOK_CHARS),
        figures=figures,
        literature=_clipped(literature.strip(), LITERATURE_CHARS),
    )


def _clipped(text: str, chars: int) -> str:
    """The head and the tail of a long text (a notebook's idea and its last runs)."""
    if len(text) <= chars:
        return text
    head = chars // 3
    return text[:head].rstrip() + "\n[…]\n" + text[-(chars - head) :].lstrip()


def facts_shown(heading: str, facts: PaperFacts) -> str:
    """The facts the section under ``heading`` is about, each under its head; "" when none."""
    blocks = {
        "effects": (EFFECTS_HEAD, facts.effects),
        "notebook": (NOTEBOOK_HEAD, facts.notebook),
        "literature": (LITERATURE_HEAD, facts.literature),
        "figures": (
            FIGURES_HEAD,
            "\n".join(
                f"- {figure_label(name)} ({name}): {description}"
                for name, description in facts.figures.items()
            ),
        ),
    }
    shown = [
        f"{head}\n{text}"
        for head, text in (blocks[read] for read in _READS.get(heading, ()))
        if text.strip()
    ]
    return "\n\n".join(shown) + "\n" if shown else ""
