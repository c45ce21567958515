"""Semantic Scholar paper search: citation counts, venues and BibTeX beside arXiv's preprints.

Used only with an API key: ``SemanticScholar.from_env`` returns None when ``S2_API_KEY`` is not
set, so callers skip Semantic Scholar instead of queueing in its crowded keyless pool. Every
search is cached per project (``<cache_dir>/s2/<sha256>.json``), and requests go through the
same rate gate (a turn of their own: one request a second per key) and the same retry policy
as arXiv's (``core.literature.http_service.ServicePolicy``). Failures raise ``LiteratureUnavailable``.

``requests`` is imported inside the functions that need it, so importing this module is cheap.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .cache import cached_papers
from .http_service import Emit, LiteratureUnavailable, ServicePolicy, TryAgain, http_session

if TYPE_CHECKING:
    import requests

S2_API_URL = "https://api.semanticscholar.org/graph/v1"
API_KEY_ENV = "S2_API_KEY"
KEY_FORM_URL = "https://www.semanticscholar.org/product/api#api-key-form"
SEARCH_FIELDS = "title,abstract,year,authors,venue,citationCount,externalIds,citationStyles,url"
MAX_LIMIT = 100  # the search endpoint's own maximum
SERVICE = "Semantic Scholar"
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class S2Paper:
    """One Semantic Scholar search result; empty strings and 0 where S2 does not know."""

    paper_id: str
    title: str
    abstract: str
    year: int
    authors: list[str]
    venue: str
    citation_count: int
    arxiv_id: str  # versionless ("1412.6980"), as S2 records it
    doi: str
    bibtex: str  # S2's entry, with its entry type repaired (see _repair_bibtex)
    url: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> S2Paper:
        """Rebuild from ``to_dict``; keys this version does not know are ignored."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


