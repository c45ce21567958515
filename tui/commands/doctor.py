"""``labtui doctor``: tools, GPUs, models and keys checked (core/doctor.py), one line each."""

from __future__ import annotations

import argparse

from .common import EXIT_FAILED, EXIT_OK, Subparsers, add_project_dir, project_dir

NAME = "doctor"


def add_parser(subparsers: Subparsers) -> None:
    doctor = subparsers.add_parser(
        NAME,
        help="check tools, GPUs, models and keys; ask each model for one word and time it",
    )
    add_project_dir(doctor)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from labtui.core.doctor import run_checks

    directory = project_dir(args)
    project = directory if (directory / "labtui.toml").exists() else None
    console = Console(highlight=False)
    checks = run_checks(project)
    for check in checks:
        mark = (
            "[green]ok[/]  "
            if check.ok
            else ("[red]FAIL[/]" if check.required else "[yellow]warn[/]")
        )
        console.print(f"{mark} {check.name:<22} {escape(check.detail)}")
    failed = [c for c in checks if c.required and not c.ok]
    return EXIT_FAILED if failed else EXIT_OK
