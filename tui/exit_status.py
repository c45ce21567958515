"""labtui's exit statuses, and what ``labtui run --help`` says of them: read by the commands
(through tui/commands/common.py), the app and its endings. The standard library only: imported
for ``labtui --help``."""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# The pipeline finished, but its paper has open problems (the write-up's gaps nobody mended or
# accepted): a script that runs `labtui run --auto` tells it from every stage done.
EXIT_INCOMPLETE = 3
RUN_EXIT_STATUSES = """exit status:
  0  the pipeline finished: every stage done (the app: also stopped or detached, resumable)
  1  the pipeline failed (--headless: or stopped before its end)
  2  a usage error, or no model set up
  3  the pipeline finished, but the paper is incomplete: open problems (the write-up's gaps)"""


def finished_exit(open_problems: list[str]) -> int:
    """The exit status of a pipeline that finished: EXIT_INCOMPLETE while its paper has open
    problems (``labtui.core.engine.status.paper_open_problems``), else EXIT_OK."""
    return EXIT_INCOMPLETE if open_problems else EXIT_OK
