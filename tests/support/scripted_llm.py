"""ScriptedLLMServer: a test double of an OpenAI-compatible chat server on 127.0.0.1.

Tests script, per model name, the exact replies the "model" gives, in order. The server speaks
enough of the OpenAI wire format (``POST /v1/chat/completions`` with and without streaming,
``GET /v1/models``) for litellm's ``openai/<name>`` provider to talk to it unchanged, so the code
under test runs its real HTTP path. It is a test double only: labtui never ships canned answers.

    with ScriptedLLMServer() as server:
        server.script("scripted-ideas", '{"ideas": []}', Fault(status=429), "ok")
        ...  # point a ModelSpec("openai/scripted-ideas", api_base=server.url) at it
        assert server.errors == []

``Slow(text, first_token_s=..., gap_s=...)`` streams a reply the way a local model on a CPU does
(a long wait for the first token, then a pause between tokens). The server records requests whose
client went away mid-answer (``abandoned``) and requests that arrived for a model while another
for it was still being answered (``overlaps``), and answers ``GET /slots`` as llama.cpp does
(one slot per request in flight, at least one), so tests can check that nothing is sent to a busy
server.

Model names are matched as the server receives them: litellm strips the ``openai/`` prefix, so
``openai/scripted-ideas`` arrives as ``scripted-ideas``. A request whose model has no scripted
reply left (and no default) is answered with HTTP 400 and recorded in ``errors``, so a test can
assert that the code made exactly the calls it expected.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["Fault", "Reply", "ScriptedLLMServer", "Slow"]

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")
SLOTS_PATHS = ("/slots", "/v1/slots")
STREAM_CHUNKS = 4  # a streamed reply is cut into about this many content deltas


@dataclass
class Fault:
    """A scripted misbehaviour: an HTTP error, a slow answer, or both in turn.

    ``status`` non-zero answers that HTTP error (OpenAI-style JSON error body) after ``delay_s``.
    With ``status == 0`` the server sleeps ``delay_s`` and then answers ``then`` (a Reply). Either
    way the Fault consumes one script item, so "timeout, then success" is ``Fault(delay_s=2,
    then="late"), "ok"``.
    """

    status: int = 0
    delay_s: float = 0.0
    then: Reply | None = None
    message: str = ""  # error message in the body; a sensible default per status when empty


@dataclass
class Slow:
    """A reply that comes slowly: nothing for ``first_token_s`` (a local server processing the
    prompt), then ``chunks`` pieces of ``text`` with ``gap_s`` between them.

    Like llama.cpp's server, the response headers come with the first token, unless
    ``headers_first`` (as hosted APIs do: headers at once, tokens later). With ``cancellable``
    the server watches the connection while it "reads the prompt" and stops as soon as the client
    closes it, as llama.cpp does (recorded in ``cancelled``); otherwise it notices only when a
    write fails. Unstreamed requests get the whole text after the same total time.
    """

    text: str
    first_token_s: float = 0.0
    gap_s: float = 0.0
    chunks: int = 4
    headers_first: bool = False
    cancellable: bool = False


Reply = str | Callable[[dict[str, Any]], str] | Fault | Slow

_ERROR_TYPES = {
    400: ("invalid_request_error", "Bad request"),
    401: ("authentication_error", "Incorrect API key provided"),
    403: ("permission_error", "Permission denied"),
    404: ("not_found_error", "The model does not exist"),
    429: ("rate_limit_error", "Rate limit reached, please retry"),
}


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: characters // 4 + 1."""
    return len(text) // 4 + 1


def _content_text(content: Any) -> str:
    """Message content as plain text (strings, or OpenAI's list-of-parts form)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_tokens_of(body: dict[str, Any]) -> int:
    """Prompt token count the server reports for a request body."""
    messages = body.get("messages") or []
    return count_tokens("".join(_content_text(m.get("content")) for m in messages))


def _split(text: str, parts: int) -> list[str]:
    """Cut ``text`` into at most ``parts`` non-empty pieces (at least one, maybe empty)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops connections when tests fire many requests at once
    # (the client then waits a second for its SYN to be retried, or fails).
    request_queue_size = 128
    daemon_threads = True


