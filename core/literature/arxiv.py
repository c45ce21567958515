"""arXiv: search and full text for one project, cached on disk (``core.literature.cache``), asked
through the rate gate and retries every literature service shares (``core.literature.http_service``).

Every search is cached per project (``<cache_dir>/arxiv/<sha256>.json``), so a resumed or
replayed run asks arXiv nothing it already asked. ``Literature.full_text`` downloads a paper's PDF
and caches the extracted text, never the PDF (``<cache_dir>/arxiv_pdf/<base id>.txt``). arXiv's
terms ask for at least three seconds between calls, which the gate enforces across every
``Literature`` in the process, for searches and PDFs alike.

The feed is fetched with requests (a timeout, our retries) and parsed by the ``arxiv`` package's
own parser. ``arxiv`` and ``requests`` are imported only when arXiv is asked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ..events import Event
from .cache import atomic_write_text, cached_papers
from .fulltext import pdf_to_text, truncate_text
from .http_service import LiteratureUnavailable, ServicePolicy, TryAgain, http_session
from .record import Paper

if TYPE_CHECKING:
    import arxiv
    import requests

ARXIV_API_URL = "https://export.arxiv.org/api/query"
MAX_PDF_BYTES = 64 * 1024 * 1024  # arXiv's largest PDFs are ~50 MB; more is not a paper

Emit = Callable[[Event], None]


class Literature:
    """arXiv search and full text for one project, with its caches under ``cache_dir``."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        base_url: str = ARXIV_API_URL,
        delay_s: float = 3.0,
        emit: Emit | None = None,
        stage: str = "novelty",
        retries: int = 3,
        backoff_s: float = 5.0,
        timeout_s: float = 30.0,
    ) -> None:
        self.cache_dir = Path(cache_dir) / "arxiv"
        self.text_cache_dir = Path(cache_dir) / "arxiv_pdf"
        self.base_url = base_url
        self.timeout_s = timeout_s
        # How searches are asked; a PDF download asks through a copy with its own URL and hints.
        self.policy = ServicePolicy(
            "arXiv", "search", base_url, delay_s, retries, backoff_s, emit, stage
        )

    # ---- public ----------------------------------------------------------------------------

    def search(self, query: str, max_results: int = 5) -> list[Paper]:
        """Papers for ``query`` by relevance; from the cache when this exact search was made.

        Raises LiteratureUnavailable when arXiv stays down, is unreachable or rejects the query.
        """
        query = " ".join(query.split())
        if max_results < 1:
            raise ValueError(f"max_results must be at least 1, got {max_results}")
        if not query:
            return []  # arXiv answers an empty query with an error feed; nothing to ask
        about = {"base_url": self.base_url, "query": query, "max_results": max_results}
        return cached_papers(
            self.cache_dir, about, lambda: self._fetch(query, max_results), Paper.from_dict
        )

    def full_text(self, paper: Paper, max_chars: int = 20000) -> str:
        """The paper's text from its PDF, up to its References, cut to about ``max_chars``.

        A longer text is cut at a paragraph (or sentence) end and ends with a marker such as
        ``[… truncated: 19,874 of 61,234 characters]``. The whole extracted text is cached
        per paper, so another call (any ``max_chars``) asks arXiv nothing.

        Raises LiteratureUnavailable when arXiv stays down or the PDF has no readable text.
        """
        if max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {max_chars}")
        if not paper.base_id:
            raise ValueError(f"paper {paper.title!r} has no arXiv id to fetch its PDF by")
        path = self._text_cache_path(paper)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""  # a miss; a damaged file counts as one too
        if not text:
            text = pdf_to_text(self._download_pdf(paper), f"arXiv's PDF of {paper.arxiv_id}")
            atomic_write_text(path, text)
        return truncate_text(text, max_chars)

    # ---- cache -----------------------------------------------------------------------------

    def _text_cache_path(self, paper: Paper) -> Path:
        # By paper alone (not by URL), so a mirror or a test server shares one copy; old-style
        # ids ("hep-th/9901001") have a slash that must not become a folder.
        return self.text_cache_dir / (re.sub(r"[^A-Za-z0-9.-]", "_", paper.base_id) + ".txt")

    # ---- network ---------------------------------------------------------------------------

    def _fetch(self, query: str, max_results: int) -> list[Paper]:
        # The arXiv API's documented parameters (arxiv.org/help/api/user-manual); the feed is
        # read by the arxiv package's parser, the request is ours (timeout, gate, retries).
        url = (
            self.base_url
            + "?"
            + urlencode(
                {
                    "search_query": query,
                    "id_list": "",
                    "sortBy": "relevance",
                    "sortOrder": "descending",
                    "start": "0",
                    "max_results": str(max_results),
                }
            )
        )
        policy = self.policy

        def attempt() -> list[Paper]:
            response = session.get(url, headers={"Accept": "application/atom+xml"})
            policy.check(response)
            results = _parse_feed(response.content)
            problem = _feed_problem(response, results)
            if problem is None:
                return [_paper_from_result(r) for r in results]
            if problem.startswith("rejected"):  # the same query would fail again
                raise LiteratureUnavailable(
                    f"arXiv search failed: {problem}",
                    hint="rephrase the query (plain keywords work best); "
                    "the stage goes on without these results",
                )
            raise TryAgain(problem, response)

        with http_session(self.timeout_s) as session:
            return policy.run(attempt)

    def _download_pdf(self, paper: Paper) -> bytes:
        url = paper.pdf_url
        policy = replace(
            self.policy,
            what="PDF download",
            url=url,
            fallback="the stage goes on without the paper's full text",
            client_hint=f"check that arXiv has a PDF of {paper.arxiv_id} ({url}); "
            "the stage goes on without the paper's full text",
        )

        def attempt() -> tuple[bytes, str]:
            response = session.get(url, stream=True, headers={"Accept": "application/pdf"})
            with response:
                policy.check(response)
                return _read_body(response, url), response.headers.get("Content-Type", "")

        with http_session(self.timeout_s) as session:
            data, content_type = policy.run(attempt)
        if b"%PDF-" not in data[:1024]:  # the PDF header may follow a little junk
            raise LiteratureUnavailable(
                f"arXiv sent something that is not a PDF for {paper.arxiv_id} from {url} "
                f"({_describe_body(data, content_type)})",
                hint="arXiv may be throttling, or still building this PDF: try again later; "
                "the stage goes on without the paper's full text",
            )
        return data