class SemanticScholar:
    """Semantic Scholar's relevance search for one project, cached under ``cache_dir``."""

    def __init__(
        self,
        cache_dir: Path,
        api_key: str,
        base_url: str = S2_API_URL,
        delay_s: float = 1.0,
        emit: Emit | None = None,
        stage: str = "",
    ) -> None:
        if not api_key.strip():
            raise ConfigError(
                "Semantic Scholar needs an API key, and none was given",
                hint=f"set {API_KEY_ENV} (a free key: {KEY_FORM_URL}), or build it with "
                "SemanticScholar.from_env, which gives None without a key",
            )
        if not re.match(r"https?://", base_url):
            raise ConfigError(
                f"the Semantic Scholar URL {base_url!r} is not an http(s) URL",
                hint=f"set [literature] s2_url in labtui.toml, e.g. {S2_API_URL}",
            )
        self.cache_dir = Path(cache_dir) / "s2"
        self.api_key = api_key.strip()
        self.base_url = base_url.rstrip("/")
        # Retries and backoff are ServicePolicy's defaults (change them with dataclasses.replace).
        url = f"{self.base_url}/paper/search"
        self.policy = ServicePolicy(
            SERVICE,
            "search",
            url,
            delay_s,
            emit=emit,
            stage=stage,
            fallback="the stage goes on without Semantic Scholar",
            client_hint="check [literature] s2_url in labtui.toml, or rephrase the query",
        )

    @classmethod
    def from_env(cls, cache_dir: Path, **kwargs: Any) -> SemanticScholar | None:
        """A client with the key in ``S2_API_KEY``, or None when it is not set."""
        api_key = os.environ.get(API_KEY_ENV, "").strip()
        return cls(cache_dir, api_key, **kwargs) if api_key else None

    def search(self, query: str, limit: int = 5) -> list[S2Paper]:
        """Papers for ``query`` by relevance; from the cache when this exact search was made.

        Raises LiteratureUnavailable when Semantic Scholar stays down, refuses the key or the
        query, or is unreachable.
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        # S2's documentation: hyphenated terms match nothing; spaces find them.
        query = " ".join(query.replace("-", " ").split())
        if not query:
            return []
        about = {"base_url": self.base_url, "query": query, "limit": limit}
        fetch = partial(self._fetch, query, limit)
        return cached_papers(self.cache_dir, about, fetch, S2Paper.from_dict)

    def _fetch(self, query: str, limit: int) -> list[S2Paper]:
        policy = self.policy
        params = {"query": query, "limit": str(limit), "fields": SEARCH_FIELDS}

        def attempt() -> list[S2Paper]:
            headers = {"x-api-key": self.api_key}
            response = session.get(policy.url, params=params, headers=headers)
            if response.status_code in (401, 403):
                raise LiteratureUnavailable(
                    f"Semantic Scholar refused the API key (HTTP {response.status_code})",
                    hint=f"check {API_KEY_ENV}: it must be a key Semantic Scholar issued "
                    f"({KEY_FORM_URL}); unset it to go on without Semantic Scholar",
                )
            policy.check(response)
            return _parse_search(response)

        with http_session(TIMEOUT_S) as session:
            return policy.run(attempt)


def _parse_search(response: requests.Response) -> list[S2Paper]:
    """Papers of a 200 answer; TryAgain when it is not the JSON the API sends (a proxy page)."""
    try:
        data = response.json()
    except ValueError:
        snippet = " ".join(response.text[:200].split())[:80]
        raise TryAgain(f"a response that is not JSON ({snippet!r})", response) from None
    # No "data" at all is how S2 answers a search without results.
    items = (data.get("data") or []) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise TryAgain(f"JSON without a list of papers ({str(data)[:80]!r})", response)
    return [_paper_from_json(item) for item in items if isinstance(item, dict)]


def _paper_from_json(item: dict[str, Any]) -> S2Paper:
    external = item.get("externalIds") or {}
    styles = item.get("citationStyles") or {}
    authors = [_text(a.get("name")) for a in item.get("authors") or [] if isinstance(a, dict)]
    return S2Paper(
        paper_id=_text(item.get("paperId")),
        title=_text(item.get("title")),
        abstract=_text(item.get("abstract")),
        year=_int(item.get("year")),
        authors=[name for name in authors if name],
        venue=_text(item.get("venue")),
        citation_count=_int(item.get("citationCount")),
        arxiv_id=_text(external.get("ArXiv")),
        doi=_text(external.get("DOI")),
        bibtex=_repair_bibtex(str(styles.get("bibtex") or "")),
        url=_text(item.get("url")),
    )


def _text(value: object) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0


_ENTRY_HEAD = re.compile(r"\s*@([^{]*)\{")
BIBTEX_TYPES = frozenset(
    {
        "article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings",
        "manual", "mastersthesis", "misc", "phdthesis", "proceedings", "techreport",
        "unpublished", "online",
    }
)  # fmt: skip


def _repair_bibtex(entry: str) -> str:
    """S2's BibTeX with a real entry type: S2 writes its publication types there.

    ``@['JournalArticle', 'Conference']{...}`` or ``@None{...}`` (allenai/s2-folks#89) break
    BibTeX; they become @inproceedings, @article, @book or @misc. An entry S2 got right, and
    text that is no entry at all, keep their words (stripped, ending in one newline).
    """
    entry = entry.strip()
    head = _ENTRY_HEAD.match(entry)
    if head is None or head.group(1).strip().lower() in BIBTEX_TYPES:
        return entry + "\n" if entry else ""
    types = set(re.findall(r"[A-Za-z]+", head.group(1)))
    if "Conference" in types:
        kind = "inproceedings"
    elif types & {"JournalArticle", "Review", "LettersAndComments", "Editorial"}:
        kind = "article"
    elif "Book" in types:
        kind = "book"
    else:
        kind = "misc"
    return f"@{kind}{{{entry[head.end() :]}\n"
