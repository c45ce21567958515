"""What a hill-climb (core/search/climb.py) and a tree search (core/search/tree.py) share.

- **The target**: the one metric they improve (core/search/target.py).
- **A step**: a proposal asked of the model (``propose``; a model that never gives a usable one
  ends the search), made by aider and run with fix attempts (core/steps/attempts.py), timed and
  metered (``StepClock``), recorded as a ledger's Step (``result_step``) and, on the path to the
  best, as a notebook entry (``note_step``).
- **The end**: the summary (``search_markdown``), the stage's result (``SearchOutcome``).

Their code lives in worktrees (core/search/worktrees.py) and their runs with other seeds are in
core/search/seeds.py. Functions take the stage's context (core/stage_context.py) as ``ctx``, as
the other research helpers do.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..answers.examples import example_strings
from ..answers.experiment_answers import Proposal, proposal_answer
from ..answers.validation import validate
from ..errors import UnusableAnswer
from ..runs.effect_text import effects_markdown
from ..runs.effects import effects_of_runs, metric_directions
from ..runs.setting_changes import changed_texts, planned_changes
from ..runs.setting_words import settings_in_words
from ..settings.contract import RunTerms
from ..source.setting_edit import Editable
from ..steps.attempts import (
    Attempted,
    attempt_run,
    code_digest,
    code_files,
    code_now,
    code_of_runs,
    digest_at,
)
from ..steps.settings_runs import settings_run
from ..workspace.artifacts import NOTES, load_plan
from ..workspace.notebook import append_run, code_change, own_words
from ..workspace.project import Project
from ..workspace.run_folder import run_name
from .ledger import Final, Noise, SearchLedger, Step
from .target import Target

if TYPE_CHECKING:
    from ..coding.coder import CodeEditor
    from ..llm.budget import Meter
    from ..runs.runner import RunResult
    from ..settings.sections import SearchSection
    from ..stage_context import StageContext


# -- checkouts ---------------------------------------------------------------------------------


# -- a step -------------------------------------------------------------------------------------


@dataclass
class StepClock:
    """Times one step: its wall time, and (through the ledger's meter) the model's."""

    started: float
    meter: Meter

    @property
    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def stamp(self, step: Step) -> None:
        """The step's times and tokens so far (its ledger commit follows)."""
        step.wall_s, step.model_s, step.tokens = self.wall_s, self.meter.model_s, self.meter.tokens


@contextmanager
def step_clock(ctx: StageContext) -> Iterator[StepClock]:
    with ctx.services.ledger.meter() as meter:
        yield StepClock(time.monotonic(), meter)


def propose(
    ctx: StageContext,
    prompt: str,
    earlier: list[Step],
    settings: list[Editable] | None = None,
    *,
    code_changes: bool = True,
    base: str = "",
) -> Proposal:
    """The model's next change: one line for the ledger, and settings of the code with new
    values (``settings``: those it may name) or what to do to the code (``base``: the commit
    the search started from, whose code ran as its baseline); a description the
    ledger already has, or settings the code already has, is refused and asked again."""
    tried = {" ".join(step.description.lower().split()): step for step in earlier}
    choices = settings or []
    record = proposal_answer(tuple(choices), code_changes=code_changes)

    def parse(data: Any) -> Proposal:
        proposal = validate(
            record, settings_from_words(data, choices, description=not code_changes)
        )
        same = tried.get(proposal.description.lower())
        if same is not None:
            raise ValueError(
                f"step {same.step} already tried {proposal.description!r} ({same.status}); "
                "propose a different change" + untried_settings(choices, earlier)
            )
        wanted = proposal.chosen_settings
        held = ", ".join(f"{name} = {value!r}" for name, value in wanted.items())
        if wanted and not planned_changes(choices, wanted):
            raise ValueError(f"the code already has {held}; propose a value it does not have")
        ran = wanted and ran_before(ctx, wanted, earlier, base)
        if ran:
            raise ValueError(
                f"{ran} already ran the code {held} gives; propose another change"
                + untried_settings(choices, earlier)
            )
        return proposal

    messages = [{"role": "user", "content": prompt}]
    proposal = ctx.llm(role="searcher").ask_json(
        messages,
        parse,
        schema=record,
        examples=example_strings(messages),
    )
    said = ", ".join(f"{n} = {v!r}" for n, v in proposal.chosen_settings.items())
    ctx.tell("searcher", f"{proposal.description}\n\n{said or proposal.change}")
    return proposal


def untried_settings(settings: list[Editable], earlier: list[Step]) -> str:
    """'; settings no step has changed yet: A, B' ('' when every one was tried): the 1.5B
    model, told only that its change was tried, proposed HIDDEN_UNITS again and again."""
    changed = " ".join(step.change for step in earlier)
    untried = [s.name for s in settings if not re.search(rf"\b{re.escape(s.name)}\b", changed)]
    return f"; settings no step has changed yet: {', '.join(untried[:10])}" if untried else ""


def ran_before(
    ctx: StageContext, wanted: dict[str, Any], earlier: list[Step], base: str = ""
) -> str:
    """Which earlier step, finished run or the ``base`` commit's code (the search's start)
    already ran the code that setting ``wanted`` gives ('' when none): asked again before
    anything runs, a repeat costs seconds, not an attempt (the 1.5B model proposed
    HIDDEN_UNITS = 64 three times in five attempts)."""
    files = code_files(ctx.project)
    _, texts = changed_texts(ctx.project.root, files, wanted)
    digest = code_digest({**code_now(ctx.project, files), **texts})
    start = {digest_at(ctx.project, base): "the search's start (run_0's code)"} if base else {}
    return {**start, **known_code(earlier), **code_of_runs(ctx.project)}.get(digest, "")


def settings_from_words(data: Any, settings: list[Editable], *, description: bool = False) -> Any:
    """A proposal that lists no settings but whose change or description is nothing but
    settings of the code in words ("HIDDEN_UNITS = 64", "Change the number of hidden units to
    64.", as the 1.5B model writes them), with those settings listed."""
    if not isinstance(data, dict) or data.get("settings"):
        return data
    # the change or, in a climb of settings only (where words are the only way to say one),
    # the one-line description when the change explains too much
    keys = ("change", "description") if description else ("change",)
    said = [text for key in keys if isinstance(text := data.get(key), str)]
    worded = next((found for text in said if (found := settings_in_words(text, settings))), {})
    if not worded:
        return data
    listed = [
        {"name": n, "value": list(v) if isinstance(v, tuple) else v} for n, v in worded.items()
    ]
    return {**data, "settings": listed}


NO_PROPOSAL = "(no usable proposal)"
IDLE_LIMIT = 3  # steps in a row in which nothing ran end a search: the model cannot make one


def unproposed(number: int, base: str, error: UnusableAnswer, status: str) -> Step:
    """A step whose proposal the model never gave in a usable form: nothing was edited or run,
    and it counts (its tokens and time were spent); status crash (climb) or buggy (tree)."""
    return Step(
        step=number,
        status=status,
        description=NO_PROPOSAL,
        base_commit=base,
        run_id=run_name(number),
        problem=error.message,
        verdict=f"no usable proposal: {error.problem}",
    )


def ran_nothing(step: Step) -> bool:
    """No proposal, or no edit that changed the code (or only code that already ran): the
    model made nothing that could be measured."""
    return step.value is None and step.run_s == 0


def idle_in_a_row(steps: list[Step]) -> str:
    """Why the search must end when nothing ran in its last steps ('' if something did): a
    model that alternates unusable proposals with edits that never land would spend every
    attempt of the night."""
    last = steps[-IDLE_LIMIT:]
    if len(last) < IDLE_LIMIT or not all(ran_nothing(step) for step in last):
        return ""
    said = (
        "no usable proposal"
        if all(s.description == NO_PROPOSAL for s in last)
        else ("no usable change")
    )
    why = last[-1].verdict or last[-1].problem
    return (
        f"the model gave {said} {IDLE_LIMIT} times in a row ({why[:200]}); a stronger "
        "[models] experiments model is needed"
    )


def make_change(
    work: StageContext,
    coder: CodeEditor,
    number: int,
    change: str,
    step_text: str,
    *,
    section: SearchSection,
    target: Target,
    attempts: int,
    earlier: list[Step],
    settings: dict[str, Any] | None = None,
) -> Attempted:
    """aider's edit of ``change`` in ``work``'s checkout and its run ``run_<number>`` under the
    budget, with up to ``attempts`` tries (fixes of a crash, or of a run that reports no
    metric); code that an ``earlier`` step already ran is not run again. ``settings``: the
    proposal sets these and nothing else, so labtui makes it (one run, no model call)."""
    run_id = run_name(number)

    def reports_the_metric(result: RunResult) -> str:
        if target.value(result.means) is not None:
            return ""
        return f"{run_id} ran but reports no {target.key} (its means: {json.dumps(result.means)[:300]})"

    if settings:
        return settings_run(
            work,
            run_id,
            settings,
            index=number,
            terms=RunTerms(section.run_budget_s),
            overrun_s=section.overrun_s,
            known=known_code(earlier),
            accept=reports_the_metric,
        )
    return attempt_run(
        work,
        coder,
        run_id,
        work.prompt(
            "search_edit",
            run_id=run_id,
            step_text=step_text,
            change=change,
            budget_s=f"{section.run_budget_s:g}",
            notes=work.notes_block(),
        ),
        index=number,
        attempts=attempts,
        terms=RunTerms(section.run_budget_s),
        overrun_s=section.overrun_s,
        known=known_code(earlier),
        accept=reports_the_metric,
    )


def plan_directions(ctx: StageContext, how: str) -> str:
    """The approved plan's runs, as directions for a search's proposals ('' without a plan)."""
    planned = load_plan(ctx.project.root, max(1, ctx.config.limits.max_runs))
    if not planned:
        return ""
    lines = "\n".join(f"- {run.change}" for run in planned)
    return f"\nDirections the researcher approved in the plan ({how}):\n{lines}\n"


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
        # a refused proposal's problem quotes the refused text: shown, it would be copied
        problem = "" if step.description == NO_PROPOSAL else step.problem
        why = f" — {problem[:120]}" if problem else ""
        lines.append(f"- step {step.step}: {step.status}, {value}: {step.description}{why}")
    return "\n".join(lines)


def result_step(
    ctx: StageContext,
    checkout: Project,
    number: int,
    attempted: Attempted,
    *,
    base: str,
    description: str,
    change: str,
) -> Step:
    """A step's record from its attempts (status and value are the caller's to judge)."""
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
        run_id=run_name(number),
        problem=attempted.problem,
        stderr_tail="" if attempted.ok else attempted.stderr_tail,
        tried=list(attempted.tried),
        digest=attempted.digest or code_digest(now),
        memory_mb=_memory_mb(result),
        run_s=attempted.run_s,
    )


def _memory_mb(result: RunResult | None) -> float:
    """What the ledger's memory column says: the run's GPU memory when it had GPUs, else the
    memory it held on the host (its peak, as sampled)."""
    if result is None:
        return 0.0
    return result.peak_gpu_memory_mb or result.peak_memory_mb


def note_step(root: Path, step: Step, run_dir: Path, made_from: str) -> None:
    """The step's run as an entry of the notebook, once: what changed (computed, and in the
    coder's words) and its effects against the baseline (computed from the run's numbers)."""
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


# -- runs of the same code with other seeds ------------------------------------------------------


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
        f"The project's code under the budget: {base:.6g}; run-to-run noise: std "
        f"{noise.std:.4g} (the spread of {len(noise.values)} seed(s), {noise.spread:.4g}, or the "
        f"runs' own standard error, {noise.reported:.4g}, whichever is larger), so a change had "
        f"to beat the best by more than {noise.threshold:.4g}.",
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


def checkpoint_due(section: SearchSection, done: int) -> bool:
    return bool(section.checkpoint_every) and done > 0 and done % section.checkpoint_every == 0
