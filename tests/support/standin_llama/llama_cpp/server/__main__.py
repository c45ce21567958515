"""TEST-ONLY stand-in for llama-cpp-python's server (``python -m llama_cpp.server``), standard library
only, so that the local model's manager and supervisor are tested without building anything or
loading a model.

Like the real one (0.3.36) it takes the same command line (``--model``, ``--host``, ``--port``,
``--n_ctx``, ``--model_alias``, ``--n_threads``, ``--interrupt_requests False`` …; others are
ignored), exits with uvicorn's status 3 and its words on stderr when the port is taken, answers
``GET /v1/models`` and ``POST /v1/chat/completions`` (JSON, or server-sent events in chunked
encoding with "stream": true) one request at a time, /v1/models included (the real one takes the
same lock for it). /v1/models also says, under "standin", what it was started with: its options
and its environment.

A test steers it with a JSON file beside the model file, ``<model>.standin.json``, read at the
start and at each request: ``{"load_s": N}`` waits N seconds before binding (the model's load),
``{"stall_s": N}`` waits N seconds after the first streamed chunk (or before a whole answer),
``{"crash": true}`` exits with status 1 there, as a server dying mid-answer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ANSWER = "This is the stand-in for llama-cpp-python's server, not a model."
STARTUP_FAILURE = 3  # uvicorn's exit status when it cannot bind
COMPLETIONS_LOCK = threading.Lock()  # one request at a time, as the real server's llama lock


def _word_bool(word: str) -> bool:
    """The real server's ``_parse_bool_arg``."""
    text = word.lower().strip()
    if text in {"1", "on", "t", "true", "y", "yes"}:
        return True
    if text in {"0", "off", "f", "false", "n", "no"}:
        return False
    raise ValueError(f"Invalid boolean argument: {word}")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m llama_cpp.server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--n_ctx", type=int, default=2048)
    parser.add_argument("--model_alias")
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--n_threads_batch", type=int, default=1)
    parser.add_argument("--interrupt_requests", type=_word_bool, default=True)
    found, _ignored = parser.parse_known_args(argv)
    return found


def behaviour(model: str) -> dict[str, Any]:
    try:
        found = json.loads(Path(model + ".standin.json").read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def chunk(alias: str, delta: dict[str, str], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": alias,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    settings: argparse.Namespace  # set on the class before serving

    @property
    def alias(self) -> str:
        return self.settings.model_alias or self.settings.model

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send_json(404, {"detail": "Not Found"})
            return
        listing = {
            "object": "list",
            "data": [{"id": self.alias, "object": "model", "owned_by": "me", "permissions": []}],
            "standin": {"options": vars(self.settings), "env": dict(os.environ)},
        }
        with COMPLETIONS_LOCK:
            self._send_json(200, listing)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"detail": "Not Found"})
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self._send_json(422, {"detail": "body is not JSON"})
            return
        with COMPLETIONS_LOCK:
            if request.get("stream"):
                self._stream()
            else:
                self._misbehave()
                self._send_json(200, self._completion())

    def _misbehave(self) -> None:
        steer = behaviour(self.settings.model)
        if steer.get("crash"):
            print("stand-in: crashing mid-answer, as told", file=sys.stderr, flush=True)
            os._exit(1)
        time.sleep(float(steer.get("stall_s", 0)))

    def _completion(self) -> dict[str, Any]:
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.alias,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": ANSWER},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 12, "total_tokens": 13},
        }

    def _stream(self) -> None:
        self._start_reply(
            200,
            {"Content-Type": "text/event-stream; charset=utf-8", "Transfer-Encoding": "chunked"},
        )
        self._event(chunk(self.alias, {"role": "assistant", "content": ""}))
        words = ANSWER.split(" ")
        for number, word in enumerate(words):
            self._event(chunk(self.alias, {"content": word if number == 0 else " " + word}))
            if number == 0:
                self._misbehave()
        self._event(chunk(self.alias, {}, "stop"))
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _event(self, data: dict[str, Any]) -> None:
        self._write_chunk(f"data: {json.dumps(data)}\n\n".encode())

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self._start_reply(
            status, {"Content-Type": "application/json", "Content-Length": str(len(payload))}
        )
        self.wfile.write(payload)

    def _start_reply(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        print(f"INFO:     {self.client_address[0]} - {format % args}", file=sys.stderr, flush=True)


def main() -> int:
    settings = parse(sys.argv[1:])
    time.sleep(float(behaviour(settings.model).get("load_s", 0)))
    Handler.settings = settings
    try:
        server = ThreadingHTTPServer((settings.host, settings.port), Handler)
    except OSError as exc:
        print(
            f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
            f"({settings.host!r}, {settings.port}): {(exc.strerror or str(exc)).lower()}",
            file=sys.stderr,
            flush=True,
        )
        return STARTUP_FAILURE
    server.daemon_threads = True
    print(
        f"INFO:     Uvicorn running on http://{settings.host}:{settings.port} (stand-in)",
        file=sys.stderr,
        flush=True,
    )
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
