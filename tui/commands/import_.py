"""``labtui import``: results from before labtui, as evidence (core/onboarding/evidence.py): each
result file, or each row of a results table, an imported run with the commit of the code that made
it."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, Subparsers

NAME = "import"


def add_parser(subparsers: Subparsers) -> None:
    evidence = subparsers.add_parser(
        NAME, help="import earlier results as evidence (runs with their commit)"
    )
    evidence.add_argument("files", nargs="+", type=Path, help="result files or a results table")
    evidence.add_argument("--commit", default="", help="the commit of the code that made them")
    evidence.add_argument(
        "--source", default="", choices=["", "final_info", "json", "csv", "tensorboard", "wandb"],
        help="the kind of file (default: by its name)",
    )  # fmt: skip
    evidence.add_argument(
        "--metric", action="append", default=[], type=_metric, metavar="NAME=higher|lower",
        help="a metric to read (repeatable; default: [results] metrics)",
    )  # fmt: skip
    evidence.add_argument(
        "--table", default="", metavar="COLUMN",
        help="a CSV table of earlier runs, one per row, named by COLUMN",
    )  # fmt: skip


def _metric(text: str) -> tuple[str, str]:
    name, _, direction = text.partition("=")
    if not name or direction not in ("higher", "lower"):
        raise argparse.ArgumentTypeError(
            f"--metric {text!r}: write NAME=higher or NAME=lower (which way is better)"
        )
    return name, direction


def run(args: argparse.Namespace) -> int:
    """Earlier results as evidence: each file (or each row of a table) an imported run."""
    from labtui.core.errors import LabtuiError
    from labtui.core.onboarding.evidence import import_file, import_table
    from labtui.core.workspace.project import Project

    project = Project.open(Path(args.directory))
    metrics = dict(args.metric) if args.metric else None
    imported = []
    for path in args.files:
        if args.table:
            imported += import_table(project, path, args.table, metrics=metrics, commit=args.commit)
        else:
            imported.append(
                import_file(project, path, source=args.source, metrics=metrics, commit=args.commit)
            )
    for done in imported:
        row = f" (row {done.row})" if done.row else ""
        print(
            f"{done.folder}: {done.source}{row}, commit {done.commit[:8]} ({done.commit_from}): "
            f"{done.means}"
        )
    if any(done.commit_from == "HEAD (assumed)" for done in imported):
        raise LabtuiError(
            "imported, but the commit of the code that made these results is assumed to be HEAD",
            "pass --commit SHA next time; `git log` shows when the results were made",
        )
    return EXIT_OK
