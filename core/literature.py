"""Literature on arXiv: search and full text, cached on disk, rate limited, with BibTeX.

Every search is cached per project (``<cache_dir>/arxiv/<sha256>.json``), so a resumed or
replayed run asks arXiv nothing it already asked; only real answers are cached (an empty result
list is a real answer, a failure is not). ``Literature.full_text`` downloads a paper's PDF and
caches the extracted text, never the PDF (``<cache_dir>/arxiv_pdf/<base id>.txt``).

arXiv's terms ask for at least three seconds between calls, which a module-level gate enforces
across every ``Literature`` in the process, for searches and PDFs alike. ``RetryPolicy`` is the
one retry loop (the gate, capped backoff or the server's Retry-After, a Notice per retry, errors
with a fix) for every request here and in ``core/semantic_scholar.py``; each service has its own
turn at the gate.

The ``arxiv`` package, ``requests`` and ``pymupdf`` are imported inside the functions that need
them, so importing this module stays cheap for the TUI and for stages that never search.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import LabtuiError
from .events import Event, Notice
from .pdf import UnreadablePdf, open_pdf, text_flags

if TYPE_CHECKING:
    import arxiv
    import requests

ARXIV_API_URL = "https://export.arxiv.org/api/query"
CACHE_FORMAT = 1
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = 60.0  # also caps a server's Retry-After, so one search never stalls a stage long
MAX_PDF_BYTES = 64 * 1024 * 1024  # arXiv's largest PDFs are ~50 MB; more is not a paper
# A References heading earlier than this share of the text is a table of contents, not the end.
REFERENCES_MIN_SHARE = 0.3

Emit = Callable[[Event], None]
T = TypeVar("T")


class LiteratureUnavailable(LabtuiError):
    """A literature service could not answer (down, rate limiting, unreachable, a rejected query,
    or a PDF without readable text).

    Callers degrade with a warning (e.g. a novelty check without literature) instead of failing.
    """


# --------------------------------------------------------------------------------------------
# Paper
# --------------------------------------------------------------------------------------------

# Words a title key skips, as Google Scholar's keys do ("On the ..." -> the next word).
_TITLE_STOPWORDS = frozenset(
    {
        "a", "an", "the", "on", "of", "for", "in", "to", "and", "or", "with", "via", "from",
        "by", "at", "as", "is", "are", "do", "does", "can", "towards", "toward", "how", "what",
        "why", "when", "where", "which", "we", "our", "into", "using",
    }
)  # fmt: skip
_NAME_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})
# Letters that Unicode does not decompose into base + accent.
_ASCII_FOLD = str.maketrans(
    {
        "ß": "ss",
        "ø": "o",
        "Ø": "O",
        "ł": "l",
        "Ł": "L",
        "æ": "ae",
        "Æ": "AE",
        "đ": "d",
        "Đ": "D",
        "œ": "oe",
        "Œ": "OE",
        "ı": "i",
    }
)


def base_id(arxiv_id: str) -> str:
    """An arXiv id without its version or prefix: "arXiv:1412.6980v9" -> "1412.6980"."""
    return re.sub(r"v\d+$", "", str(arxiv_id).strip().removeprefix("arXiv:"))


@dataclass(frozen=True)
class Paper:
    """One arXiv paper as the stages need it: enough to prompt with and to cite."""

    arxiv_id: str  # as arXiv returns it, with its version: "1412.6980v9"
    title: str
    authors: list[str]
    year: int  # of the first version, which is how arXiv papers are cited
    abstract: str
    url: str
    primary_category: str
    pdf_url: str = ""  # as arXiv links it; older caches lack it, so it is derived from the id

    def __post_init__(self) -> None:
        if not self.pdf_url:
            object.__setattr__(self, "pdf_url", f"https://arxiv.org/pdf/{self.arxiv_id}")

    @property
    def base_id(self) -> str:
        """The versionless id ("1412.6980"): what a citation should point at."""
        return base_id(self.arxiv_id)

    def bibtex_key(self) -> str:
        """A Google-Scholar-style key, e.g. ``kingma2014adam``: surname, year, first real word."""
        surname = _surname_slug(self.authors[0]) if self.authors else ""
        return f"{surname or 'anon'}{self.year}{_first_title_word(self.title)}"

    def bibtex(self) -> str:
        """A ``@misc`` entry (how arXiv itself exports preprints), LaTeX-escaped."""
        fields_ = [
            # Double braces keep capitals ("Adam", "MLP") that bibliography styles would lower.
            ("title", "{" + _tex_escape(self.title) + "}"),
            ("author", " and ".join(_tex_escape(name) for name in self.authors) or "Anonymous"),
            ("year", str(self.year)),
            ("eprint", self.base_id),
            ("archivePrefix", "arXiv"),
            ("primaryClass", self.primary_category),
            ("url", f"https://arxiv.org/abs/{self.base_id}"),
        ]
        body = "\n".join(f"  {name:<13} = {{{value}}}," for name, value in fields_ if value)
        return f"@misc{{{self.bibtex_key()},\n{body}\n}}\n"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Paper:
        """Rebuild from ``to_dict``; unknown keys are ignored so older caches keep loading."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["authors"] = list(kwargs.get("authors") or [])
        kwargs["year"] = int(kwargs.get("year") or 0)
        return cls(**kwargs)


