"""FakeS2: a loopback Semantic Scholar search server for tests (a test double, not S2).

It answers ``GET /graph/v1/paper/search?query=..&limit=..&fields=..`` on 127.0.0.1 with the
hand-made JSON in ``tests/recorded/`` (see the README there), chosen by a keyword in the query,
so ``core.literature.semantic_scholar`` runs end to end without network. Like the real API it returns only
the requested fields (and paperId), refuses unknown fields (400), and pages by offset/limit.
It checks the ``x-api-key`` header (403 without the right key), can inject faults
(``fail_next``) and records every request (``hits``: the query; ``params``; ``keys``: the x-api-key header).

    with FakeS2() as server:
        s2 = SemanticScholar(tmp_path, server.api_key, base_url=server.url, delay_s=0)
        server.fail_next(status=429, retry_after=2)
        s2.search("adam optimizer")
        assert len(server.hits) == 2
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support.fake_arxiv import RECORDED_DIR, LoopbackServer, Reply

SEARCH_PATH = "/graph/v1/paper/search"
# keyword (case-insensitive substring of the query) -> recorded answer; first match wins.
DEFAULT_ROUTES: tuple[tuple[str, str], ...] = (
    ("adam", "s2_search_adam.json"),
    ("optimi", "s2_search_adam.json"),
    ("momentum", "s2_search_adam.json"),
)
# The paper fields the search endpoint accepts (a subset of the API's; enough for labtui).
KNOWN_FIELDS = frozenset(
    {
        "paperId", "corpusId", "url", "title", "abstract", "venue", "publicationVenue", "year",
        "referenceCount", "citationCount", "influentialCitationCount", "isOpenAccess",
        "openAccessPdf", "fieldsOfStudy", "publicationTypes", "publicationDate", "journal",
        "citationStyles", "authors", "externalIds", "tldr",
    }
)  # fmt: skip
JSON = "application/json"


class FakeS2(LoopbackServer):
    """A threaded HTTP server on 127.0.0.1 that imitates Semantic Scholar's paper search."""

    name = "fake-s2"

    def __init__(
        self,
        *,
        api_key: str = "test-s2-key",
        routes: tuple[tuple[str, str], ...] = DEFAULT_ROUTES,
        recorded_dir: Path = RECORDED_DIR,
    ) -> None:
        super().__init__(routes, recorded_dir)
        self.api_key = api_key
        self.keys: list[str | None] = []  # the x-api-key header of each request

    @property
    def url(self) -> str:
        """The Graph API base URL, as ``SemanticScholar(base_url=...)`` takes it."""
        return f"{self.origin}/graph/v1"

    def respond(self, path: str, params: dict[str, str], headers: Mapping[str, str]) -> Reply:
        if path != SEARCH_PATH:
            return _json(404, {"error": f"Not found: {path}"})
        self.record(params.get("query", ""), params)
        with self._lock:
            self.keys.append(headers.get("x-api-key"))
        if headers.get("x-api-key") != self.api_key:
            return _json(403, {"message": "Forbidden"})  # what S2's gateway says to a bad key
        fault = self.fault_reply()
        if fault is not None:
            return fault
        if not params.get("query"):
            return _json(400, {"error": "Missing required parameter: 'query'"})
        requested = [f for f in params.get("fields", "").split(",") if f]
        unknown = sorted(set(requested) - KNOWN_FIELDS)
        if unknown:
            return _json(400, {"error": f"Unrecognized or unsupported fields: {unknown}"})
        return _json(200, self.answer(params["query"], requested, params))

    def answer(self, query: str, requested: list[str], params: dict[str, str]) -> dict[str, Any]:
        """The recorded answer, paged by offset/limit and cut to the requested fields."""
        name = self.route(query)
        if name is None:
            return {"total": 0, "offset": 0}  # S2 leaves out "data" when nothing matches
        recorded = json.loads((self.recorded_dir / name).read_text(encoding="utf-8"))
        papers = recorded["data"]
        offset = int(params.get("offset") or 0)
        limit = int(params.get("limit") or 100)
        keep = {"paperId", *(requested or ["title"])}
        page = [{k: v for k, v in p.items() if k in keep} for p in papers[offset:][:limit]]
        data: dict[str, Any] = {"total": len(papers), "offset": offset, "data": page}
        if offset + limit < len(papers):
            data["next"] = offset + limit
        return data


def _json(status: int, body: dict[str, Any]) -> Reply:
    return Reply(status, json.dumps(body).encode("utf-8"), JSON)
