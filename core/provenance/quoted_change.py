"""A change a sentence states with its own numbers, held against those numbers.

"Training time also increased from 1.509 to 1.388 (+1149%)" is wrong on its face, whatever the
runs and their noise: 1.388 is lower than 1.509, and by 8.0 %, not 1149 %. A real 1.5B model
wrote that sentence into a paper. This module reads such statements (a direction word, "from A
to B", a percentage beside them) and says where the direction or the percentage disagrees with
A and B; ``claims.contradictions`` reports it with the claims the runs' effects contradict.

It is conservative: a negated or speculative clause states no change; a percentage passes when
it is the relative change, or the difference in points, of some values that round to the two
numbers as written, to within one unit of its own last digit; numbers in two units, and years,
are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .claim_words import CITATION, CLAUSE_BREAK, NEGATION, SPECULATION

_UP = r"increas\w*|rose|rises?|rising|grew|grows?|growing|climb\w*|jump\w*|went\s+up|goes\s+up"
_DOWN = (
    r"decreas\w*|fell|falls?|falling|dropp\w*|drops?|declin\w*|reduc\w*|lowered|shr[aiu]nk\w*"
    r"|dipped|went\s+down|goes\s+down"
)
_NEUTRAL = r"improv\w*|chang\w*|went|goes|mov\w*|shift\w*|wors\w*|degrad\w*"
_NUMBER = r"[+−-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_UNIT = r"(?:\s*%|\s*[a-zA-Zµ/]+)?"


def _percent(name: str) -> str:
    """A percentage, not a confidence level or a share ("95% CI", "10% of the seeds")."""
    return rf"(?P<{name}>{_NUMBER})\s*%(?!\s*(?:CI\b|confidence|of\b|percentile))"


# "increased (by 12%) from 1.0 to 1.12 (+12%)", "fell from 0.94 to 0.80 (-0.14, or -14.9%)"
_STATED = re.compile(
    rf"\b(?:(?P<up>{_UP})|(?P<down>{_DOWN})|(?:{_NEUTRAL}))\b"
    rf"(?P<mid>(?:\s+(?:by\s+{_percent('by')}|[^\s,;:()]+)){{0,4}}?)"
    rf"\s+from\s+(?P<a>{_NUMBER})(?P<a_unit>{_UNIT})\s+to\s+(?P<b>{_NUMBER})(?P<b_unit>{_UNIT})"
    r"(?P<trail>\s*(?:\(\s*(?:[^()%]*?[,;]\s*)?|,\s*)(?:(?:or|i\.e\.,?|that\s+is,?|an?|by)\s+)?"
    rf"{_percent('after')})?",
    re.I,
)


@dataclass(frozen=True)
class QuotedChange:
    """A stated change its own numbers contradict, in words a model can act on."""

    claims: str  # "training time increased from 1.509 to 1.388 (+1149%)"
    says: str  # "1.388 is lower than 1.509 (−8.0%)"


def quoted_changes(sentence: str) -> list[QuotedChange]:
    """Each change the sentence states whose direction or percentage disagrees with the two
    numbers it quotes for it."""
    if CITATION in sentence:
        return []  # someone else's numbers, rounded as they printed them
    found = []
    for match in _STATED.finditer(sentence):
        clause_start = _clause_start(sentence, match.start())
        stating = sentence[clause_start : match.end("b")]
        if NEGATION.search(stating) or SPECULATION.search(stating) or not _comparable(match):
            continue
        says = _disagreement(match)
        if says:
            found.append(QuotedChange(_as_written(sentence, clause_start, match), says))
    return found


def _clause_start(sentence: str, at: int) -> int:
    breaks = [b.end() for b in CLAUSE_BREAK.finditer(sentence, 0, at)]
    return breaks[-1] if breaks else 0


def _comparable(match: re.Match) -> bool:
    """Two numbers in one unit that are not years ("from 2019 to 2023")."""
    units = [match.group(g).strip().lower() for g in ("a_unit", "b_unit")]
    if all(units) and units[0] != units[1]:
        return False
    years = [_value(match.group(g)) for g in ("a", "b")]
    return not all(y.is_integer() and 1900 <= y <= 2100 for y in years)


def _disagreement(match: re.Match) -> str:
    """What the numbers say against the stated change, '' when they agree with it: first its
    direction word, then its percentage."""
    a_text, b_text = match.group("a"), match.group("b")
    a, b = _value(a_text), _value(b_text)
    claimed = "up" if match.group("up") else "down" if match.group("down") else None
    if (claimed == "up" and b <= a) or (claimed == "down" and b >= a):
        if a == b:
            return f"{b_text} is the same as {a_text}"
        relative = f" ({_signed(_relative(a, b))})" if a > 0 else ""
        return f"{b_text} is {'higher' if b > a else 'lower'} than {a_text}{relative}"
    stated = match.group("by") or match.group("after")
    if stated is None or a <= 0 or _percent_fits(a_text, b_text, stated):
        return ""
    return f"{b_text} against {a_text} is {_signed(_relative(a, b))}, not {stated}%"


def _percent_fits(a_text: str, b_text: str, stated: str) -> bool:
    """Whether a stated percentage is the change from A to B, relative or in points, to within
    one unit of its last digit (a writer who truncates rather than rounds is not wrong); one
    without a sign is read as the change's size."""
    p, slack = _value(stated), _last_digit(stated)
    signed = stated[0] in "+−-"
    for bounds in _changes(a_text, b_text):
        low, high = bounds if signed else _magnitudes(bounds)
        if low - slack <= (p if signed else abs(p)) <= high + slack:
            return True
    return False


