"""Whether a review is about the paper it reviews: each Strength and Weakness, and the Summary as
a whole, must name something that paper's text contains.

A small model writes reviews that would fit any paper ("The paper is well written.", "The method
is novel.") or that are about another paper ("The transformer ablation on ImageNet is
convincing" of a diffusion paper). The form's checks (``core.answers.review_answers.ReviewForm``) cannot see
this: the text is long enough and copies no example. This check reads the paper once
(:class:`PaperIndex`) and, for each point, finds the **specific terms** it uses that the paper
also contains: content words that are neither stopwords nor the vocabulary every review or every
ML paper uses ("paper", "method", "novel", "results", "accuracy", "dataset" …), adjacent pairs of
content words ("hidden layer", "noise schedule"), numbers with two or more digits ("0.912",
"97.2%", "1000") and references ("Table 2", "Figure 3", "Section 4") to what the paper has.

A term the paper contains: a word it uses at least twice (once is in passing, in a paper of
1,000 words or more), a pair of words it writes side by side, a number or reference it has. The
list of references is left out: a title cited there is not something the paper contains.

The rule:

- a Strength or Weakness names at least one term the paper contains and at most one more term
  the paper lacks ("The transformer ablation on ImageNet" passes only for a paper about
  transformers); one that names three or more may lack up to three times as many, since a long
  careful point uses words the paper does not ("confounded", "cannot", "vanishes");
- the Summary likewise, naming at least two.

Measured on the five corpus papers (shared/corpus/papers, read by ``read_paper``; the rule and
vocabulary were set on three, then checked on the other two and on points written afterwards):
56 of 58 good points pass (refused: "Slower training than the baseline.", and "a single seed
... the differences may be noise" of the Q-learning paper), as do 22 of the 23 points of the
shipped example reviews (refused: "per-seed accuracies alongside the means"); all 190 generic
points and 9 generic summaries are refused; 22 of 23 points about other papers are refused
(passed: ImageNet transformers, for the paper about transformers), and 35 of 40 points of the
Q-learning paper put on the diffusion papers and back (the rest are true of both: "no comparison
with cosine annealing"). A summary of another paper is refused unless both papers are about
low-dimensional diffusion on the same four data sets. Indexing a 30,000-character paper takes
about 30 ms.

Words are compared lightly normalised: case, ligatures, hyphenation ("two-moons" is "two moons",
and "multi-scale" is also "multiscale"), one inflection ("layers", "doubled" and "denoising"
match "layer", "double" and "denoise"), Greek letters ("ε" is "epsilon"). A point that fails is
refused with a sentence that quotes it and says what to write; what the passing points matched
is kept (:class:`PointGrounding`) so that review.json shows the evidence.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

# A word a paper of LONG_PAPER_WORDS or more uses once is in passing, not what it is about; in a
# shorter text (an abstract, a test's paper) every word counts.
WORD_MIN_COUNT = 2
LONG_PAPER_WORDS = 1_000
SUMMARY_MIN_TERMS = 2
POINT_MIN_TERMS = 1
CLEARLY_GROUNDED = 3
LACKING_PER_TERM = 3
CHECKED_LISTS = ("Strengths", "Weaknesses")
QUOTE_CHARS = 80  # of a refused point, in the refusal

# a word, a number ("0.912", "12.8%", "1,000") or a name with digits ("enwik8", "2D", "5x5"),
# hyphenated ones whole ("q-learning", "384-dimensional")
_WORD = re.compile(r"[^\W_]+(?:[.,]\d+)*%?(?:-[^\W_]+(?:[.,]\d+)*%?)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_REFERENCE = re.compile(
    r"\b(table|tab|figure|fig|section|sec|equation|eq|algorithm|alg|appendix)s?\.?\s*"
    r"([A-Z]?\d+(?:\.\d+)*)\b",
    re.IGNORECASE,
)
_REFERENCE_KIND = {
    "tab": "table",
    "fig": "figure",
    "sec": "section",
    "eq": "equation",
    "alg": "algorithm",
}
_GREEK_NAMES = dict(
    zip(
        "αβγδεϵζηθκλμνξπρστφϕχψω",
        "alpha beta gamma delta epsilon epsilon zeta eta theta kappa lambda mu nu xi pi rho sigma "
        "tau phi phi chi psi omega".split(),
        strict=True,
    )
)
_GREEK = re.compile(f"[{''.join(_GREEK_NAMES)}{''.join(_GREEK_NAMES).upper()}]")
_REFERENCES_HEADING = re.compile(
    r"^(#+)\s*(?:\d+\.?\s*)?(?:references|bibliography)\s*$", re.IGNORECASE | re.MULTILINE
)
_HEADING_NUMBER = re.compile(r"^#+\s+([A-Z]?\d+(?:\.\d+)*)\b", re.MULTILINE)

# Words that carry no claim about one paper: English function words ...
_STOPWORDS = frozenset(
    """a about above after again against all almost also although always am among an and another
    any are as at be because been before being below between both but by can could did do does
    doing done down during each either else enough even ever every few for from further had has
    have having he her here hers him his how however i if in into is it its itself just least
    less let like likely many may me might more most much must my neither no nor not now of off
    often on once one only onto or other others otherwise our ours out over own per perhaps
    quite rather really same several she should since so some such than that the their theirs
    them themselves then there therefore these they this those though through thus to too two
    three four five under until up upon us very via was we well were what whatever when where
    whereas whether which while who whom whose why will with within without would yet you your
    first second third firstly secondly finally overall etc e.g i.e eg ie vs versus none
    nothing identified applicable noted mentioned n/a na""".split()
)
# ... the words any review uses ...
_REVIEW_WORDS = frozenset(
    """paper papers work works author authors manuscript submission study studies article method
    methods approach approaches technique techniques framework idea ideas contribution
    contributions result results finding findings experiment experiments experimental
    experimentally evaluation evaluations evaluate evaluated analysis analyses claim claims
    section sections figure figures table tables appendix appendices equation equations
    algorithm algorithms part parts detail details aspect aspects point points reader readers
    writing written write writes presentation presented present presents presenting
    clear clearly clarity unclear well poorly poor good great nice strong weak weakness
    weaknesses strength strengths novel novelty original originality new significant
    significance significantly important importance interesting limited limitation limitations
    lack lacks lacking missing insufficient sufficient thorough comprehensive extensive
    convincing convincingly compelling solid sound soundness rigorous rigor quality impact
    impactful useful relevant relevance promising effective effectiveness efficient efficiency
    simple straightforward easy hard difficult complex well-written well-motivated motivated
    motivation organized structured easy-to-follow follow understand understanding explained
    explanation explain explains discussion discuss discussed provide provides provided show
    shows shown showed demonstrate demonstrates demonstrated demonstration propose proposes
    proposed introduce introduces introduced use uses used using make makes made give gives
    given take takes needed need needs could would better best worse improve improves improved
    improvement improvements performance perform performs performed outperform outperforms
    compared comparison comparisons compare baseline baselines benchmark benchmarks prior
    previous existing related literature state-of-the-art state art sota field area community
    future further additional more other various several different overall general generally
    specific specifically particular particularly main key major minor small large high low
    some many few number numbers lot lots way ways thing things case cases example examples
    evidence support supports supported justify justified justification theory theoretical
    empirical empirically practical practice insight insights contribution setting settings
    scope scale problem problems task tasks question questions issue issues concern concerns
    fair fairly reasonable reasonably robust robustness generalize generalization applicable
    applicability reproducible reproducibility reproduce code implementation implementations
    reviewer reviewers review reviews agree agrees agreement disagree disagrees disagreement
    consensus rating ratings accept acceptance reject rejection decision borderline rebuttal
    chair meta venue conference workshop
    achieve achieves achieved setup describe described description report reports reported
    choice choices choose chosen configuration configurations single standard nothing anything something
    difference differences toy error bars specify specified precise precisely try tried rich
    richer derive derived current change changes changed strong stronger weaker approach
    believe think seem seems appear appears unclear obvious obviously interesting similar
    similarly adjust adjusts adjusted combine combines combined""".split()
)
# ... the common English a review says of any paper ...
_COMMON_WORDS = frozenset(
    """across along around beyond despite toward towards behind besides beside near next
    address addresses addressed benefit benefits compare consider considered considering
    contain contains cover covers covered find finds found focus focuses focused help helps
    include includes included including lead leads led mean means offer offers offered rely
    relies remain remains require requires required seem suggest suggests suggested tend
    allow allows enable enables allowing apply applied applies argue argues assume assumed
    claim claimed conduct conducted consist consists depend depends design designed develop
    developed explore explored explores extend extended focus highlight highlights increase
    increased increases reduce reduced reduces look looks mention mentioned note noted notes
    observe observed obtain obtained outline presents raise raises rather reach reached see
    seen state stated states study studied test validate validated verify verified work
    fully mostly largely mainly slightly somewhat highly directly partly partially entirely
    completely truly relatively comparatively especially notably typically usually mainly
    recent recently multiple various entire whole full broad narrow common typical modern
    simple simpler basic natural clean careful carefully adequate adequately appropriate
    properly proper correct correctly incorrect wrong right true false real actual actually
    possible potential potentially likely unlikely certain clear able unable overall
    additional extra further enough excellent impressive marginal marginally modest minimal
    substantial substantially considerable considerably notable noticeable remarkable
    solid weakly strongly positive negative valuable meaningful worth worthwhile timely
    incomplete complete concise verbose lengthy short long brief hard easy readable
    unconvincing insufficiently sufficiently detailed vague ambiguous confusing confused
    incremental trivial nontrivial standard conventional traditional classic usual
    time times cost costs computational compute computation memory speed scalability
    complexity overhead resource resources budget budgets fewer less lower higher larger smaller""".split()
)
# ... and the words every machine-learning paper uses.
_FIELD_WORDS = frozenset(
    """model models data dataset datasets set sets training train trained test testing tested
    validation accuracy loss losses metric metrics parameter parameters hyperparameter
    hyperparameters architecture architectures network networks neural deep learning machine
    learned learn learns ablation ablations run runs seed seeds epoch epochs iteration
    iterations sample samples input inputs output outputs feature features score scores
    value values system systems process performance gain gains error errors rate""".split()
)
GENERIC = _STOPWORDS | _COMMON_WORDS | _REVIEW_WORDS | _FIELD_WORDS


@dataclass(frozen=True)
class PointGrounding:
    """What one point of a review names that the paper contains (``terms``) and what it names
    that the paper lacks (``absent``). ``item``: its number in the list (0 for the Summary)."""

    field: str
    item: int
    terms: tuple[str, ...]
    absent: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "item": self.item, "terms": list(self.terms)}


def _plain(text: str) -> str:
    """Ligatures folded, soft hyphens and hyphenated line breaks joined, Greek letters spelled
    out (a paper's "ε" is a review's "epsilon"), "×" as "x" ("5×5" is "5x5"), lower case."""
    text = unicodedata.normalize("NFKC", text).replace("\u00ad", "").replace("×", "x")
    text = _GREEK.sub(lambda letter: f" {_GREEK_NAMES[letter.group().lower()]} ", text)
    text = re.sub(r"(?<=[^\W\d_])-\n(?=[a-z])", "", text)
    return text.casefold()


def stem(word: str) -> str:
    """A light stem, the same on both sides of a comparison: one inflection off ("layers",
    "doubled", "denoising", "studies" → "layer", "doubl", "denois", "stud"); numbers as written."""
    if not word.isalpha() or word.endswith(("ss", "us", "is")):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "e", "y")
_GENERIC_STEMS = frozenset(map(stem, GENERIC))


def _tokens(text: str) -> list[str]:
    # "12.8%" is 12.8 and "1,000" is 1000, as the paper may write either
    return [
        re.sub(r"(?<=\d),(?=\d)", "", match.group()).replace("%", "")
        for match in _WORD.finditer(_plain(text))
    ]


def _words(text: str) -> list[str]:
    """The text's words in order, lower case; a hyphenated word counts as its parts."""
    return [part for token in _tokens(text) for part in token.split("-") if part]


