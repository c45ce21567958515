"""What a hill-climb (core/climb.py) and a tree search (core/tree_search.py) share.

- **The target**: the one metric they improve (``[climb]``/``[tree] metric``) and which way is
  better, checked against the baseline's numbers before anything runs.
- **Checkouts**: every search works in git worktrees under ``.labtui/worktrees/``, never in the
  project's own folder, so that nothing it tries reaches the project's branch until the search
  ends; the best code is then merged in (``bring_home``).
- **Runs under a budget**: each run gets ``run_budget_s`` ($LABTUI_RUN_BUDGET_S) and a seed
  ($LABTUI_SEED); the baseline is run again with other seeds first, and the spread of those
  runs is the noise a change must beat (``measure_noise``); the best code is run again with
  fresh seeds at the end (``seed_values``).
- **A step**: a proposal asked of the model (``propose``), made by aider and run with fix
  attempts (core/experiment_runs.py), timed and metered (``StepClock``).

Functions take the stage's context (core/stage_context.py) as ``ctx``, as the other research
helpers do: this layer must not import it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, LabtuiError, StageFailed
from .experiment_runs import Attempted, code_digest, code_files, code_now
from .experiment_spec import RunTerms
from .project import Project
from .search_ledger import Final, Noise, SearchLedger, Step, copy_run_record, finite

WORKTREES = "worktrees"
HIGHER, LOWER = "higher", "lower"


# -- the target -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The metric a search improves: ``dataset``'s mean ``name``, better ``direction``."""

    dataset: str
    name: str
    direction: str

    @property
    def key(self) -> str:
        return f"{self.dataset}.{self.name}"

    def value(self, means: dict[str, Any]) -> float | None:
        """The metric in a run's means ({dataset: {metric: value}}); None when it is absent."""
        entry = means.get(self.dataset)
        return finite(entry.get(self.name)) if isinstance(entry, dict) else None

    def gain(self, value: float, over: float) -> float:
        """How much better ``value`` is than ``over`` (negative: worse)."""
        return value - over if self.direction == HIGHER else over - value

    def best_of(self, values: list[float]) -> float:
        return max(values) if self.direction == HIGHER else min(values)


def find_target(section: Any, strategy: str, baseline: dict[str, Any], root: Path) -> Target:
    """The metric ``[<strategy>] metric`` names among the baseline's means (or, when it names
    none, the first the project declares), with its direction; a ConfigError names the field
    and lists what the baseline reports."""
    from .effects import UNKNOWN, direction_of, metric_directions

    reported = [
        (d, m) for d, values in baseline.items() for m in values if finite(values[m]) is not None
    ]
    listing = ", ".join(f"{d}.{m}" for d, m in reported) or "nothing"
    declared = metric_directions(root)
    if section.metric:
        found = [(d, m) for d, m in reported if section.metric in (m, f"{d}.{m}")]
        if len(found) != 1:
            why = "names no mean of" if not found else "is ambiguous in"
            raise ConfigError(
                f"labtui.toml: [{strategy}] metric = {section.metric!r} {why} the baseline's "
                f"final_info.json (run_0 reports {listing})",
                f'write [{strategy}] metric = "<one of those>"',
            )
    else:
        found = [
            (d, m) for d, m in reported if m in declared or m.removesuffix("_mean") in declared
        ]
        found = found or reported
        if not found:
            raise ConfigError(
                f"labtui.toml: [{strategy}] metric is empty and run_0 reports no number",
                f'make the baseline report its metric, then write [{strategy}] metric = "<name>"',
            )
    dataset, name = found[0]
    direction = section.direction or direction_of(name, declared)
    if direction == UNKNOWN:
        raise ConfigError(
            f"labtui.toml: [{strategy}] direction is empty and labtui cannot tell whether a "
            f"larger {name} is better",
            f'write [{strategy}] direction = "higher" (or "lower")',
        )
    return Target(dataset, name, direction)


# -- checkouts ---------------------------------------------------------------------------------


def open_checkout(project: Project, name: str, branch: str, start: str) -> Project:
    """The worktree ``.labtui/worktrees/<name>`` on ``branch`` (made from ``start`` the first
    time, reused after), with nothing left over from a step a kill cut short."""
    folder = project.state_dir / WORKTREES / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    checkout = project.worktree(folder, branch, start)
    return checkout


