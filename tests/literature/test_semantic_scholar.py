"""core.literature.semantic_scholar against FakeS2 (loopback, no network)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fake_arxiv import FakeArxiv
from support.fake_s2 import FakeS2

from labtui.core import retry
from labtui.core.errors import ConfigError
from labtui.core.events import Event, Notice
from labtui.core.literature import http_service
from labtui.core.literature.arxiv import Literature
from labtui.core.literature.http_service import LiteratureUnavailable
from labtui.core.literature.semantic_scholar import (
    SEARCH_FIELDS,
    S2Paper,
    SemanticScholar,
    _repair_bibtex,
)


def backed_off(sleeps: list[float], bases: list[float]) -> bool:
    """Each wait is its base stretched by the retry policy's jitter (up to half again)."""
    return len(sleeps) == len(bases) and all(
        b <= s <= b * (1 + retry.RetryPolicy.jitter) for s, b in zip(sleeps, bases, strict=True)
    )


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every test starts with a fresh rate gate, and records its sleeps instead of sleeping."""
    monkeypatch.setattr(http_service, "_last_request_at", {})
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


@pytest.fixture
def server() -> Iterator[FakeS2]:
    with FakeS2() as fake:
        yield fake


def make(cache: Path, server: FakeS2, **policy: Any) -> SemanticScholar:
    """A client of the fake; ``policy`` changes its RetryPolicy (no delay unless given)."""
    s2 = SemanticScholar(cache, server.api_key, base_url=server.url)
    s2.policy = replace(s2.policy, **{"delay_s": 0.0, **policy})
    return s2


# --------------------------------------------------------------------------------------------
# the key
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "   "])
def test_from_env_without_a_key_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("S2_API_KEY", raising=False)
    else:
        monkeypatch.setenv("S2_API_KEY", value)
    assert SemanticScholar.from_env(tmp_path) is None


def test_from_env_with_a_key_searches_with_it(
    tmp_path: Path, server: FakeS2, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S2_API_KEY", f" {server.api_key}\n")
    s2 = SemanticScholar.from_env(tmp_path, base_url=server.url, delay_s=0.0)
    assert s2 is not None
    assert s2.search("adam")
    assert server.keys == [server.api_key]


def test_a_wrong_key_is_a_clear_error_naming_the_variable(
    tmp_path: Path, server: FakeS2, sleeps: list[float]
) -> None:
    s2 = SemanticScholar(tmp_path, "not-the-key", base_url=server.url, delay_s=0.0)
    with pytest.raises(LiteratureUnavailable, match=r"refused the API key \(HTTP 403\)") as info:
        s2.search("adam")
    assert "S2_API_KEY" in info.value.hint
    assert len(server.hits) == 1 and sleeps == []  # a bad key is not fixed by waiting
    assert list((tmp_path / "s2").glob("*.json")) == []


@pytest.mark.parametrize(
    ("key", "url", "message"),
    [
        ("", "https://api.semanticscholar.org/graph/v1", "needs an API key"),
        ("key", "api.semanticscholar.org/graph/v1", "is not an http(s) URL"),
    ],
)
def test_bad_settings_are_config_errors(tmp_path: Path, key: str, url: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        SemanticScholar(tmp_path, key, base_url=url)
    assert message in info.value.message and info.value.hint


# --------------------------------------------------------------------------------------------
# search
# --------------------------------------------------------------------------------------------


def test_search_parses_citation_counts_and_bibtex(tmp_path: Path, server: FakeS2) -> None:
    papers = make(tmp_path, server).search("adam optimizer", limit=3)

    assert [p.citation_count for p in papers] == [150000, 20000, 3000]
    adam, adamw, momentum = papers
    assert adam == S2Paper(
        paper_id="f00000000000000000000000000000000000a001",
        title="Adam: A Method for Stochastic Optimization",
        abstract=adam.abstract,
        year=2014,
        authors=["Diederik P. Kingma", "Jimmy Ba"],
        venue="International Conference on Learning Representations",
        citation_count=150000,
        arxiv_id="1412.6980",
        doi="",
        bibtex=adam.bibtex,
        url="https://www.semanticscholar.org/paper/f00000000000000000000000000000000000a001",
    )
    assert adam.abstract.startswith("We introduce Adam, an algorithm")
    # S2 writes its publication types where BibTeX wants an entry type; those are repaired
    assert adam.bibtex.startswith("@inproceedings{Kingma2014AdamAM,\n author = {Diederik P.")
    assert adamw.bibtex.startswith("@article{Loshchilov2017DecoupledWD,\n")
    assert momentum.bibtex.startswith("@misc{Qian1999OnTM,\n")  # S2 said "@None"
    assert all(p.bibtex.rstrip().endswith("}") for p in papers)
    assert (momentum.abstract, momentum.arxiv_id) == ("", "")  # null and absent in the answer
    assert momentum.doi == "10.1016/S0893-6080(98)00116-6"

    assert server.hits == ["adam optimizer"]
    params = server.params[0]
    assert (params["limit"], params["fields"]) == ("3", SEARCH_FIELDS)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("@['Review', 'JournalArticle']{K,\n title = {T}\n}", "@article{K,\n title = {T}\n}\n"),
        ("@['Book']{K, title = {T}}\n\n", "@book{K, title = {T}}\n"),
        ("@Article{K, title = {T}}", "@Article{K, title = {T}}\n"),  # right already
        ("", ""),
        ("not bibtex", "not bibtex\n"),
    ],
)
def test_bibtex_entry_types_are_repaired(given: str, expected: str) -> None:
    assert _repair_bibtex(given) == expected


def test_limit_pages_the_answer_and_is_checked(tmp_path: Path, server: FakeS2) -> None:
    s2 = make(tmp_path, server)
    assert [p.year for p in s2.search("adam", limit=2)] == [2014, 2017]
    for bad in (0, 101):
        with pytest.raises(ValueError, match="limit must be between 1 and 100"):
            s2.search("adam", limit=bad)


def test_hyphens_are_sent_as_spaces(tmp_path: Path, server: FakeS2) -> None:
    """S2's documentation: hyphenated query terms match nothing."""
    make(tmp_path, server).search("  warm-up  for adam ")
    assert server.hits == ["warm up for adam"]


