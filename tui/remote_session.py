"""A front end's view of a background engine: ``RemoteSession`` is the ``Session`` the app and the
headless printer already know, fed by the engine's socket instead of a pipeline in this process.

Attaching reads the hello and the journal's replay at once (``history()``); ``run`` then follows
the live events onto the local bus and answers checkpoints with the front end's own port, until
the engine says the run ended. Leaving (``detach``, or the terminal going away) closes only the
socket: the run goes on, and ``labtui attach`` follows it again.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

from labtui.core.checkpoints import CheckpointPort, CheckpointRequest
from labtui.core.engine import files as engine_files
from labtui.core.engine.wire import (
    ENGINE_KINDS,
    PROTOCOL,
    LineReader,
    WireError,
    answer_message,
    decode,
    encode,
    events_of,
    request_of,
)
from labtui.core.errors import LabtuiError
from labtui.core.events import Bus, ErrorEvent, Event, Notice
from labtui.core.workspace.history import CommitLog

DETACHED = "detached"
LOST_HINT = "labtui attach follows it again; labtui status says whether it still runs"


class NoEngine(LabtuiError):
    """No engine runs for the project."""


class EngineConnection:
    """A socket to an engine: messages out (from any thread), messages in (from one)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._reader = LineReader(sock, ENGINE_KINDS)
        self._send_lock = threading.Lock()

    @classmethod
    def open(cls, root: Path, *, replay: bool = True) -> tuple[EngineConnection, dict[str, Any]]:
        """Connect to the project's engine and say attach; the connection and its hello."""
        info = engine_files.find_engine(root)
        if info is None:
            raise NoEngine(f"no engine runs for {root}", f"start one: labtui run --detach {root}")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(info.socket)
        except OSError as exc:
            sock.close()
            raise NoEngine(
                f"the engine of {root} (pid {info.pid}) does not answer on {info.socket}: {exc}",
                "if it is stuck: labtui stop --now; the project stays resumable",
            ) from None
        connection = cls(sock)
        connection.send(encode("attach", protocol=PROTOCOL, replay=replay))
        hello = connection.receive()
        if hello is None or hello["kind"] == "refused":
            connection.close()
            why = hello.get("message", "") if hello else "it closed the connection"
            raise LabtuiError(f"the engine of {root} refused to attach: {why}", LOST_HINT)
        return connection, hello

    def send(self, data: bytes) -> None:
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except OSError as exc:
                raise LabtuiError(f"lost the connection to the engine: {exc}", LOST_HINT) from None

    def receive(self) -> dict[str, Any] | None:
        """The next message; None when the engine closed the connection."""
        line = self._reader.read_line()
        if line is None:
            return None
        return decode(line, ENGINE_KINDS)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class RemoteSession:
    """The ``Session`` protocol of tui/session.py, served by a background engine."""

    detachable = True  # the app's quit offers detach (the run goes on) beside stop

    def __init__(self, connection: EngineConnection, hello: dict[str, Any]) -> None:
        self._connection = connection
        self.project_name = str(hello["project_name"])
        self.project_root = Path(hello["project_root"])
        self.budget_usd = float(hello["budget_usd"])
        self.auto = bool(hello.get("auto", False))
        self.engine_pid = int(hello.get("pid", 0))
        self.cluster = str(hello.get("cluster", "local"))
        self._stage_models = dict(hello.get("stage_models") or {})
        self._model_problems = list(hello.get("model_problems") or [])
        self.bus = Bus()
        self._history = self._read_replay()
        self._detached = False
        self._asking = threading.Lock()  # one question at a time: a terminal reads one answer
        self._answered: set[str] = set()

    @classmethod
    def attach(cls, root: Path, *, replay: bool = True) -> RemoteSession:
        return cls(*EngineConnection.open(root, replay=replay))

    def _read_replay(self) -> list[Event]:
        history: list[Event] = []
        while (message := self._connection.receive()) is not None:
            if message["kind"] == "live":
                return history
            if message["kind"] == "replay":
                history += events_of(message)
        raise LabtuiError("the engine closed the connection while replaying", LOST_HINT)

    # -- what front ends read ---------------------------------------------------------------

    @property
    def commit_log(self) -> CommitLog:  # the project's git history, read here: same machine
        return CommitLog(self.project_root)

    def history(self) -> list[Event]:
        return list(self._history)

    def stage_models(self) -> dict[str, str]:
        return dict(self._stage_models)

    def model_problems(self) -> list[str]:
        return list(self._model_problems)

    def local_model_offer(self) -> None:
        return None  # the engine runs: its model was set up before it started

    # -- following the run --------------------------------------------------------------------

    def run(self, port: CheckpointPort) -> str:
        """Follow the engine until the run ends (its outcome) or this front end detaches
        ("detached"). LabtuiError when the connection is lost otherwise: the run goes on."""
        try:
            while (message := self._connection.receive()) is not None:
                outcome = self._dispatch(message, port)
                if outcome:
                    return outcome
        except (WireError, OSError):
            pass
        if self._detached:
            return DETACHED
        raise LabtuiError(
            "lost the connection to the engine (it stopped, or dropped this front end for "
            "falling behind); the run itself is not affected",
            LOST_HINT,
        )

    def _dispatch(self, message: dict[str, Any], port: CheckpointPort) -> str:
        """Handle one message; the run's outcome once it ended, else ''."""
        kind = message["kind"]
        if kind == "events":
            for event in events_of(message):
                self.bus.emit(event)
        elif kind == "checkpoint":
            self._ask_in_background(port, request_of(message))
        elif kind == "answered":
            self._answered.add(str(message.get("checkpoint_id", "")))
        elif kind == "error":
            self.bus.emit(Notice(text=f"the engine refused: {message.get('message', '')}"))
        elif kind == "ended":
            return self._ended(message)
        return ""

    def _ended(self, message: dict[str, Any]) -> str:
        outcome = str(message.get("outcome", "failed"))
        if message.get("message"):  # a failure before or around the stages: say it here too
            self.bus.emit(ErrorEvent(message=str(message["message"]), hint=LOST_HINT))
        return outcome if outcome in ("finished", "stopped", "failed") else "failed"

    def _ask_in_background(self, port: CheckpointPort, request: CheckpointRequest) -> None:
        """Ask the front end's port off the reading thread (events keep coming meanwhile) and
        send its answer; an answer that comes too late is refused by the engine and said."""

        def ask() -> None:
            with self._asking:
                if request.checkpoint_id in self._answered:
                    return
                try:
                    decision = port.ask(request)
                except LabtuiError:  # closed: answered elsewhere, or this front end is leaving
                    return
                if request.checkpoint_id not in self._answered:
                    self._send(answer_message(request.checkpoint_id, decision))

        threading.Thread(target=ask, name=f"ask-{request.checkpoint_id}", daemon=True).start()

    # -- steering -----------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        try:
            self._connection.send(data)
        except LabtuiError as exc:
            self.bus.emit(Notice(text=exc.message))

    def leave_note(self, text: str) -> None:
        if text.strip():
            self._send(encode("note", text=text))

    def request_stop(self) -> None:
        """Stop the run at its next safe point (a checkpoint waiting now ends unanswered)."""
        self._send(encode("stop"))

    def interrupt(self) -> bool:
        """Escape, sent to the engine; it says so (a Notice) when nothing was under way."""
        self._send(encode("interrupt"))
        return True

    def request_rewind(self, stage: str) -> None:
        self._send(encode("rewind", stage=stage))

    def detach(self) -> None:
        """Leave; the run goes on."""
        self._detached = True
        self._connection.close()
