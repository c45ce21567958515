"""What the ``labtui`` commands share: exit codes (tui/exit_status.py, read from here), the
argument types and options of more than one command, the baseline run of ``new`` and
``init``, and starting the app or a background engine (``run`` and ``attach``).

Imported for ``labtui --help``: only the standard library (not even ``typing``) and the text of
``model_help`` at module top; the engine, rich and Textual are imported by the function that needs
them.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from ..exit_status import EXIT_FAILED, EXIT_OK, EXIT_USAGE  # the commands read them from here
from ..model_help import MODEL_HELP

# typing.TYPE_CHECKING without importing typing, which would cost `labtui --help` ~3 ms; the
# command modules read it from here
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from labtui.core.workspace.project import Project

    from ..session import Session

    class Command(Protocol):
        """A command module: its name on the command line, its subparser, and what it runs."""

        NAME: str

        def add_parser(self, subparsers: Subparsers) -> None: ...

        def run(self, args: argparse.Namespace) -> int: ...


# what add_parser is given: argparse's own (private) type of `add_subparsers()`
Subparsers = argparse._SubParsersAction


# -- options of more than one command -------------------------------------------------------------

CLUSTERS = ("local", "slurm")
CLUSTER_HELP = (
    "where runs execute for this session: on this machine, or as Slurm jobs "
    "(default: [cluster] backend)"
)
PARALLEL_HELP = "run up to K ideas' experiments at once, each in its own git worktree (default: [experiment] parallel)"


def count_of(what: str, metavar: str, least: int = 1):
    """An argparse type: a whole number of ``what``, ``least`` or more, said clearly otherwise."""

    def count(text: str) -> int:
        if not text.isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(
                f"{metavar} must be a whole number of {what}, {least} or more, not {text!r}"
            )
        return int(text)

    return count


ideas_at_once = count_of("ideas", "K")


def add_run_options(parser: argparse.ArgumentParser, *, cluster_default: object) -> None:
    """How a run goes (--auto, --parallel K, --cluster), given before any command or to `run`."""
    parser.add_argument("--auto", action="store_true", help="never pause at checkpoints")
    parser.add_argument(
        "--parallel", type=ideas_at_once, default=None, metavar="K", help=PARALLEL_HELP
    )
    parser.add_argument("--cluster", choices=CLUSTERS, default=cluster_default, help=CLUSTER_HELP)


def add_project_dir(parser: argparse.ArgumentParser) -> None:
    """The optional project folder of a command that works on one project."""
    parser.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")


def project_dir(args: argparse.Namespace) -> Path:
    """The project folder a command names, else -C's (default: .)."""
    return Path(args.dir or args.directory)


def say(text: str) -> None:
    print(f"labtui: {text}", file=sys.stderr)


def problems_after_local_set_up(session: Session) -> list[str]:
    """What keeps the models from answering, after labtui's own local model was set up here
    (its build and download drawn with Rich) where that is what was missing."""
    problems = session.model_problems()
    offer = session.local_model_offer() if problems else None
    if offer is None:
        return problems
    say(
        f"no model configured: setting up labtui's own local model {offer.title} — "
        + "; ".join(offer.todo)
        + " (set LABTUI_MODEL to use another; [models] local = false turns this off)"
    )
    from ..model_progress import SetUpProgress

    with SetUpProgress() as progress:
        offer.set_up(progress)
    return session.model_problems()


def say_model_problems(problems: list[str]) -> int:
    """Each problem with the model settings, then how to set a model: EXIT_USAGE."""
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print("\n" + MODEL_HELP, file=sys.stderr)
    return EXIT_USAGE


# -- what runs ------------------------------------------------------------------------------------


def run_baseline_and_say(project: Project) -> int:
    """run_0 with the project's code, printed as it goes and journaled; the next step said."""
    from labtui.core.events import Bus
    from labtui.core.journal import Journal
    from labtui.core.steps.baseline import run_baseline

    from ..headless import HeadlessPrinter

    bus = Bus()
    journal = Journal(project.state_dir)
    bus.subscribe(journal.append)
    bus.subscribe(HeadlessPrinter())
    try:
        result = run_baseline(project, bus.emit)
    finally:
        journal.close()
    if not result.ok:
        from labtui.core.settings.contract import run_argv

        command = " ".join(run_argv(project.config.experiment, "python", "run_0"))
        print(f"error: the baseline run_0 failed: {result.problem}", file=sys.stderr)
        print(f"  fix: make `{command}` work in the project, then `labtui run`", file=sys.stderr)
        return EXIT_FAILED
    print(f"baseline run_0 done in {result.wall_s:.1f} s: {result.means}")
    print(f"next: cd {project.root} && labtui")
    return EXIT_OK


def run_app(session: Session, auto: bool) -> int:
    """The app on ``session`` (in this process, or following an engine) until it is left."""
    # Importing Textual makes hundreds of thousands of objects that live as long as the app;
    # without this, full garbage collections walk them all during the first paint (~50 ms here).
    gc.disable()
    from ..app import run_tui

    gc.freeze()
    gc.enable()
    return run_tui(session, auto=auto)


def start_engine(
    root: Path, *, auto: bool, parallel: int | None, app_on_no_model: bool
) -> int | None:
    """Check here what would stop the engine at once (the project, its model), then start it.
    An exit code when it was not started, else None."""
    from labtui.core.engine.host import start_engine as start
    from labtui.core.pipeline.session import Session

    session = Session.open(root)
    try:
        if app_on_no_model:
            problems = session.model_problems()
        else:
            problems = problems_after_local_set_up(session)
    finally:
        session.journal.close()
    if problems and app_on_no_model:
        return run_app(session, auto)  # the app's no-model screen says what to set
    if problems:
        return say_model_problems(problems)
    info, _process = start(root, auto=auto, parallel=parallel)
    say(f"started the engine for {root} (pid {info.pid})")
    return None