def _ascii_slug(text: str) -> str:
    """Lowercase ASCII letters and digits only: what BibTeX keys tolerate everywhere."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_ASCII_FOLD))
    return re.sub(r"[^a-z0-9]", "", decomposed.encode("ascii", "ignore").decode().lower())


def _surname_slug(name: str) -> str:
    if "," in name:  # "Kingma, Diederik P."
        return _ascii_slug(name.split(",", 1)[0])
    tokens = [t for t in name.split() if t.lower() not in _NAME_SUFFIXES]
    return _ascii_slug(tokens[-1]) if tokens else ""


def _first_title_word(title: str) -> str:
    without_math = re.sub(r"\$[^$]*\$", " ", title)
    for word in re.split(r"[\s\-:/,.;!?()\[\]{}]+", without_math):
        slug = _ascii_slug(word)
        if slug and slug not in _TITLE_STOPWORDS:
            return slug
    return "paper"


# ---- LaTeX escaping for BibTeX fields -------------------------------------------------------

_TEX_SPECIALS = {
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
# Combining accents -> LaTeX accent commands, so accented names survive any bibliography style
# (BibTeX sorts and abbreviates bytes, and does not understand UTF-8).
_ACCENTS = {
    "\u0301": "'",
    "\u0300": "`",
    "\u0308": '"',
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0307": ".",
    "\u0327": "c",
    "\u030c": "v",
    "\u030a": "r",
    "\u0306": "u",
    "\u030b": "H",
    "\u0328": "k",
}
_SPECIAL_LETTERS = {
    "ß": r"{\ss}",
    "ø": r"{\o}",
    "Ø": r"{\O}",
    "ł": r"{\l}",
    "Ł": r"{\L}",
    "æ": r"{\ae}",
    "Æ": r"{\AE}",
    "œ": r"{\oe}",
    "Œ": r"{\OE}",
    "å": r"{\aa}",
    "Å": r"{\AA}",
}


def _tex_escape(text: str) -> str:
    """Escape text for a BibTeX field while keeping the ``$...$`` math arXiv metadata carries.

    arXiv titles are TeX-ish ("L$_2$ regularization"), so balanced math and commands pass
    through; characters that would break a compile outside math (& % # _ ~ ^) are escaped, and
    unbalanced ``$`` or braces are escaped too rather than trusted.
    """
    text = " ".join(text.split())
    escape_braces = not _braces_balanced(text)
    math_ok = text.count("$") % 2 == 0 and not escape_braces
    pieces = re.split(r"(\$[^$]*\$)", text) if math_ok else [text]
    out = []
    for piece in pieces:
        if math_ok and len(piece) >= 2 and piece.startswith("$") and piece.endswith("$"):
            out.append(piece)
        else:
            out.append(_escape_text_piece(piece, escape_braces))
    return "".join(out)


def _escape_text_piece(piece: str, escape_braces: bool) -> str:
    specials = dict(_TEX_SPECIALS, **{"$": r"\$"})
    if escape_braces:
        specials.update({"{": r"\{", "}": r"\}"})
    out = []
    for ch in unicodedata.normalize("NFC", piece):
        if ch in specials:
            out.append(specials[ch])
        elif ch in _SPECIAL_LETTERS:
            out.append(_SPECIAL_LETTERS[ch])
        elif ord(ch) > 127:
            out.append(_accent_to_tex(ch))
        else:
            out.append(ch)
    # What the source had already escaped ("\&") must not come out escaped twice ("\\&").
    return re.sub(r"\\\\([&%#_${}])", r"\\\1", "".join(out))


def _accent_to_tex(ch: str) -> str:
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if len(marks) != 1 or marks not in _ACCENTS or not base.isascii():
        return ch  # other characters are left to LaTeX's UTF-8 input encoding
    command = _ACCENTS[marks]
    if command.isalpha():
        return "{\\" + command + "{" + base + "}}"
    return "{\\" + command + base + "}"


def _braces_balanced(text: str) -> bool:
    depth = 0
    for match in re.finditer(r"(?<!\\)[{}]", text):
        depth += 1 if match.group() == "{" else -1
        if depth < 0:
            return False
    return depth == 0


# --------------------------------------------------------------------------------------------
# Rate limit (process-wide, one turn per service)
# --------------------------------------------------------------------------------------------

_rate_lock = threading.Lock()  # guards the two dicts below, never held while sleeping
_service_locks: dict[str, threading.Lock] = {}
_last_request_at: dict[str, float] = {}  # service -> time.monotonic() of its last request


def _wait_turn(delay_s: float, service: str = "arXiv") -> None:
    """Sleep just long enough that requests to ``service`` are ``delay_s`` apart, process-wide.

    The service's lock is held while sleeping on purpose: concurrent requests queue up behind
    it. Services have separate turns, so a Semantic Scholar search never waits on arXiv's 3 s.
    """
    with _rate_lock:
        lock = _service_locks.setdefault(service, threading.Lock())
    with lock:
        last = _last_request_at.get(service)
        if last is not None:
            wait = last + delay_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        _last_request_at[service] = time.monotonic()


# --------------------------------------------------------------------------------------------
# Retries (shared with core/semantic_scholar.py)
# --------------------------------------------------------------------------------------------


class TryAgain(Exception):
    """Raised by one attempt when waiting may help; ``RetryPolicy.run`` backs off and asks again.

    ``reason`` ("HTTP 503") goes into the Notice and, when no attempt is left, the error;
    ``response`` may carry a Retry-After.
    """

    def __init__(self, reason: str, response: requests.Response | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.response = response


@dataclass(frozen=True)
class RetryPolicy:
    """How one service is asked: its turn at the rate gate, retries with capped exponential
    backoff (or the server's Retry-After), a Notice per retry, and errors that say what to do.
    """

    service: str  # "arXiv": names the service in Notices and errors, and keys the rate gate
    what: str  # "search", "PDF download": what failed, in errors
    url: str  # where the request goes, in errors
    delay_s: float
    retries: int = 3
    backoff_s: float = 5.0
    emit: Emit | None = None
    stage: str = ""
    fallback: str = "the stage goes on without literature"  # what callers do, for hints
    client_hint: str = "check [literature] settings (the API URL) in labtui.toml"

    def run(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` until it returns, retrying on TryAgain and on connection trouble.

        Raises LiteratureUnavailable when the service stays down, is unreachable or refuses.
        """
        import requests

        attempts = self.retries + 1
        for n in range(1, attempts + 1):
            _wait_turn(self.delay_s, self.service)
            try:
                return attempt()
            except TryAgain as err:
                if n == attempts:
                    raise self._exhausted(err.reason, n) from err
                self._back_off(n, err.reason, err.response)
            except (
                requests.ConnectionError,
                requests.Timeout,
                requests.exceptions.ChunkedEncodingError,
            ) as err:
                # Unreachable is rarely fixed by waiting: retry once, then let the caller go on.
                if n >= min(attempts, 2):
                    raise self._unreachable(err) from err
                self._back_off(n, "no connection", None)
            except requests.RequestException as err:  # a malformed URL, a redirect loop, ...
                raise LiteratureUnavailable(
                    f"{self.service} {self.what} failed: {type(err).__name__}: {err}",
                    hint=self.client_hint,
                ) from err
        raise AssertionError("unreachable: the retry loop returns or raises")

    def check(self, response: requests.Response) -> None:
        """Raise for an answer that is not a success (see ``status_error``)."""
        if not 200 <= response.status_code < 300:
            raise self.status_error(response.status_code, response)

    def status_error(self, status: int, response: requests.Response | None) -> Exception:
        """TryAgain for a status that waiting may fix (429, 5xx), else the error to raise."""
        if status in RETRYABLE_STATUSES:
            return TryAgain(f"HTTP {status}", response)
        detail = _error_detail(response)
        return LiteratureUnavailable(
            f"{self.service} {self.what} failed: HTTP {status} from {self.url}"
            + (f" ({detail})" if detail else ""),
            hint=self.client_hint,
        )

    def _back_off(self, attempt: int, reason: str, response: requests.Response | None) -> None:
        wait = min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 1))
        wait = max(wait, _retry_after_s(response))
        self._notice(
            f"{self.service} answered a {self.what} with {reason}; retrying in {wait:.3g} s "
            f"(attempt {attempt + 1} of {self.retries + 1})"
        )
        time.sleep(wait)

    def _exhausted(self, reason: str, attempts: int) -> LiteratureUnavailable:
        return LiteratureUnavailable(
            f"{self.service} {self.what} failed: {reason} after {attempts} attempt(s) at "
            f"{self.url}",
            hint=f"{self.service} is down or rate limiting; {self.fallback}. "
            "Try again in a few minutes (cached answers are not asked again).",
        )

    def _unreachable(self, err: Exception) -> LiteratureUnavailable:
        return LiteratureUnavailable(
            f"cannot reach {self.service} at {self.url} ({type(err).__name__})",
            hint=f"check the network (or a proxy) from this machine; {self.fallback}",
        )

    def _notice(self, text: str) -> None:
        if self.emit is not None:
            self.emit(Notice(stage=self.stage, text=text))


