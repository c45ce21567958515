"""``labtui attach``, ``labtui run --detach``, ``labtui status`` and ``labtui stop``: the commands
of a run that lives in a background engine (core/engine/host.py) rather than in the terminal."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.engine import files as engine_files
from labtui.core.engine.status import ProjectStatus, project_status
from labtui.core.errors import LabtuiError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
KILL_WAIT_S = 10.0


def say(text: str) -> None:
    print(f"labtui: {text}", file=sys.stderr)


def cmd_attach(root: Path, *, headless: bool, auto: bool, parallel: int | None = None) -> int:
    """Follow the project's engine (started first when none runs) in the app or headless."""
    root = root.resolve()
    info = engine_files.find_engine(root)
    if info is None:
        problem = _start(root, auto=auto, parallel=parallel, app_on_no_model=not headless)
        if problem is not None:
            return problem
    elif auto and not info.auto:
        say("the engine runs without --auto: its checkpoints wait for an answer")
    from .remote_session import RemoteSession

    session = RemoteSession.attach(root)
    return _follow_headless(session) if headless else _follow_in_app(session)


def cmd_run_detached(root: Path, *, auto: bool, parallel: int | None = None) -> int:
    """Start the engine and return at once; the run goes on without a terminal."""
    root = root.resolve()
    info = engine_files.find_engine(root)
    if info is not None:
        say(f"an engine already runs for {root} (pid {info.pid}); follow it: labtui attach {root}")
        return EXIT_OK
    problem = _start(root, auto=auto, parallel=parallel, app_on_no_model=False)
    if problem is not None:
        return problem
    info = engine_files.read_info(root)
    pid = info.pid if info else "?"
    print(
        f"labtui: the run goes on in the background (engine pid {pid}, log "
        f"{engine_files.log_path(root)})\n"
        f"  follow it: labtui attach {root}\n"
        f"  where it stands: labtui status {root}\n"
        f"  stop it at a safe point: labtui stop {root}"
    )
    return EXIT_OK


def _start(root: Path, *, auto: bool, parallel: int | None, app_on_no_model: bool) -> int | None:
    """Check here what would stop the engine at once (the project, its model), then start it.
    An exit code when it was not started, else None."""
    from labtui.core.engine.host import start_engine
    from labtui.core.pipeline.session import Session

    session = Session.open(root)
    try:
        problems = session.model_problems()
    finally:
        session.journal.close()
    if problems and app_on_no_model:
        from .cli import _run_app

        return _run_app(session, auto)  # the app's no-model screen says what to set
    if problems:
        from .model_help import MODEL_HELP

        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        print("\n" + MODEL_HELP, file=sys.stderr)
        return EXIT_USAGE
    info, _process = start_engine(root, auto=auto, parallel=parallel)
    say(f"started the engine for {root} (pid {info.pid})")
    return None


def _follow_in_app(session) -> int:
    from .cli import _run_app

    return _run_app(session, False)  # the engine answers --auto itself


