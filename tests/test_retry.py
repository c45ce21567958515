"""core.retry: the one retry policy every server labtui asks goes through."""

from __future__ import annotations

import pytest

from labtui.core.retry import MAX_WAIT_S, RetryPolicy, retry_after_from_headers


class Flaky:
    """Fails with the given errors, in order, then answers "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def policy(**changes) -> tuple[RetryPolicy, list[float], list[tuple]]:
    slept: list[float] = []
    told: list[tuple] = []
    settings = {
        "attempts": 4,
        "base_s": 1.0,
        "retry_if": lambda err, failed: isinstance(err, ConnectionError),
        "on_retry": lambda err, wait, attempt, attempts: told.append((str(err), attempt, attempts)),
        "sleep": slept.append,
        **changes,
    }
    return RetryPolicy(**settings), slept, told


def test_waits_grow_exponentially_within_the_jitter_and_each_retry_is_told():
    retrying, slept, told = policy()
    assert (
        retrying.call(Flaky(ConnectionError("a"), ConnectionError("b"), ConnectionError("c")))
        == "ok"
    )
    assert all(
        low <= s <= high for s, (low, high) in zip(slept, [(1, 1.5), (2, 3), (4, 6)], strict=True)
    )
    assert told == [("a", 2, 4), ("b", 3, 4), ("c", 4, 4)]


def test_the_servers_retry_after_wins_when_longer_and_is_capped():
    retrying, slept, _ = policy(retry_after=lambda err: 7.0)
    retrying.call(Flaky(ConnectionError()))
    assert slept == [7.0]
    retrying, slept, _ = policy(retry_after=lambda err: 10_000.0)
    retrying.call(Flaky(ConnectionError()))
    assert slept == [MAX_WAIT_S]


def test_the_last_error_is_raised_when_the_attempts_are_spent():
    retrying, slept, _ = policy(attempts=3)
    flaky = Flaky(*(ConnectionError(str(n)) for n in range(5)))
    with pytest.raises(ConnectionError, match="2"):
        retrying.call(flaky)
    assert flaky.calls == 3 and len(slept) == 2


def test_an_error_the_classifier_does_not_retry_is_raised_at_once():
    retrying, slept, told = policy()
    flaky = Flaky(ValueError("permanent"))
    with pytest.raises(ValueError, match="permanent"):
        retrying.call(flaky)
    assert flaky.calls == 1 and slept == [] and told == []


def test_the_classifier_sees_how_many_attempts_failed():
    seen: list[int] = []

    def once_only(err: BaseException, failed: int) -> bool:
        seen.append(failed)
        return failed < 2

    retrying, _, _ = policy(retry_if=once_only)
    with pytest.raises(ConnectionError):
        retrying.call(Flaky(ConnectionError(), ConnectionError(), ConnectionError()))
    assert seen == [1, 2]


def test_before_attempt_runs_before_every_attempt():
    turns: list[str] = []
    retrying, _, _ = policy(before_attempt=lambda: turns.append("turn"))
    retrying.call(Flaky(ConnectionError(), ConnectionError()))
    assert turns == ["turn"] * 3


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"Retry-After": "100000"}, MAX_WAIT_S),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_headers(headers, seconds):
    assert retry_after_from_headers(headers) == seconds