def http_session(timeout_s: float) -> requests.Session:
    """A requests session that applies a timeout and keeps the last response for diagnosis."""
    import requests

    class _Session(requests.Session):
        last_response: requests.Response | None = None

        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", timeout_s)
            response = super().request(method, url, *args, **kwargs)
            self.last_response = response
            return response

    return _Session()


def _retry_after_s(response: requests.Response | None) -> float:
    """Seconds a 429/503 asked us to wait (Retry-After), capped; 0 when it did not say."""
    if response is None:
        return 0.0
    value = response.headers.get("Retry-After", "")
    try:
        return min(MAX_BACKOFF_S, max(0.0, float(value)))
    except ValueError:
        return 0.0  # the HTTP-date form is rare for APIs; fall back to our own backoff


def _error_detail(response: requests.Response | None) -> str:
    """A short reason from an error answer's body: a JSON API's message, else its first words."""
    if response is None:
        return ""
    try:
        body = response.content[:2048].decode("utf-8", "replace")
    except OSError:  # a streamed body that broke off (requests' errors are OSErrors)
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        message = data.get("error") or data.get("message")
        if isinstance(message, str):
            body = message
    if body.lstrip().startswith("<"):
        return ""  # an error page's or feed's markup says nothing the status does not
    return _truncate(body, 120)


