"""``labtui attach`` (and ``labtui`` with no command): follow the project's background engine
(core/engine/host.py), in the app or headless. When none runs, headless starts it first; the app
paints first and starts it once the model is checked (tui/starting_session.py). Leaving
detaches; the run goes on."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (
    EXIT_FAILED,
    EXIT_OK,
    TYPE_CHECKING,
    Subparsers,
    add_project_dir,
    project_dir,
    run_app,
    say,
    start_engine,
)

if TYPE_CHECKING:
    from typing import Any

    from labtui.core.checkpoints import CheckpointRequest, Decision
    from labtui.core.pipeline.session import Session as ProjectSession

    from ..session import Session

NAME = "attach"


def add_parser(subparsers: Subparsers) -> None:
    attach = subparsers.add_parser(
        NAME,
        help="follow the project's background engine (starting one when none runs); "
        "leaving detaches, the run goes on",
    )
    add_project_dir(attach)
    attach.add_argument("--headless", action="store_true", help="print events instead of the app")
    attach.add_argument("--auto", action="store_true", help="a new engine never pauses")


def run(args: argparse.Namespace) -> int:
    return cmd_attach(project_dir(args), headless=args.headless, auto=args.auto)


def cmd_attach(root: Path, *, headless: bool, auto: bool, parallel: int | None = None) -> int:
    """Follow the project's engine (started first when none runs) in the app or headless."""
    from labtui.core.engine import files as engine_files

    root = root.resolve()
    info = engine_files.find_engine(root)
    if info is None and not headless:
        return run_app(starting_session(root, auto=auto, parallel=parallel), False)
    if info is None:
        problem = start_engine(root, auto=auto, parallel=parallel, app_on_no_model=False)
        if problem is not None:
            return problem
    elif auto and not info.auto:
        say("the engine runs without --auto: its checkpoints wait for an answer")
    from ..remote_session import RemoteSession

    session = RemoteSession.attach(root)
    if headless:
        return _follow_headless(session)
    return run_app(session, False)  # the engine answers --auto itself


def starting_session(root: Path, *, auto: bool, parallel: int | None) -> Session:
    """The app's session on a project with no engine: painted at once, the project opened
    after the first frame, the engine started once the model is checked
    (tui/starting_session.py). A folder that is no project is said here, before any app."""
    from labtui.core.settings import CONFIG_NAME

    from ..starting_session import StartingSession

    if not (root / CONFIG_NAME).exists():
        open_project(root)  # raises the error that says what to do

    def start(where: Path) -> object:
        from labtui.core.engine.host import start_engine

        return start_engine(where, auto=auto, parallel=parallel)

    return StartingSession(root, open_project, start)


def open_project(root: Path) -> ProjectSession:
    from labtui.core.pipeline.session import Session as ProjectSession

    return ProjectSession.open(root)


class WatchOnly:
    """The port of a follower that cannot answer (stdin is no terminal): a checkpoint is said
    (unless ``quiet``), and waits for a front end that can answer it."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def ask(self, request: CheckpointRequest) -> Decision:
        from labtui.core.errors import LabtuiError

        if not self.quiet:
            say(f"{request.title}: waiting for an answer from a terminal (labtui attach)")
        raise LabtuiError("this front end only watches")


def _follow_headless(session: Any) -> int:
    """Print the journal so far (without log lines), then live events; answer checkpoints on
    the terminal when stdin is one. Ctrl-C detaches: the run goes on."""
    from ..headless import HeadlessPrinter, TerminalCheckpointPort

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
