"""``labtui new``: a project from a template (its baseline run at once), or from a topic alone."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, Subparsers, run_baseline_and_say

NAME = "new"


def add_parser(subparsers: Subparsers) -> None:
    new = subparsers.add_parser(
        NAME,
        help="create a project from a template (and run its baseline), or from a topic alone",
    )
    new.add_argument("dir", help="folder to create")
    new.add_argument(
        "--template", "-t", default=None,
        help="built-in template name or folder (default: moons; none with --idea alone: the "
        "agents write the code for the topic)",
    )  # fmt: skip
    new.add_argument("--idea", default="", help="your idea, or the topic when there is no template")
    new.add_argument("--notes", type=Path, default=None, help="a file of notes for the agents")
    new.add_argument(
        "--data", action="append", default=[], metavar="PATH",
        help="a local data file or folder the agents may use (repeatable)",
    )  # fmt: skip
    new.add_argument("--no-baseline", action="store_true", help="skip running run_0 now")


def run(args: argparse.Namespace) -> int:
    from labtui.core.workspace.project import Project

    if args.template is None and args.idea:
        notes = _notes(args.notes)
        project = Project.create_from_topic(Path(args.dir), args.idea, notes=notes, data=args.data)
        print(f"created {project.root} from the topic; no code yet")
        print(
            "  once an idea is chosen, the agents write prepare.py, experiment.py and plot.py\n"
            f"  for it (each a commit) and run its baseline. next: cd {project.root} && labtui"
        )
        return EXIT_OK
    template = args.template or "moons"
    project = Project.create(Path(args.dir), template, idea=args.idea)
    print(f"created {project.root} from template {template}")
    if args.no_baseline:
        return EXIT_OK
    return run_baseline_and_say(project)


def _notes(path: Path | None) -> str:
    from labtui.core.errors import LabtuiError

    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabtuiError(f"cannot read the notes {path}: {exc}", "pass a text file") from None
