"""``labtui templates``: the built-in templates, one name a line."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, Subparsers

NAME = "templates"


def add_parser(subparsers: Subparsers) -> None:
    subparsers.add_parser(NAME, help="list the built-in templates")


def run(args: argparse.Namespace) -> int:
    from labtui.core.settings.templates import list_templates

    for name in list_templates():
        print(name)
    return EXIT_OK