def _units(text: str) -> list[str]:
    """A point's words in order, lower case, a hyphenated word kept whole ("q-learning")."""
    return _tokens(text)


def _compounds(text: str) -> list[str]:
    """Hyphenated words written as one ("multi-scale" → "multiscale"), so that either spelling
    matches the other."""
    return [token.replace("-", "") for token in _tokens(text) if "-" in token]


def _is_content(word: str) -> bool:
    """A word that could name something in one paper: no stopword or generic review or ML word;
    a number only with two digits or more ("0.91", "128", "97.2": a result, a size); any name
    with digits ("enwik8", "2d")."""
    if _NUMBER.fullmatch(word):
        return sum(c.isdigit() for c in word) >= 2
    if not word.isalpha() and "-" not in word:
        return True
    if "-" in word:  # whole, unless all its parts are generic ("state-of-the-art") or numbers
        parts = [part for part in word.split("-") if part]
        return not all(stem(part) in _GENERIC_STEMS or part.isdigit() for part in parts)
    return len(word) >= 3 and stem(word) not in _GENERIC_STEMS


def _references(text: str) -> set[str]:
    """ "table 2", "figure 3", "section 4.1" … as the text names them."""
    found = set()
    for kind, number in _REFERENCE.findall(text):
        kind = kind.casefold()
        found.add(f"{_REFERENCE_KIND.get(kind, kind)} {number.casefold()}")
    return found