# --------------------------------------------------------------------------------------------
# Cache files (shared with core/semantic_scholar.py)
# --------------------------------------------------------------------------------------------


class Cacheable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


C = TypeVar("C", bound=Cacheable)


def cached_papers(
    folder: Path,
    about: dict[str, Any],
    fetch: Callable[[], list[C]],
    build: Callable[[dict[str, Any]], C],
) -> list[C]:
    """Papers of the search that ``about`` describes (base_url, query, ...): from its cache
    file, else from ``fetch()``, then cached. A damaged file is a miss; a failure raises and
    is never cached. ``build`` turns a cached dict back into a paper.
    """
    key = json.dumps(list(about.values()), ensure_ascii=False)
    path = folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") == CACHE_FORMAT:
            return [build(p) for p in data["papers"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    papers = fetch()
    data = {
        "format": CACHE_FORMAT,
        **about,
        "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "papers": [p.to_dict() for p in papers],
    }
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1))
    return papers


def atomic_write_text(path: Path, text: str) -> None:
    """Write atomically, so a run killed mid-write never leaves a half file to trip on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------
# Literature
# --------------------------------------------------------------------------------------------


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
        self.policy = RetryPolicy(
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
            text = _pdf_to_text(self._download_pdf(paper), f"arXiv's PDF of {paper.arxiv_id}")
            atomic_write_text(path, text)
        return _truncate_text(text, max_chars)

    # ---- cache -----------------------------------------------------------------------------

    def _text_cache_path(self, paper: Paper) -> Path:
        # By paper alone (not by URL), so a mirror or a test server shares one copy; old-style
        # ids ("hep-th/9901001") have a slash that must not become a folder.
        return self.text_cache_dir / (re.sub(r"[^A-Za-z0-9.-]", "_", paper.base_id) + ".txt")

    # ---- network ---------------------------------------------------------------------------

    def _fetch(self, query: str, max_results: int) -> list[Paper]:
        import arxiv

        _quiet_library_logger("arxiv")
        # Retries and delays are ours, not the client's: the client retries at once with no
        # backoff, and its delay is per client while arXiv's limit is per caller.
        client = arxiv.Client(page_size=max_results, delay_seconds=0.0, num_retries=0)
        client.query_url_format = self.base_url + "?{}"
        session = http_session(self.timeout_s)
        client._session = session  # the client sets no timeout; a stalled server would hang us
        search = arxiv.Search(
            query=query, max_results=max_results, sort_by=arxiv.SortCriterion.Relevance
        )
        policy = self.policy

        def attempt() -> list[Paper]:
            try:
                results = list(client.results(search))
            except arxiv.HTTPError as err:
                raise policy.status_error(err.status, session.last_response) from err
            except arxiv.UnexpectedEmptyPageError as err:  # arXiv's own flakiness; retry
                raise TryAgain("an unexpectedly empty page") from err
            problem = _feed_problem(session.last_response, results)
            if problem is None:
                return [_paper_from_result(r) for r in results]
            if problem.startswith("rejected"):  # the same query would fail again
                raise LiteratureUnavailable(
                    f"arXiv search failed: {problem}",
                    hint="rephrase the query (plain keywords work best); "
                    "the stage goes on without these results",
                )
            raise TryAgain(problem, session.last_response)

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


# --------------------------------------------------------------------------------------------
# PDF text
# --------------------------------------------------------------------------------------------

_REFERENCES_HEADING = re.compile(
    r"(?:(?:\d{1,2}|[IVX]{1,4})\.?\s+)?"
    r"(?:references(?:\s+and\s+notes)?|bibliography|literature\s+cited|works\s+cited)[.:]?",
    re.IGNORECASE,
)
_ARXIV_STAMP = re.compile(r"arXiv:\S+\s+\[[^\]]+\]\s+\d{1,2}\s+\w{3}\s+\d{4}")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LINE_END_HYPHEN = re.compile(r"([^\W\d_]+)-\n([^\W\d_]+)")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s)")


def _pdf_to_text(data: bytes, label: str = "the PDF") -> str:
    """The readable text of a PDF: paragraphs, de-hyphenated, up to a References heading.

    Running headers, page numbers and arXiv's side stamp are left out. Raises
    LiteratureUnavailable saying why when there is no text: damaged, encrypted, no pages, or
    only images (a scan). ``label`` names the PDF in those errors.
    """
    hint = "the stage goes on without the paper's full text"
    try:
        with open_pdf(data) as doc:
            if doc.page_count == 0:
                raise LiteratureUnavailable(f"{label} has no pages", hint)
            flags = text_flags("blocks")
            pages = [
                [block[4] for block in page.get_text("blocks", flags=flags) if block[6] == 0]
                for page in doc
            ]
            text = _tidy_pages(pages)
            scanned = not text and any(page.get_images() for page in doc)
    except UnreadablePdf as problem:
        if problem.reason == "encrypted":
            raise LiteratureUnavailable(
                f"{label} is encrypted (it needs a password)", hint
            ) from None
        raise LiteratureUnavailable(
            f"{label} is damaged and cannot be read ({problem.detail})", hint
        ) from problem
    except RuntimeError as err:
        raise LiteratureUnavailable(f"{label} is damaged ({err})", hint) from err
    if scanned:
        raise LiteratureUnavailable(
            f"{label} has only images (a scan without a text layer): no text to read", hint
        )
    if not text:
        raise LiteratureUnavailable(f"{label} has no extractable text (its pages are empty)", hint)
    return _cut_references(text)


def _tidy_pages(pages: list[list[str]]) -> str:
    """Text blocks of each page (as PDF extraction gives them) to paragraphs split by blank lines.

    Lines of a block are joined, and so are blocks that a column or page break split; words
    hyphenated across a line end are mended (a hyphen the document writes elsewhere, as in
    "warm-up", is kept), and a References heading becomes a paragraph of its own even when the
    PDF glued it to the first reference.
    """
    running = _running_lines(pages)
    paragraphs: list[str] = []
    for blocks in pages:
        for block in blocks:
            lines = [" ".join(line.split()) for line in block.replace("\u00ad\n", "").splitlines()]
            lines = [line.replace("\u00ad", "") for line in lines if line]
            if len(lines) == 1 and _is_page_furniture(lines[0], running):
                continue
            current: list[str] = []
            for line in lines:
                if _is_references_heading(line):
                    paragraphs += ["\n".join(current), line] if current else [line]
                    current = []
                else:
                    current.append(line)
            if current:
                paragraphs.append("\n".join(current))
    # A paragraph that a column or page break split goes on in lowercase: join it again.
    joined: list[str] = []
    for paragraph in paragraphs:
        if joined and paragraph[:1].islower() and not joined[-1].endswith((".", "!", "?", ":")):
            joined[-1] += "\n" + paragraph
        else:
            joined.append(paragraph)
    raw = "\n\n".join(joined)
    vocabulary = {word.lower() for word in _WORD.findall(raw)}

    def mend(match: re.Match[str]) -> str:
        head, tail = match.groups()
        compound = match.start() > 0 and raw[match.start() - 1] == "-"  # "state-of-\nthe-art"
        if (
            compound
            or tail[0].isupper()
            or (
                f"{head}-{tail}".lower() in vocabulary and f"{head}{tail}".lower() not in vocabulary
            )
        ):
            return f"{head}-{tail}"
        return head + tail

    mended = _LINE_END_HYPHEN.sub(mend, raw)
    return "\n\n".join(p for p in (" ".join(p.split()) for p in mended.split("\n\n")) if p)


def _running_lines(pages: list[list[str]]) -> set[str]:
    """One-line blocks repeated on most pages: running headers and footers (digits masked)."""
    if len(pages) < 3:
        return set()
    seen: dict[str, int] = {}
    for blocks in pages:
        keys = {_furniture_key(b) for b in blocks if b.strip() and "\n" not in b.strip()}
        for key in keys:
            seen[key] = seen.get(key, 0) + 1
    return {key for key, count in seen.items() if count > len(pages) / 2 and len(key) < 120}


def _furniture_key(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.split()))


def _is_page_furniture(line: str, running: set[str]) -> bool:
    return (
        line.isdigit()  # a page number
        or _ARXIV_STAMP.fullmatch(line) is not None
        or _furniture_key(line) in running
    )


def _is_references_heading(line: str) -> bool:
    # A capital (or a section number) first: a wrapped sentence can leave "references" alone.
    first = line[:1]
    return (first.isupper() or first.isdigit()) and _REFERENCES_HEADING.fullmatch(line) is not None


def _cut_references(text: str) -> str:
    """The text before its References heading, unless that comes in the first 30% (a contents
    list, or a paper that is mostly bibliography): then all of it."""
    floor = len(text) * REFERENCES_MIN_SHARE
    offset = 0
    for paragraph in text.split("\n\n"):
        if offset >= floor and _is_references_heading(paragraph):
            return text[:offset].rstrip()
        offset += len(paragraph) + 2
    return text


def _truncate_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its start cut at a paragraph end (or a sentence
    end, or a space) that keeps at least half, followed by a marker saying how much was kept.
    """
    if len(text) <= max_chars:
        return text
    window = text[:max_chars]
    floor = max_chars // 2
    cut = window.rfind("\n\n")
    if cut < floor:
        cut = max((m.end() for m in _SENTENCE_END.finditer(window)), default=-1)
    if cut < floor:
        cut = window.rfind(" ")
    if cut < floor:
        cut = max_chars
    kept = text[:cut].rstrip()
    return f"{kept}\n\n[… truncated: {len(kept):,} of {len(text):,} characters]"


# --------------------------------------------------------------------------------------------
# Prompt formatting
# --------------------------------------------------------------------------------------------

MAX_AUTHORS_SHOWN = 8


def format_papers(papers: list[Paper], abstract_chars: int = 600) -> str:
    """A numbered list for LLM prompts; the numbers are what the model selects by."""
    if not papers:
        return "No papers found."
    return "\n\n".join(_format_paper(i, p, abstract_chars) for i, p in enumerate(papers))


def _format_paper(index: int, paper: Paper, abstract_chars: int) -> str:
    authors = ", ".join(paper.authors[:MAX_AUTHORS_SHOWN]) or "Unknown authors"
    if len(paper.authors) > MAX_AUTHORS_SHOWN:
        authors += ", et al"
    head = f"{index}: {paper.title}. {authors}. {paper.year}. arXiv:{paper.arxiv_id}"
    return f"{head}\n   Abstract: {_truncate(paper.abstract, abstract_chars)}"


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(",;:") + " ..."
