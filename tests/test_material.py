"""The suite carries its own material: nothing in it reads outside the repository, and the real
papers it reads are here with their licence (tests/corpus)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import REPOSITORY, missing_material

TESTS = REPOSITORY / "tests"
CORPUS = TESTS / "corpus"
# what reaches above a file's own folders: parents[N] past the repository, or shared/ beside it
_PARENTS = re.compile(r"parents\[(\d+)\]")
_OUTSIDE = re.compile(r"(?<![\w/])(?:\.\./)+shared\b|/work/shared")


def test_the_real_papers_are_in_the_repository_with_their_licence():
    outlines = json.loads((CORPUS / "papers" / "outlines.json").read_text(encoding="utf-8"))
    assert len(outlines) == 5
    for name in outlines:
        assert (CORPUS / "papers" / name).is_file() or (CORPUS / "papers" / f"{name}.pdf").is_file()
    assert "Apache License" in (CORPUS / "LICENSE-AI-Scientist").read_text(encoding="utf-8")


def test_no_test_reads_outside_the_repository():
    reaching = []
    for path in TESTS.rglob("*.py"):
        if path == Path(__file__) or {"bench", "repo_shapes"} & set(path.parts):
            continue  # benches are run by hand, not by the suite; repo_shapes are researchers' code
        text = path.read_text(encoding="utf-8")
        depth = len(path.relative_to(REPOSITORY).parts) - 1  # parents[depth] is the repository
        if any(int(n) > depth for n in _PARENTS.findall(text)) or _OUTSIDE.search(text):
            reaching.append(str(path.relative_to(REPOSITORY)))
    assert reaching == []


def test_a_skip_for_a_file_of_the_repository_is_a_failure():
    reason = f"Skipped: the corpus paper {REPOSITORY}/tests/corpus/papers/x.pdf is not here"
    assert missing_material(reason, REPOSITORY) == f"{REPOSITORY}/tests/corpus/papers/x.pdf"
    assert missing_material("Skipped: bubblewrap does not work here", REPOSITORY) == ""
