"""The approved proposal of ``labtui init``, borne out by running it before anything is committed.

Nothing is committed that a run has not borne out. The smoke command, where the proposal has one,
must give every metric ``[results]`` names; then the baseline run_0 runs with the researcher's
code as it is, on their branch and in their working tree, and only when it has given its numbers
does labtui make its branch and commit ``labtui.toml`` and run_0 there. A check that fails leaves
no branch and no commit: the run's folder, and the files it wrote beside it, go under
``.labtui/init/failed/`` (the working tree is as it was), the failure is kept in
``.labtui/init/check.json`` for ``labtui status``, and ``labtui init`` continues from the proposal
(fix it, run it again) with no model needed.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..events import Event, MetricsReported
from ..runs.runner import configured, run_experiment
from ..runs.strays import clear, move_aside
from ..settings.config import Config
from ..workspace.project import exclude_locally
from ..workspace.run_folder import run_name

INIT_DIR = ".labtui/init"
CHECK_RECORD = f"{INIT_DIR}/check.json"
FAILED_DIR = f"{INIT_DIR}/failed"
SMOKE_RUN = "labtui_smoke"
MIN_MEASURED_S = 0.2  # metric lines closer in time than this measure the pipe, not the run
BASELINE = run_name(0)


@dataclass(frozen=True)
class FirstStep:
    """The first metric line a run printed with a step in it: the step, and how long before
    the run ended it came; and the last such line's step and time after the first. What the
    run did after the first is training, not start-up (imports, data loading), so it gives the
    pace of a longer run; between the first and the last the run's own ending is left out too."""

    step: float
    before_end_s: float
    last_step: float = 0.0
    last_after_s: float = 0.0

    def after_first(self, count: float) -> tuple[float, float]:
        """(units, seconds) after the first metric line: to the last such line where the two
        are apart in time (lines read in one go share a time), else to the run's end."""
        if self.last_step > self.step and self.last_after_s >= MIN_MEASURED_S:
            return self.last_step - self.step, self.last_after_s
        return count - self.step, self.before_end_s


@dataclass(frozen=True)
class InitCheck:
    """One run of the approved proposal before the commit: the smoke run or the baseline."""

    what: str  # "smoke" | "baseline"
    ok: bool
    shown: str  # what it read ("3.1 s, read {...}"), or why it failed
    wall_s: float = 0.0
    strays: list[str] = field(default_factory=list)  # new files it wrote outside its folder
    kept_in: str = ""  # where a failed run's folder and strays went
    at: float = 0.0  # when it ended (time.time())
    first_step: FirstStep | None = None  # its first metric line with a step, and when

    @property
    def sentence(self) -> str:
        if self.ok:
            return f"the {self.what} run worked ({self.shown})"
        kept = f"; its files are in {self.kept_in}" if self.kept_in else ""
        return f"the {self.what} run failed: {self.shown}{kept}"


def smoke_check(root: Path, config: Config, emit: Callable[[Event], None]) -> InitCheck:
    """The smoke command through the same runner and sandbox as every run, its numbers read as
    ``[results]`` says. Its folder goes under .labtui/init/smoke (or failed/) after."""
    return _check(root, config, emit, "smoke", SMOKE_RUN, smoke=True, commit="")


def baseline_check(
    root: Path, config: Config, emit: Callable[[Event], None], commit: str
) -> InitCheck:
    """run_0 with the researcher's code at ``commit`` (their HEAD), before labtui commits
    anything; its folder stays in place when it worked, for the commit that follows."""
    return _check(root, config, emit, "baseline", BASELINE, smoke=False, commit=commit)


