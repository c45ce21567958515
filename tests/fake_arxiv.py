"""FakeArxiv: a loopback arXiv API server for tests (a test double, not arXiv).

It answers ``GET /api/query?search_query=...&start=..&max_results=..`` on 127.0.0.1 with the
hand-recorded Atom feeds in ``tests/recorded/`` (see the README there), chosen by a keyword in
the query, so the real ``arxiv`` client and ``core.literature`` run end to end without network.
It can inject faults (``fail_next``) and records every request it receives (``hits``).

    with FakeArxiv() as server:
        lit = Literature(tmp_path, base_url=server.url, delay_s=0)
        server.fail_next(status=503, times=2)
        lit.search("adam optimizer")
        assert len(server.hits) == 3
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qs, urlsplit

RECORDED_DIR = Path(__file__).parent / "recorded"

# keyword (case-insensitive substring of search_query) -> recorded feed; first match wins.
DEFAULT_ROUTES: tuple[tuple[str, str], ...] = (
    ("batch norm", "arxiv_normalization.xml"),
    ("normaliz", "arxiv_normalization.xml"),
    ("covariate shift", "arxiv_normalization.xml"),
    ("mixup", "arxiv_regularization.xml"),
    ("augment", "arxiv_regularization.xml"),
    ("regulari", "arxiv_regularization.xml"),
    ("generaliz", "arxiv_regularization.xml"),
    ("memoriz", "arxiv_regularization.xml"),
    ("adam", "arxiv_optimizers.xml"),
    ("optimi", "arxiv_optimizers.xml"),
    ("weight decay", "arxiv_optimizers.xml"),
    ("learning rate", "arxiv_optimizers.xml"),
    ("sgd", "arxiv_optimizers.xml"),
    ("mlp", "arxiv_mlp.xml"),
    ("moons", "arxiv_mlp.xml"),
    ("neural network", "arxiv_mlp.xml"),
    ("classif", "arxiv_mlp.xml"),
    ("deep learning", "arxiv_mlp.xml"),
)
DEFAULT_FEED = "arxiv_empty.xml"
_ENTRY = re.compile(r"  <entry>.*?</entry>\n", re.DOTALL)


@dataclass
class _Fault:
    status: int
    remaining: int
    body: str
    retry_after: float | None


class FakeArxiv:
    """A threaded HTTP server on 127.0.0.1 (a free port) that imitates arXiv's query API."""

    def __init__(
        self,
        *,
        routes: tuple[tuple[str, str], ...] = DEFAULT_ROUTES,
        default: str = DEFAULT_FEED,
        recorded_dir: Path = RECORDED_DIR,
    ) -> None:
        self.routes = routes
        self.default = default
        self.recorded_dir = recorded_dir
        self.hits: list[str] = []  # search_query of every request, failed ones included
        self.params: list[dict[str, str]] = []  # all query parameters of every request
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-arxiv", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeArxiv is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/query"

    # ---- faults -------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 503,
        times: int = 1,
        *,
        body: str = "Service Unavailable",
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``times`` requests with ``status`` and a plain-text ``body``.

        ``status=200`` with a non-Atom body imitates arXiv's throttling page ("Rate exceeded.").
        """
        with self._lock:
            self._faults.append(_Fault(status, times, body, retry_after))

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            while self._faults and self._faults[0].remaining <= 0:
                self._faults.pop(0)
            if not self._faults:
                return None
            self._faults[0].remaining -= 1
            return self._faults[0]

    # ---- answers ------------------------------------------------------------------------

    def _record(self, params: dict[str, str]) -> None:
        with self._lock:
            self.hits.append(params.get("search_query", ""))
            self.params.append(params)

    def feed_for(self, search_query: str) -> str:
        """The recorded file name that answers ``search_query``."""
        lowered = search_query.lower()
        for keyword, name in self.routes:
            if keyword in lowered:
                return name
        return self.default

    def render(self, params: dict[str, str]) -> str:
        """The recorded feed for these parameters, paged by start/max_results like arXiv."""
        text = (self.recorded_dir / self.feed_for(params.get("search_query", ""))).read_text(
            encoding="utf-8"
        )
        entries = _ENTRY.findall(text)
        start = _int(params.get("start"), 0)
        size = _int(params.get("max_results"), 10)
        head, _, _ = text.partition("  <entry>") if entries else (text.partition("</feed>"))
        head = _set_opensearch(head, "itemsPerPage", size)
        head = _set_opensearch(head, "startIndex", start)
        head = _set_opensearch(head, "totalResults", len(entries))
        return head + "".join(entries[start : start + size]) + "</feed>\n"


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _set_opensearch(head: str, field: str, value: int) -> str:
    return re.sub(
        rf"(<opensearch:{field}[^>]*>)\d+(</opensearch:{field}>)", rf"\g<1>{value}\2", head
    )


def _handler_for(fake: FakeArxiv) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            if parts.path != "/api/query":
                self._send(404, "text/plain", "not found")
                return
            fake._record(params)
            fault = fake._take_fault()
            if fault is not None:
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = f"{fault.retry_after:g}"
                self._send(fault.status, "text/plain", fault.body, headers)
                return
            self._send(200, "application/atom+xml; charset=utf-8", fake.render(params))

        def _send(
            self, status: int, content_type: str, body: str, headers: dict[str, str] | None = None
        ) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean

    return Handler
