"""``labtui import``: results from before labtui, as evidence (core/onboarding/evidence.py): each result
file, or each row of a results table, an imported run with the commit of the code that made it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EXIT_OK = 0


def cmd_import(directory: Path, args: argparse.Namespace) -> int:
    """Earlier results as evidence: each file (or each row of a table) an imported run."""
    from labtui.core.errors import LabtuiError
    from labtui.core.onboarding.evidence import import_file, import_table
    from labtui.core.workspace.project import Project

    project = Project.open(directory)
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