def open_worker(project: Project, name: str, start: str) -> Project:
    """The worktree ``.labtui/worktrees/<name>`` with a detached HEAD (made at ``start`` the
    first time): a tree search's worker, which takes up each node on the node's own branch."""
    folder = project.state_dir / WORKTREES / name
    if not (folder / ".git").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        git(project.root, "worktree", "prune")
        git(project.root, "worktree", "add", "--quiet", "--detach", str(folder), start)
    return Project(folder, project.config)


def reset_checkout(checkout: Project, commit: str) -> None:
    """``checkout`` back to ``commit``: its branch moved there, its files as they were there,
    anything untracked a step left removed (ignored files, a run's checkpoints, stay)."""
    git(checkout.root, "reset", "--quiet", "--hard", commit)
    git(checkout.root, "clean", "--quiet", "-fd")


def switch_checkout(checkout: Project, branch: str, commit: str) -> None:
    """``checkout`` onto ``branch``, made (or moved) to ``commit``: a tree search's worker
    taking up a new node."""
    git(checkout.root, "checkout", "--quiet", "--force", "-B", branch, commit)
    git(checkout.root, "clean", "--quiet", "-fd")


def diff_between(checkout: Project, older: str, newer: str) -> str:
    """The change of the experiment's code from ``older`` to ``newer``."""
    files = code_files(checkout)
    return git(checkout.root, "diff", older, newer, "--", *files)


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LabtuiError(
            f"git {' '.join(args[:2])} failed in {root}: {result.stderr.strip()}",
            "look at the worktree with `git status` there; the search resumes from its ledger",
        )
    return result.stdout


