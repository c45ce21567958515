"""The paper's Experimental Setup, written by code from the records: the task as the template's
README says it, the command the baseline ran, the settings it used (read from the code at its
commit: constants and option defaults, by name and value) with the runs that changed each (what
else a run's commit changed is the Method's list, core/writeup/paper_layout.py), the seeds, the
software (Python and the packages the script imports, as the run record has them), the hardware
as recorded (labtui_run.json: CPU, cores, memory, each GPU or none) and the wall time of each
run. A small model wrote "conducted on a GPU with 16GB of memory … 50 epochs" about CPU runs of
150; here no model retypes a fact.

Values are wrapped in ``\\labtuistep``, which provenance reads as a name, not a result: the
settings (the code at the run's commit is where each comes from), versions, the hardware, the
times.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..machine.hardware import Hardware
from ..machine.interpreter import distribution
from ..runs.run_changes import RunChanges, baseline_settings, run_changes
from ..runs.script_constants import command_and_commit, script_code, script_of
from ..source.parse import parse_code
from ..source.script_settings import Setting
from ..workspace.run_folder import (
    RunFolderError,
    RunRecord,
    read_final_info,
    read_run_record,
    result_folders,
)
from .ledger_appendix import DESCRIPTION_COMMAND, latex_escaped

SETTINGS_LABEL = "tab:settings"
MAX_SETTINGS = 24  # rows of the settings table; the rest are named by count
_VALUE_CHARS = 28


@dataclass(frozen=True)
class RanAs:
    """One finished run as its record says it ran."""

    run: str
    argv: tuple[str, ...]
    wall_s: float
    hardware: Hardware
    python: str
    packages: dict[str, str]
    seeds: int  # values per metric in its final_info.json (0: not reported)


def ran_as(root: Path) -> list[RanAs]:
    """Every finished run of the project, as its record says it ran."""
    found = []
    for folder in result_folders(Path(root)):
        try:
            record = read_run_record(folder)
        except RunFolderError:
            record = RunRecord()
        if not isinstance(record, RunRecord):
            record = RunRecord()
        environment = record.environment or {}
        packages = environment.get("packages") if isinstance(environment, dict) else None
        found.append(
            RanAs(
                folder.name,
                tuple(record.argv),
                record.wall_s,
                Hardware.from_json(record.hardware),
                str(environment.get("python_version", "")) if isinstance(environment, dict) else "",
                dict(packages) if isinstance(packages, dict) else {},
                _seeds(folder),
            )
        )
    return found


def _seeds(folder: Path) -> int:
    try:
        info = read_final_info(folder)
    except RunFolderError:
        return 0
    counts = {
        len(values)
        for entry in info.datasets.values()
        for values in entry.per_seed.values()
        if isinstance(values, list)
    }
    return max(counts) if counts else 0


def setup_latex(root: Path, baseline: str = "run_0") -> str:
    """The Experimental Setup's facts as LaTeX paragraphs, a settings table among them; '' when
    the baseline never finished."""
    root = Path(root)
    runs = ran_as(root)
    base = next((r for r in runs if r.run == baseline), None)
    if base is None:
        return ""
    others = [r for r in runs if r.run != baseline]
    changes = [run_changes(root, root / r.run, root / baseline) for r in others]
    settings = baseline_settings(root, root / baseline)
    paragraphs = [
        _task(root),
        _command(base, settings, bool(changes)),
        _settings_table(settings, changes, baseline),
        _seeds_said(runs),
        _software(root, base),
        _hardware(runs),
        _times(runs),
    ]
    return "\n\n".join(p for p in paragraphs if p)


def _name(text: str) -> str:
    return f"\\{DESCRIPTION_COMMAND}{{{latex_escaped(text)}}}"


def task_words(root: Path) -> str:
    """The first paragraph of prose of the project's README, as plain text: the task in its
    author's words ('' without one)."""
    readme = Path(root) / "README.md"
    if not readme.is_file():
        return ""
    for block in re.split(r"\n\s*\n", readme.read_text(encoding="utf-8", errors="replace")):
        text = " ".join(block.split())
        if len(text.split()) >= 12 and not text.startswith(("#", "|", "```", "!", "[", "<", "-")):
            return re.sub(r"`([^`]*)`", r"\1", re.sub(r"\*\*?([^*]+)\*\*?", r"\1", text))
    return ""


def _task(root: Path) -> str:
    words = task_words(root)
    return f"\\paragraph{{Task and data.}} {latex_escaped(words)}" if words else ""


def _command(base: RanAs, settings: list[Setting], compared: bool) -> str:
    command = " ".join([Path(base.argv[0]).name, *base.argv[1:]]) if base.argv else ""
    ran = f" ran \\texttt{{{latex_escaped(command)}}}" if command else " is the code unchanged"
    listed = ""
    if settings:
        by = ", and the runs that changed them" if compared else ""
        listed = (
            f" Table~\\ref{{{SETTINGS_LABEL}}} lists its settings, read from the code at the "
            f"commit it ran{by}."
        )
    return f"\\paragraph{{Baseline.}} The baseline {latex_escaped(base.run)}{ran}.{listed}"


