"""The research stages' settings in ``labtui.toml``: [paper] (the .tex and the parts the agents
write), [ideas], [literature] (arXiv, Semantic Scholar, the review's list) and [review] (the
reviewer ensemble and its decision).
"""

from __future__ import annotations

from typing import Annotated, Literal

from .section_types import Count, Number, Seconds, Section, at_least_one, at_most, off_or_at_least


class PaperSection(Section):
    tex: str = "latex/template.tex"
    """The paper's main LaTeX file, relative to the project."""
    sections: list[str] = []  # noqa: RUF012 (pydantic copies it per section)
    r"""The parts the agents write: \section titles of the paper, or files it \input s; the rest
    stays as you wrote it. Empty: the template's placeholders (TITLE HERE, INTRO HERE, …)."""
    writer: Literal["sections", "slots", "aider"] = "sections"
    """How the template's sections are written. "sections": each section's text is a JSON
    answer that labtui checks (no preamble, numbers traced to runs, known citations) and places
    itself, so a model can write one section at a time; "slots" (the small-model profile's):
    code writes every fact (the table of runs, the setup with the hardware as recorded, what
    each run changed, the figures, the citations) and the model only a few checked sentences
    around them (title, problem, idea, background, a reading per run, limitations,
    conclusion), each sentence that fails a check dropped; "aider": aider edits the whole .tex
    for each section (kept to bench against the others)."""
    mend_rounds: Count = 1
    """How often the "sections" writer sends the whole draft's gaps (a part left unwritten or
    repeating another, a promise in the Results, a run without numbers, a figure left out) back
    to the sections that have them before the draft is shown; 0: never."""


class IdeasSection(Section):
    count: Count = 2
    """New ideas the ideas stage proposes."""
    reflections: Count = 3
    """Rounds per idea, each ending on the model's structured "done" flag."""
    panel: Annotated[
        Count, off_or_at_least(2, "is too few: a panel needs at least two personas to discuss")
    ] = 0
    """Personas that discuss before proposing (Virtual Scientists); 0: no panel."""
    panel_turns: Count = 2
    """Turns of the panel's discussion, each persona speaking once per turn."""
    duplicate_threshold: Annotated[Number, at_most(1.0, 0.7)] = 0.7
    """Similarity (0..1) at which a new idea repeats an old one; 1.0 drops only exact repeats."""
    novelty_checks: Count = 3
    """Best-ranked ideas the novelty stage may check, until one is novel."""


class LiteratureSection(Section):
    arxiv_url: str = "https://export.arxiv.org/api/query"
    """arXiv's search API; a mirror or proxy goes here."""
    max_results: Annotated[Count, at_least_one("finds nothing")] = 5
    """Papers one search returns (arXiv, and Semantic Scholar when it is used)."""
    rounds: Count = 2
    """Search rounds the novelty check has per idea (at least one)."""
    delay_s: Seconds = 3.0
    """Between two requests to arXiv (its terms ask for three seconds)."""
    retries: Count = 3
    """Per request when a service is down or rate limits (429): then it waits."""
    backoff_s: Seconds = 5.0
    """The first wait; it doubles per retry, capped (Retry-After wins)."""
    papers: Count = 5
    """The literature review's list: papers kept, each with a summary."""
    review_steps: Count = 12
    """Actions (search, read, add) the review may take to fill it."""
    full_text_chars: Count = 20000
    """Of a paper's text in one prompt (~5k tokens; papers run 60k+)."""
    s2_url: str = "https://api.semanticscholar.org/graph/v1"
    """Used only when S2_API_KEY is set (core/literature/semantic_scholar.py); a mirror or proxy goes here."""


class ReviewSection(Section):
    """The reviewer: E reviewers on the NeurIPS form, each reconsidering its review, and an Area
    Chair's meta-review; the decision is the reviewers' mean Overall against a threshold."""

    ensemble: Annotated[Count, at_least_one("reviews nothing")] = 3
    """Reviewers; with two or more an Area Chair writes a meta-review."""
    temperature: Annotated[Number, at_most(2.0, 0.75)] = 0.75
    """The reviewers' sampling temperature when there are several."""
    reflections: Count = 2
    """Rounds in which a reviewer reconsiders its review, until it is done."""
    few_shot: Count = 1
    """Example papers with their reviews shown to each reviewer (0: none)."""
    examples: str = ""
    """Folder of your own <name>.md + <name>.json examples ("": labtui's)."""
    threshold: Annotated[Number, at_most(10.0, 6)] = 6.0
    """Accept when the mean Overall reaches it (6: weak accept); 0: the Area Chair decides."""
    improvements: Count = 0
    """Improvement rounds run before the checkpoint (in --auto too)."""
    paper_chars: Count = 40000
    """Of the paper's text a reviewer reads (40,000: ~10k tokens, a paper without its
    appendix; 0: all of it). A local model's context and speed want less."""
