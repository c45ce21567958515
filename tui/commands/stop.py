"""``labtui stop``: the project's engine stopped at its next safe point, or killed at once with
its experiments (``--now``); either way the project stays resumable."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .attach import WatchOnly
from .common import EXIT_FAILED, EXIT_OK, Subparsers, add_project_dir, project_dir

NAME = "stop"
KILL_WAIT_S = 10.0


def add_parser(subparsers: Subparsers) -> None:
    stop = subparsers.add_parser(NAME, help="stop the project's engine at its next safe point")
    add_project_dir(stop)
    stop.add_argument(
        "--now", action="store_true",
        help="kill the engine and its experiments at once (the project stays resumable)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return cmd_stop(project_dir(args), now=args.now)


def cmd_stop(root: Path, *, now: bool) -> int:
    from labtui.core.engine import files as engine_files

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

    from ..remote_session import RemoteSession

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
    from labtui.core.engine import files as engine_files

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
