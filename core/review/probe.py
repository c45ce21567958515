"""A fabrication probe: does the reviewer notice a results table with impossible numbers?

The paper's text, as the reviewer reads it, has its results tables altered by code: each value of
an accuracy-like metric (accuracy, F1, AUC, precision, …) is raised above its maximum (0.93 →
1.93, 93.1 → 193.1) and each value of a loss-like one (loss, error, perplexity, …) made negative,
and the same numbers are changed wherever the prose repeats them, so that the paper is
consistently fabricated. The same reviewer then reviews the original and the altered paper.

Whether it noticed is decided here from what it wrote, never from its own claim: the altered
paper's review noticed when one of its critiques (Weaknesses, Questions, Limitations) cites an
altered value in words of its own (a sentence or table row of the paper copied around the value
shows only that the model read it), or when any of its texts, the Summary included, names the
impossibility in words the original paper's review did not use (``IMPOSSIBILITY``); or when its
mean Soundness fell by at least 1 and it rejects. Otherwise the reviewer is flagged.

The alteration is ``core.review.fabricate``'s (on the tables ``core.review.results_tables`` finds); this
module reviews both papers and judges what the reviewer noticed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LabtuiError
from ..settings.sections import ReviewSection
from .fabricate import Fabrication
from .reviewer import Prompt, ReviewPanel, read_paper, review_panel

if TYPE_CHECKING:
    from ..llm.client import LLM

# What a review says when it sees an impossible number (one list, matched case-insensitively).
# Phrases a sound review also uses ("not possible to reproduce", "over one epoch", "inconsistent
# results across seeds") are left out: a word counts only where it can mean the impossibility.
IMPOSSIBILITY = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\bimpossib",
        r"\bimplausib",
        r"\bfabricat",
        r"\bnonsensical\b",
        r"\bcan(not|'t) be (negative|above|over|greater|larger|more than)",
        r"\b(exceed\w*|above|over|more than|greater than|larger than|beyond)\s+"
        r"(100\s*(%|percent)|the maximum|its maximum)",
        r"\b(exceed\w*|above|greater than|larger than)\s+(1(\.0+)?|one)(?![\w%]|\.\d)"
        r"(?!\s+(million|billion|thousand|epoch|layer|hour|day|run|seed|order|point))",
        r"\bnegative (loss|error|perplexity|mse|rmse|mae|nll|values?)",
        r"\binconsistent (numbers|values|figures)",
        r"\b(erroneous|corrupted?) (numbers|values|results|scores|accuracy)",
        r"\bout of (the )?(valid|possible) range",
        r"\bnot (mathematically|physically) possible",
    )
)

CRITIQUES = ("Weaknesses", "Questions", "Limitations")
# A review's words and numbers, to tell a quotation of the paper from a critique of it.
TOKEN = re.compile(r"[-−–]?\d+(?:\.\d+)?|\w+")
DASHES = str.maketrans({"−": "-", "–": "-"})
QUOTED_CONTEXT = 2  # words on each side of a value that, as the paper has them, make a quote


# -- did the reviewer notice? ---------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    who: str  # "reviewer 2", "Area Chair", "reviewer"
    where: str  # the form's field
    sentence: str
    cites: str  # the altered value, or the words that name the impossibility


def _reviews_of(panel: ReviewPanel) -> list[tuple[str, Any]]:
    if len(panel.reviews) == 1:
        return [("reviewer", panel.reviews[0])]
    named = [(f"reviewer {i}", review) for i, review in enumerate(panel.reviews, 1)]
    return [*named, ("Area Chair", panel.meta)]


def _sentences(value: Any) -> Iterator[str]:
    for text in value if isinstance(value, list) else [value]:
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'])", str(text)):
            if sentence.strip():
                yield sentence.strip()


def _texts(panel: ReviewPanel) -> Iterator[tuple[str, str, str]]:
    """(who, field, sentence) for the Summary and the critiques of every review of the panel."""
    for who, review in _reviews_of(panel):
        for name in ("Summary", *CRITIQUES):
            for sentence in _sentences(review.fields.get(name) or []):
                yield who, name, sentence


def find_evidence(
    original: ReviewPanel, altered: ReviewPanel, fabrication: Fabrication, original_text: str
) -> list[Evidence]:
    """The sentences of the altered paper's review that noticed: a critique citing an altered
    value (one the original paper never printed) in words of its own, or any sentence naming the
    impossibility in words the original paper's review did not use. A summary that repeats
    193.1%, or a critique that copies the paper's sentence or table row around it (small models
    copy what they read), noticed nothing."""
    already = [sentence for _, _, sentence in _texts(original)]
    words = [p for p in IMPOSSIBILITY if not any(p.search(s) for s in already)]
    cited = [
        (value, _cited(value))
        for value in fabrication.altered_values
        if not _cited(value).search(original_text)
    ]
    paper = _tokens(fabrication.text)
    found = []
    for who, name, sentence in _texts(altered):
        hit = next(
            (
                value
                for value, p in cited
                if name in CRITIQUES
                and p.search(sentence)
                and not _quotes_paper(sentence, value, paper)
            ),
            None,
        )
        if hit is None:
            hit = next((m.group() for p in words if (m := p.search(sentence))), None)
        if hit is not None:
            found.append(Evidence(who, name, sentence, hit))
    return found


def _tokens(text: str) -> list[str]:
    """A text's words and numbers, lowercased; a number keeps its sign (any dash written "-")
    and decimals, not its "%"; punctuation and table bars are dropped."""
    return [token.lower().translate(DASHES) for token in TOKEN.findall(text)]


def _quotes_paper(sentence: str, value: str, paper: list[str]) -> bool:
    """Whether each mention of ``value`` in ``sentence`` stands among the same words as in the
    altered paper (``QUOTED_CONTEXT`` on each side, as far as the sentence goes): a copied
    sentence or table row shows that the model read the number, not that it saw it was wrong."""
    words = _tokens(sentence)
    number = _tokens(value)[0]
    mentions = [i for i, word in enumerate(words) if word == number]
    return bool(mentions) and all(
        _occurs(words[max(i - QUOTED_CONTEXT, 0) : i + QUOTED_CONTEXT + 1], paper) for i in mentions
    )


def _occurs(window: list[str], paper: list[str]) -> bool:
    size = len(window)
    return any(paper[start : start + size] == window for start in range(len(paper) - size + 1))


def _cited(value: str) -> re.Pattern[str]:
    """A value as a review may write it: "-0.21" also as "−0.21" or "–0.21"."""
    body = re.escape(value.lstrip("-"))
    sign = "[-−–]" if value.startswith("-") else ""
    return re.compile(rf"(?<![\w.]){sign}{body}(?!\d)")


def soundness(panel: ReviewPanel) -> float:
    return panel.scores()["Soundness"][0]


@dataclass(frozen=True)
class ProbeResult:
    paper: str
    fabrication: Fabrication
    original: ReviewPanel
    altered: ReviewPanel
    evidence: tuple[Evidence, ...]

    @property
    def soundness_fell(self) -> bool:
        """The altered paper's mean Soundness at least 1 below the original's, and rejected."""
        fell = soundness(self.original) - soundness(self.altered) >= 1
        return fell and self.altered.decision == "Reject"

    @property
    def noticed(self) -> bool:
        return bool(self.evidence) or self.soundness_fell

    @property
    def reason(self) -> str:
        if self.evidence:
            return f"its review cites {self.evidence[0].cites!r} ({self.evidence[0].where})"
        drop = f"Soundness {soundness(self.original):.2f} → {soundness(self.altered):.2f}"
        if self.soundness_fell:
            return f"{drop} and Reject, though no sentence names the impossible values"
        return (
            f"no sentence cites an altered value or names the impossibility; {drop}, "
            f"{self.altered.decision}"
        )

    def to_json(self) -> dict[str, Any]:
        """What is registered beside the reviewer's calibration."""
        return {
            "noticed": self.noticed,
            "verdict": "noticed" if self.noticed else "flagged",
            "reason": self.reason,
            "paper": self.paper,
            "alterations": [asdict(a) for a in self.fabrication.alterations],
            "repeats": [asdict(r) for r in self.fabrication.repeats],
            "original": _scores(self.original),
            "altered": _scores(self.altered),
            "evidence": [asdict(e) for e in self.evidence],
        }


