"""``labtui run``: the pipeline from where the project stands — followed in the app (a background
engine runs it), started in the background (``--detach``), or run in this process with its events
printed (``--headless``, as scripts and CI want). Its exit status tells a finished pipeline whose
paper is incomplete (3) from one with every stage done (0): ``exit_status.RUN_EXIT_STATUSES``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..exit_status import RUN_EXIT_STATUSES, finished_exit
from .attach import cmd_attach
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    TYPE_CHECKING,
    Subparsers,
    add_project_dir,
    add_run_options,
    problems_after_local_set_up,
    project_dir,
    say,
    say_model_problems,
    start_engine,
)

if TYPE_CHECKING:
    from typing import Any

NAME = "run"


def add_parser(subparsers: Subparsers) -> None:
    run = subparsers.add_parser(
        NAME,
        help="run the pipeline from where the project stands",
        epilog=RUN_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the statuses one a line
    )
    add_project_dir(run)
    run.add_argument(
        "--headless", action="store_true",
        help="print events instead of the app, in this process (ends with the terminal)",
    )  # fmt: skip
    run.add_argument(
        "--detach", action="store_true",
        help="run in a background engine and return at once (labtui attach follows it)",
    )  # fmt: skip
    run.add_argument(
        "--estimate", action="store_true",
        help="print what the run is expected to take (time, tokens, dollars per stage) and stop: "
        "no model call, no run",
    )  # fmt: skip
    # SUPPRESS: `labtui --cluster slurm run` keeps the value the main parser read
    add_run_options(run, cluster_default=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    if args.estimate:
        return cmd_estimate(project_dir(args))
    return cmd_run(
        project_dir(args),
        headless=args.headless,
        auto=args.auto,
        parallel=args.parallel,
        detach=args.detach,
    )


def cmd_run(
    directory: Path,
    *,
    headless: bool,
    auto: bool,
    parallel: int | None = None,
    detach: bool = False,
) -> int:
    """The app follows a background engine (``--detach``: nothing follows it); ``--headless``
    runs the pipeline in this process, as scripts and CI want."""
    if detach:
        return cmd_run_detached(directory, auto=auto, parallel=parallel)
    if not headless:
        return cmd_attach(directory, headless=False, auto=auto, parallel=parallel)
    from labtui.core.pipeline.session import Session

    session = Session.open(directory)
    if parallel is not None:  # for this session only; labtui.toml keeps its own setting
        session.config.experiment.parallel = parallel
    return _run_headless(session, auto or session.config.autonomy.mode == "auto")


def cmd_estimate(directory: Path) -> int:
    """The estimate alone: read from the project's files, its journal and the model speeds in
    the user's cache; nothing is run and no model is asked."""
    from labtui.core.estimate.estimator import estimate_project
    from labtui.core.estimate.render import estimate_text
    from labtui.core.settings.config import load_config

    root = directory.resolve()
    print(estimate_text(estimate_project(root, load_config(root)), f"estimate for {root}"))
    return EXIT_OK


def cmd_run_detached(root: Path, *, auto: bool, parallel: int | None = None) -> int:
    """Start the engine and return at once; the run goes on without a terminal."""
    from labtui.core.engine import files as engine_files

    root = root.resolve()
    info = engine_files.find_engine(root)
    if info is not None:
        say(f"an engine already runs for {root} (pid {info.pid}); follow it: labtui attach {root}")
        return EXIT_OK
    problem = start_engine(root, auto=auto, parallel=parallel, app_on_no_model=False)
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


def _run_headless(session: Any, auto: bool) -> int:
    from labtui.core.checkpoints import AutoApprove
    from labtui.core.engine.status import paper_end_state, paper_open_problems

    from ..headless import HeadlessPrinter, TerminalCheckpointPort

    problems = problems_after_local_set_up(session)
    if problems:
        return say_model_problems(problems)
    if not auto and not sys.stdin.isatty():
        print(
            "error: checkpoints need a terminal to answer them, and stdin is not one\n"
            "  fix: run with --auto to approve every checkpoint, or run in a terminal",
            file=sys.stderr,
        )
        return EXIT_USAGE
    session.bus.subscribe(HeadlessPrinter())
    port = AutoApprove() if auto else TerminalCheckpointPort(root=session.project.root)
    _hang_up_like_ctrl_c()
    outcome = session.run(port)
    if outcome != "finished":
        print(f"pipeline {outcome}")
        return EXIT_FAILED
    open_problems = paper_open_problems(session.state)
    print(f"pipeline {outcome}: {paper_end_state(open_problems)}")
    return finished_exit(open_problems)


def _hang_up_like_ctrl_c() -> None:
    """A closed terminal (SIGHUP) ends an in-process run the way Ctrl-C does: its experiments
    stopped, the journal closed, the project resumable. (An engine run ignores SIGHUP.)"""
    import signal  # not for `labtui --help`

    def hung_up(signum, frame) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGHUP, hung_up)
