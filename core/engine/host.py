"""The background engine: one process per project that runs a Session and outlives the terminal.

``labtui run --detach`` (and ``labtui``/``labtui attach`` when none runs) starts it with
``start_engine``: in a session of its own, stdin from /dev/null, output to ``.labtui/engine.log``,
SIGHUP ignored. It serves a unix socket (``core.engine.files`` says where and who may connect)
and speaks ``core.engine.wire``: each front end that attaches gets the journal so far, then every
event as it is emitted, with nothing lost or repeated between the two. Checkpoints wait for
whoever is attached (or attaches later); the first answer wins and the others are told.

Each front end is served by ``core.engine.front_ends``; a slow one never slows the run.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ..checkpoints import REWIND, AutoApprove, CheckpointRequest, Decision
from ..errors import Aborted, LabtuiError
from ..events import ErrorEvent, Event
from ..journal import JOURNAL_NAME
from ..pipeline.session import Session
from . import files as files
from .front_ends import OUTBOX_LIMIT, AttachedClient, decode_attach
from .wire import (
    CLIENT_KINDS,
    PROTOCOL,
    LineReader,
    WireError,
    decision_of,
    encode,
    request_message,
)

GREETING_TIMEOUT_S = 10.0  # a connection that says nothing is closed
FAREWELL_TIMEOUT_S = 5.0  # how long the end of a run waits for front ends to read it
READY_TIMEOUT_S = 60.0
STOPPED_HINT = "the project is resumable: labtui attach (or labtui run) asks it again"


class _Pending:
    """A checkpoint waiting for its first answer (None: released unanswered by a stop)."""

    def __init__(self, request: CheckpointRequest) -> None:
        self.request = request
        self.decision: Decision | None = None
        self._given = threading.Event()

    def give(self, decision: Decision | None) -> None:
        self.decision = decision
        self._given.set()

    def wait(self) -> Decision | None:
        self._given.wait()
        return self.decision


class EngineHost:
    """Serves one Session to the front ends attached to it; also its CheckpointPort."""

    def __init__(self, session: Session, *, auto: bool) -> None:
        self.session = session
        self.auto = auto
        self.unattended = auto  # the session reads it from its port, as it does AutoApprove's
        self.journal_path = session.project.state_dir / JOURNAL_NAME
        self._lock = threading.Lock()
        self._clients: set[AttachedClient] = set()
        self._pending: _Pending | None = None
        self._stopping = False
        self._ended: bytes | None = None
        self._journal_size = self._size_of_journal()
        # After the journal (subscribed by Session): an event is on disk before it is sent.
        session.bus.subscribe(self._on_event)

    def _size_of_journal(self) -> int:
        try:
            return self.journal_path.stat().st_size
        except FileNotFoundError:
            return 0

    def hello(self) -> bytes:
        session = self.session
        return encode(
            "hello",
            protocol=PROTOCOL,
            project_name=session.project_name,
            project_root=str(session.project_root),
            budget_usd=session.budget_usd,
            stage_models=session.stage_models(),
            model_problems=[],  # checked before the run starts; problems end it with errors
            auto=self.auto,
            pid=os.getpid(),
            cluster=session.cluster,
        )

    # -- events out ------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        data = event.to_dict()
        with self._lock:
            # The bus delivers one event at a time, journal first: the file now ends with it.
            self._journal_size = self._size_of_journal()
            for client in list(self._clients):
                self._offer(client, data)

    def _offer(self, client: AttachedClient, item: bytes | dict[str, Any]) -> None:
        """Queue for one front end (the lock held); one too far behind is dropped."""
        if not client.outbox.offer(item):
            self._clients.discard(client)
            print(f"engine: a front end fell {OUTBOX_LIMIT} messages behind; dropped", flush=True)
            client.close()

    def _broadcast(self, message: bytes) -> None:
        for client in list(self._clients):
            self._offer(client, message)

    # -- front ends ------------------------------------------------------------------------

    def greet(self, conn: socket.socket) -> None:
        """A new connection: the owner's only; it says ``attach`` first, then it is served."""
        why = files.refusal(files.peer_uid(conn), os.getuid())
        if why:
            print(f"engine: {why}", flush=True)
            _send_and_close(conn, encode("refused", message=why))
            return
        conn.settimeout(GREETING_TIMEOUT_S)
        reader = LineReader(conn, CLIENT_KINDS)
        try:
            line = reader.read_line()
            first = None if line is None else decode_attach(line)
        except (WireError, OSError) as exc:
            _send_and_close(conn, encode("refused", message=f"no attach message: {exc}"))
            return
        if first is None:
            conn.close()
            return
        conn.settimeout(None)
        self.attach(conn, reader, replay=bool(first.get("replay", True)))

    def attach(self, conn: socket.socket, reader: LineReader, *, replay: bool) -> None:
        client = AttachedClient(conn, self)
        hello = self.hello()
        with self._lock:
            replay_to = self._journal_size if replay else None
            if self._ended is not None:
                client.outbox.offer(self._ended)
                client.outbox.close()
            else:
                self._clients.add(client)
                if self._pending is not None:
                    client.outbox.offer(request_message(self._pending.request))
        client.start(hello, replay_to, reader)

    def forget(self, client: AttachedClient) -> None:
        with self._lock:
            self._clients.discard(client)

    def handle(self, client: AttachedClient, message: dict[str, Any]) -> None:
        kind = message["kind"]
        if kind == "answer":
            self.answer(client, message)
        elif kind == "note":
            self.session.leave_note(str(message.get("text", "")))
        elif kind == "stop":
            self.stop()
        elif kind in ("interrupt", "rewind"):
            self._forward(client, kind, message)
        else:
            client.outbox.offer(encode("error", message=f"{kind!r} is only the first message"))

    def _forward(self, client: AttachedClient, kind: str, message: dict[str, Any]) -> None:
        """Escape and rewind go to the session, where this labtui has them."""
        method = getattr(
            self.session, "interrupt" if kind == "interrupt" else "request_rewind", None
        )
        arguments = [] if kind == "interrupt" else [str(message.get("stage", ""))]
        try:
            if method is None:
                raise LabtuiError(f"this engine cannot {kind}", "update labtui")
            if method(*arguments) is False:  # interrupt: nothing was under way
                client.outbox.offer(encode("error", message="nothing under way to interrupt"))
        except LabtuiError as exc:
            client.outbox.offer(encode("error", message=f"{exc.message} ({exc.hint})"))

    # -- checkpoints -----------------------------------------------------------------------

    def ask(self, request: CheckpointRequest) -> Decision:
        """The CheckpointPort of the run: approved at once with --auto, else sent to every
        front end attached now or later, and the first answer taken."""
        if self.auto:
            return AutoApprove().ask(request)
        pending = _Pending(request)
        with self._lock:
            if self._stopping:
                raise Aborted("stopped while a checkpoint was being asked", STOPPED_HINT)
            if self._pending is not None:  # decided without us (a rewind the session was asked)
                self._pending.give(None)
            self._pending = pending
            self._broadcast(request_message(request))
        decision = pending.wait()
        if decision is None:
            raise Aborted("stopped while a checkpoint waited for an answer", STOPPED_HINT)
        return decision

    def answer(self, client: AttachedClient, message: dict[str, Any]) -> None:
        checkpoint_id = str(message.get("checkpoint_id", ""))
        with self._lock:
            pending = self._pending
            if pending is None or pending.request.checkpoint_id != checkpoint_id:
                self._offer(
                    client, encode("error", message=f"{checkpoint_id} was already answered")
                )
                return
            try:
                decision = decision_of(message)
                if not offers(pending.request, decision):
                    raise WireError(
                        f"{checkpoint_id} does not offer {decision.action!r} "
                        f"(it offers {', '.join(pending.request.options)})"
                    )
            except WireError as exc:
                self._offer(client, encode("error", message=str(exc)))
                return
            self._pending = None
            pending.give(decision)
            self._broadcast(encode("answered", checkpoint_id=checkpoint_id, action=decision.action))

    def stop(self) -> None:
        """Stop at the next safe point; a checkpoint waiting now ends unanswered (resume asks it
        again), as when the app quits in front of one."""
        self.session.request_stop()
        with self._lock:
            self._stopping = True
            pending, self._pending = self._pending, None
        if pending is not None:
            pending.give(None)

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> tuple[str, str]:
        """Run the session; its outcome and, where it did not finish well, what to read."""
        try:
            problems = self.session.model_problems()
            if problems:
                for problem in problems:
                    self.session.emit(ErrorEvent(message=problem, hint="see labtui doctor"))
                self.session.journal.close()
                return "failed", "; ".join(problems)
            return self.session.run(self), ""
        except LabtuiError as exc:
            return "failed", f"{exc.message} ({exc.hint})" if exc.hint else exc.message
        except Exception:
            print(traceback.format_exc(), flush=True)
            return "crashed", f"the engine crashed: {sys.exc_info()[1]!r}; see {files.LOG_NAME}"

    def serve(self, server: socket.socket) -> str:
        """Accept front ends while the run goes on; when it ends, tell them and return."""
        wake_r, wake_w = os.pipe()
        result: list[tuple[str, str]] = []

        def pipeline() -> None:
            try:
                result.append(self.run())
            except BaseException as exc:
                # Without a result the loop below would wait on a wake byte it never reads:
                # select answers at once, forever (an engine seen spinning at 70% of a CPU).
                print(traceback.format_exc(), flush=True)
                result.append(("crashed", f"the engine's pipeline ended: {exc!r}"))
            finally:
                os.write(wake_w, b".")

        threading.Thread(target=pipeline, name="pipeline", daemon=True).start()
        with selectors.DefaultSelector() as selector:
            selector.register(server, selectors.EVENT_READ)
            selector.register(wake_r, selectors.EVENT_READ)
            while not result:
                for key, _ in selector.select():
                    if key.fileobj is server:
                        self._accept(server)
        os.close(wake_r)
        os.close(wake_w)
        outcome, message = result[0]
        self._say_ended(outcome, message)
        return outcome

    def _accept(self, server: socket.socket) -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=self.greet, args=(conn,), name="engine-greet", daemon=True).start()

    def _say_ended(self, outcome: str, message: str) -> None:
        with self._lock:
            self._ended = encode("ended", outcome=outcome, message=message)
            clients = list(self._clients)
            for client in clients:
                self._offer(client, self._ended)
                client.outbox.close()
        deadline = time.monotonic() + FAREWELL_TIMEOUT_S
        for client in clients:
            client.wait_closed(max(0.0, deadline - time.monotonic()))