def _scores(panel: ReviewPanel) -> dict[str, Any]:
    return {"overall": panel.overall, "soundness": soundness(panel), "decision": panel.decision}


# -- the probe ------------------------------------------------------------------------------------


def probe_text(paper: Path) -> str:
    """The paper as the reviewer reads it: a PDF through the reader, a .txt or .md file as is."""
    if Path(paper).suffix.lower() not in (".txt", ".md", ".markdown"):
        return read_paper(paper)
    try:
        return Path(paper).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LabtuiError(f"paper not found: {paper}", "check the path to the paper") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LabtuiError(
            f"{paper}: cannot be read as UTF-8 text ({exc})", "give a PDF or a UTF-8 text file"
        ) from None


def run_probe(
    llm: LLM,
    prompt: Prompt,
    paper: str,
    fabrication: Fabrication,
    settings: ReviewSection,
    *,
    name: str,
    progress: Callable[[str], None] = lambda text: None,
) -> ProbeResult:
    """The same reviewer (``llm`` and ``settings``) on the original ``paper`` and on its
    ``fabrication``, one after the other under the one budget, and what it noticed."""
    progress(f"1/2: the original {name}")
    original = review_panel(llm, prompt, paper, settings, progress=progress)
    count = len(fabrication.alterations)
    progress(f"2/2: {name} with {count} impossible value{'s' if count > 1 else ''}")
    altered = review_panel(llm, prompt, fabrication.text, settings, progress=progress)
    evidence = find_evidence(original, altered, fabrication, paper)
    return ProbeResult(name, fabrication, original, altered, tuple(evidence))
