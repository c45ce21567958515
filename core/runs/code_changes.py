"""What one commit changed in a project's code against another: each file's lines added and
removed (``git diff --numstat``) and, for Python, the functions and classes whose code differs.

core/runs/run_changes.py says with it what a run changed against the baseline. The files a run
or labtui writes (run folders, ``.labtui/``, the LaTeX, the notebook, figures and result files)
are no change of the experiment and are left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..source.parse import parse_code
from ..workspace.artifacts import NOTES
from ..workspace.run_folder import imported_number, run_number

_NOT_CODE_FOLDERS = (".labtui", "latex")
_RESULT_SUFFIXES = (".png", ".pdf", ".json")


@dataclass(frozen=True)
class FileChange:
    """A file a run's commit changed: its lines added and removed, and for a Python file the
    top-level functions and classes whose code differs (added and removed ones included)."""

    path: str
    added: int
    removed: int
    functions: tuple[str, ...] = ()

    def words(self) -> str:
        """``changes experiment.py (+12/−3 lines in train, evaluate)``."""
        named = f" in {', '.join(self.functions)}" if self.functions else ""
        return f"changes {self.path} (+{self.added}/−{self.removed} lines{named})"


def numstat(output: str) -> list[tuple[str, int, int]]:
    """(path, added, removed) from ``git diff --numstat -z --no-renames``; a binary file, which
    git counts as ``-``, counts 0 lines."""
    found = []
    for record in output.split("\0"):
        added, _, rest = record.strip("\n").partition("\t")
        removed, _, path = rest.partition("\t")
        if path:
            found.append((path, _count(added), _count(removed)))
    return found


# labtui's own files at the project's top (its .json files are results by their suffix): a run's
# commit may carry a change labtui made to its settings, never one of the experiment's
_LABTUI_FILES = frozenset({NOTES, "labtui.toml", ".gitignore"})


def _count(text: str) -> int:
    return int(text) if text.isdigit() else 0


def is_experiment_code(path: str, own_folder: str = "") -> bool:
    """Whether a changed file is the experiment's and not what a run or labtui wrote: not in a
    run's folder (``own_folder`` is the run's, relative to the project, wherever it is), not
    labtui's state, LaTeX or notebook, not a figure or result file."""
    parts = PurePosixPath(path).parts
    if not parts or parts[0] in _NOT_CODE_FOLDERS or path in _LABTUI_FILES:
        return False
    if run_number(parts[0]) is not None or imported_number(parts[0]) is not None:
        return False
    if own_folder and (path == own_folder or path.startswith(own_folder.rstrip("/") + "/")):
        return False
    return not path.lower().endswith(_RESULT_SUFFIXES)


def changed_definitions(before: str | None, after: str | None) -> tuple[str, ...]:
    """The top-level functions and classes whose code differs between two versions of a
    module (None: the file is absent there), in the order of ``after`` and then those only
    ``before`` has. Compared as syntax trees, so a comment, a blank line or a function moved
    down by an insertion above it is no change; a module that does not parse has none."""
    old, new = _definitions(before), _definitions(after)
    names = [*new, *(name for name in old if name not in new)]
    return tuple(name for name in names if old.get(name) != new.get(name))


def _definitions(code: str | None) -> dict[str, str]:
    """{name: its syntax tree as text} of a module's top-level functions and classes."""
    try:
        tree = parse_code(code) if code is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        node.name: ast.dump(node)
        for node in (tree.body if tree is not None else [])
        if isinstance(node, kinds)
    }
