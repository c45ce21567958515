"""The recording reverse proxy of the real-model benches (tests/bench/real_model.py and the
benches that import it): between labtui (litellm and aider) and an OpenAI-compatible server on
127.0.0.1, it passes every request on and every streamed chunk back as it comes, and writes one
JSON line per exchange (the request, the reply reassembled from the stream, the timings, and
the stage the project's journal was in, read by ``StageTracker``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Hop-by-hop headers (RFC 9110 7.6.1) are the proxy's own business, never forwarded.
HOP_HEADERS = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
}
UPSTREAM_TIMEOUT_S = 3600  # a long prompt on a CPU takes minutes before the first token


# -- the stage the journal is in ------------------------------------------------------------


class StageTracker:
    """The stage a project's run is in now, read from the tail of its journal as it grows."""

    def __init__(self, journal: Path) -> None:
        self.journal = journal
        self._offset = 0
        self._stage = ""
        self._lock = threading.Lock()

    def current(self) -> str:
        with self._lock:
            self._read_new_lines()
            return self._stage

    def _read_new_lines(self) -> None:
        if not self.journal.exists():
            return
        with self.journal.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        self._offset += len(complete)
        for line in complete.decode("utf-8", "replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                self._follow(json.loads(line))

    def _follow(self, event: dict[str, Any]) -> None:
        if event.get("type") == "StageStarted":
            self._stage = event.get("stage", "")
        elif event.get("type") == "StageFinished" and event.get("stage") == self._stage:
            self._stage = f"after {self._stage}"


# -- the recording proxy --------------------------------------------------------------------


def prompt_head(body: dict[str, Any], words: int = 12) -> str:
    """The first words of the request's first message: what the call is about when the
    journal cannot tell (aider's system prompt, a stage's opening line)."""
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if content:
            return " ".join(str(content).split()[:words])
    return " ".join(str(body.get("prompt", "")).split()[:words])


@dataclass
class StreamReading:
    """What a Server-Sent-Events reply said, reassembled as its chunks pass through."""

    started: float
    text: list[str] = field(default_factory=list)
    first_token_s: float = 0.0
    finish_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    _pending: bytes = b""

    def feed(self, data: bytes) -> None:
        # Normalise after joining, so a CR LF split across two reads still counts as one.
        self._pending = (self._pending + data).replace(b"\r\n", b"\n")
        while b"\n\n" in self._pending:
            event, self._pending = self._pending.split(b"\n\n", 1)
            for line in event.decode("utf-8", "replace").splitlines():
                if line.startswith("data:"):
                    self._take(line[5:].strip())

    def _take(self, payload: str) -> None:
        if not payload or payload == "[DONE]":
            return
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError:
            return
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") or ""
            if piece and not self.first_token_s:
                self.first_token_s = time.perf_counter() - self.started
            self.text.append(piece)
            self.finish_reason = choice.get("finish_reason") or self.finish_reason


class Recorder:
    """Appends one JSON line per exchange to a file; safe from the proxy's threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            self.count += 1


class RecordingProxy:
    """A reverse proxy on 127.0.0.1 in front of an OpenAI-compatible server.

    ``url`` is the upstream base (``http://127.0.0.1:8080/v1``); ``base_url`` is the same path on
    the proxy, for LABTUI_API_BASE. Streamed replies are passed on chunk by chunk (chunked
    transfer encoding), so labtui sees the tokens as the model writes them."""

    def __init__(
        self, url: str, recorder: Recorder, tracker: StageTracker, *, schema_as_object: bool = False
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise SystemExit(
                f"--url {url!r}: give the server's http:// base, e.g. http://127.0.0.1:8080/v1"
            )
        self.upstream = (parts.hostname, parts.port or 80)
        self.prefix = parts.path.rstrip("/")
        self.recorder, self.tracker = recorder, tracker
        self.schema_as_object = schema_as_object
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closes a kept-alive connection is normal; anything else is printed."""
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _ProxyHandler(BaseHTTPRequestHandler):
    owner: RecordingProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the exchanges file is the log."""

    def do_GET(self) -> None:
        self._relay(b"")

    def do_POST(self) -> None:
        self._relay(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _relay(self, raw: bytes) -> None:
        started, wall = time.perf_counter(), time.time()
        body = _json_or_empty(raw)
        record: dict[str, Any] = {
            "ts": wall,
            "stage": self.owner.tracker.current(),
            "method": self.command,
            "path": self.path,
            "model": body.get("model", ""),
            "prompt_head": prompt_head(body),
            "request": body,
        }
        if self.owner.schema_as_object and (adapted := schema_as_json_object(body)):
            raw = json.dumps(adapted).encode()
            record["sent_response_format"] = adapted["response_format"]
        try:
            reply = self._forward(raw, started)
            record.update(reply)
        except OSError as exc:  # the model's server is down or dropped the connection
            record.update(status=502, error=f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(OSError):
                self._send_bytes(
                    502,
                    "application/json",
                    json.dumps(
                        {"error": {"message": f"recording proxy: upstream {exc}", "code": 502}}
                    ).encode(),
                )
        record["total_s"] = round(time.perf_counter() - started, 3)
        if self.command == "POST":  # GET /models and the like are not exchanges
            self.owner.recorder.write(record)

    def _forward(self, raw: bytes, started: float) -> dict[str, Any]:
        host, port = self.owner.upstream
        upstream = http.client.HTTPConnection(host, port, timeout=UPSTREAM_TIMEOUT_S)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            headers["Content-Length"] = str(len(raw))
            upstream.request(self.command, self.path, body=raw or None, headers=headers)
            response = upstream.getresponse()
            kind = response.getheader("Content-Type", "")
            if "text/event-stream" in kind:
                return self._pass_stream(response, kind, started)
            payload = response.read()
            self._send_bytes(response.status, kind, payload)
            return _plain_reply(response.status, payload)
        finally:
            upstream.close()

    def _pass_stream(
        self, response: http.client.HTTPResponse, kind: str, started: float
    ) -> dict[str, Any]:
        reading = StreamReading(started)
        self.send_response(response.status)
        self.send_header("Content-Type", kind)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        client_gone = False
        while data := response.read1(65536):
            reading.feed(data)
            if not client_gone:
                try:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    client_gone = True  # labtui gave up (its timeout): keep reading to record
        if not client_gone:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        return {
            "status": response.status,
            "stream": True,
            "reply": "".join(reading.text),
            "finish_reason": reading.finish_reason,
            "usage": reading.usage,
            "first_token_s": round(reading.first_token_s, 3),
            "client_gone": client_gone,
        }

    def _send_bytes(self, status: int, kind: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)
            self.wfile.flush()


def schema_as_json_object(body: dict[str, Any]) -> dict[str, Any] | None:
    """The request with an OpenAI ``json_schema`` response format rewritten to the
    ``{"type": "json_object", "schema": ...}`` form that llama-cpp-python's server honours (it
    answers ``json_schema`` with an HTTP 500); None when there is nothing to rewrite."""
    wanted = body.get("response_format")
    if not isinstance(wanted, dict) or wanted.get("type") != "json_schema":
        return None
    schema = (wanted.get("json_schema") or {}).get("schema")
    form = {"type": "json_object", **({"schema": schema} if schema else {})}
    return {**body, "response_format": form}


def _json_or_empty(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except json.JSONDecodeError:
        return {"unparsed": raw[:2000].decode("utf-8", "replace")}
    return body if isinstance(body, dict) else {"body": body}


def _plain_reply(status: int, payload: bytes) -> dict[str, Any]:
    data = _json_or_empty(payload)
    choices = data.get("choices") or [{}]
    message = choices[0].get("message") or {}
    return {
        "status": status,
        "stream": False,
        "reply": message.get("content") or choices[0].get("text") or "",
        "finish_reason": choices[0].get("finish_reason") or "",
        "usage": data.get("usage") or {},
        "error": data.get("error", "") if status >= 400 else "",
    }