def offers(request: CheckpointRequest, decision: Decision) -> bool:
    """Whether ``decision`` answers ``request``: one of its options, or a rewind to a named
    stage (which may answer any question, as Checkpoints allows)."""
    return decision.action in request.options or (
        decision.action == REWIND and bool(decision.to_stage)
    )


def _send_and_close(conn: socket.socket, message: bytes) -> None:
    try:
        conn.sendall(message)
    except OSError:
        pass
    conn.close()


# -- the process -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m labtui.core.engine.host DIR [--auto] [--parallel K] [--ready-fd N]``."""
    parser = argparse.ArgumentParser(prog="labtui-engine")
    parser.add_argument("root", type=Path)
    parser.add_argument("--auto", action="store_true")
    parser.add_argument("--parallel", type=int, default=None)
    parser.add_argument("--ready-fd", type=int, default=-1)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal that started it may go
    root = args.root.resolve()
    print(f"engine: pid {os.getpid()} starting on {root} at {time.ctime()}", flush=True)
    try:
        session = Session.open(root)
        lock = files.hold_engine_lock(root)
    except LabtuiError as exc:
        print(f"engine: error: {exc.message}\n  fix: {exc.hint}", flush=True)
        return 2
    if args.parallel is not None:
        session.config.experiment.parallel = args.parallel
    auto = args.auto or session.config.autonomy.mode == "auto"
    host = EngineHost(session, auto=auto)
    for sig in (signal.SIGTERM, signal.SIGINT):
        # A thread, not the handler itself: the handler may interrupt a holder of host's lock.
        signal.signal(sig, lambda *_: threading.Thread(target=host.stop, daemon=True).start())
    outcome = "crashed"
    try:
        files.remove_engine_files(root)  # a dead engine's, since the lock is ours now
        path = files.socket_path(root)
        server = files.bind_private_socket(path)
        info = files.EngineInfo(os.getpid(), str(path), time.time(), auto, str(root))
        files.write_atomically(files.info_path(root), info.to_json())
        files.register(info)
        _say_ready(args.ready_fd)
        outcome = host.serve(server)
        server.close()
    finally:
        files.write_last_outcome(root, outcome, os.getpid())
        files.remove_engine_files(root)
        lock.close()
    print(f"engine: {outcome} at {time.ctime()}", flush=True)
    return 0 if outcome in ("finished", "stopped") else 1