class WatchOnly:
    """The port of a follower that cannot answer (stdin is no terminal): a checkpoint is said
    (unless ``quiet``), and waits for a front end that can answer it."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def ask(self, request: CheckpointRequest) -> Decision:
        if not self.quiet:
            say(f"{request.title}: waiting for an answer from a terminal (labtui attach)")
        raise LabtuiError("this front end only watches")


def _follow_headless(session) -> int:
    """Print the journal so far (without log lines), then live events; answer checkpoints on
    the terminal when stdin is one. Ctrl-C detaches: the run goes on."""
    from .headless import HeadlessPrinter, TerminalCheckpointPort

    replayed = HeadlessPrinter(show_logs=False)
    for event in session.history():
        replayed(event)
    print("── live ──", flush=True)
    session.bus.subscribe(HeadlessPrinter())
    tty = sys.stdin.isatty()
    port = TerminalCheckpointPort(root=session.project_root) if tty else WatchOnly()
    try:
        outcome = session.run(port)
    except KeyboardInterrupt:
        session.detach()
        say(f"detached; the run goes on. Follow it again: labtui attach {session.project_root}")
        return EXIT_OK
    print(f"pipeline {outcome}")
    return EXIT_OK if outcome in ("finished", "detached") else EXIT_FAILED


# -- status -----------------------------------------------------------------------------------


def cmd_status(directories: list[Path]) -> int:
    roots = [d.resolve() for d in directories] or _known_projects()
    if not roots:
        print("no labtui project here, and no engine runs (labtui status DIR for a project)")
        return EXIT_OK
    for root in roots:
        if not (root / "labtui.toml").exists():
            print(f"{root}: not a labtui project (no labtui.toml)")
            continue
        print(status_line(project_status(root)))
    return EXIT_OK


def _known_projects() -> list[Path]:
    """The project in the current folder, and every project whose engine runs."""
    here = [Path.cwd().resolve()] if Path("labtui.toml").exists() else []
    return list(dict.fromkeys(here + [r.resolve() for r in engine_files.registered_roots()]))


def status_line(status: ProjectStatus) -> str:
    if status.running:
        auto = ", --auto" if status.auto else ""
        state = f"running (engine pid {status.pid}{auto})"
        where = f"stage {status.stage}" if status.stage else "between stages"
        if status.waiting:
            where += f" · checkpoint waiting: {status.waiting}"
    else:
        ended = f", last run {status.outcome}" if status.outcome else ""
        state = f"not running{ended}"
        where = f"next: {status.next_stage}" if status.next_stage else status.end_state
    money = f"${status.spent_usd:.4f} of ${status.budget_usd:.2f}"
    age = status.last_event_age_s
    last = "no events yet" if age is None else f"last event {_ago(age)}"
    return f"{status.root}\n  {state} · {where} · {money} · {last}"


def _ago(seconds: float) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


# -- stop -------------------------------------------------------------------------------------


def cmd_stop(root: Path, *, now: bool) -> int:
    root = root.resolve()
    info = engine_files.find_engine(root)
    if info is None:
        last = engine_files.read_last_outcome(root).get("outcome")
        ended = f" (its last run: {last})" if last else ""
        print(f"no engine runs for {root}{ended}: nothing to stop")
        return EXIT_OK
    if now:
        return _stop_now(root, info.pid)
    return _stop_at_safe_point(root, info.pid)


def _stop_at_safe_point(root: Path, pid: int) -> int:
    from labtui.core.events import Event, StageFinished, StageStarted

    from .remote_session import RemoteSession

    session = RemoteSession.attach(root, replay=False)
    print(f"stopping the engine (pid {pid}) at its next safe point …", flush=True)

    def progress(event: Event) -> None:
        if isinstance(event, StageStarted | StageFinished):
            print(f"  {event.stage}: {event.type}", flush=True)

    session.bus.subscribe(progress)
    session.request_stop()
    try:
        outcome = session.run(WatchOnly(quiet=True))  # a question open now ends unanswered
    except KeyboardInterrupt:
        session.detach()
        print("left; the engine still stops at its next safe point (labtui status)")
        return EXIT_OK
    print(f"engine ended: {outcome}; the project is resumable: labtui attach {root}")
    return EXIT_OK


def _stop_now(root: Path, pid: int) -> int:
    killed = engine_files.kill_engine_tree(pid)
    deadline = time.monotonic() + KILL_WAIT_S
    while engine_files.engine_running(root):  # the kernel drops its lock as it dies
        if time.monotonic() > deadline:
            print(f"error: the engine (pid {pid}) still holds its lock after SIGKILL")
            return EXIT_FAILED
        time.sleep(0.05)
    engine_files.remove_engine_files(root)
    engine_files.write_last_outcome(root, "killed", pid)
    print(
        f"killed the engine (pid {pid}) and {killed} process(es) under it; "
        f"the project is resumable: labtui attach {root}"
    )
    return EXIT_OK
