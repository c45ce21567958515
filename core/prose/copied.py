"""Text that is labtui's own words, not a paper's: a stretch copied from labtui's prompts, its
feedback and refusal messages, or the instructions a model was shown, and sentences that still
give instructions.

A small model copies what it reads. Qwen2.5-Coder-1.5B's Results section began with the idea's
"The experiment should compare early stopping …" and its captions told "the reader should look
for the final accuracy value"; an analysis it had to write again was accepted holding labtui's
own re-ask, "your analysis does not agree with the computed effects: - You wrote that accuracy
improved …". Two rules find such text without knowing last run's strings: eight or more
consecutive words shared with labtui's own texts (the prompts, every string labtui's code can
say, and whatever a project adds: its refusals, the instructions it showed), and a sentence in
the voice of an instruction ("the experiment should…", "you must…").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ..source.parse import parse_code
from .defect import COPIED, Defect, clipped, sentences_at

SHARED_WORDS = 8  # consecutive words shared with labtui's texts: copied, not written
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_COMMAND = re.compile(r"\\[A-Za-z@]+\*?")
_PLACEHOLDER = re.compile(r"\$\w+|\{[a-z_]+\}")
CORE = Path(__file__).resolve().parents[1]
PROMPTS = CORE.parent / "prompts"
# Modules whose words labtui itself writes into the paper (the setup, the results table, the
# ledger, the effects in words): the paper holding them is labtui's doing, not a copy.
WRITES_THE_PAPER = (
    "writeup/paper_layout.py",
    "writeup/results_table.py",
    "writeup/setup_facts.py",
    "writeup/ledger_appendix.py",
    "runs/effect_text.py",
    "runs/effects.py",
    "runs/run_changes.py",
    "runs/code_changes.py",
    "machine/hardware.py",
)
_INSTRUCTION = re.compile(
    r"\b(?:the|this|your|each)\s+(?:experiments?|paper|reader|study|analysis|section|figures?"
    r"|results?|runs?|answer|text|plan|caption)\s+(?:should|must|needs?\s+to|has\s+to)\b"
    r"|\byou\s+(?:should|must|need\s+to|have\s+to)\b|^(?:please|answer|respond|return|write)\b",
    re.I,
)

# A chat assistant talking to the person who asked, not a paper to its reader: the 1.5B model's
# whole conclusion slot and the last sentence of its abstract read "I apologize for
# misunderstanding your instructions." (moons, 2026-12-07).
_CHAT = re.compile(
    r"\bI\s+(?:apologi[sz]e|am\s+sorry|'m\s+sorry|hope\s+this|understand\s+(?:that|your))\b"
    r"|\b(?:your|the\s+user'?s)\s+(?:instructions?|request|question|prompt)\b"
    r"|\bas\s+an\s+AI\b|\blet\s+me\s+know\b"
    r"|^(?:sure|certainly|of\s+course)\b[,!]|^here\s+(?:is|are)\s+(?:the|a|an|your)\b",
    re.I,
)

Shingles = frozenset[tuple[str, ...]]


def words_of(text: str) -> list[re.Match[str]]:
    """The words of a text as compared: lower case, LaTeX commands left out."""
    return list(_WORD.finditer(_COMMAND.sub(lambda m: " " * len(m.group(0)), text).lower()))


def shingles(texts: Iterable[str]) -> Shingles:
    """Every run of SHARED_WORDS consecutive words of ``texts``; a template's placeholder
    ($idea, {metric}) breaks a run."""
    found: set[tuple[str, ...]] = set()
    for text in texts:
        for piece in _PLACEHOLDER.split(text):
            words = [m.group(0) for m in words_of(piece)]
            found.update(
                tuple(words[i : i + SHARED_WORDS]) for i in range(len(words) - SHARED_WORDS + 1)
            )
    return frozenset(found)


@lru_cache(maxsize=1)
def labtui_shingles() -> Shingles:
    """labtui's own texts: its prompts and the strings its code says (docstrings are no
    message; the modules that write the paper are left out)."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(PROMPTS.glob("*.md"))]
    for path in sorted(CORE.rglob("*.py")):
        if path.relative_to(CORE).as_posix() not in WRITES_THE_PAPER:
            texts += _strings_of(path)
    return shingles(texts)


def _strings_of(path: Path) -> list[str]:
    try:
        tree = parse_code(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, ValueError, OSError):
        return []
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and len(node.value.split()) >= SHARED_WORDS
    ]


def with_texts(extra: Iterable[str]) -> Shingles:
    """labtui's own texts and ``extra`` (a project's refusals, the instructions it showed)."""
    return labtui_shingles() | shingles(extra)


def copied_text(text: str, known: Shingles | None = None, limit: int = 3) -> list[Defect]:
    """Each stretch of ``text`` that shares SHARED_WORDS or more consecutive words with
    ``known`` (default: labtui's own texts), at most ``limit`` of them."""
    known = labtui_shingles() if known is None else known
    words = words_of(text)
    copied = [False] * len(words)
    for i in range(len(words) - SHARED_WORDS + 1):
        if tuple(w.group(0) for w in words[i : i + SHARED_WORDS]) in known:
            copied[i : i + SHARED_WORDS] = [True] * SHARED_WORDS
    found: list[Defect] = []
    i = 0
    while i < len(words) and len(found) < limit:
        if not copied[i]:
            i += 1
            continue
        end = i
        while end + 1 < len(words) and copied[end + 1]:
            end += 1
        found.append(_copied(text, words[i].start(), words[end].end()))
        i = end + 1
    return found


def _copied(text: str, start: int, end: int) -> Defect:
    quoted = clipped(text[start:end])
    return Defect(
        COPIED,
        start,
        quoted,
        f"“{quoted}” is copied from labtui's own prompts, feedback or instructions, not "
        "written about this work.",
        "Say it in words of your own about what was done and found, or leave it out.",
    )


def instructions(text: str, limit: int = 3) -> list[Defect]:
    """The sentences that give an instruction instead of reporting ("The experiment should
    compare…", "The reader should look for…", "You must…"), or that a chat assistant says to
    the person who asked ("I apologize for misunderstanding your instructions."), at most
    ``limit``."""
    found: list[Defect] = []
    for at, piece in sentences_at(text):
        if len(found) >= limit:
            break
        quoted = clipped(piece)
        if _INSTRUCTION.search(piece.strip()):
            why = "is an instruction (from a prompt or a plan), not a report of this work"
        elif _CHAT.search(piece.strip()):
            why = "is a chat assistant speaking to the person who asked, not the paper"
        else:
            continue
        found.append(
            Defect(
                COPIED,
                at,
                quoted,
                f"“{quoted}” {why}.",
                "Report what was done and found, in the past or present tense.",
            )
        )
    return found