def _without_references(text: str) -> str:
    """The text less its list of references: from a "References" or "Bibliography" heading to
    the next heading as high (an appendix) or the end."""
    start = _REFERENCES_HEADING.search(text)
    if start is None:
        return text
    level = len(start.group(1))
    rest = re.compile(rf"^#{{1,{level}}}\s", re.MULTILINE).search(text, start.end())
    return text[: start.start()] + (text[rest.start() :] if rest else "")


class PaperIndex:
    """A paper's text indexed once, without its list of references (a title cited there is not
    something the paper contains): how often each word stem occurs (hyphenated words also
    written as one), its adjacent word pairs, and the tables, figures and sections it has."""

    def __init__(self, text: str, check_summary: Callable[[str], str] | None = None) -> None:
        # what a summary may not say of this paper's runs (core/claim_checks.text_contradiction)
        self.check_summary = check_summary
        text = _without_references(text)
        words = [stem(word) for word in _words(text)]
        self.counts = Counter(words) + Counter(stem(c) for c in _compounds(text))
        self.min_count = WORD_MIN_COUNT if len(words) >= LONG_PAPER_WORDS else 1
        self.pairs = frozenset(f"{a} {b}" for a, b in pairwise(words))
        self.references = frozenset(
            _references(text) | {f"section {n.casefold()}" for n in _HEADING_NUMBER.findall(text)}
        )

    def has(self, term: str) -> bool | None:
        """Whether the paper contains ``term``: True, False, or None for a single word it uses
        only once (in passing: neither evidence for a point nor against it)."""
        if _REFERENCE.fullmatch(term):
            return term in self.references
        parts = [stem(part) for part in re.split(r"[ -]", term) if part]
        if len(parts) > 1:  # a pair or a hyphenated word: as a pair, or written as one word
            joined = "-" in term and self.counts[stem(term.replace("-", ""))] > 0
            return joined or all(f"{a} {b}" in self.pairs for a, b in pairwise(parts))
        count = self.counts[parts[0]]
        if count >= self.min_count or (count and not parts[0].isalpha()):
            return True
        return None if count else False

    def ground(self, field: str, item: int, text: str) -> PointGrounding:
        """The specific terms of one point, split into those this paper contains and lacks."""
        found: list[str] = []
        absent: list[str] = []
        for term in specific_terms(text):
            has = self.has(term)
            if has:
                found.append(term)
            elif has is False and (" " not in term or _REFERENCE.fullmatch(term)):
                # (a pair absent is no evidence against: its words are judged one by one)
                absent.append(term)
        # a pair the paper has says more than its two words, which are not counted again
        covered = {word for term in found if " " in term for word in term.split()}
        return PointGrounding(
            field,
            item,
            tuple(t for t in found if t not in covered),
            tuple(t for t in absent if t not in covered),
        )


