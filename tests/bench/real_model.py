"""labtui against a real model (not run by pytest): what a whole `--auto` run does with it.

    .venv/bin/python tests/bench/real_model.py --url http://127.0.0.1:8080/v1 \
        --model openai/qwen-coder [--templates moons,grokking] [--out DIR] \
        [--record tests/recorded/real_model] [--quick] [--set llm.first_token_s=900]
    .venv/bin/python tests/bench/real_model.py --report DIR [--record FOLDER]  # an earlier run
    .venv/bin/python tests/bench/real_model.py ... --templates moons --out DIR2 \
        --start-from DIR/moons/project --rewind writeup --set paper.writer=aider  # the other path

For each template: `labtui new DIR/<template>/project --template T`, then `labtui run --headless
--auto` in it with LABTUI_MODEL and LABTUI_API_BASE set. Between labtui (litellm and aider) and
the model's server sits a small recording reverse proxy on 127.0.0.1: it passes every request on
and every streamed chunk back as it comes, and writes one JSON line per exchange to
`DIR/<template>/exchanges.jsonl` (the request, the reply reassembled from the stream, the
timings, and the stage the journal was in). `--record FOLDER` copies those lines, with the
run's summary, to FOLDER/<template>/ for tests to replay.

Afterwards it reads the project's journal (`.labtui/journal.jsonl`) and prints, per template:
stages reached and passed, refusals and re-asks by reason, failed runs, reverted runs,
contradicted claims, tokens and wall time per stage, and whether `paper.pdf` and `review.json`
came out; then the same as Markdown (also in DIR/report.md) to paste into a note.

This machine reaches no arXiv: by default the literature stages search the loopback arXiv double
of the tests (tests/support/fake_arxiv.py, a handful of recorded papers); `--arxiv URL` points them at
another server. Numbers only: nothing here asserts a goal. A run takes minutes to hours.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TESTS = Path(__file__).resolve().parents[1]
JOURNAL = Path(".labtui") / "journal.jsonl"
PDF, REVIEW = "paper.pdf", "review.json"  # core/stages/compile.py, core/stages/review.py
EXCHANGES = "exchanges.jsonl"
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
QUICK_SETTINGS = (  # a shorter run: the tests' wiring (tests/conftest.py wire_project)
    "ideas.count=1",
    "ideas.reflections=1",
    "limits.max_runs=1",
    "review.ensemble=1",
    "review.reflections=0",
)


# -- the journal ----------------------------------------------------------------------------


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every event of a journal as a dict; a torn line (a write cut off) is skipped."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            events.append(json.loads(line))
    return events


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


# -- running labtui -------------------------------------------------------------------------


def labtui() -> str:
    candidate = Path(sys.executable).with_name("labtui")
    return str(candidate) if candidate.exists() else shutil.which("labtui") or "labtui"


def apply_settings(root: Path, settings: list[str], arxiv_url: str) -> None:
    """Write ``section.key=value`` settings (and the arXiv address) into labtui.toml, typed as
    the field's default is."""
    from labtui.core.settings.config import load_config, save_config

    config = load_config(root)
    if arxiv_url:
        config.literature.arxiv_url = arxiv_url
        config.literature.delay_s = 0.0
    for setting in settings:
        name, sep, value = setting.partition("=")
        section_name, dot, key = name.strip().partition(".")
        section = getattr(config, section_name, None)
        if not sep or not dot or section is None or not hasattr(section, key):
            raise SystemExit(
                f"--set {setting!r}: write SECTION.KEY=VALUE with a field of labtui.toml, "
                "e.g. llm.first_token_s=900 or ideas.count=1"
            )
        current = getattr(section, key)
        typed: Any = value
        if isinstance(current, bool):
            typed = value.strip().lower() in ("1", "true", "yes", "on")
        elif isinstance(current, (int, float)):
            typed = type(current)(value)
        setattr(section, key, typed)
    save_config(config, root)