def test_no_results_is_an_answer_and_is_cached(tmp_path: Path, server: FakeS2) -> None:
    s2 = make(tmp_path, server)
    assert s2.search("quantum chromodynamics") == []  # the fake leaves out "data", as S2 does
    assert s2.search("quantum chromodynamics") == []
    assert len(server.hits) == 1
    assert s2.search(" - ") == [] and len(server.hits) == 1  # nothing to ask


def test_an_identical_search_is_answered_from_the_cache(tmp_path: Path, server: FakeS2) -> None:
    first = make(tmp_path, server).search("adam", limit=3)
    again = make(tmp_path, server).search("adam", limit=3)  # a resumed run

    assert again == first and len(server.hits) == 1
    (cached,) = (tmp_path / "s2").glob("*.json")
    record = json.loads(cached.read_text())
    assert (record["query"], record["limit"]) == ("adam", 3)

    make(tmp_path, server).search("adam", limit=2)  # another search
    assert len(server.hits) == 2


# --------------------------------------------------------------------------------------------
# failures, retries, rate limit
# --------------------------------------------------------------------------------------------


def test_429_is_retried_with_backoff_and_retry_after(
    tmp_path: Path, server: FakeS2, sleeps: list[float]
) -> None:
    server.fail_next(status=429, times=1)
    server.fail_next(status=429, times=1, retry_after=30)
    notices: list[Event] = []

    assert len(make(tmp_path, server, emit=notices.append).search("adam")) == 3

    assert backed_off(sleeps[:1], [5.0]) and sleeps[1] == 30.0  # then the longer Retry-After
    assert len(server.hits) == 3
    assert [type(n) for n in notices] == [Notice, Notice]
    assert all(
        isinstance(n, Notice)
        and n.text.startswith("Semantic Scholar answered a search with HTTP 429")
        for n in notices
    )


def test_an_outage_raises_literature_unavailable(
    tmp_path: Path, server: FakeS2, sleeps: list[float]
) -> None:
    server.fail_next(status=503, times=100)
    with pytest.raises(LiteratureUnavailable) as info:
        make(tmp_path, server).search("adam")
    assert "Semantic Scholar search failed: HTTP 503 after 4 attempt(s)" in info.value.message
    assert "without Semantic Scholar" in info.value.hint
    assert len(server.hits) == 4
    assert backed_off(sleeps, [5.0, 10.0, 20.0])  # the default: 3 retries, doubling from 5 s


def test_a_rejected_request_says_why_and_is_not_retried(tmp_path: Path, server: FakeS2) -> None:
    server.fail_next(status=400, body='{"error": "Unrecognized or unsupported fields: [x]"}')
    with pytest.raises(LiteratureUnavailable, match=r"HTTP 400 .*unsupported fields") as info:
        make(tmp_path, server).search("adam")
    assert "s2_url" in info.value.hint
    assert len(server.hits) == 1


def test_a_body_that_is_not_json_is_retried_then_reported(tmp_path: Path, server: FakeS2) -> None:
    server.fail_next(status=200, times=100, body="<html>proxy login</html>")
    with pytest.raises(LiteratureUnavailable, match="not JSON"):
        make(tmp_path, server, retries=1).search("adam")
    assert len(server.hits) == 2
    assert list((tmp_path / "s2").glob("*.json")) == []


def test_requests_are_spaced_by_the_delay_apart_from_arxiv(
    tmp_path: Path, server: FakeS2, sleeps: list[float]
) -> None:
    with FakeArxiv() as arxiv:
        Literature(tmp_path, base_url=arxiv.url, delay_s=3.0).search("adam")
    s2 = make(tmp_path, server, delay_s=1.0)
    s2.search("adam")
    assert sleeps == []  # Semantic Scholar does not wait for arXiv's turn

    s2.search("momentum")
    assert len(sleeps) == 1 and 0.0 < sleeps[0] <= 1.0
