"""FakeArxiv: a loopback arXiv API and PDF server for tests (a test double, not arXiv).

It answers ``GET /api/query?search_query=...&start=..&max_results=..`` on 127.0.0.1 with the
hand-recorded Atom feeds in ``tests/recorded/`` (see the README there), chosen by a keyword in
the query, so the real ``arxiv`` client and ``core.literature.arxiv`` run end to end without network.
The feeds' PDF links (``http(s)://arxiv.org/pdf/<id>``) are rewritten to point at this server,
whose ``GET /pdf/<id>`` serves a small real PDF rendered at start from
``tests/recorded/arxiv_paper.txt`` (or what ``pdfs`` maps the id to), so product code needs no
test hook. It can inject faults (``fail_next``, searches and PDFs alike) and records every
request it receives (``hits``).

    with FakeArxiv() as server:
        lit = Literature(tmp_path, base_url=server.url, delay_s=0)
        server.fail_next(status=503, times=2)
        lit.search("adam optimizer")
        assert len(server.hits) == 3

``LoopbackServer`` (lifecycle, faults, hit recording) is shared with ``fake_s2.FakeS2``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qs, urlsplit

RECORDED_DIR = Path(__file__).resolve().parents[1] / "recorded"

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
SAMPLE_PAPER = "arxiv_paper.txt"
PAGE_BREAK = "---- page ----"  # separates pages in SAMPLE_PAPER; blank lines separate paragraphs
RUNNING_HEADER = "Warm-up Matters (a fixture paper for labtui tests)"
_ENTRY = re.compile(r"  <entry>.*?</entry>\n", re.DOTALL)
_PDF_LINK = re.compile(r"https?://arxiv\.org/pdf/")


# --------------------------------------------------------------------------------------------
# A loopback server with faults and hit recording
# --------------------------------------------------------------------------------------------


@dataclass
class Reply:
    """One HTTP answer of a loopback server."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Fault:
    status: int
    remaining: int
    body: str
    retry_after: float | None


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (a free port); subclasses answer in ``respond``.

    ``routes`` map a keyword (a case-insensitive substring of what is asked) to a file in
    ``recorded_dir``; the first match wins (``route``).
    """

    name = "loopback"

    def __init__(self, routes: tuple[tuple[str, str], ...], recorded_dir: Path) -> None:
        self.routes = routes
        self.recorded_dir = recorded_dir
        self.hits: list[str] = []  # what each request asked for, failed ones included
        self.params: list[dict[str, str]] = []  # all query parameters of each request
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
            target=self._server.serve_forever, args=(0.05,), name=self.name, daemon=True
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
            raise RuntimeError(f"{type(self).__name__} is not started")
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- faults -------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 503,
        times: int = 1,
        *,
        body: str = "Service Unavailable",
        retry_after: float | None = None,
    ) -> None:
        """Answer the next ``times`` requests with ``status`` and a plain-text ``body``."""
        with self._lock:
            self._faults.append(_Fault(status, times, body, retry_after))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def fault_reply(self) -> Reply | None:
        """The injected fault that answers this request, if one is pending."""
        with self._lock:
            while self._faults and self._faults[0].remaining <= 0:
                self._faults.pop(0)
            if not self._faults:
                return None
            fault = self._faults[0]
            fault.remaining -= 1
        headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        return Reply(fault.status, fault.body.encode("utf-8"), headers=headers)

    def record(self, hit: str, params: dict[str, str]) -> None:
        with self._lock:
            self.hits.append(hit)
            self.params.append(params)

    def route(self, asked: str) -> str | None:
        """The recorded file name that answers ``asked``, or None when no keyword matches."""
        lowered = asked.lower()
        return next((name for keyword, name in self.routes if keyword in lowered), None)

    # ---- answers ------------------------------------------------------------------------

    def respond(self, path: str, params: dict[str, str], headers: Mapping[str, str]) -> Reply:
        """The answer to ``GET path?params``; 404 unless a subclass knows the path."""
        return Reply(404, b"not found")


def _handler_for(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            reply = server.respond(parts.path, params, self.headers)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean

    return Handler


# --------------------------------------------------------------------------------------------
# FakeArxiv
# --------------------------------------------------------------------------------------------


class FakeArxiv(LoopbackServer):
    """Imitates arXiv's query API (``/api/query``) and its PDFs (``/pdf/<id>``).

    ``hits`` holds the search_query of each search and the path (``/pdf/<id>``) of each PDF
    request.
    """

    name = "fake-arxiv"

    def __init__(
        self,
        *,
        routes: tuple[tuple[str, str], ...] = DEFAULT_ROUTES,
        default: str = DEFAULT_FEED,
        recorded_dir: Path = RECORDED_DIR,
    ) -> None:
        super().__init__(routes, recorded_dir)
        self.default = default
        # base id -> PDF bytes served for it; any other id gets the sample paper.
        self.pdfs: dict[str, bytes] = {}
        self._sample_pdf: bytes | None = None

    def start(self) -> Self:
        if self._sample_pdf is None:
            self._sample_pdf = render_pdf(sample_pages(self.recorded_dir / SAMPLE_PAPER))
        return super().start()

    @property
    def url(self) -> str:
        return f"{self.origin}/api/query"

    def respond(self, path: str, params: dict[str, str], headers: Mapping[str, str]) -> Reply:
        if path == "/api/query":
            self.record(params.get("search_query", ""), params)
            return self.fault_reply() or Reply(
                200, self.render(params).encode("utf-8"), "application/atom+xml; charset=utf-8"
            )
        if path.startswith("/pdf/"):
            self.record(path, params)
            base_id = re.sub(r"v\d+$", "", path.removeprefix("/pdf/"))
            pdf = self.pdfs.get(base_id, self._sample_pdf or b"")
            return self.fault_reply() or Reply(200, pdf, "application/pdf")
        return super().respond(path, params, headers)

    def feed_for(self, search_query: str) -> str:
        """The recorded file name that answers ``search_query``."""
        return self.route(search_query) or self.default

    def render(self, params: dict[str, str]) -> str:
        """The recorded feed for these parameters, paged by start/max_results like arXiv."""
        text = (self.recorded_dir / self.feed_for(params.get("search_query", ""))).read_text(
            encoding="utf-8"
        )
        text = _PDF_LINK.sub(f"{self.origin}/pdf/", text)
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


# --------------------------------------------------------------------------------------------
# PDFs
# --------------------------------------------------------------------------------------------


def sample_pages(path: Path = RECORDED_DIR / SAMPLE_PAPER) -> list[list[str]]:
    """The recorded sample paper as pages of paragraphs (lines kept as written)."""
    text = path.read_text(encoding="utf-8")
    return [
        [p.strip("\n") for p in page.split("\n\n") if p.strip()] for page in text.split(PAGE_BREAK)
    ]


def render_pdf(pages: list[list[str]], *, header: str = RUNNING_HEADER) -> bytes:
    """A real PDF: each page has a running header, its paragraphs and a page number.

    Each paragraph is one text box, so PDF text extraction sees it as one block; its line
    breaks are kept, as a typeset paper's are.
    """
    import pymupdf

    doc = pymupdf.open()
    for number, paragraphs in enumerate(pages, start=1):
        page = doc.new_page()  # A4-ish letter size, 612 x 792 pt
        page.insert_text((72, 40), header, fontsize=8)
        page.insert_text((300, 770), str(number), fontsize=9)
        y = 72.0
        for paragraph in paragraphs:
            box = pymupdf.Rect(72, y, 560, 740)
            left = page.insert_textbox(box, paragraph, fontsize=10, fontname="helv")
            if left < 0:
                raise ValueError(f"page {number} of the sample paper overflows; add a page break")
            y = box.y1 - left + 12
    try:
        return doc.tobytes()
    finally:
        doc.close()