def _changes(a_text: str, b_text: str) -> list[tuple[float, float]]:
    """The change from A to B, lowest and highest over the values that round to A and B as
    written: relative in percent, and in points (the difference; times 100 for fractions)."""
    a, b = _value(a_text), _value(b_text)
    da, db = _last_digit(a_text) / 2, _last_digit(b_text) / 2
    found = []
    corners = [_relative(x, y) for x in (a - da, a + da) for y in (b - db, b + db) if x > 0]
    if len(corners) == 4:
        found.append((min(corners), max(corners)))
    scales = (1.0, 100.0) if max(abs(a), abs(b)) <= 1 else (1.0,)
    found += [((b - a - da - db) * s, (b - a + da + db) * s) for s in scales]
    return found


def _magnitudes(bounds: tuple[float, float]) -> tuple[float, float]:
    """The sizes a change between ``bounds`` may have."""
    low, high = bounds
    if low <= 0 <= high:
        return 0.0, max(-low, high)
    return min(abs(low), abs(high)), max(abs(low), abs(high))


def _relative(a: float, b: float) -> float:
    return (b - a) / a * 100


def _signed(percent: float) -> str:
    """A relative change as a reader writes it: "+6.2%", "−8.0%"."""
    return f"{percent:+.1f}%".replace("-", "−")


def _value(text: str) -> float:
    return float(text.replace("−", "-").replace(",", ""))


def _last_digit(text: str) -> float:
    """One unit of the last digit a number is written with: 0.01 for "1.38", 1 for "12"."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 10.0**-decimals


def _as_written(sentence: str, clause_start: int, match: re.Match) -> str:
    """The stated change as the sentence words it, from its clause's start to the percentage
    (and the parenthesis that holds it), with "the value" for a clause that names no subject."""
    end = match.end()
    if match.group("after") is not None and "(" in match.group("trail"):
        closing = sentence.find(")", end)
        end = closing + 1 if closing != -1 else end
    subject = sentence[clause_start : match.start()].strip()
    text = sentence[clause_start:end].strip()
    first = text.split(" ", 1)[0]
    if first[:1].isupper() and first[1:] == first[1:].lower():
        text = text[0].lower() + text[1:]
    return text if subject else f"the value {text}"
