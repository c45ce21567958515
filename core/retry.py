"""One retry policy for everything labtui asks of a server: LLM calls, aider's model calls,
arXiv and Semantic Scholar.

tenacity does the looping. This module decides the rest, the same way for every caller:

- how long to wait: exponential backoff from a base, with jitter (so parallel ideas that failed
  together do not retry together), never shorter than the server's Retry-After, capped;
- whether to retry: the caller's classifier, given the error and how many attempts failed;
- what the researcher sees: the caller's ``on_retry`` hook runs before each wait (callers emit a
  Notice there, in their own words), and ``before_attempt`` runs before every attempt (the
  literature services wait for their turn at the rate gate there).

After the last attempt, or on an error the classifier does not retry, the error itself is raised
(tenacity's ``reraise``): callers turn it into the error that says what to do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

T = TypeVar("T")

MAX_WAIT_S = 60.0  # also caps a server's Retry-After: one retry never stalls a stage for long


@dataclass(frozen=True)
class RetryPolicy:
    """How one caller retries: ``attempts`` in all (at least one), waits from ``base_s``."""

    attempts: int
    base_s: float
    # Retry after this error, the ``n``-th failed attempt (1-based)? Unlisted errors propagate.
    retry_if: Callable[[BaseException, int], bool]
    # Seconds the server asked us to wait (Retry-After), when it said.
    retry_after: Callable[[BaseException], float | None] = lambda _exc: None
    # Told of each retry before its wait: (error, seconds to wait, next attempt, attempts).
    on_retry: Callable[[BaseException, float, int, int], None] | None = None
    before_attempt: Callable[[], None] | None = None
    jitter: float = 0.5  # a wait is stretched by up to this share, at random
    max_wait_s: float = MAX_WAIT_S
    sleep: Callable[[float], None] = lambda seconds: time.sleep(seconds)  # patchable in tests

    def call(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` until it returns; its last error is raised when retrying is over."""
        retrying = Retrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            retry=_RetryIf(self),
            wait=self.wait_s,
            before=self._before,
            before_sleep=self._tell,
            sleep=self.sleep,
            reraise=True,
        )
        return retrying(attempt)

    def wait_s(self, state: RetryCallState) -> float:
        """Seconds before the next attempt: exponential with jitter, at least Retry-After."""
        failed = state.attempt_number  # attempts so far, all failed
        delay = self.base_s * 2 ** (failed - 1) * (1.0 + self.jitter * random.random())
        error = _error_of(state)
        asked = self.retry_after(error) if error is not None else None
        if asked is not None:
            delay = max(delay, asked)
        return max(0.0, min(delay, self.max_wait_s))

    def _before(self, _state: RetryCallState) -> None:
        if self.before_attempt is not None:
            self.before_attempt()

    def _tell(self, state: RetryCallState) -> None:
        error = _error_of(state)
        if self.on_retry is None or error is None:
            return
        wait = state.upcoming_sleep
        self.on_retry(error, wait, state.attempt_number + 1, max(1, self.attempts))


class _RetryIf(retry_if_exception):
    """tenacity's exception predicate, told which attempt failed (the classifier may care)."""

    def __init__(self, policy: RetryPolicy) -> None:
        super().__init__(lambda _exc: True)
        self._policy = policy

    def __call__(self, state: RetryCallState) -> bool:
        error = _error_of(state)
        return error is not None and self._policy.retry_if(error, state.attempt_number)


def _error_of(state: RetryCallState) -> BaseException | None:
    outcome = state.outcome
    if outcome is None or not outcome.failed:
        return None
    return outcome.exception()


def retry_after_from_headers(headers: Mapping[str, str] | None) -> float | None:
    """The seconds a server's Retry-After header asks for (capped at MAX_WAIT_S), or None when
    it sent none. The HTTP-date form is rare for APIs: it falls back to our own backoff."""
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        value = headers.get("Retry-After")
    try:
        return min(MAX_WAIT_S, max(0.0, float(value))) if value is not None else None
    except (TypeError, ValueError):
        return None