def run_logged(argv: list[str], cwd: Path, env: dict[str, str], log: Path, limit_s: float) -> int:
    """Run a command with its output going to ``log``; a run past ``limit_s`` (0: none) has its
    whole process group killed. Returns the exit code (-9 when killed)."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return process.wait(timeout=limit_s or None)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            out.write(f"\n[real_model.py: killed after {limit_s:g} s]\n".encode())
            return -9


@contextlib.contextmanager
def arxiv_server(url: str) -> Iterator[str]:
    """The arXiv address for the literature stages: ``url``, or the loopback double."""
    if url:
        yield url
        return
    sys.path.insert(0, str(TESTS))
    from support.fake_arxiv import FakeArxiv

    with FakeArxiv() as server:
        yield server.url


def run_template(args: argparse.Namespace, template: str, arxiv_url: str) -> dict[str, Any]:
    folder = Path(args.out) / template
    root = folder / "project"
    if root.exists():
        raise SystemExit(f"{root} exists already: give another --out, or --report {args.out}")
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "run.log"
    recorder = Recorder(folder / EXCHANGES)
    settings = [*(QUICK_SETTINGS if args.quick else ()), *args.set]
    tracker = StageTracker(root / JOURNAL)
    with RecordingProxy(
        args.url, recorder, tracker, schema_as_object=args.schema_as_object
    ) as proxy:
        env = {
            **os.environ,
            "LABTUI_MODEL": args.model,
            "LABTUI_API_BASE": proxy.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # offline: no price-map fetch per model
        }
        started = time.perf_counter()
        if args.start_from:
            new_rc = copy_and_rewind(Path(args.start_from), root, args.rewind, env, log)
        else:
            print(f"[{template}] labtui new {root} (log: {log})", flush=True)
            new_rc = run_logged(
                [labtui(), "new", str(root), "--template", template], folder, env, log, 0
            )
        new_s = time.perf_counter() - started
        run_rc, run_s = None, 0.0
        if new_rc == 0:
            apply_settings(root, settings, arxiv_url)
            print(
                f"[{template}] labtui run --headless --auto (proxy {proxy.base_url} -> {args.url})",
                flush=True,
            )
            started = time.perf_counter()
            run_rc = run_logged(
                [labtui(), "run", "--headless", "--auto"], root, env, log, args.timeout
            )
            run_s = time.perf_counter() - started
    meta = {
        "template": template,
        "start_from": args.start_from,
        "rewind": args.rewind,
        "model": args.model,
        "url": args.url,
        "settings": settings,
        "schema_as_object": args.schema_as_object,
        "new_returncode": new_rc,
        "new_s": round(new_s, 1),
        "run_returncode": run_rc,
        "run_s": round(run_s, 1),
        "exchanges": recorder.count,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def copy_and_rewind(source: Path, root: Path, stage: str, env: dict[str, str], log: Path) -> int:
    """A copy of an earlier bench's project, rewound to before ``stage`` (`labtui rewind`): the
    same runs and figures, the stage asked again (another write-up path, say)."""
    print(f"copy {source} -> {root}; labtui rewind {stage} (log: {log})", flush=True)
    shutil.copytree(source, root, symlinks=True)
    for stale in (root / ".labtui").glob("engine*"):  # the earlier session's engine files
        if stale.is_file():
            stale.unlink()
    if not stage:  # go on from where the copy stands
        return 0
    return run_logged([labtui(), "rewind", stage], root, env, log, 0)


# -- the report -----------------------------------------------------------------------------


def short_reason(reason: str, limit: int = 70) -> str:
    first = reason.strip().splitlines()[0] if reason.strip() else "(none)"
    first = first.split(": ", 1)[0] if len(first) > limit else first
    return first if len(first) <= limit else first[: limit - 1] + "…"


def stage_order(stage: str) -> tuple[int, str]:
    from labtui.core.stage_list import STAGES

    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def summarize(folder: Path) -> dict[str, Any]:
    """What a template's run did, from its journal, its exchanges and its project files."""
    root = folder / "project"
    events = read_journal(root / JOURNAL)
    meta_path = folder / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_type[event.get("type", "")].append(event)
    stages = _stage_rows(by_type, _exchanges(folder))
    refusals = Counter(
        (e.get("what", ""), short_reason(e.get("reason", ""))) for e in by_type["Refused"]
    )
    failed_runs = [
        {
            "run": e.get("run_id", ""),
            "returncode": e.get("returncode"),
            "timed_out": e.get("timed_out", False),
            "tail": short_reason(e.get("error_tail", "")),
        }
        for e in by_type["RunFinished"]
        if e.get("returncode") != 0 or e.get("timed_out")
    ]
    review = _review_outcome(root / REVIEW)
    return {
        "novelty": _novelty_outcome(root),
        "sections": paper_sections(root / "latex" / "template.tex"),
        "pdf_pages": pdf_pages(root),
        **meta,
        "template": meta.get("template", folder.name),
        "events": len(events),
        "stages": stages,
        "refusals": [
            {"what": what, "reason": reason, "count": count}
            for (what, reason), count in refusals.most_common()
        ],
        "claims_contradicted": sum(1 for e in by_type["Refused"] if e.get("what") == "claim"),
        "runs": len(by_type["RunFinished"]),
        "failed_runs": failed_runs,
        "reverts": [
            {
                "run": e.get("run_id", ""),
                "attempts": e.get("attempts", 0),
                "problem": short_reason(e.get("problem", "")),
            }
            for e in by_type["RunAbandoned"]
        ],
        "errors": [short_reason(e.get("message", "")) for e in by_type["ErrorEvent"]],
        "pdf": (root / PDF).exists() or any((root / "latex").glob("*.pdf")),
        "review": review,
    }


