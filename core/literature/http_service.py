"""Asking a literature service over HTTP (arXiv, Semantic Scholar): a process-wide rate gate
with one turn per service, a session with a timeout, and ``ServicePolicy``: which answers are
worth another try, the shared retry policy (``core.retry``: backoff with jitter or the server's
Retry-After, a Notice per retry), and errors that say what to do. ``requests`` is imported only
when a request is made.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import LabtuiError
from ..events import Event, Notice
from ..retry import MAX_WAIT_S, RetryPolicy, retry_after_from_headers
from .record import shorten

if TYPE_CHECKING:
    import requests

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = MAX_WAIT_S  # also caps a server's Retry-After: one search never stalls a stage

Emit = Callable[[Event], None]
T = TypeVar("T")


class LiteratureUnavailable(LabtuiError):
    """A literature service could not answer (down, rate limiting, unreachable, a rejected query,
    or a PDF without readable text).

    Callers degrade with a warning (e.g. a novelty check without literature) instead of failing.
    """


# -- rate gate (process-wide, one turn per service) ------------------------------------------

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


# -- retries ---------------------------------------------------------------------------------


class TryAgain(Exception):
    """Raised by one attempt when waiting may help; ``ServicePolicy.run`` backs off and asks
    again. ``reason`` ("HTTP 503") goes into the Notice and, when no attempt is left, the error;
    ``response`` may carry a Retry-After.
    """

    def __init__(self, reason: str, response: requests.Response | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.response = response


class _Unreachable(Exception):
    """No connection: retried once, then the caller goes on without the service."""


@dataclass(frozen=True)
class ServicePolicy:
    """How one service is asked: its turn at the rate gate, retries on the shared policy, and
    errors that say what to do."""

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
        import requests  # noqa: PLC0415 -- ~200 ms to import: only a search needs it

        connection_errors = (
            requests.ConnectionError,
            requests.Timeout,
            requests.exceptions.ChunkedEncodingError,
        )

        def once() -> T:
            try:
                return attempt()
            except connection_errors as err:
                raise _Unreachable(type(err).__name__) from err
            except requests.RequestException as err:  # a malformed URL, a redirect loop, ...
                raise LiteratureUnavailable(
                    f"{self.service} {self.what} failed: {type(err).__name__}: {err}",
                    hint=self.client_hint,
                ) from err

        policy = RetryPolicy(
            attempts=self.retries + 1,
            base_s=self.backoff_s,
            # Unreachable is rarely fixed by waiting: retried once, then the caller goes on.
            retry_if=lambda err, failed: (
                isinstance(err, TryAgain) or (isinstance(err, _Unreachable) and failed < 2)
            ),
            retry_after=_retry_after_of,
            on_retry=self._tell_retry,
            before_attempt=lambda: _wait_turn(self.delay_s, self.service),
            max_wait_s=MAX_BACKOFF_S,
            sleep=lambda seconds: time.sleep(seconds),
        )
        try:
            return policy.call(once)
        except TryAgain as err:
            raise self._exhausted(err.reason, self.retries + 1) from err
        except _Unreachable as err:
            raise self._unreachable(str(err)) from err.__cause__

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

    def _tell_retry(self, err: BaseException, wait_s: float, attempt: int, attempts: int) -> None:
        reason = err.reason if isinstance(err, TryAgain) else "no connection"
        self._notice(
            f"{self.service} answered a {self.what} with {reason}; retrying in {wait_s:.3g} s "
            f"(attempt {attempt} of {attempts})"
        )

    def _exhausted(self, reason: str, attempts: int) -> LiteratureUnavailable:
        return LiteratureUnavailable(
            f"{self.service} {self.what} failed: {reason} after {attempts} attempt(s) at "
            f"{self.url}",
            hint=f"{self.service} is down or rate limiting; {self.fallback}. "
            "Try again in a few minutes (cached answers are not asked again).",
        )

    def _unreachable(self, error_name: str) -> LiteratureUnavailable:
        return LiteratureUnavailable(
            f"cannot reach {self.service} at {self.url} ({error_name})",
            hint=f"check the network (or a proxy) from this machine; {self.fallback}",
        )

    def _notice(self, text: str) -> None:
        if self.emit is not None:
            self.emit(Notice(stage=self.stage, text=text))


def _retry_after_of(err: BaseException) -> float | None:
    response = err.response if isinstance(err, TryAgain) else None
    return retry_after_from_headers(response.headers) if response is not None else None


def http_session(timeout_s: float) -> requests.Session:
    """A requests session that applies a timeout and keeps the last response for diagnosis."""
    import requests  # noqa: PLC0415 -- ~200 ms to import: only a search needs it

    class _Session(requests.Session):
        last_response: requests.Response | None = None

        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", timeout_s)
            response = super().request(method, url, *args, **kwargs)
            self.last_response = response
            return response

    return _Session()


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
    return shorten(body, 120)