def bring_home(ctx: Any, branch: str, message: str) -> str:
    """Merge the search's best ``branch`` into the project's branch (its kept commits join the
    project's history). A merge that conflicts (the project's code changed by hand meanwhile)
    is abandoned and the branch's files are taken instead, said so. Returns the new HEAD."""
    project = ctx.project
    project.commit(f"{ctx.stage}: keep uncommitted changes before the search's result")
    merged = subprocess.run(
        ["git", "merge", "--no-ff", "--no-edit", "-m", message, branch],
        cwd=project.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if merged.returncode != 0:
        git(project.root, "merge", "--abort")
        changed = git(project.root, "diff", "--name-only", "HEAD", branch).split()
        git(project.root, "checkout", branch, "--", *changed)
        ctx.project.commit(f"{message} (taken from {branch}: the merge conflicted)", changed)
        ctx.say(f"merging {branch} conflicted; its files were taken into the project instead")
    return project.head()


# -- a step -------------------------------------------------------------------------------------


@dataclass
class StepClock:
    """Times one step: its wall time, and (through the ledger's meter) the model's."""

    started: float
    meter: Any

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def stamp(self, step: Step) -> None:
        """The step's times and tokens so far (its ledger commit follows)."""
        step.wall_s, step.model_s, step.tokens = self.wall_s, self.meter.model_s, self.meter.tokens


@contextmanager
def step_clock(ctx: Any) -> Iterator[StepClock]:
    with ctx.services.ledger.meter() as meter:
        yield StepClock(time.monotonic(), meter)


def propose(ctx: Any, prompt: str, earlier: list[Step]) -> Any:
    """The model's next change (a records.Proposal): one line for the ledger and what to do;
    a description the ledger already has is refused and asked again."""
    from .answer_validation import validate
    from .records import Proposal, example_strings

    tried = {" ".join(step.description.lower().split()): step for step in earlier}

    def parse(data: Any) -> Any:
        proposal = validate(Proposal, data)
        same = tried.get(proposal.description.lower())
        if same is not None:
            raise ValueError(
                f"step {same.step} already tried {proposal.description!r} ({same.status}); "
                "propose a different change"
            )
        return proposal

    messages = [{"role": "user", "content": prompt}]
    proposal = ctx.llm(role="searcher").ask_json(
        messages, parse, schema=Proposal, examples=example_strings(messages)
    )
    ctx.tell("searcher", f"{proposal.description}\n\n{proposal.change}")
    return proposal


NO_PROPOSAL = "(no usable proposal)"
UNPROPOSED_LIMIT = 3  # steps in a row without a usable proposal end a search: the model cannot


def unproposed(number: int, base: str, error: Any, status: str) -> Step:
    """A step whose proposal the model never gave in a usable form: nothing was edited or run,
    and it counts (its tokens and time were spent); status crash (climb) or buggy (tree)."""
    return Step(
        step=number,
        status=status,
        description=NO_PROPOSAL,
        base_commit=base,
        run_id=f"run_{number}",
        problem=error.message,
        verdict=f"no usable proposal: {error.problem}",
    )


def unproposed_in_a_row(steps: list[Step]) -> str:
    """Why the search must end when its last steps all lacked a usable proposal ('' if not)."""
    last = steps[-UNPROPOSED_LIMIT:]
    if len(last) < UNPROPOSED_LIMIT or any(s.description != NO_PROPOSAL for s in last):
        return ""
    return (
        f"the model gave no usable proposal {UNPROPOSED_LIMIT} times in a row "
        f"({last[-1].verdict}); a stronger [models] experiments model is needed"
    )


def known_code(steps: list[Step]) -> dict[str, str]:
    """{code digest: which step ran it} of every step whose code ran or was refused."""
    return {step.digest: f"step {step.step} ({step.status})" for step in steps if step.digest}


def ledger_lines(steps: list[Step], target: Target, last: int = 30) -> str:
    """The ledger as the model reads it: the last ``last`` steps, one line each."""
    if not steps:
        return "(nothing tried yet)"
    shown = steps[-last:]
    lines = [] if len(shown) == len(steps) else [f"({len(steps) - len(shown)} earlier steps)"]
    for step in shown:
        value = "no result" if step.value is None else f"{target.name} {step.value:.6g}"
        why = f" — {step.problem[:120]}" if step.problem else ""
        lines.append(f"- step {step.step}: {step.status}, {value}: {step.description}{why}")
    return "\n".join(lines)


def result_step(
    ctx: Any,
    checkout: Project,
    number: int,
    attempted: Attempted,
    *,
    base: str,
    description: str,
    change: str,
) -> Step:
    """A step's record from its attempts (status and value are the caller's to judge)."""
    from .notebook import code_change, own_words

    result, edit = attempted.result, attempted.edit
    commit = edit.commit.sha if edit is not None and edit.commit is not None else ""
    files = code_files(checkout)
    now = code_now(checkout, files)
    computed = "; ".join(
        code_change(checkout.file_at(base, name) or "", now[name] or "", name) for name in files
    )
    return Step(
        step=number,
        status="",
        description=description,
        change=change,
        explanation=own_words(edit.explanation, attempted.sent) if edit is not None else "",
        computed=computed,
        base_commit=base,
        commit=commit,
        run_id=f"run_{number}",
        problem=attempted.problem,
        stderr_tail="" if attempted.ok else attempted.stderr_tail,
        tried=list(attempted.tried),
        digest=attempted.digest or code_digest(now),
        memory_mb=result.peak_memory_mb if result is not None else 0.0,
        run_s=attempted.run_s,
    )


def note_step(root: Path, step: Step, run_dir: Path, made_from: str) -> None:
    """The step's run as an entry of the notebook, once: what changed (computed, and in the
    coder's words) and its effects against the baseline (computed from the run's numbers)."""
    from .artifacts import NOTES
    from .effect_text import effects_markdown
    from .effects import effects_of_runs, metric_directions
    from .notebook import append_run

    notes = Path(root) / NOTES
    if f"\n## {step.run_id}\n" in (notes.read_text(encoding="utf-8") if notes.is_file() else ""):
        return
    found = effects_of_runs(run_dir, Path(root) / "run_0", metric_directions(root))
    append_run(
        root,
        step.run_id,
        what_changed=f"{step.description}\n\n{step.explanation}".strip(),
        computed=f"{step.computed} (made from {made_from})",
        results=effects_markdown(found),
        commit=step.commit,
        wall_s=step.run_s,
    )


def keep_results(ctx: Any, step: Step, message: str) -> str:
    """Commit the step's run folder on its branch (in ``ctx``'s checkout): its tip."""
    commit = ctx.commit(message, [step.run_id])
    return commit.sha if commit is not None else ctx.project.head()


def drop_run_folder(checkout: Project, run_id: str) -> None:
    shutil.rmtree(checkout.root / run_id, ignore_errors=True)


# -- runs of the same code with other seeds ------------------------------------------------------


def seeded_run(
    ctx: Any,
    checkout: Project,
    target: Target,
    *,
    run_id: str,
    seed: int,
    keep_in: Path,
    section: Any,
) -> float | None:
    """The code of ``checkout`` run once more with $LABTUI_SEED = ``seed`` under the budget;
    its record kept in ``keep_in`` (which is reused when a resumed search already has it).
    The metric's value, or None when the run gave none."""
    from .runner import configured, read_final_info, run_experiment

    if (keep_in / "final_info.json").is_file():
        _, means, problem = read_final_info(keep_in)
        return None if problem else target.value(means)
    result = run_experiment(
        checkout.root,
        run_id,
        emit=ctx.emit,
        stage=ctx.stage,
        commit=checkout.head(),
        stop=ctx.stop,
        terms=RunTerms(section.run_budget_s, seed),
        overrun_s=section.overrun_s,
        **configured(ctx.config),
    )
    ctx.check_stop()
    copy_run_record(checkout.root / run_id, keep_in)
    drop_run_folder(checkout, run_id)
    if not result.ok:
        ctx.say(f"{run_id} (seed {seed}) gave no result: {result.problem}")
        return None
    return target.value(result.means)


def measure_noise(
    ctx: Any, checkout: Project, target: Target, ledger: SearchLedger, section: Any, start: str
) -> Noise:
    """The project's code under the budget with seed 0 (the value every change must beat) and
    ``baseline_repeats`` more seeds: the spread of those runs is the noise. Kept in the ledger;
    a resumed search reuses it, and the runs a kill interrupted are made again."""
    known = ledger.noise()
    if known is not None and known.commit == start:
        return known
    values: list[float] = []
    started = time.monotonic()
    for seed in range(section.baseline_repeats + 1):
        value = seeded_run(
            ctx,
            checkout,
            target,
            run_id=f"noise_{seed}",
            seed=seed,
            keep_in=ledger.noise_run(seed),
            section=section,
        )
        if value is None and seed == 0:
            raise StageFailed(
                f"the project's code gives no {target.key} under the search's budget of "
                f"{section.run_budget_s:g} s (see {ledger.relative}/noise/seed_0)",
                f"make it write its results within $LABTUI_RUN_BUDGET_S seconds, or raise "
                f"[{ledger.strategy}] run_budget_s",
            )
        if value is not None:
            values.append(value)
    noise = Noise(values, section.noise_sigmas, start, time.monotonic() - started)
    ledger.write_noise(noise)
    if len(values) > 1 and noise.std == 0:
        ctx.say(
            f"the baseline gave {target.key} = {values[0]:.6g} with every seed: the code ignores "
            "$LABTUI_SEED or has no randomness, so any strict improvement counts"
        )
    return noise


def seed_values(
    ctx: Any, checkout: Project, target: Target, ledger: SearchLedger, section: Any, step: int
) -> list[float]:
    """The code of ``checkout`` (step ``step``'s) run with fresh seeds 1…``seeds``: their
    values, the result the paper reports."""
    values = []
    for seed in range(1, section.seeds + 1):
        value = seeded_run(
            ctx,
            checkout,
            target,
            run_id=f"seed_{step}_{seed}",
            seed=seed,
            keep_in=ledger.seed_run(step, seed),
            section=section,
        )
        if value is not None:
            values.append(value)
    return values


# -- the end ------------------------------------------------------------------------------------


def hours_used(noise_wall_s: float, steps: list[Step]) -> float:
    return (noise_wall_s + sum(step.wall_s for step in steps)) / 3600


def search_markdown(
    target: Target,
    noise: Noise,
    steps: list[Step],
    final: Final,
    ledger: SearchLedger,
    path: list[int],
) -> str:
    """The search's summary for the checkpoint and the notebook: computed, every number from
    the ledger."""
    counts: dict[str, int] = {}
    for step in steps:
        counts[step.status] = counts.get(step.status, 0) + 1
    said = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no step"
    base = noise.values[0]
    lines = [
        f"{len(steps)} step(s): {said}. The metric: {target.key} ({target.direction} is better).",
        f"The project's code under the budget: {base:.6g}; run-to-run noise over "
        f"{len(noise.values)} seed(s): std {noise.std:.4g}, so a change had to beat the best by "
        f"more than {noise.threshold:.4g}.",
    ]
    if final.best_step:
        lines.append(
            f"Best: step {final.best_step} with {final.best_value:.6g} "
            f"({target.gain(final.best_value, base):+.4g} on the baseline); the path to it: "
            + " → ".join(f"step {n}" for n in path)
            + "."
        )
    else:
        lines.append(
            "No change beat the baseline by more than the noise: the project's code stays."
        )
    seeds = final.seed_values()
    if seeds and final.mean is not None:
        spread = f" ± {final.std:.4g}" if final.std is not None else ""
        lines.append(
            f"Its code with {len(seeds)} fresh seed(s): mean {final.mean:.6g}{spread} "
            f"(values {', '.join(f'{v:.6g}' for v in seeds)})."
        )
    lines.append(f"Every step is a line of {ledger.relative}/results.tsv.")
    return "\n\n".join(lines)


@dataclass
class SearchOutcome:
    """What a search ended with, for the stage's output and its checkpoint."""

    strategy: str
    idea: str
    target: Target
    noise: Noise
    steps: list[Step]
    final: Final
    path: list[int]  # the steps that led to the best, in order (kept attempts, or ancestors)
    ledger: str
    branch: str
    summary: str
    best_diff: str = ""  # the best code against the code the search started from

    @property
    def runs(self) -> list[str]:
        """The project's run folders of the path (merged in with the best code)."""
        return [f"run_{n}" for n in self.path]

    def counts(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for step in self.steps:
            counted[step.status] = counted.get(step.status, 0) + 1
        return counted

    def ended_event(self, stage: str) -> Any:
        from .events import SearchEnded

        final = self.final
        return SearchEnded(
            stage=stage,
            strategy=self.strategy,
            reason=final.reason,
            steps=len(self.steps),
            best_step=final.best_step,
            best=final.best_value,
            seed_mean=final.mean,
            seed_std=final.std,
            seed_runs=len(final.seed_values()),
            counts=self.counts(),
        )

    def result(self, baseline: dict[str, Any], means: dict[str, Any]) -> dict[str, Any]:
        """The stage's journaled result: what the plots and the write-up read."""
        final = self.final
        return {
            "idea": self.idea,
            "strategy": self.strategy,
            "runs": self.runs,
            "means": means,
            "baseline": baseline,
            "metric": self.target.key,
            "direction": self.target.direction,
            "best": {
                "step": final.best_step,
                "run": f"run_{final.best_step}" if final.best_step else "run_0",
                "value": final.best_value,
                "commit": final.commit,
                "seeds": final.seed_values(),
                "mean": final.mean,
                "std": final.std,
            },
            "noise": {"values": self.noise.values, "threshold": self.noise.threshold},
            "counts": self.counts(),
            "ledger": f"{self.ledger}/results.tsv",
            "branch": self.branch,
            "reason": final.reason,
        }


def keep_abandoned_tip(ctx: Any, checkout: Project, expected: str, name: str) -> None:
    """A branch tip the ledger does not know (an attempt a kill cut short, or a search made
    before a rewind) is kept on a tag before the checkout is reset, and said so."""
    tip = checkout.head()
    if tip and tip != expected:
        keep_on_tag(ctx, checkout, tip, name)


def keep_unrecorded_nodes(ctx: Any, prefix: str, recorded: set[int], name: str) -> None:
    """The tips of node branches ``<prefix>/node-<n>`` the ledger does not record (nodes a kill
    cut short) kept on tags: their numbers are grown again, and their branches moved."""
    refs = git(
        ctx.project.root,
        "for-each-ref",
        "--format=%(refname:short) %(objectname)",
        f"refs/heads/{prefix}/",
    )
    for line in refs.splitlines():
        branch, _, tip = line.partition(" ")
        number = branch.rsplit("-", 1)[-1]
        if number.isdigit() and int(number) not in recorded:
            keep_on_tag(ctx, ctx.project, tip, f"{name}-node-{number}")


def keep_on_tag(ctx: Any, project: Project, commit: str, name: str) -> None:
    tag = f"labtui/abandoned/{name}-{commit[:8]}"
    git(
        project.root,
        "tag",
        "--force",
        "-m",
        f"{name}: work the ledger does not record",
        tag,
        commit,
    )
    ctx.say(
        f"{name}: commit {commit[:8]} is not in the ledger (cut short or rewound); kept as tag {tag}"
    )


def put_summary(root: Path, heading: str, text: str) -> None:
    """The notebook's section ``heading``, written anew (a resumed search writes it again)."""
    from .artifacts import NOTES

    path = Path(root) / NOTES
    notes = path.read_text(encoding="utf-8") if path.is_file() else ""
    marker = f"\n## {heading}\n"
    if marker in notes:
        before, _, after = notes.partition(marker)
        rest = after.split("\n## ", 1)
        notes = before + (("\n## " + rest[1]) if len(rest) > 1 else "")
    path.write_text(notes.rstrip("\n") + f"\n{marker}\n{text}\n", encoding="utf-8")


def checkpoint_due(section: Any, done: int) -> bool:
    return bool(section.checkpoint_every) and done > 0 and done % section.checkpoint_every == 0
