"""No new request to a local server still busy with one labtui gave up on: a timed-out request is
noted (:func:`note_abandoned`), and the next request to that server first waits until the server
says it is idle (llama.cpp's ``/slots``, else a short cooldown; :func:`wait_for_abandoned`), for
labtui's calls and aider's alike.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from .streaming import Limits

# How often wait_for_abandoned asks the server whether it is idle (tests shrink it).
IDLE_POLL_S = 1.0
# A single probe of /slots or /health may take this long (a busy llama.cpp still answers them).
PROBE_TIMEOUT_S = 5.0
# A server that cannot say whether it is busy (llama-cpp-python, vLLM) gets this long after the
# abandoned request before the next one is sent: llama-cpp-python stops generating once it sees
# the closed connection, which is at its next token at the latest.
COOLDOWN_S = 30.0


_abandoned_lock = threading.Lock()
_abandoned: dict[str, float] = {}  # server root -> when a request to it was given up (monotonic)


def server_root(api_base: str) -> str:
    """The server's root URL, where llama.cpp serves /slots and /health: the API base without
    its OpenAI ``/v1`` suffix."""
    root = api_base.strip().rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def abandons_request(exc: BaseException) -> bool:
    """Whether a failed call left its request running on the server: it timed out (ours, the
    HTTP client's or litellm's), rather than being refused."""
    if isinstance(exc, TimeoutError):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"Timeout", "APITimeoutError", "TimeoutException"})


def note_abandoned(api_base: str) -> None:
    """Remember that a request to this (local) server was given up while it may still run."""
    if api_base:
        with _abandoned_lock:
            _abandoned[server_root(api_base)] = time.monotonic()


def wait_for_abandoned(
    api_base: str, limits: Limits, notice: Callable[[str], None], api_key: str | None = None
) -> None:
    """Before a request to ``api_base``: if an earlier one was given up, wait until the server is
    idle again, until at most the longer of the two limits has passed since it was given up (as
    long as that request could still rightly take to show life: its prompt, or its next token).

    The server says so where it can: llama.cpp's ``GET /slots`` (a slot with ``is_processing``
    false), or its ``GET /health`` answering 503 while no slot is free (some versions). A server
    that tells neither (llama-cpp-python) gets a bounded cooldown (COOLDOWN_S) after the
    abandoned request. A server that does not answer at all is not waited for: the request will
    say that it is down.
    """
    if not api_base:
        return
    root = server_root(api_base)
    with _abandoned_lock:
        since = _abandoned.get(root)
    if since is None:
        return
    limit_s = max(limits.first_token_s, limits.idle_s)
    if limits.first_token_s <= 0 or limits.idle_s <= 0:  # no limit: still never wait forever
        limit_s = max(limit_s, COOLDOWN_S)
    deadline = since + limit_s
    if time.monotonic() < deadline:
        notice(
            f"waiting for the server at {root} to finish the request labtui gave up on "
            f"(at most {deadline - time.monotonic():.0f} s), so that the next one does not "
            "queue behind it"
        )
        if not _wait_until_idle(root, since, deadline, api_key):
            notice(f"the server at {root} still seems busy after {limit_s:g} s; sending anyway")
    with _abandoned_lock:
        if _abandoned.get(root) == since:
            del _abandoned[root]


def _wait_until_idle(root: str, since: float, deadline: float, api_key: str | None) -> bool:
    """Poll until the server is idle (True) or the deadline passes (False)."""
    saw_busy = False
    while True:
        state = _server_state(root, api_key, saw_busy)
        if state in ("idle", "down"):
            return True
        if state == "unknown":
            time.sleep(max(0.0, min(since + COOLDOWN_S, deadline) - time.monotonic()))
            return True
        saw_busy = True
        if time.monotonic() >= deadline:
            return False
        time.sleep(max(0.0, min(IDLE_POLL_S, deadline - time.monotonic())))


def _server_state(root: str, api_key: str | None, saw_busy: bool) -> str:
    """'idle', 'busy', 'unknown' (the server cannot tell) or 'down' (it does not answer)."""
    import httpx  # noqa: PLC0415 -- ~250 ms to import; only a local server's probe needs it

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers) as client:
            slots = client.get(f"{root}/slots")
            busy = _slots_busy(slots)
            if busy is not None:
                return "busy" if busy else "idle"
            health = client.get(f"{root}/health")
    except httpx.TimeoutException:
        return "busy"  # too busy to answer even that
    except httpx.TransportError:
        return "down"
    if health.status_code == 503:
        return "busy"
    # A 200 from /health means "idle" only after it said 503: newer llama.cpp always says 200.
    return "idle" if saw_busy and health.status_code == 200 else "unknown"


def _slots_busy(response: Any) -> bool | None:
    """From llama.cpp's /slots: True when every slot is processing, None when not that answer."""
    if response.status_code != 200:
        return None
    try:
        slots = response.json()
    except ValueError:
        return None
    if not isinstance(slots, list) or not slots or not all(isinstance(s, dict) for s in slots):
        return None
    processing = [_slot_processing(slot) for slot in slots]
    if any(state is None for state in processing):
        return None
    return all(processing)


def _slot_processing(slot: dict[str, Any]) -> bool | None:
    if isinstance(slot.get("is_processing"), bool):
        return slot["is_processing"]
    if isinstance(slot.get("state"), int):  # older llama.cpp: 0 idle, 1 processing
        return slot["state"] != 0
    return None