class ScriptedLLMServer:
    """A threaded OpenAI-compatible HTTP server whose answers tests script per model."""

    def __init__(self, *, slots_route: bool = True) -> None:
        self._lock = threading.Lock()
        self.slots_route = slots_route  # False: GET /slots is 404, as llama-cpp-python's server
        self._in_flight: dict[str, int] = {}
        self.abandoned: list[str] = []  # models whose client went away mid-answer
        self.overlaps: list[str] = []  # models asked again while still answering
        self.cancelled: list[str] = []  # models whose request stopped when the client left
        self._queues: dict[str, deque[Reply]] = {}
        self._defaults: dict[str, Reply] = {}
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.usage: dict[str, dict[str, int]] = {}
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        handler = _make_handler(self)
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------

    def script(self, model: str, *replies: Reply) -> None:
        """Append replies to the FIFO queue of ``model`` (the name as the server receives it)."""
        with self._lock:
            self._queues.setdefault(model, deque()).extend(replies)

    def default(self, model: str, reply: Reply) -> None:
        """The reply for ``model`` whenever its queue is empty."""
        with self._lock:
            self._defaults[model] = reply

    def requests_for(self, model: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r.get("model") == model]

    def in_flight(self, model: str = "") -> int:
        """Requests being answered now (for ``model``, or for all models)."""
        with self._lock:
            if model:
                return self._in_flight.get(model, 0)
            return sum(self._in_flight.values())

    def remaining(self, model: str) -> int:
        """Scripted replies not yet consumed for ``model``."""
        with self._lock:
            return len(self._queues.get(model, ()))

    # -- used by the handler ---------------------------------------------------------------

    def _take(self, body: dict[str, Any]) -> Reply | None:
        """Record the request and pop the reply it gets (None: nothing scripted, error noted)."""
        model = str(body.get("model", ""))
        with self._lock:
            self.requests.append(body)
            if self._in_flight.get(model, 0):
                self.overlaps.append(model)
            self._in_flight[model] = self._in_flight.get(model, 0) + 1
            queue = self._queues.get(model)
            if queue:
                return queue.popleft()
            if model in self._defaults:
                return self._defaults[model]
            self.errors.append(f"no scripted reply left for model {model!r}")
            return None

    def _done(self, body: dict[str, Any], abandoned: bool) -> None:
        """The answer to ``body`` is over: sent whole, or abandoned by its client."""
        model = str(body.get("model", ""))
        with self._lock:
            self._in_flight[model] = max(0, self._in_flight.get(model, 0) - 1)
            if abandoned:
                self.abandoned.append(model)

    def _slots(self) -> list[dict[str, Any]]:
        """llama.cpp's GET /slots: one single-slot server, busy while any request is answered."""
        with self._lock:
            busy = sum(self._in_flight.values())
        return [{"id": i, "is_processing": i < busy} for i in range(max(1, busy))]

    def _add_usage(self, model: str, prompt: int, completion: int) -> None:
        with self._lock:
            totals = self.usage.setdefault(model, {"prompt_tokens": 0, "completion_tokens": 0})
            totals["prompt_tokens"] += prompt
            totals["completion_tokens"] += completion

    def _note_error(self, message: str) -> None:
        with self._lock:
            self.errors.append(message)


