"""The ``labtui`` command: the parser assembled from the command modules (tui/commands/), the
options every command reads, and what is said when a command fails. Imports stay lazy so that
``labtui --help`` answers at once: aider, litellm, textual and gitpython load only when a command
needs them, and even ``traceback`` (with linecache and tokenize, ~4 ms) only when there is a crash
to record.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from .commands import (
    attach,
    check,
    doctor,
    import_,
    init,
    model,
    new,
    review,
    rewind,
    run,
    status,
    stop,
    templates,
)
from .commands.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TYPE_CHECKING, add_run_options

if TYPE_CHECKING:
    from .commands.common import Command

# in the order `labtui --help` lists them
COMMANDS: tuple[Command, ...] = (
    new,
    init,
    import_,
    run,
    attach,
    status,
    stop,
    doctor,
    model,
    rewind,
    templates,
    review,
    check,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labtui",
        description="A terminal research co-pilot: ideas, experiments, paper and review. "
        "Without a command, opens the app on the project in the current folder.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("-C", dest="directory", default=".", help="project folder (default: .)")
    add_run_options(parser, cluster_default=None)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # labtui.core is imported once a command is known: `labtui --help` answers without it
    if args.version:
        from labtui.core import __version__  # noqa: PLC0415

        print(f"labtui {__version__}")
        return EXIT_OK
    from labtui.core.errors import LabtuiError  # noqa: PLC0415

    if args.cluster:
        # Read as [cluster] backend by this process and by an engine it starts (labtui.toml
        # keeps its own setting).
        os.environ["LABTUI_CLUSTER__BACKEND"] = args.cluster
    try:
        return dispatch(args)
    except LabtuiError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  fix: {exc.hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; the project is resumable with `labtui run`", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            return _internal_error()
        # a write to an open file names none: the project's folder, whose disk it is
        where = exc.filename or f"the disk of {Path(args.directory).resolve()}"
        print(f"error: the disk is full ({where})", file=sys.stderr)
        print(
            "  fix: free space there (old run folders, checkpoints, caches), then run labtui "
            "again: everything journaled so far is kept",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except Exception:
        return _internal_error()


def dispatch(args: argparse.Namespace) -> int:
    """The command named; without one, the app follows the project's engine."""
    for command in COMMANDS:
        if command.NAME == args.command:
            return command.run(args)
    return attach.cmd_attach(
        Path(args.directory), headless=False, auto=args.auto, parallel=args.parallel
    )


def _internal_error() -> int:
    """A bug in labtui: the traceback goes to a file, not on the screen."""
    import traceback  # noqa: PLC0415 -- ~3 ms with linecache and tokenize (module docstring)

    crash = Path.home() / ".cache" / "labtui" / "crash.log"
    crash.parent.mkdir(parents=True, exist_ok=True)
    crash.write_text(traceback.format_exc(), encoding="utf-8")
    print(f"internal error: {sys.exc_info()[1]!r}\n  details: {crash}", file=sys.stderr)
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