def _check(
    root: Path,
    config: Config,
    emit: Callable[[Event], None],
    what: str,
    run_id: str,
    *,
    smoke: bool,
    commit: str,
) -> InitCheck:
    before = set(untracked(root))
    failed_into = f"{FAILED_DIR}/{what}"
    clear(root / run_id)  # a folder an earlier, interrupted check left
    clear(root / failed_into)  # and what an earlier failed check kept
    first: list[tuple[float, float]] = []  # (step, when) of its first metric line with a step
    last: list[tuple[float, float]] = []  # and of its last

    def watching(event: Event) -> None:
        if isinstance(event, MetricsReported) and event.run_id == run_id:
            steps = [p["step"] for p in event.points if p["step"] is not None]
            if steps:
                first[:] = first or [(steps[0], event.ts)]
                last[:] = [(steps[-1], event.ts)]
        emit(event)

    # A failed run's strays: moved to failed_into by the runner (or removed, over a cap).
    result = run_experiment(
        root, run_id, emit=watching, stage="init", smoke=smoke, commit=commit,
        strays_to=failed_into, **configured(config),
    )  # fmt: skip
    first_step = _first_step(first + last, time.time())
    strays = sorted(p for p in set(untracked(root)) - before if not _inside(p, run_id))
    if not result.ok:
        moved = move_aside(root, [run_id, *strays], failed_into) + result.left_outside.moved
        kept = failed_into if moved else ""
        strays = sorted({*strays, *result.left_outside.moved})
        return _recorded(root, InitCheck(what, False, result.problem, result.wall_s, strays, kept))
    if smoke:  # its folder and what it wrote beside it go, for the baseline to write anew
        clear(root / INIT_DIR / "smoke")
        move_aside(root, [run_id, *strays], f"{INIT_DIR}/smoke")
    elif strays:
        exclude_locally(root, stray_patterns(root, strays))  # every run writes them: not code
    shown = f"{result.wall_s:.1f} s, read {result.means}"
    check = InitCheck(what, True, shown, result.wall_s, strays, first_step=first_step)
    return _recorded(root, check)


def _first_step(stepped: list[tuple[float, float]], ended: float) -> FirstStep | None:
    if not stepped:
        return None
    (step, at), (last, last_at) = stepped[0], stepped[-1]
    return FirstStep(step, ended - at, last, last_at - at)


def stray_patterns(root: Path, strays: list[str]) -> list[str]:
    """Anchored .git/info/exclude patterns for files a run wrote outside its folder: a folder
    git does not know is excluded whole (lightning_logs/, wandb/), a file by its own path."""
    known = set(_tracked_tops(root))
    patterns = []
    for path in strays:
        top, _, rest = path.partition("/")
        patterns.append(f"/{top}/" if rest and top not in known else f"/{path}")
    return list(dict.fromkeys(patterns))


def _tracked_tops(root: Path) -> list[str]:
    done = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=False
    )
    return [name.partition("/")[0] for name in done.stdout.split("\0") if name]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(f"{folder}/")


def untracked(root: Path) -> list[str]:
    """Untracked, not ignored files (labtui's own state left out): what would dirty the tree."""
    done = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    names = done.stdout.split("\0") if done.returncode == 0 else []
    return [n for n in names if n and not n.startswith(".labtui/")]


# -- the record `labtui status` and the next `labtui init` read -----------------------------------


def _recorded(root: Path, check: InitCheck) -> InitCheck:
    check = replace(check, at=time.time())
    path = root / CHECK_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(check), indent=1), encoding="utf-8")
    return check


def last_check(root: Path) -> InitCheck | None:
    """The last check of an init that has not been committed yet (None: none ran, or it is
    unreadable: a check is only a report, so a damaged one is not an error)."""
    try:
        data = json.loads((root / CHECK_RECORD).read_text(encoding="utf-8"))
        first = data.pop("first_step", None)
        return InitCheck(**data, first_step=FirstStep(**first) if first else None)
    except (OSError, ValueError, TypeError):
        return None


def forget_checks(root: Path) -> None:
    """After the commit: the init is done, its checks are history (the smoke run's folder
    stays under .labtui/init/smoke for reference)."""
    (root / CHECK_RECORD).unlink(missing_ok=True)
    clear(root / FAILED_DIR)
