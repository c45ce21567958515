"""Literature search on arXiv: cached on disk, rate limited, with BibTeX for the citations stage.

Every search is cached per project (``<cache_dir>/arxiv/<sha256>.json``), so a resumed or
replayed run asks arXiv nothing it already asked; only real answers are cached (an empty result
list is a real answer, a failure is not). arXiv's terms ask for at least three seconds between
calls, which a module-level gate enforces across every ``Literature`` in the process.

The ``arxiv`` package (and ``requests`` under it) is imported inside the functions that need it,
so importing this module stays cheap for the TUI and for stages that never search.
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
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LabtuiError
from .events import Event, Notice

if TYPE_CHECKING:
    import arxiv
    import requests

ARXIV_API_URL = "https://export.arxiv.org/api/query"
CACHE_FORMAT = 1
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = 60.0  # also caps a server's Retry-After, so one search never stalls a stage long

Emit = Callable[[Event], None]


class LiteratureUnavailable(LabtuiError):
    """arXiv could not answer (down, rate limiting, unreachable, or a rejected query).

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

    @property
    def base_id(self) -> str:
        """The versionless id ("1412.6980"): what a citation should point at."""
        return re.sub(r"v\d+$", "", self.arxiv_id)

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
# Rate limit (process-wide)
# --------------------------------------------------------------------------------------------

_rate_lock = threading.Lock()
_last_request_at: float | None = None  # time.monotonic() of the last request sent to arXiv


def _wait_turn(delay_s: float) -> None:
    """Sleep just long enough that requests are ``delay_s`` apart, across all instances.

    The lock is held while sleeping on purpose: concurrent searches queue up behind it.
    """
    global _last_request_at
    with _rate_lock:
        if _last_request_at is not None:
            wait = _last_request_at + delay_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        _last_request_at = time.monotonic()


# --------------------------------------------------------------------------------------------
# Literature
# --------------------------------------------------------------------------------------------


class Literature:
    """arXiv search for one project, with its cache under ``cache_dir``."""

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
        self.base_url = base_url
        self.delay_s = delay_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._emit = emit
        self._stage = stage

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
        path = self._cache_path(query, max_results)
        cached = _read_cache(path)
        if cached is not None:
            return cached
        papers = self._fetch(query, max_results)
        _write_cache(path, self.base_url, query, max_results, papers)
        return papers

    # ---- cache -----------------------------------------------------------------------------

    def _cache_path(self, query: str, max_results: int) -> Path:
        key = json.dumps([self.base_url, query, max_results], ensure_ascii=False)
        return self.cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()}.json"

    # ---- network ---------------------------------------------------------------------------

    def _fetch(self, query: str, max_results: int) -> list[Paper]:
        import arxiv
        import requests

        _quiet_library_logger("arxiv")
        # Retries and delays are ours, not the client's: the client retries at once with no
        # backoff, and its delay is per client while arXiv's limit is per caller.
        client = arxiv.Client(page_size=max_results, delay_seconds=0.0, num_retries=0)
        client.query_url_format = self.base_url + "?{}"
        session = _recording_session(self.timeout_s)
        client._session = session  # the client sets no timeout; a stalled server would hang us
        search = arxiv.Search(
            query=query, max_results=max_results, sort_by=arxiv.SortCriterion.Relevance
        )
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            _wait_turn(self.delay_s)
            try:
                results = list(client.results(search))
            except arxiv.HTTPError as err:
                if err.status not in RETRYABLE_STATUSES or attempt == attempts:
                    raise self._http_failure(err.status, attempt) from err
                self._back_off(attempt, f"HTTP {err.status}", session.last_response)
            except (requests.ConnectionError, requests.Timeout) as err:
                # Unreachable is rarely fixed by waiting: retry once, then let the caller go on.
                if attempt >= min(attempts, 2):
                    raise self._unreachable(err) from err
                self._back_off(attempt, "no connection", None)
            except arxiv.UnexpectedEmptyPageError as err:  # arXiv's own flakiness; retry
                if attempt == attempts:
                    raise self._http_failure(200, attempt) from err
                self._back_off(attempt, "an unexpectedly empty page", None)
            else:
                problem = _feed_problem(session.last_response, results)
                if problem is None:
                    return [_paper_from_result(r) for r in results]
                if problem.startswith("rejected") or attempt == attempts:
                    raise LiteratureUnavailable(
                        f"arXiv search failed: {problem}",
                        hint="rephrase the query (plain keywords work best); "
                        "the stage goes on without these results",
                    )
                self._back_off(attempt, problem, session.last_response)
        raise AssertionError("unreachable: the retry loop returns or raises")

    def _back_off(self, attempt: int, reason: str, response: requests.Response | None) -> None:
        wait = min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempt - 1))
        wait = max(wait, _retry_after_s(response))
        self._notice(
            f"arXiv answered with {reason}; retrying in {wait:.3g} s "
            f"(attempt {attempt + 1} of {self.retries + 1})"
        )
        time.sleep(wait)

    def _http_failure(self, status: int, attempts: int) -> LiteratureUnavailable:
        if status in RETRYABLE_STATUSES:
            return LiteratureUnavailable(
                f"arXiv search failed: HTTP {status} after {attempts} attempt(s) at "
                f"{self.base_url}",
                hint="arXiv is down or rate limiting; the stage goes on without literature. "
                "Try again in a few minutes (cached searches are not asked again).",
            )
        return LiteratureUnavailable(
            f"arXiv search failed: HTTP {status} from {self.base_url}",
            hint="check [literature] settings (the API URL) in labtui.toml",
        )

    def _unreachable(self, err: Exception) -> LiteratureUnavailable:
        reason = type(err).__name__
        return LiteratureUnavailable(
            f"cannot reach arXiv at {self.base_url} ({reason})",
            hint="check the network (or a proxy) from this machine; "
            "the stage goes on without literature",
        )

    def _notice(self, text: str) -> None:
        if self._emit is not None:
            self._emit(Notice(stage=self._stage, text=text))


def _quiet_library_logger(name: str) -> None:
    """Route a library's warnings to the application's logging only.

    Without any handler, Python's last-resort handler prints them to stderr, which would
    scribble over the TUI; our own Notices already tell the researcher what went wrong.
    """
    logger = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _recording_session(timeout_s: float) -> requests.Session:
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
    )


def _read_cache(path: Path) -> list[Paper] | None:
    """The cached papers, or None on a miss; a damaged file is a miss, not an error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != CACHE_FORMAT:
            return None
        return [Paper.from_dict(p) for p in data["papers"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write_cache(
    path: Path, base_url: str, query: str, max_results: int, papers: list[Paper]
) -> None:
    """Write atomically, so a run killed mid-write never leaves a half file to trip on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": CACHE_FORMAT,
        "base_url": base_url,
        "query": query,
        "max_results": max_results,
        "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "papers": [p.to_dict() for p in papers],
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
