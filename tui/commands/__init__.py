"""The ``labtui`` commands, one module each (``tui/cli.py`` builds its parser from them).

Each command module has ``NAME``, ``add_parser(subparsers)`` (its options) and ``run(args)`` (an
exit code), and shares what more than one command needs through ``common.py``. None imports
``tui/cli.py`` (an import-linter contract in pyproject.toml). Every command module is imported for
``labtui --help``, so at module top it imports only the standard library and ``common``; the
engine, rich and Textual are imported by the function that needs them. ``calibrate.py`` and
``probe.py`` are ``labtui review``'s heavier modes, imported only when asked for.
"""
