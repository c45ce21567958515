"""``labtui status``: where each project stands — its engine, stage, open checkpoint, spending —
for the projects named, else this one and every project whose engine runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, TYPE_CHECKING, Subparsers

if TYPE_CHECKING:
    from labtui.core.engine.status import ProjectStatus

NAME = "status"


def add_parser(subparsers: Subparsers) -> None:
    status = subparsers.add_parser(
        NAME, help="where each project stands: engine, stage, checkpoint, spending"
    )
    status.add_argument(
        "dirs", nargs="*", type=Path,
        help="project folders (default: this one and every project whose engine runs)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return cmd_status(args.dirs)


def cmd_status(directories: list[Path]) -> int:
    from labtui.core.engine.status import project_status

    roots = [d.resolve() for d in directories] or _known_projects()
    if not roots:
        print("no labtui project here, and no engine runs (labtui status DIR for a project)")
        return EXIT_OK
    for root in roots:
        if not (root / "labtui.toml").exists():
            print(_init_line(root) or f"{root}: not a labtui project (no labtui.toml)")
            continue
        print(status_line(project_status(root)))
        if said := estimate_words(root):
            print("  " + said.replace("\n", "\n  "))
    return EXIT_OK


def estimate_words(root: Path) -> str:
    """A project not run yet: what its run is expected to take; one that ran: the estimate made
    before its run against what each stage spent ('' when it has neither)."""
    from labtui.core.errors import LabtuiError
    from labtui.core.estimate.estimator import estimate_project
    from labtui.core.estimate.history import history_of, read_estimate_events
    from labtui.core.estimate.reckoning import reckoning_text
    from labtui.core.estimate.render import estimate_text
    from labtui.core.settings.config import load_config

    events = read_estimate_events(root)
    history = history_of(events)
    if history.stages or history.done:
        return reckoning_text(events)
    try:
        return estimate_text(estimate_project(root, load_config(root), events), "not run yet")
    except LabtuiError:
        return ""  # labtui.toml is broken: status_line's reader has said what it could


def _known_projects() -> list[Path]:
    """The project in the current folder, and every project whose engine runs."""
    from labtui.core.engine import files as engine_files

    setting_up = Path(".labtui/init/labtui.toml").exists()
    here = [Path.cwd().resolve()] if Path("labtui.toml").exists() or setting_up else []
    return list(dict.fromkeys(here + [r.resolve() for r in engine_files.registered_roots()]))


def _init_line(root: Path) -> str:
    """A repository `labtui init` is setting up (its proposal not committed yet), or ''."""
    from labtui.core.onboarding.init_check import INIT_DIR, last_check

    if not (root / INIT_DIR / "labtui.toml").is_file():
        return ""
    check = last_check(root)
    said = f"; {check.sentence}" if check else "; not run yet"
    return (
        f"{root}\n  being set up by `labtui init`: the proposal is {INIT_DIR}/labtui.toml, "
        f"nothing committed yet{said}\n  next: fix what failed, then `labtui init` (it "
        "continues from the proposal)"
    )


def status_line(status: ProjectStatus) -> str:
    if status.running:
        auto = ", --auto" if status.auto else ""
        state = f"running (engine pid {status.pid}{auto})"
        where = f"stage {status.stage}" if status.stage else "between stages"
        if status.waiting:
            where += f" · checkpoint waiting: {status.waiting}"
    else:
        ended = f", last run {status.outcome}" if status.outcome else ""
        state = f"not running{ended}"
        where = f"next: {status.next_stage}" if status.next_stage else status.end_state
    money = f"${status.spent_usd:.4f} of ${status.budget_usd:.2f}"
    age = status.last_event_age_s
    last = "no events yet" if age is None else f"last event {_ago(age)}"
    return f"{status.root}\n  {state} · {where} · {money} · {last}"


def _ago(seconds: float) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"
