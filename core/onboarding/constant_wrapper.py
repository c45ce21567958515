"""labtui's wrapper for a script whose run length is a module constant that no command line sets.

A plain script (``max_iters = 5000`` at its top, no argparse, no configurator) can only be
shortened by an edit; issue 43 found such a constant "reported" (38 min at a guessed pace against a
300 s limit) with no smoke command. So `labtui init` runs it through a small generated file,
``WRAPPER`` (``.labtui/with_constants``), that sets constants by ``--name=value`` as nanoGPT's
configurator does:

    {python} .labtui/with_constants train.py --max_iters=200

Decisions, each for a reason:

- The wrapper reads the script's source at every run and changes its syntax tree in memory: every
  top-level assignment of a named constant gets the given value, the file on disk is never
  written, and an agent's edit of the script is what runs. ``runpy.run_path(init_globals=…)``
  cannot do it: the script's own ``max_iters = 5000`` overwrites what was passed in.
- It runs the script as ``python train.py`` would: as ``__main__`` (a module of its own in
  ``sys.modules``, so pickling its classes works), ``__file__`` the real path, the script's folder
  first on ``sys.path``, ``sys.argv`` the script and the arguments not taken; tracebacks name the
  script's own lines, as the tree is compiled with its file name.
- It is plain standard library: it runs in the research interpreter, where labtui may not be
  installed, so it cannot import labtui's setting editor (core/source/setting_edit.py); a tree
  edit of whole assignments needs none of that editor's care for comments and layout.
- Its name has no ``.py``: the command's first ``.py`` word stays the researcher's script, which is
  what labtui reads for the run's settings, imports and interpreter.
- It is committed with labtui.toml on labtui's branch (under ``.labtui/``, which git otherwise
  ignores here), so a search's worktrees and a fresh clone run it too.
- A ``--name=value`` naming no constant is passed on to the script and said on stderr, never
  dropped in silence.

An entry run through the wrapper counts as ``configurable`` (core/onboarding/run_length.py): its
constants are options ``--name=value``, and the baseline and the smoke run are bounded by them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from .repo_facts import EntryPoint
from .run_length import run_length_options

WRAPPER = ".labtui/with_constants"

WRAPPER_SOURCE = '''\
"""labtui's wrapper (written by `labtui init`): runs a script with module constants set.

    python .labtui/with_constants train.py --max_iters=200 [the script's own arguments]

Each --NAME=VALUE whose NAME the script assigns at its top level gives every such assignment
that value (read as a Python literal, else as text), in memory: the file is not changed. The
script runs as `python train.py` would run it, as __main__ in its own folder.
"""

import ast
import os
import sys
import types


def _value(text):
    """VALUE as the expression the script gets: a Python literal, else the text itself."""
    try:
        node = ast.parse(text, mode="eval").body
        ast.literal_eval(node)
        return node
    except (ValueError, SyntaxError, TypeError):
        return ast.Constant(text)


def _targets(statement):
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return [statement.target.id] if isinstance(statement.target, ast.Name) else []
    return []


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: python .labtui/with_constants SCRIPT.py [--NAME=VALUE ...] [ARGS ...]")
    script = sys.argv[1]
    with open(script, "rb") as handle:
        tree = ast.parse(handle.read(), script)
    constants = {name for statement in tree.body for name in _targets(statement)}
    settings, rest = {}, []
    for argument in sys.argv[2:]:
        name, equals, text = argument[2:].partition("=")
        if argument.startswith("--") and equals and name in constants:
            settings[name] = text
            continue
        if argument.startswith("--") and equals and name.isidentifier():
            print(f"with_constants: {script} sets no {name} at its top level; "
                  f"{argument} is left to the script", file=sys.stderr)
        rest.append(argument)
    for statement in tree.body:
        named = [name for name in _targets(statement) if name in settings]
        if named:
            statement.value = ast.copy_location(_value(settings[named[0]]), statement.value)
            ast.fix_missing_locations(statement)
    path = os.path.abspath(script)
    module = types.ModuleType("__main__")
    module.__file__ = path
    sys.modules["__main__"] = module
    sys.argv = [script, *rest]
    sys.path[0] = os.path.dirname(path)
    exec(compile(tree, script, "exec"), module.__dict__)


main()
'''


def needs_wrapper(entry: EntryPoint) -> bool:
    """Whether the run's length is a module constant that no command line sets."""
    lengths = run_length_options(entry)
    return bool(lengths) and not lengths[0].settable


def runs_wrapper(tokens: Sequence[str]) -> bool:
    """Whether a command runs the wrapper (from the top, or ``../../.labtui/with_constants``
    from a working folder)."""
    return any(token == WRAPPER or token.endswith(f"/{WRAPPER}") for token in tokens)


def wrapper_from(folder: str, command: str) -> str:
    """``command`` as it runs from ``folder`` (a working folder below the top): the wrapper,
    which stays at the top's .labtui, named by its path from there."""
    up = "../" * len([part for part in folder.split("/") if part])
    return " ".join(up + WRAPPER if word == WRAPPER else word for word in command.split(" "))


def through_wrapper(entry: EntryPoint, tokens: Sequence[str]) -> EntryPoint:
    """The entry as a command that runs the wrapper sees it: its constants set by
    ``--name=value``, as a configurator's are."""
    if runs_wrapper(tokens) and not entry.configurable:
        return dataclasses.replace(entry, configurable=True)
    return entry


def write_wrapper(root: Path, command: str) -> str:
    """The wrapper written where the command runs it (its text as this labtui writes it);
    the path written, or "" when the command does not run it."""
    if not runs_wrapper(command.split()):
        return ""
    path = Path(root) / WRAPPER
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != WRAPPER_SOURCE:
        path.write_text(WRAPPER_SOURCE, encoding="utf-8")
    return WRAPPER
