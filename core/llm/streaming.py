"""Streamed model replies under an inactivity watchdog.

A small model on a CPU server reads a 2k-token prompt for minutes before its first token, then
writes ten tokens a second: a total request timeout cuts off answers that are still coming. So
every call streams, and :func:`consume_stream` limits *inactivity* instead: the time until the
first token (``[llm] first_token_s``: prompt processing) and, after it, the longest gap between
chunks (``[llm] idle_s``). A reply that keeps producing tokens is never cut off, however long.

A request given up on keeps a single-slot local server busy until it notices: core/llm/server_idle.py
makes the next request to that server wait until it is idle.

The iteration runs in a daemon thread feeding a queue, so the caller can wait on the queue with
the current limit; the HTTP client's own read timeout (``Limits.http_timeout_s``, a gap timeout
with streaming) is only a backstop that ends that thread. Nothing here imports litellm.

The researcher may interrupt a call (Escape in the TUI): the pipeline runs its stages inside
:func:`interruptible`, and setting that :class:`Interrupt` wakes the waiting caller at once,
closes the stream as a timeout does, and raises :class:`Interrupted` (in labtui's own calls and
in aider's, which stream through here too).
"""

from __future__ import annotations

import contextvars
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

# The HTTP client's read timeout is the larger inactivity limit plus this margin: the watchdog
# always fires first, and the backstop still ends a reader thread stuck on a dead connection.
HTTP_TIMEOUT_MARGIN_S = 30.0


def speed_words(prompt_tps: float, output_tps: float, joiner: str = " · ") -> str:
    """'in 31 tok/s · out 9.8 tok/s' (the parts that were measured; '' when none was)."""
    parts = [
        f"{side} {rate:.0f} tok/s" if rate >= 10 else f"{side} {rate:.1f} tok/s"
        for side, rate in (("in", prompt_tps), ("out", output_tps))
        if rate > 0
    ]
    return joiner.join(parts)


class _Settings(Protocol):
    first_token_s: float
    idle_s: float


@dataclass(frozen=True)
class Limits:
    """Inactivity limits of one call, in seconds; 0 means no limit."""

    first_token_s: float
    idle_s: float

    @classmethod
    def of(cls, settings: _Settings) -> Limits:
        """The limits of an ``[llm]`` section (config.LLMSection)."""
        return cls(float(settings.first_token_s), float(settings.idle_s))

    @property
    def http_timeout_s(self) -> float | None:
        """The backstop for the HTTP client: per read while streaming, so a gap timeout."""
        if self.first_token_s <= 0 or self.idle_s <= 0:
            return None
        return max(self.first_token_s, self.idle_s) + HTTP_TIMEOUT_MARGIN_S


class InactivityTimeout(TimeoutError):
    """The model went quiet for longer than a limit allows; the request was given up.

    A TimeoutError, so retry logic treats it as transient. ``reason`` says which limit was hit,
    ``hint`` which ``[llm]`` setting (``setting``) allows more time.
    """

    def __init__(self, reason: str, hint: str, *, setting: str, limit_s: float) -> None:
        super().__init__(f"{reason} ({hint})")
        self.reason = reason
        self.hint = hint
        self.setting = setting
        self.limit_s = limit_s


class Interrupted(BaseException):
    """The researcher interrupted the work (Escape). A BaseException, like KeyboardInterrupt
    but not one (aider swallows those): no ``except Exception`` in a stage, in aider or in a
    retry loop takes it for a failure to report and go on from, so it reaches the pipeline,
    which opens a checkpoint for it."""


class Interrupt:
    """A researcher's interrupt for the work of one pipeline thread: a flag that wakes every
    call waiting on a stream now, and an ``event`` a running process polls (its stop)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._wakers: list[Callable[[], None]] = []

    def set(self) -> None:
        with self._lock:
            self.event.set()
            wakers = list(self._wakers)
        for wake in wakers:
            wake()

    def clear(self) -> None:
        self.event.clear()

    def is_set(self) -> bool:
        return self.event.is_set()

    @contextmanager
    def waking(self, wake: Callable[[], None]) -> Iterator[None]:
        """Call ``wake`` when the interrupt is set while the block runs (at once if it is)."""
        with self._lock:
            self._wakers.append(wake)
            already = self.event.is_set()
        try:
            if already:
                wake()
            yield
        finally:
            with self._lock:
                self._wakers.remove(wake)


_interrupt: contextvars.ContextVar[Interrupt | None] = contextvars.ContextVar(
    "labtui_interrupt", default=None
)


@contextmanager
def interruptible(interrupt: Interrupt) -> Iterator[None]:
    """Streams read in this thread (and its context) while the block runs stop when
    ``interrupt`` is set. Threads of their own (parallel ideas) are not touched: they end when
    the pipeline thread's work ends."""
    token = _interrupt.set(interrupt)
    try:
        yield
    finally:
        _interrupt.reset(token)


