"""chktex, LaTeX's linter, with the style noise suppressed; its findings as LatexMessages."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..machine.processes import tool_available
from .log import LatexMessage, clean_path

CHKTEX_TIMEOUT_S = 60.0
# The same suppressions as The AI Scientist: 1 (command terminated with space), 2 (non-breaking
# space before \cite), 13 (intersentence spacing), 24 (space before \label) are style noise.
CHKTEX_SUPPRESS = ("-n2", "-n24", "-n13", "-n1")


_CHKTEX_SEP = "\x1f"  # a separator no file name or message contains


def chktex(tex: Path) -> list[LatexMessage]:
    """chktex's findings with line numbers; [] when chktex is not installed.

    A missing chktex is not an error (the paper still compiles): callers check
    ``tool_available("chktex")`` and warn once.
    """
    tex = Path(tex).resolve()
    if not tool_available("chktex"):
        return []
    fmt = _CHKTEX_SEP.join(["%f", "%l", "%c", "%k", "%n", "%m"]) + "\n"
    try:
        proc = subprocess.run(
            ["chktex", "-q", *CHKTEX_SUPPRESS, "-f", fmt, tex.name],
            check=False,  # chktex exits non-zero whenever it has something to say
            cwd=tex.parent,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=CHKTEX_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return [LatexMessage(tex.name, None, "chktex timed out", "warning")]
    return _parse_chktex(proc.stdout.decode("utf-8", "replace"))


def _parse_chktex(output: str) -> list[LatexMessage]:
    out = []
    for row in output.splitlines():
        parts = row.split(_CHKTEX_SEP)
        if len(parts) != 6:
            continue
        file, line, column, kind, number, message = parts
        out.append(
            LatexMessage(
                file=clean_path(file),
                line=int(line) if line.isdigit() else None,
                message=f"{message.strip()} (chktex {number}, column {column})",
                kind="error" if kind.strip().lower() == "error" else "warning",
            )
        )
    return out