def _settings_table(settings: list[Setting], changes: list[RunChanges], baseline: str) -> str:
    if not settings:
        return ""
    changed: dict[str, list[str]] = {}
    for change in changes:
        for setting in change.settings:
            changed.setdefault(setting.name, []).append(
                f"{latex_escaped(change.run)}: {_value(setting.after)}"
            )
    # An option that names the run's own folder (--out_dir=run_0) is where it writes, no setting.
    shown = [s for s in settings if not (isinstance(s.value, str) and baseline in s.value)]
    ordered = sorted(shown, key=lambda s: (_shown_name(s) not in changed, s.line))
    rows = [
        f"{latex_escaped(_shown_name(s))} & {_value(s.value)} & "
        f"{'; '.join(changed.get(_shown_name(s), [])) or '--'} \\\\"
        for s in ordered[:MAX_SETTINGS]
    ]
    more = len(ordered) - MAX_SETTINGS
    note = f" The code sets {more} more, not shown." if more > 0 else ""
    return "\n".join(
        [
            "\\begin{table}[t]",
            "\\centering",
            "\\small",
            "\\begin{tabular}{lll}",
            "\\toprule",
            f"Setting & {latex_escaped(baseline)} & Changed by \\\\",
            "\\midrule",
            *rows,
            "\\bottomrule",
            "\\end{tabular}",
            "\\caption{The settings of the baseline, as its code and command line give them, "
            f"and the runs that changed each.{note}}}",
            f"\\label{{{SETTINGS_LABEL}}}",
            "\\end{table}",
        ]
    )


def _shown_name(setting: Setting) -> str:
    return setting.flag or setting.name


def _value(value: Any) -> str:
    """A setting's value as the table shows it: a number as Python writes it, anything else
    in typewriter letters, clipped; each a name provenance does not trace (the code at the
    run's commit is where it comes from, and a 0.01 traced to the first run value it rounds to
    would say otherwise)."""
    if isinstance(value, bool) or value is None or not isinstance(value, int | float):
        text = repr(value) if not isinstance(value, str) else value
        clipped = text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"
        # a name, not a result: a tuple's numbers are no single setting provenance can trace
        return f"\\texttt{{\\{DESCRIPTION_COMMAND}{{{latex_escaped(clipped)}}}}}"
    return _name(repr(value))


def _seeds_said(runs: list[RanAs]) -> str:
    counts = {r.seeds for r in runs if r.seeds}
    if not counts:
        return ""
    if len(counts) == 1:
        return (
            f"\\paragraph{{Seeds.}} Every run trained {_name(str(counts.pop()))} seeds; the "
            "tables report the mean over them and its standard error."
        )
    each = ", ".join(f"{latex_escaped(r.run)} {_name(str(r.seeds))}" for r in runs if r.seeds)
    return f"\\paragraph{{Seeds.}} Seeds per run: {each}."


def _software(root: Path, base: RanAs) -> str:
    if not base.python:
        return ""
    argv, commit = command_and_commit(root / base.run)
    imported = _imported(script_code(root, script_of(argv), commit))
    lowered = {name.lower(): (name, version) for name, version in base.packages.items()}
    used = [lowered[key] for module in imported if (key := distribution(module).lower()) in lowered]
    listed = ", ".join(f"{name} {version}" for name, version in used)
    packages = f" with {_name(listed)}" if listed else ""
    return (
        f"\\paragraph{{Software.}} Python {_name(base.python)}{packages}, as the run records them."
    )


def _imported(code: str) -> list[str]:
    """The top-level modules a script imports, in order."""
    try:
        tree = parse_code(code)
    except (SyntaxError, ValueError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            else []
        )
        found += [name.split(".")[0] for name in names if name]
    return list(dict.fromkeys(found))


def _hardware(runs: list[RanAs]) -> str:
    known = [r for r in runs if r.hardware.known]
    if not known:
        return "\\paragraph{Hardware.} The runs' records do not say what they ran on."
    kinds = {r.hardware.described() for r in known}
    if len(kinds) == 1 and len(known) == len(runs):
        return f"\\paragraph{{Hardware.}} Every run ran on {_name(kinds.pop())}, as recorded."
    each = "; ".join(f"{latex_escaped(r.run)} on {_name(r.hardware.described())}" for r in known)
    return f"\\paragraph{{Hardware.}} As recorded: {each}."


def _times(runs: list[RanAs]) -> str:
    timed = [r for r in runs if r.wall_s]
    if not timed:
        return ""
    each = ", ".join(f"{latex_escaped(r.run)} {_name(_duration(r.wall_s))}" for r in timed)
    return f"\\paragraph{{Run time.}} Wall time of each run, seeds included: {each}."


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