@dataclass
class StreamResult:
    """A whole streamed reply: its text, the usage the server sent (or None), every chunk (to
    rebuild a non-streamed response from), and its timing in seconds from the request."""

    text: str
    usage: Any = None
    chunks: list[Any] = field(default_factory=list)
    first_token_s: float = 0.0  # until the first token arrived (prompt processing)
    seconds: float = 0.0  # the whole call


def consume_stream(
    open_stream: Callable[[], Iterable[Any]],
    limits: Limits,
    on_text: Callable[[str], None] | None = None,
    *,
    what: str = "the model",
) -> StreamResult:
    """Open a streamed completion and read it to the end under the inactivity limits.

    ``open_stream`` sends the request (e.g. ``litellm.completion(..., stream=True)``) and runs in
    the reader thread too, because some servers (llama.cpp) send the response headers only with
    the first token. ``on_text`` gets each piece of content, on the caller's thread. Raises
    InactivityTimeout (after closing the connection, so a server that watches it stops
    generating) or whatever the request or the stream raised.
    """
    _track_connections()
    interrupt = _interrupt.get()
    if interrupt is not None and interrupt.is_set():
        raise Interrupted(f"{what}: interrupted before the request was sent")
    reader = _Reader(open_stream)
    started = time.monotonic()
    reader.start()
    result = StreamResult(text="")
    parts: list[str] = []
    first_at: float | None = None
    deadline = _deadline(started, limits.first_token_s)
    try:
        with _woken_by(interrupt, reader):
            while True:
                kind, item = _next_item(reader, deadline, first_at is None, limits, what)
                if kind == _END:
                    break
                if kind == _ERROR:
                    raise item
                if kind == _INTERRUPTED:
                    raise Interrupted(f"{what}: interrupted by the researcher")
                now = time.monotonic()
                result.chunks.append(item)
                result.usage = getattr(item, "usage", None) or result.usage
                if first_at is None and _carries_token(item):
                    first_at = now
                piece = _content_of(item)
                if piece:
                    parts.append(piece)
                    if on_text is not None:
                        on_text(piece)
                if first_at is not None:
                    deadline = _deadline(now, limits.idle_s)
    except BaseException:
        reader.cancel()
        raise
    ended = time.monotonic()
    result.text = "".join(parts)
    result.first_token_s = (first_at or ended) - started
    result.seconds = ended - started
    return result


_CHUNK, _ERROR, _END, _INTERRUPTED = "chunk", "error", "end", "interrupted"


@contextmanager
def _woken_by(interrupt: Interrupt | None, reader: _Reader) -> Iterator[None]:
    """While reading: an interrupt puts its mark in the reader's queue, which wakes the wait."""
    if interrupt is None:
        yield
        return
    with interrupt.waking(lambda: reader.items.put((_INTERRUPTED, None))):
        yield


def _deadline(now: float, limit_s: float) -> float | None:
    return now + limit_s if limit_s > 0 else None


def _next_item(
    reader: _Reader, deadline: float | None, waiting_for_first: bool, limits: Limits, what: str
) -> tuple[str, Any]:
    """The reader's next item, or InactivityTimeout once ``deadline`` passes without one."""
    timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
    try:
        return reader.items.get(timeout=timeout)
    except queue.Empty:
        pass
    if waiting_for_first:
        raise InactivityTimeout(
            f"{what} timed out: no first token within {limits.first_token_s:g} s",
            "raise [llm] first_token_s in labtui.toml if the server is slow but working: "
            "reading a long prompt on a CPU server takes minutes",
            setting="first_token_s",
            limit_s=limits.first_token_s,
        )
    raise InactivityTimeout(
        f"{what} timed out: no token for {limits.idle_s:g} s after the reply began",
        "raise [llm] idle_s in labtui.toml if the server is slow but working",
        setting="idle_s",
        limit_s=limits.idle_s,
    )


def _carries_token(chunk: Any) -> bool:
    """Whether a chunk holds generated output: text, reasoning, or a tool call (a role-only
    opening chunk does not: some servers send it before reading the prompt)."""
    delta = _delta_of(chunk)
    if delta is None:
        return False
    return any(
        getattr(delta, name, None)
        for name in ("content", "reasoning_content", "tool_calls", "function_call")
    )


def _delta_of(chunk: Any) -> Any:
    choices = getattr(chunk, "choices", None) or []
    return getattr(choices[0], "delta", None) if choices else None