def _exchanges(folder: Path) -> list[dict[str, Any]]:
    return read_journal(folder / EXCHANGES)  # the same format: JSON lines


def _stage_rows(
    by_type: dict[str, list[dict[str, Any]]], exchanges: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}

    def row(stage: str) -> dict[str, Any]:
        return rows.setdefault(
            stage,
            {
                "stage": stage,
                "started": 0,
                "status": "",
                "wall_s": 0.0,
                "calls": 0,
                "tokens_in": 0,
                "tokens_out": 0,
                "llm_s": 0.0,
                "first_token_s": 0.0,
                "exchanges": 0,
                "proxy_s": 0.0,
                "refused": 0,
            },
        )

    open_since: dict[str, float] = {}
    for event in sorted(
        by_type["StageStarted"] + by_type["StageFinished"], key=lambda e: e.get("ts", 0)
    ):
        stage = event.get("stage", "")
        if event["type"] == "StageStarted":
            row(stage)["started"] += 1
            open_since[stage] = event.get("ts", 0)
        else:
            row(stage)["status"] = event.get("status", "")
            if stage in open_since:
                row(stage)["wall_s"] += event.get("ts", 0) - open_since.pop(stage)
    last_ts = max(
        (e.get("ts", 0) for e in by_type["CostUpdate"] + by_type["StageStarted"]), default=0
    )
    for stage, since in open_since.items():  # still running, or the run died in it
        row(stage)["status"] = row(stage)["status"] or "unfinished"
        row(stage)["wall_s"] += max(0.0, last_ts - since)
    for cost in by_type["CostUpdate"]:
        target = row(cost.get("stage", "") or "(project)")
        target["calls"] += 1
        target["tokens_in"] += cost.get("tokens_in", 0)
        target["tokens_out"] += cost.get("tokens_out", 0)
        target["llm_s"] += cost.get("seconds", 0.0)
        target["first_token_s"] += cost.get("first_token_s", 0.0)
    for refused in by_type["Refused"]:
        row(refused.get("stage", "") or "(project)")["refused"] += 1
    for exchange in exchanges:
        stage = exchange.get("stage", "")
        stage = "(between stages)" if stage.startswith("after ") else stage or "(project)"
        row(stage)["exchanges"] += 1
        row(stage)["proxy_s"] += exchange.get("total_s", 0.0)
    for values in rows.values():
        values["prompt_tps"] = (
            values["tokens_in"] / values["first_token_s"] if values["first_token_s"] else 0.0
        )
        writing = values["llm_s"] - values["first_token_s"]
        values["output_tps"] = values["tokens_out"] / writing if writing > 0 else 0.0
    return sorted(rows.values(), key=lambda r: stage_order(r["stage"]))