def _make_handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        scripted = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedLLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``requests`` instead of stderr."""

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path in SLOTS_PATHS and self.scripted.slots_route:
            self._send_json(200, self.scripted._slots())  # type: ignore[arg-type]
        elif path in MODELS_PATHS:
            with self.scripted._lock:
                names = sorted(set(self.scripted._queues) | set(self.scripted._defaults))
            data = [
                {"id": n, "object": "model", "created": 0, "owned_by": "scripted"} for n in names
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(404, f"no route GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0].rstrip("/") not in CHAT_PATHS:
            self._send_error(404, f"no route POST {self.path}", "not_found_error")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self.scripted._note_error(f"request body is not JSON: {exc}")
            self._send_error(400, f"request body is not JSON: {exc}", "invalid_request_error")
            return
        self._gone = False
        try:
            self._answer(body, self.scripted._take(body))
        finally:
            self.scripted._done(body, abandoned=self._gone)

    # -- answering -------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any], reply: Reply | None) -> None:
        model = str(body.get("model", ""))
        if reply is None:
            self._send_error(
                400, f"no scripted reply left for model {model!r}", "invalid_request_error"
            )
            return
        while isinstance(reply, Fault):
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.status:
                kind, default_message = _ERROR_TYPES.get(
                    reply.status, ("server_error", "Internal error")
                )
                self._send_error(reply.status, reply.message or default_message, kind)
                return
            reply = reply.then
            if reply is None:
                self._send_error(
                    400, "scripted Fault has neither status nor then", "invalid_request_error"
                )
                self.scripted._note_error(
                    f"scripted Fault for {model!r} has neither status nor then"
                )
                return
        if isinstance(reply, Slow):
            self._answer_slowly(body, model, reply)
            return
        text = reply(body) if callable(reply) else reply
        prompt, completion = prompt_tokens_of(body), count_tokens(text)
        self.scripted._add_usage(model, prompt, completion)
        if body.get("stream"):
            self._send_stream(body, model, text, prompt, completion)
        else:
            self._send_json(200, _completion(model, text, prompt, completion))

    def _answer_slowly(self, body: dict[str, Any], model: str, reply: Slow) -> None:
        """Stream ``reply`` with its delays, one HTTP chunk per event; stop when the client left."""
        prompt, completion = prompt_tokens_of(body), count_tokens(reply.text)
        pieces = _split(reply.text, max(1, reply.chunks))
        if not body.get("stream"):
            time.sleep(reply.first_token_s + reply.gap_s * (len(pieces) - 1))
            self.scripted._add_usage(model, prompt, completion)
            self._send_json(200, _completion(model, reply.text, prompt, completion))
            return
        events = _stream_events(body, model, pieces, prompt, completion)
        if reply.headers_first:
            self._start_chunked()
        if reply.cancellable:
            if self._client_left_within(reply.first_token_s):
                self._gone = True
                with self.scripted._lock:
                    self.scripted.cancelled.append(model)
                return
        else:
            time.sleep(reply.first_token_s)
        if not reply.headers_first:
            self._start_chunked()
        for index, event in enumerate(events):
            if 0 < index < len(pieces):
                time.sleep(reply.gap_s)
            if not self._write(_chunked(f"data: {json.dumps(event)}\n\n".encode())):
                return
        if self._write(_chunked(b"data: [DONE]\n\n") + _chunked(b"")):
            self.scripted._add_usage(model, prompt, completion)

    def _client_left_within(self, seconds: float) -> bool:
        """Wait ``seconds``, watching the connection; True as soon as the client closed it."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.02))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                time.sleep(min(left, 0.02))  # data, not a close: keep waiting
        return False

    def _start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._write(b"")

    def _send_stream(
        self, body: dict[str, Any], model: str, text: str, prompt: int, completion: int
    ) -> None:
        events = _stream_events(body, model, _split(text, STREAM_CHUNKS), prompt, completion)

        payload = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
        payload += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self._write(payload)

    def _send_json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self._write(payload)

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send_json(
            status, {"error": {"message": message, "type": kind, "param": None, "code": status}}
        )

    def _write(self, payload: bytes) -> bool:
        """Write; False (and the request noted as abandoned) when the client already went away
        (it timed out on a delayed reply, or stopped reading a slow stream)."""
        try:
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self._gone = True
            return False
        return True


def _chunked(data: bytes) -> bytes:
    """One chunk of HTTP/1.1 chunked transfer coding (an empty one ends the body)."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _stream_events(
    body: dict[str, Any], model: str, pieces: list[str], prompt: int, completion: int
) -> list[dict[str, Any]]:
    """The server-sent events of a streamed reply: one per piece, the stop, and the usage when
    the request asked for it (``stream_options.include_usage``)."""
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events = [
        chunk({"role": "assistant", "content": piece} if i == 0 else {"content": piece}, None)
        for i, piece in enumerate(pieces)
    ]
    events.append(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage_chunk = chunk({}, None)
        usage_chunk["choices"] = []
        usage_chunk["usage"] = _usage(prompt, completion)
        events.append(usage_chunk)
    return events


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(model: str, text: str, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(prompt, completion),
    }
