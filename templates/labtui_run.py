"""What labtui tells one run of a built-in template, through the environment: the wall-clock
budget of the run (``LABTUI_RUN_BUDGET_S``, which a hill-climb or a tree search gives every run)
and an offset of its training seeds (``LABTUI_SEED``: the same code again with other seeds, on
the same data). A plain run sees neither and trains as the template's constants say.

labtui copies this file beside experiment.py into every project made from a built-in template;
the agents change experiment.py, not this.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import NoReturn

BUDGET_VAR = "LABTUI_RUN_BUDGET_S"  # seconds the whole run may take; unset or empty: no budget
SEED_VAR = "LABTUI_SEED"  # whole number >= 0; unset or empty: 0, the seeds of a plain run


def process_start() -> float:
    """time.monotonic() at the start of this process: the budget counts from there, so that the
    interpreter, the imports and the data preparation count too (Linux /proc; elsewhere: now)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name in (...) may hold spaces
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # seconds after boot
        age_s = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        age_s = 0.0
    return time.monotonic() - (age_s if 0.0 <= age_s < 3600.0 else 0.0)


STARTED = process_start()


def env_error(name: str, raw: str, wanted: str, fix: str) -> NoReturn:
    """A bad value in the environment: say which variable and what to do, exit code 2."""
    print(f"error: {name}={raw!r} is not {wanted}; {fix}", file=sys.stderr)
    sys.exit(2)


def read_run_env() -> tuple[float | None, int]:
    """(the run budget in seconds or None, the seed offset) from the environment."""
    raw = os.environ.get(BUDGET_VAR, "").strip()
    budget_s = None
    if raw:
        try:
            budget_s = float(raw)
        except ValueError:
            budget_s = math.nan
        if not (math.isfinite(budget_s) and budget_s > 0):
            env_error(
                BUDGET_VAR,
                raw,
                "a positive number of seconds",
                f"set e.g. {BUDGET_VAR}=300 (fractions allowed), or unset it for no budget",
            )
    raw = os.environ.get(SEED_VAR, "").strip()
    offset = 0
    if raw:
        try:
            offset = int(raw)
        except ValueError:
            offset = -1
        if offset < 0:
            env_error(
                SEED_VAR,
                raw,
                "a whole number >= 0",
                f"set e.g. {SEED_VAR}=1 for other seeds, or unset it for the usual ones",
            )
    return budget_s, offset


def seeds_of(offset: int, count: int) -> list[int]:
    """``count`` training seeds; offsets 0, 1, 2, ... give disjoint sets (0: 0..count-1)."""
    return [offset * count + i for i in range(count)]


class Budget:
    """When each training must stop. Training ends at ``train_share`` of the budget (the rest is
    for evaluating and writing the results); every training of the run (one per seed, or per
    data set and seed) starts with an equal share of the training time left, so an early one
    cannot starve the later ones and time one did not use passes on. Each trains at least one
    epoch or step: the template checks the deadline after it."""

    def __init__(self, budget_s: float | None, trainings: int, train_share: float) -> None:
        self.budget_s = budget_s
        self.train_share = train_share
        self.end = None if budget_s is None else STARTED + train_share * budget_s
        self.left = trainings

    def next_deadline(self) -> float | None:
        """time.monotonic() at which the next training stops (None: no budget)."""
        if self.end is None:
            return None
        now = time.monotonic()
        share = max(0.0, self.end - now) / max(self.left, 1)
        self.left -= 1
        return now + share

    def describe(self) -> str:
        if self.budget_s is None:
            return f"budget none ({BUDGET_VAR} unset): training runs to the caps"
        return (
            f"budget {self.budget_s:g} s from {BUDGET_VAR}: "
            f"training stops at {self.train_share * self.budget_s:g} s"
        )

    def record(self, trained: list[int], cap: int, unit: str) -> dict:
        """What the budget did, for final_info.json (beside "means": labtui reads only those)."""
        return {
            "budget_s": self.budget_s,
            "stopped_early": any(n < cap for n in trained),
            "trained": trained,  # epochs, iterations or steps of each training
            "cap": cap,
            "unit": unit,
        }


def out_of_time(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def aligned(
    xs: list[list[int]], ys: list[list[float]]
) -> tuple[list[int], list[list[float | None]]]:
    """Per-seed curves on one x axis, the union of their points, with None (null in JSON) where
    a seed has no point: the budget may stop seeds at different steps, each with a last point of
    its own (plot.py skips the nulls). Without a budget the axis is every seed's."""
    axis = sorted(set().union(*xs))
    return axis, [
        [dict(zip(x, y, strict=True)).get(s) for s in axis] for x, y in zip(xs, ys, strict=True)
    ]