def _novelty_outcome(root: Path) -> str:
    """The chosen idea's novelty decision, with how many papers it rests on."""
    try:
        ideas = json.loads((root / "ideas.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ""
    for idea in ideas if isinstance(ideas, list) else []:
        if isinstance(idea, dict) and idea.get("status") in ("chosen", "done"):
            evidence = idea.get("novelty_evidence") or {}
            return (
                f"{evidence.get('decision', 'not checked')} "
                f"({len(evidence.get('papers_seen') or [])} papers seen, "
                f"{len(evidence.get('closest') or [])} named)"
            )
    return ""


_SECTION = re.compile(
    r"\\section\*?\{([^}]*)\}(.*?)(?=\\section\*?\{|\\bibliography|\\end\{document\})", re.S
)
_ABSTRACT = re.compile(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", re.S)
_PLACEHOLDER = re.compile(r"\b[A-Z][A-Z ]{2,40} HERE\b")


def paper_sections(tex: Path) -> dict[str, str]:
    """Each part of the paper (the abstract and every \\section) as written or not: "written",
    "placeholder" (the template's text is still there) or "empty"."""
    try:
        text = tex.read_text(encoding="utf-8")
    except OSError:
        return {}
    parts = [("Abstract", m.group(1)) for m in _ABSTRACT.finditer(text)]
    parts += [(m.group(1), m.group(2)) for m in _SECTION.finditer(text)]
    states = {}
    for title, body in parts:
        body = re.sub(r"\\label\{[^}]*\}|%.*", "", body).strip()
        states[title] = (
            "placeholder" if _PLACEHOLDER.search(body) else "empty" if not body else "written"
        )
    return states


def pdf_pages(root: Path) -> int:
    """Pages of the compiled paper (0 when there is none)."""
    import fitz  # PyMuPDF, a labtui dependency

    for pdf in [root / PDF, *sorted((root / "latex").glob("*.pdf"))]:
        if pdf.exists():
            with fitz.open(pdf) as document:
                return int(document.page_count)
    return 0


def _review_outcome(path: Path) -> dict[str, Any]:
    """The review's decision and mean Overall (review.json, core/stages/review.py)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return {"unreadable": str(exc)}
    if not isinstance(data, dict):
        return {"unreadable": "not a JSON object"}
    outcome = {k: data[k] for k in ("decision", "overall", "threshold") if k in data}
    outcome["reviews"] = len(data.get("reviews") or [])
    outcome["improvements"] = len(data.get("improvements") or [])
    return outcome


STAGE_COLUMNS = (
    ("stage", "stage", "{}"),
    ("status", "status", "{}"),
    ("started", "starts", "{}"),
    ("wall_s", "wall s", "{:.0f}"),
    ("calls", "LLM calls", "{}"),
    ("exchanges", "proxied", "{}"),
    ("proxy_s", "model s", "{:.0f}"),
    ("tokens_in", "tok in", "{:,}"),
    ("tokens_out", "tok out", "{:,}"),
    ("prompt_tps", "prompt tok/s", "{:.1f}"),
    ("output_tps", "gen tok/s", "{:.1f}"),
    ("refused", "refused", "{}"),
)


def report_lines(summary: dict[str, Any], *, markdown: bool) -> list[str]:
    """One template's report: the per-stage table, then the counts, as text or Markdown."""
    headers = [title for _, title, _ in STAGE_COLUMNS]
    body = [[fmt.format(r[key]) for key, _, fmt in STAGE_COLUMNS] for r in summary["stages"]]
    lines = [
        f"## {summary['template']} ({summary.get('model', '?')})"
        if markdown
        else f"== {summary['template']} ({summary.get('model', '?')}) =="
    ]
    if summary.get("schema_as_object"):
        lines.append("(the proxy rewrote json_schema response formats to json_object + schema)")
    lines.append(
        f"labtui run: exit {summary.get('run_returncode')}, {summary.get('run_s', 0):.0f} s; "
        f"{summary['events']} journal events, {summary.get('exchanges', 0)} model exchanges"
    )
    lines.append("")
    lines += _table(headers, body, markdown=markdown)
    passed = [r["stage"] for r in summary["stages"] if r["status"] == "done"]
    reached = [r["stage"] for r in summary["stages"] if r["started"]]
    facts = [
        f"stages reached {len(reached)}: {', '.join(reached) or '-'}",
        f"stages passed {len(passed)}: {', '.join(passed) or '-'}",
        f"runs {summary['runs']}, failed {len(summary['failed_runs'])}"
        + "".join(
            f"; {f['run']} rc={f['returncode']}" + (" timed out" if f["timed_out"] else "")
            for f in summary["failed_runs"]
        ),
        f"reverted runs (RunAbandoned) {len(summary['reverts'])}"
        + "".join(
            f"; {r['run']} after {r['attempts']}: {r['problem']}" for r in summary["reverts"]
        ),
        f"contradicted claims {summary['claims_contradicted']}",
        f"novelty: {summary.get('novelty') or 'not reached'}",
        "sections written "
        f"{sum(v == 'written' for v in summary.get('sections', {}).values())} of "
        f"{len(summary.get('sections', {}))}"
        + "".join(
            f"; {title}: {state}"
            for title, state in summary.get("sections", {}).items()
            if state != "written"
        ),
        f"PDF pages {summary.get('pdf_pages', 0)}",
        f"PDF ({PDF}): {'yes' if summary['pdf'] else 'no'}; "
        f"review ({REVIEW}): {json.dumps(summary['review']) if summary['review'] else 'no'}",
    ]
    if summary["errors"]:
        facts.append(f"errors {len(summary['errors'])}: " + " | ".join(summary["errors"][:5]))
    lines.append("")
    lines += [f"- {fact}" for fact in facts] if markdown else facts
    lines.append("")
    refusal_rows = [[r["what"], str(r["count"]), r["reason"]] for r in summary["refusals"]]
    lines.append("Refusals and re-asks by reason:" if refusal_rows else "Refusals: none")
    if refusal_rows:
        lines.append("")
        lines += _table(["what", "count", "reason"], refusal_rows, markdown=markdown)
    lines.append("")
    return lines


def _table(headers: list[str], rows: list[list[str]], *, markdown: bool) -> list[str]:
    if markdown:
        escape = [[cell.replace("|", "\\|") for cell in row] for row in rows]
        return [
            "| " + " | ".join(headers) + " |",
            "|" + "|".join("---" for _ in headers) + "|",
            *("| " + " | ".join(row) + " |" for row in escape),
        ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return [
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
        "  ".join("-" * w for w in widths),
        *("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows),
    ]


def report(out: Path, templates: list[str]) -> None:
    summaries = [summarize(out / t) for t in templates]
    for summary in summaries:
        (out / summary["template"] / "summary.json").write_text(
            json.dumps(summary, indent=2) + "\n"
        )
        print("\n".join(report_lines(summary, markdown=False)))
    markdown = ["# labtui with a real model", ""]
    for summary in summaries:
        markdown += report_lines(summary, markdown=True)
    (out / "report.md").write_text("\n".join(markdown))
    print("---- Markdown (also in", out / "report.md", ") ----")
    print("\n".join(markdown))


def record(out: Path, templates: list[str], folder: Path) -> None:
    """Copy the exchanges and the summary of each template to ``folder`` for tests to replay."""
    for template in templates:
        target = folder / template
        target.mkdir(parents=True, exist_ok=True)
        for name in (EXCHANGES, "summary.json", "meta.json"):
            if (out / template / name).exists():
                shutil.copy2(out / template / name, target / name)
        print(f"recorded {out / template / EXCHANGES} -> {target}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Run labtui --auto on templates against a real OpenAI-compatible model, "
        "recording every exchange, and report what happened per stage.",
    )
    parser.add_argument(
        "--url",
        default="http://127.0.0.1:8080/v1",
        help="the model server's OpenAI base URL (default: %(default)s)",
    )
    parser.add_argument(
        "--model",
        default=os.environ.get("LABTUI_MODEL", ""),
        help="litellm model string, e.g. openai/qwen-coder (default: $LABTUI_MODEL)",
    )
    parser.add_argument(
        "--templates", default="moons", help="comma-separated template names (default: %(default)s)"
    )
    parser.add_argument("--out", default="", help="output folder (default: a new one in /tmp)")
    parser.add_argument(
        "--record",
        default="",
        metavar="FOLDER",
        help="also copy each template's exchanges and summary to FOLDER/<t>/",
    )
    parser.add_argument(
        "--arxiv",
        default="",
        metavar="URL",
        help="arXiv API for the literature stages (default: the loopback "
        "double of the tests, as this machine reaches no arXiv)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the tests' short settings: " + ", ".join(QUICK_SETTINGS),
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a labtui.toml setting for the run (repeatable)",
    )
    parser.add_argument(
        "--schema-as-object",
        action="store_true",
        help="rewrite response_format json_schema to {type: json_object, schema} on the way "
        "(llama-cpp-python's server refuses json_schema with HTTP 500); recorded per exchange",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="kill a template's labtui run after S seconds (default: never)",
    )
    parser.add_argument(
        "--start-from",
        default="",
        metavar="PROJECT",
        help="instead of `labtui new`: a copy of an earlier bench's project (one template)",
    )
    parser.add_argument(
        "--rewind",
        default="writeup",
        metavar="STAGE",
        help="with --start-from: the stage to rewind the copy to ('' : go on from where it "
        "stands; default: %(default)s)",
    )
    parser.add_argument(
        "--report",
        default="",
        metavar="DIR",
        help="only print the report of an earlier run's output folder",
    )
    return parser


def main() -> None:
    args = _parser().parse_args()
    if args.report:
        out = Path(args.report)
        templates = sorted(p.parent.name for p in out.glob(f"*/{EXCHANGES}"))
        templates = templates or sorted(p.name for p in out.iterdir() if (p / "project").is_dir())
        if not templates:
            raise SystemExit(f"{out}: no <template>/{EXCHANGES} or <template>/project inside")
        report(out, templates)
        if args.record:
            record(out, templates, Path(args.record))
        return
    if not args.model:
        raise SystemExit(
            "--model: give a litellm model string, e.g. openai/qwen-coder (or set LABTUI_MODEL)"
        )
    args.out = args.out or tempfile.mkdtemp(prefix="labtui-real-")
    templates = [t.strip() for t in args.templates.split(",") if t.strip()]
    with arxiv_server(args.arxiv) as arxiv_url:
        for template in templates:
            meta = run_template(args, template, arxiv_url)
            print(
                f"[{template}] done: exit {meta['run_returncode']}, {meta['run_s']:.0f} s, "
                f"{meta['exchanges']} exchanges",
                flush=True,
            )
    report(Path(args.out), templates)
    if args.record:
        record(Path(args.out), templates, Path(args.record))


if __name__ == "__main__":
    main()