def _say_ready(fd: int) -> None:
    if fd >= 0:
        os.write(fd, b"ready\n")
        os.close(fd)


def start_engine(
    root: Path, *, auto: bool = False, parallel: int | None = None
) -> tuple[files.EngineInfo, subprocess.Popen[bytes]]:
    """Start a project's engine in the background and wait until it serves; its engine.json and
    process. LabtuiError with the log's last lines when it could not start."""
    root = Path(root).resolve()
    files.state_dir(root).mkdir(parents=True, exist_ok=True)
    ready_r, ready_w = os.pipe()
    argv = [sys.executable, "-u", "-m", "labtui.core.engine.host", str(root)]
    argv += ["--auto"] if auto else []
    argv += ["--parallel", str(parallel)] if parallel is not None else []
    argv += ["--ready-fd", str(ready_w)]
    with files.log_path(root).open("ab") as log:
        process = subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # setsid: no terminal, no SIGHUP when the terminal goes
            pass_fds=(ready_w,),
        )
    os.close(ready_w)
    try:
        ready = _wait_ready(ready_r, READY_TIMEOUT_S)
    finally:
        os.close(ready_r)
    info = files.read_info(root)
    if not ready or info is None or info.pid != process.pid:
        raise LabtuiError(
            f"the engine for {root} did not start: {_log_tail(root)}",
            f"read {files.log_path(root)}",
        )
    return info, process


def _wait_ready(fd: int, timeout: float) -> bool:
    """True once the engine says it serves; False if it exits (the pipe closes) or times out."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        if not selector.select(timeout):
            return False
    return os.read(fd, 16).startswith(b"ready")


def _log_tail(root: Path, lines: int = 6) -> str:
    try:
        text = files.log_path(root).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "no log"
    return " | ".join(line for line in text.splitlines()[-lines:] if line.strip())


if __name__ == "__main__":
    sys.exit(main())