def specific_terms(text: str) -> list[str]:
    """The terms of ``text`` that could name something in one paper, in order, once each:
    references ("table 2"), pairs of content words ("noise schedule"), then content words,
    hyphenated ones whole ("q-learning") and numbers of two digits or more."""
    units = _units(text)
    terms = sorted(_references(text))
    for a, b in pairwise(units):
        if "-" not in a + b and _is_content(a) and _is_content(b):
            terms.append(f"{a} {b}")
    terms += [unit for unit in units if _is_content(unit)]
    return list(dict.fromkeys(terms))


def is_grounded(point: PointGrounding, min_terms: int = POINT_MIN_TERMS) -> bool:
    """Whether a point names enough of the paper: ``min_terms`` terms it contains, and at most
    one more term it lacks; a point that names CLEARLY_GROUNDED terms of the paper may use up to
    LACKING_PER_TERM times as many words it lacks (a long, careful point does), but no more (a
    point mostly about something else is not about this paper)."""
    found, absent = len(point.terms), len(point.absent)
    if found < min_terms:
        return False
    return absent <= found + 1 or (found >= CLEARLY_GROUNDED and absent <= LACKING_PER_TERM * found)


def ground_review(fields: dict[str, Any], index: PaperIndex) -> tuple[PointGrounding, ...]:
    """Each checked point of a review (the Summary, every Strength and Weakness) with what it
    names of the paper; ValueError quoting each point that names too little of it, saying what
    to write instead."""
    summary = index.ground("Summary", 0, str(fields.get("Summary", "")))
    points = [summary]
    for name in CHECKED_LISTS:
        points += [index.ground(name, n, str(t)) for n, t in enumerate(fields.get(name) or [], 1)]
    problems = [
        _refusal(point, _text_of(fields, point))
        for point in points
        if not is_grounded(point, SUMMARY_MIN_TERMS if point.item == 0 else POINT_MIN_TERMS)
    ]
    contradicted = (
        index.check_summary(str(fields.get("Summary", ""))) if index.check_summary else ""
    )
    if contradicted:
        problems.append(f"field 'Summary' {contradicted}: say what the runs show")
    if problems:
        raise ValueError("; ".join(problems))
    return tuple(points)