def _content_of(chunk: Any) -> str:
    delta = _delta_of(chunk)
    piece = getattr(delta, "content", None) if delta is not None else None
    return piece if isinstance(piece, str) else ""


class _Reader(threading.Thread):
    """Sends the request and iterates the stream, putting each chunk on ``items``; ends with
    (_END, None) or (_ERROR, exception). After cancel() it closes the stream and puts nothing."""

    def __init__(self, open_stream: Callable[[], Iterable[Any]]) -> None:
        super().__init__(daemon=True, name="labtui-stream-reader")
        self._open_stream = open_stream
        self.items: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._connections: list[Any] = []  # httpcore network streams this request went out on

    def run(self) -> None:
        _reader_local.connections = self._connections
        try:
            stream = self._open_stream()
            with self._lock:
                self._stream = stream
            if self._cancelled.is_set():  # given up while the request was being sent
                close_stream(stream)
                return
            for chunk in stream:
                if self._cancelled.is_set():
                    close_stream(stream)
                    return
                self.items.put((_CHUNK, chunk))
        except BaseException as exc:  # handed to the caller's thread, which raises it
            if not self._cancelled.is_set():
                self.items.put((_ERROR, exc))
            return
        self.items.put((_END, None))

    def cancel(self) -> None:
        """Stop reading and close the connection (the reader may be blocked in a read)."""
        self._cancelled.set()
        with self._lock:
            stream = self._stream
        for connection in list(self._connections):  # also before any response came
            _shutdown_socket_of(connection)
        if stream is not None:
            close_stream(stream)


# The connections each reader thread's request went out on (see _track_connections).
_reader_local = threading.local()
_tracking_lock = threading.Lock()
_tracking_installed = False


def _track_connections() -> None:
    """Let a reader find its request's connection before any response exists.

    llama.cpp's server sends the response headers only with the first token, so while it reads a
    long prompt there is no response to close, and closing the connection is exactly what makes
    it cancel that work. So httpcore's HTTP/1.1 connection notes itself, in reader threads only,
    as it sends a request. Best effort: should httpcore change, only this early close is lost
    (the reader still closes the response once it comes).
    """
    global _tracking_installed
    with _tracking_lock:
        if _tracking_installed:
            return
        _tracking_installed = True
        try:
            # httpcore comes with litellm, which is imported when a model is first called
            from httpcore._sync.http11 import HTTP11Connection  # noqa: PLC0415
        except ImportError:  # pragma: no cover - httpcore ships with httpx
            return
        original = HTTP11Connection.handle_request

        def handle_request(self: Any, request: Any) -> Any:
            connections = getattr(_reader_local, "connections", None)
            network_stream = getattr(self, "_network_stream", None)
            if connections is not None and network_stream is not None:
                connections.append(network_stream)
            return original(self, request)

        HTTP11Connection.handle_request = handle_request  # type: ignore[method-assign]


# Where litellm and the OpenAI client keep the HTTP response of a stream:
# CustomStreamWrapper.completion_stream -> openai.Stream.response -> httpx.Response.
_STREAM_ATTRIBUTES = ("completion_stream", "response", "_response", "streaming_response")


def close_stream(stream: Any) -> None:
    """Close a streamed response as far as can be reached, never raising.

    The socket is shut down first: closing it alone would not wake a thread blocked reading it,
    and the server would not see the client leave. A server that watches its connection (llama.cpp
    while generating, llama-cpp-python, vLLM) then stops working on the request.
    """
    for obj in _reachable(stream):
        _shutdown_socket(obj)
    for obj in _reachable(stream):
        close = getattr(obj, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # best effort: the connection may be gone already
                pass


def _reachable(stream: Any, depth: int = 3) -> list[Any]:
    """``stream`` and the objects behind it along the known attribute names."""
    found, frontier = [stream], [stream]
    for _ in range(depth):
        following: list[Any] = []
        for obj in frontier:
            for name in _STREAM_ATTRIBUTES:
                inner = getattr(obj, name, None)
                known = any(inner is seen for seen in found + following)
                if inner is not None and not callable(inner) and not known:
                    following.append(inner)
        found += following
        frontier = following
    return found


def _shutdown_socket(response: Any) -> None:
    extensions = getattr(response, "extensions", None)
    if isinstance(extensions, dict) and "network_stream" in extensions:
        _shutdown_socket_of(extensions["network_stream"])


def _shutdown_socket_of(network_stream: Any) -> None:
    """Shut down the socket under an httpcore network stream: the server sees the client leave,
    and a thread blocked reading it wakes up."""
    try:
        sock = network_stream.get_extra_info("socket")
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # already closed, or not a plain socket
        pass
