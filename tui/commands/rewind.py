"""``labtui rewind STAGE``: the project back at the commit before STAGE started (the work after it
kept on a tag), directly or, when an engine runs the project, by that engine at a safe point."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import EXIT_OK, EXIT_USAGE, Subparsers, add_project_dir, project_dir

NAME = "rewind"


def add_parser(subparsers: Subparsers) -> None:
    rewind = subparsers.add_parser(
        NAME,
        help="return the project to the commit before STAGE started (the work after it is "
        "kept on a tag); the next run goes on from STAGE",
    )
    rewind.add_argument("stage", help="the stage to go back to (ideas, plan, experiments, …)")
    add_project_dir(rewind)


def run(args: argparse.Namespace) -> int:
    return cmd_rewind(project_dir(args), args.stage)


def cmd_rewind(directory: Path, stage: str) -> int:
    from labtui.core.engine import files as engine_files
    from labtui.core.pipeline.project_lock import rewind_project

    root = directory.resolve()
    if engine_files.engine_running(root):
        return _rewind_through_engine(root, stage)
    print(rewind_project(directory, stage))
    print(f"next: labtui run {directory} goes on from {stage}")
    return EXIT_OK


def _rewind_through_engine(root: Path, stage: str) -> int:
    """An engine runs the project: it rewinds at its next safe point (an open checkpoint, or
    between stages), which is the only way that keeps its journal and git in step."""
    from labtui.core.stage_list import STAGES

    from ..remote_session import RemoteSession

    if stage not in STAGES:
        print(f"error: unknown stage {stage!r}", file=sys.stderr)
        print(f"  fix: name one of {', '.join(STAGES)}", file=sys.stderr)
        return EXIT_USAGE
    session = RemoteSession.attach(root, replay=False)
    try:
        session.request_rewind(stage)
    finally:
        session.detach()
    print(f"asked the running engine to rewind to {stage} at its next safe point")
    print(f"next: labtui attach {root} to follow it")
    return EXIT_OK
