"""``labtui check [PATH]``: the paper read as a reviewer reads it — markup of another format, text
copied from labtui's prompts, promises, setup facts the runs never had, Results without the table
of runs, numbers no run recorded — for a project, a ``.tex`` or a PDF. Each gap with its file,
line, what is wrong and the fix; ``--json`` for scripts. Exit 0 only when there is none."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Subparsers

NAME = "check"


def add_parser(subparsers: Subparsers) -> None:
    check = subparsers.add_parser(
        NAME,
        help="check a paper as a reviewer reads it: each gap with file, line and fix",
        description=__doc__.split("\n\n")[0].split(": ", 1)[-1] if __doc__ else None,
        epilog="exit status: 0 no gap, 1 gaps found, 2 the path cannot be checked",
    )
    check.add_argument(
        "path", nargs="?", type=Path, default=Path("."),
        help="a project folder (default: this one), its paper's .tex, or a PDF",
    )  # fmt: skip
    check.add_argument("--json", action="store_true", help="the findings as JSON")


def run(args: argparse.Namespace) -> int:
    return cmd_check(args.path, as_json=args.json)


def cmd_check(path: Path, *, as_json: bool = False) -> int:
    from labtui.core.errors import LabtuiError
    from labtui.core.writeup.paper_check import check_path

    try:
        report = check_path(path)
    except LabtuiError as exc:  # a path it cannot read, a labtui.toml it cannot load
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if as_json:
        print(json.dumps(report.to_json(), indent=1, ensure_ascii=False))
    else:
        for finding in report.findings:
            print(finding.text())
        count = len(report.findings)
        verdict = "no gap" if not count else f"{count} gap(s)"
        print(f"{report.target}: {verdict} ({report.read_as})")
    return EXIT_FAILED if report.findings else EXIT_OK
