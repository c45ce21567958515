"""The same code run again with other seeds, under a search's budget: the baseline's repeats,
whose spread is the run-to-run noise a change must beat (``measure_noise``), and the best code's
fresh seeds at the end, whose mean the paper reports (``seed_values``). Each run's record is kept
in the ledger (core/search/ledger.py), and a resumed search reuses the runs it already has.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import StageFailed
from ..runs.runner import configured, run_experiment
from ..settings.contract import RunTerms
from ..slurm.jobs import JobArray
from ..workspace.project import Project
from ..workspace.run_folder import RunFolderError, has_results, read_final_info
from .ledger import Noise, SearchLedger, copy_run_record
from .target import Target
from .worktrees import drop_run_folder

if TYPE_CHECKING:
    from ..settings.sections import SearchSection
    from ..stage_context import StageContext


class Seeded(NamedTuple):
    """One seeded run's metric and the standard error it reported of it (None: none)."""

    value: float | None
    stderr: float | None


def seeded_run(
    ctx: StageContext,
    checkout: Project,
    target: Target,
    *,
    run_id: str,
    seed: int,
    keep_in: Path,
    section: SearchSection,
    array: JobArray | None = None,
    commit: str = "",
) -> Seeded:
    """The code of ``checkout`` (at ``commit``, '': its head) run once more with $LABTUI_SEED =
    ``seed`` under the budget, a task of ``array`` when given; its record kept in ``keep_in``
    (which is reused when a resumed search already has it). The metric's value and its
    reported standard error (None when the run gave none)."""
    if has_results(keep_in):
        return _kept(keep_in, target)
    result = run_experiment(
        checkout.root,
        run_id,
        emit=ctx.emit,
        stage=ctx.stage,
        commit=commit or checkout.head(),
        stop=ctx.stop,
        terms=RunTerms(section.run_budget_s, seed),
        overrun_s=section.overrun_s,
        array=array,
        **configured(ctx.config),
    )
    ctx.check_stop()
    copy_run_record(checkout.root / run_id, keep_in)
    drop_run_folder(checkout, run_id)
    if not result.ok:
        ctx.say(f"{run_id} (seed {seed}) gave no result: {result.problem}")
        return Seeded(None, None)
    return Seeded(target.value(result.means), target.stderr(result.final_info))


def _kept(keep_in: Path, target: Target) -> Seeded:
    """What a seeded run a resumed search already has recorded (nothing when it is unusable)."""
    try:
        info = read_final_info(keep_in)
    except RunFolderError:
        return Seeded(None, None)
    return (
        Seeded(None, None)
        if info.problem
        else Seeded(target.value(info.means()), target.stderr(info))
    )


class SeedRun(NamedTuple):
    run_id: str
    seed: int
    keep_in: Path


def seeded_runs(
    ctx: StageContext,
    checkout: Project,
    target: Target,
    runs: list[SeedRun],
    section: SearchSection,
) -> Iterator[Seeded]:
    """``runs`` of the same code, in order. Here they run one after another, each when the
    one before is judged (they would share the GPUs); as Slurm jobs they go together, as one
    job array, and run at once."""
    to_make = [run for run in runs if not has_results(run.keep_in)]
    if ctx.config.cluster.backend != "slurm" or len(to_make) < 2:
        for r in runs:
            yield seeded_run(
                ctx, checkout, target, run_id=r.run_id, seed=r.seed, keep_in=r.keep_in,
                section=section,
            )  # fmt: skip
        return
    array = JobArray(len(to_make))
    head = checkout.head()  # read here: one GitPython repository is no thread's to share
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="labtui-seed") as pool:
        futures = [
            pool.submit(
                seeded_run, ctx, checkout, target, run_id=r.run_id, seed=r.seed,
                keep_in=r.keep_in, section=section, array=array, commit=head,
            )
            for r in runs
        ]  # fmt: skip
        results = [future.result() for future in futures]
    yield from results


def measure_noise(
    ctx: StageContext,
    checkout: Project,
    target: Target,
    ledger: SearchLedger,
    section: SearchSection,
    start: str,
) -> Noise:
    """The project's code under the budget with seed 0 (the value every change must beat) and
    ``baseline_repeats`` more seeds: the spread of those runs is the noise. Kept in the ledger;
    a resumed search reuses it, and the runs a kill interrupted are made again."""
    known = ledger.noise()
    if known is not None and known.commit == start:
        return known
    values: list[float] = []
    stderrs: list[float] = []
    started = time.monotonic()
    seeds = range(section.baseline_repeats + 1)
    runs = [SeedRun(f"noise_{seed}", seed, ledger.noise_run(seed)) for seed in seeds]
    for seed, (value, stderr) in zip(
        seeds, seeded_runs(ctx, checkout, target, runs, section), strict=True
    ):
        if value is None and seed == 0:
            raise StageFailed(
                f"the project's code gives no {target.key} under the search's budget of "
                f"{section.run_budget_s:g} s (see {ledger.relative}/noise/seed_0)",
                f"make it write its results within $LABTUI_RUN_BUDGET_S seconds, or raise "
                f"[{ledger.strategy}] run_budget_s",
            )
        if value is not None:
            values.append(value)
        if stderr is not None:
            stderrs.append(stderr)
    noise = Noise(values, section.noise_sigmas, start, time.monotonic() - started, stderrs)
    ledger.write_noise(noise)
    if len(values) > 1 and noise.spread == 0:
        ctx.say(noise_said(target, noise))
    return noise


def noise_said(target: Target, noise: Noise) -> str:
    """What the researcher is told when the baseline's repeats tie."""
    tied = f"the baseline's {len(noise.values)} runs gave {target.key} = {noise.values[0]:.6g} each"
    if noise.reported:
        return (
            f"{tied} (a coarse metric can tie by chance); the noise is the runs' own standard "
            f"error instead, {noise.reported:.4g}"
        )
    return (
        f"{tied} and report no standard error: the code ignores $LABTUI_SEED or has no "
        "randomness, so any strict improvement counts"
    )


def seed_values(
    ctx: StageContext,
    checkout: Project,
    target: Target,
    ledger: SearchLedger,
    section: SearchSection,
    step: int,
) -> list[float]:
    """The code of ``checkout`` (step ``step``'s) run with fresh seeds 1…``seeds``: their
    values, the result the paper reports."""
    seeds = range(1, section.seeds + 1)
    runs = [SeedRun(f"seed_{step}_{seed}", seed, ledger.seed_run(step, seed)) for seed in seeds]
    return [
        value for value, _ in seeded_runs(ctx, checkout, target, runs, section) if value is not None
    ]