def without_ungrounded_points(
    fields: dict[str, Any], index: PaperIndex
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``fields`` with each Strength or Weakness that names too little of the paper left out,
    where the list keeps at least one that names enough, and the refusal of each left out.
    The last resort after the re-asks: Qwen2.5-Coder-1.5B's review of a moons paper kept "The
    experiment does not address ethical concerns" through 3 asks, beside grounded points."""
    kept, left_out = dict(fields), []
    for name in CHECKED_LISTS:
        items = [str(item) for item in fields.get(name) or []]
        points = [index.ground(name, n, item) for n, item in enumerate(items, 1)]
        good = [item for item, point in zip(items, points, strict=True) if is_grounded(point)]
        if good and len(good) < len(items):
            kept[name] = good
            left_out += [
                _refusal(point, item)
                for item, point in zip(items, points, strict=True)
                if not is_grounded(point)
            ]
    return kept, tuple(left_out)


def _text_of(fields: dict[str, Any], point: PointGrounding) -> str:
    if point.item == 0:
        return str(fields[point.field])
    return str(fields[point.field][point.item - 1])


def _refusal(point: PointGrounding, text: str) -> str:
    quoted = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "…"
    who = "the Summary" if point.item == 0 else f"{point.field} item {point.item}"
    where = f"{who} ({quoted!r})"
    if point.terms and point.absent:  # it names this paper, but more of something else
        return (
            f"{where} is mostly about what this paper does not contain "
            f"({_listing(point.absent[:4])}): write about this paper's own method, data and "
            "results, by the names it uses"
        )
    lacking = f" (it has no {_listing(point.absent[:4])})" if point.absent else ""
    if point.item == 0:
        return (
            f"{where} names too little of this paper{lacking}: say what this paper does, "
            "naming its method, data and main result as the paper does"
        )
    return (
        f"{where} names nothing this paper contains{lacking}: say which experiment, section, "
        "table or claim of this paper it is about"
    )


def _listing(terms: Sequence[str]) -> str:
    quoted = [repr(t) for t in terms]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def grounding_json(points: Iterable[PointGrounding]) -> list[dict[str, Any]]:
    """The evidence as review.json keeps it: per point, the terms it shares with the paper."""
    return [point.to_json() for point in points]