def _parse_feed(content: bytes) -> list[arxiv.Result]:
    """The entries of an arXiv Atom feed, by the arxiv package's own parser (it turns what it
    cannot parse into no entries: ``_feed_problem`` tells the two apart)."""
    from arxiv import _feed  # noqa: PLC0415 -- arxiv and feedparser: only a search needs them

    _quiet_library_logger("arxiv")
    return list(_feed.parse(content).results)


def _quiet_library_logger(name: str) -> None:
    """Route a library's warnings to the application's logging only.

    Without any handler, Python's last-resort handler prints them to stderr, which would
    scribble over the TUI; our own Notices already tell the researcher what went wrong.
    """
    logger = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _feed_problem(response: requests.Response | None, results: list[Any]) -> str | None:
    """Why an HTTP 200 answer is not a usable search result, or None when it is.

    The arxiv client turns anything unparsable into "no results", so a throttling page
    ("Rate exceeded.") or a proxy's HTML would silently read, and be cached, as "nothing found".
    """
    if results or response is None:
        return None
    body = response.content[:4096].decode("utf-8", "replace")
    if "/api/errors" in body:  # arXiv's error feed for a malformed query
        summary = re.search(r"<summary>(.*?)</summary>", body, re.DOTALL)
        detail = " ".join(summary.group(1).split()) if summary else "malformed query"
        return f"rejected the query: {detail}"
    if "http://www.w3.org/2005/Atom" not in body:
        snippet = " ".join(body.split())[:80]
        return f"a response that is not an Atom feed ({snippet!r})"
    return None


def _paper_from_result(result: arxiv.Result) -> Paper:
    arxiv_id = result.get_short_id()
    return Paper(
        arxiv_id=arxiv_id,
        title=" ".join(result.title.split()),
        authors=[" ".join(a.name.split()) for a in result.authors],
        year=result.published.year,
        abstract=" ".join(result.summary.split()),
        url=f"https://arxiv.org/abs/{arxiv_id}",
        primary_category=result.primary_category,
        pdf_url=result.pdf_url or "",
    )


def _read_body(response: requests.Response, url: str) -> bytes:
    """The whole body, refusing one larger than MAX_PDF_BYTES before it fills memory."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=1 << 16):
        size += len(chunk)
        if size > MAX_PDF_BYTES:
            raise LiteratureUnavailable(
                f"the PDF at {url} is larger than {MAX_PDF_BYTES // 2**20} MiB",
                hint="that is not a paper; the stage goes on without its full text",
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _describe_body(data: bytes, content_type: str) -> str:
    if not data:
        return "an empty body"
    snippet = " ".join(data[:200].decode("utf-8", "replace").split())[:80]
    return f"{content_type or 'no Content-Type'}: {snippet!r}"
