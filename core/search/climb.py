"""The overnight hill-climb ([experiment] strategy = "climb", after karpathy/autoresearch): one
small change at a time to the experiment's code, each run under the same wall-clock budget,
kept only when the metric beats the best so far by more than the run-to-run noise.

The climb works in the worktree ``.labtui/worktrees/climb-<idea>`` on the branch
``labtui/climb/<idea>``. An attempt is a proposal asked of the model (one line for the ledger,
and what to change), aider's edit of the code, and its run with up to ``[climb] fix_attempts``
fixes when it crashes. Then, computed:

- **keep**: the metric beats the best by more than the noise: the code and the run folder stay
  on the branch (two commits), and the notebook gets the run's entry;
- **discard**: it does not: the branch goes back to the best (git reset); the diff and the run's
  numbers are kept in the ledger only;
- **crash**: it failed every fix: the same, with the error.

Every attempt is a step of the ledger (core/search/ledger.py), committed on the project's
branch, so a killed climb resumes at the next attempt. It stops at ``max_runs`` attempts,
``max_hours``, a skip at a checkpoint (every ``checkpoint_every`` attempts) or the $ budget.
The best code is then run with fresh seeds and merged into the project: the paper is written
from it, with the path of kept changes that led there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import UnusableAnswer
from ..runs.setting_changes import planned_changes, settings_table
from ..settings.contract import code_text
from ..stage_context import StageContext
from ..workspace.artifacts import NOTES
from ..workspace.notebook import start_notebook
from .frame import SearchFrame, SearchOutcome
from .ledger import CRASH, DISCARD, KEEP, LABTUI, Final, SearchLedger, Step
from .search_settings import LABTUI_STEP, back_to, labtui_proposal, search_settings, values_at
from .seeds import measure_noise, seed_values
from .shared import (
    checkpoint_due,
    hours_used,
    idle_in_a_row,
    ledger_lines,
    make_change,
    note_step,
    plan_directions,
    propose,
    ran_before,
    result_step,
    step_clock,
    unproposed,
)
from .target import find_target
from .worktrees import diff_between, keep_abandoned_tip, keep_results, open_checkout, reset_checkout

if TYPE_CHECKING:
    from ..answers.experiment_answers import Proposal
    from ..coding.coder import CodeEditor
    from ..source.setting_edit import Editable
    from ..steps.attempts import Attempted
    from ..workspace.ideas import Idea

STRATEGY = "climb"
SETTINGS_OR_CODE = (
    'either new values for settings above (in "settings"; labtui sets them) or, with "settings" '
    'empty, a change to the code in "change"'
)
SETTINGS_ONLY = 'new values for settings above, in "settings" (labtui sets them)'


def run_climb(ctx: StageContext, idea: Idea, baseline: dict[str, Any]) -> SearchOutcome:
    """The climb for ``idea``, from its ledger's last attempt (or the start) to its end."""
    section = ctx.config.climb
    root = ctx.project.root
    target = find_target(section, STRATEGY, baseline, root)
    ledger = SearchLedger(root, STRATEGY, idea.name, target.key)
    known_noise = ledger.noise()
    start = known_noise.commit if known_noise is not None else ctx.project.head()
    frame = SearchFrame(ctx, STRATEGY, idea, target, ledger, start)
    branch = frame.best_branch(0)
    checkout = open_checkout(ctx.project, f"climb-{idea.name}", branch, start)
    steps = ledger.steps()
    best_tip = next((s.tip for s in reversed(steps) if s.status == KEEP), start)
    keep_abandoned_tip(ctx, checkout, best_tip, f"climb-{idea.name}")
    reset_checkout(checkout, best_tip)
    work = ctx.in_checkout(checkout)
    start_notebook(root, idea.title, idea.experiment, baseline)
    frame.noise = measure_noise(work, checkout, target, ledger, section, start)
    frame.announce(section, branch)
    climb = Climb(frame, work, steps, best_tip)
    return climb.finish(climb.go())


class Climb:
    """One climb's state between attempts: the steps so far and the best."""

    def __init__(
        self, frame: SearchFrame, work: StageContext, steps: list[Step], best_tip: str
    ) -> None:
        self.frame, self.work, self.steps = frame, work, steps
        self.ctx, self.target, self.ledger = frame.ctx, frame.target, frame.ledger
        self.section = self.ctx.config.climb
        self.checkout = work.project
        self.best_tip = best_tip
        kept = [s.value for s in steps if s.status == KEEP and s.value is not None]
        self.best = kept[-1] if kept else frame.noise.values[0]
        self.coder: CodeEditor | None = None

    def go(self) -> str:
        """Attempts until a limit or the researcher ends the climb; the reason it ended."""
        while not (reason := self.limit_reached()):
            self.ctx.check_stop()
            self.ctx.services.ledger.check()  # the $ budget: stop before spending more
            step = self.attempt((self.steps[-1].step if self.steps else 0) + 1)
            self.steps.append(step)
            if checkpoint_due(self.section, len(self.steps)) and not self.go_on():
                return "stopped at a checkpoint by the researcher"
        return reason

    def limit_reached(self) -> str:
        if stalled := idle_in_a_row(self.steps):
            return stalled
        if len(self.steps) >= self.section.max_runs:
            return f"{self.section.max_runs} attempts made"
        used = hours_used(self.frame.noise.wall_s, self.steps)
        if self.section.max_hours and used >= self.section.max_hours:
            return f"{self.section.max_hours:g} hours used"
        return ""

    # -- one attempt ------------------------------------------------------------------------------

    def attempt(self, number: int) -> Step:
        """One attempt, from the proposal to its line in the ledger, committed and told."""
        with step_clock(self.ctx) as clock:
            settings = search_settings(self.work, self.section)  # the best code's values
            try:
                proposal = propose(
                    self.work,
                    self._proposal_prompt(settings),
                    self.steps,
                    settings,
                    code_changes=self.section.code_changes,
                    base=self.frame.start,
                )
            except UnusableAnswer as exc:
                own = self._labtui_step(settings, exc)
                if own is None:
                    step, diff = unproposed(number, self.best_tip, exc, CRASH), ""
                else:
                    step, diff = self._make(number, own)
                    step.proposer = LABTUI
            else:
                step, diff = self._make(number, proposal)
            clock.stamp(step)
            self.ledger.write_step(step, diff=diff, run_dir=self.checkout.root / step.run_id)
            if step.status == KEEP:
                note_step(
                    self.ctx.project.root,
                    step,
                    self.checkout.root / step.run_id,
                    made_from(self.steps),
                )
            else:
                reset_checkout(self.checkout, self.best_tip)  # the run folder goes too
            self.ledger.write_tsv(self.frame.noise.values[0], self.frame.start)
            self.ctx.commit(
                f"experiments: climb attempt {number} {step.status}: {step.description}",
                [self.ledger.relative, NOTES],
            )
        self.frame.tell(step, self.best)
        return step

    def _labtui_step(self, settings: list[Editable], error: UnusableAnswer) -> Proposal | None:
        """labtui's own settings step when the model gave none it could use (None when every
        nearby value has run): the climb goes on instead of ending on the model's repeats."""
        work, steps = self.work, self.steps
        if not self.section.labtui_steps:
            return None
        start = values_at(self.checkout, self.frame.start)

        def is_new(wanted: dict[str, Any]) -> bool:
            if not planned_changes(settings, wanted) or back_to(start, settings, wanted):
                return False
            return not ran_before(work, wanted, steps, self.frame.start)

        changed = " ".join(step.change for step in steps)
        proposal = labtui_proposal(settings, changed, is_new, error.problem[:160])
        if proposal is not None:
            work.tell("searcher", f"{LABTUI_STEP}: {proposal.description}")
        return proposal

    def _make(self, number: int, proposal: Proposal) -> tuple[Step, str]:
        """The proposal made by aider and run (with fixes), judged: the step and its diff."""
        work = self.work
        if self.coder is None:
            self.coder = work.code_editor()
        attempted = make_change(
            work,
            self.coder,
            number,
            proposal.change,
            f"attempt {number} of the climb",
            section=self.section,
            target=self.target,
            attempts=1 + self.section.fix_attempts,
            earlier=self.steps,
            settings=proposal.chosen_settings,
        )
        step = result_step(
            work,
            self.checkout,
            number,
            attempted,
            base=self.best_tip,
            description=proposal.description,
            change=proposal.what_changes,
        )
        step.best_before = self.best
        diff = diff_between(self.checkout, self.best_tip, "HEAD")
        self._judge(step, attempted)
        return step, diff

    def _judge(self, step: Step, attempted: Attempted) -> None:
        """keep, discard or crash, computed from the run's numbers against the best and the
        noise; a kept change's results are committed on the branch (anything else is reset
        once the ledger has it)."""
        target = self.target
        if not attempted.ok:
            step.status = CRASH
            step.verdict = f"crashed after {len(attempted.tried)} attempt(s): {attempted.problem}"
        else:
            step.value = target.value(attempted.ran().result.means)
            assert step.value is not None
            gain = target.gain(step.value, self.best)
            threshold = self.frame.noise.threshold
            if gain > threshold:
                step.status, step.new_best = KEEP, True
                step.verdict = (
                    f"{gain:+.4g} on the best {self.best:.6g} (beats the noise {threshold:.4g})"
                )
            else:
                step.status = DISCARD
                within = "within the noise" if gain > 0 else "no better"
                step.verdict = (
                    f"{gain:+.4g} on the best {self.best:.6g}: {within} ({threshold:.4g})"
                )
        if step.status == KEEP:
            step.tip = keep_results(
                self.work, step, f"experiments: {step.run_id} results (kept: {step.verdict})"
            )
            self.best, self.best_tip = step.value or self.best, step.tip

    def _proposal_prompt(self, settings: list[Editable]) -> str:
        work, target = self.work, self.target
        return work.prompt(
            "climb_propose",
            title=self.frame.idea.title,
            experiment=self.frame.idea.experiment,
            budget_s=f"{self.section.run_budget_s:g}",
            metric=target.key,
            direction=target.direction,
            best=f"{self.best:.6g}",
            threshold=f"{self.frame.noise.threshold:.4g}",
            code=code_text(work.project.root, work.config.experiment),
            settings=settings_table(settings),
            what=SETTINGS_OR_CODE if self.section.code_changes else SETTINGS_ONLY,
            ledger=ledger_lines(self.steps, target),
            directions=plan_directions(self.ctx, "try them, one at a time"),
            notes=work.notes_block(),
        )

    # -- checkpoints and the end ---------------------------------------------------------------

    def go_on(self) -> bool:
        """The checkpoint every ``checkpoint_every`` attempts: approve goes on, a note reaches
        the next proposals, skip ends the climb here (its best is the result), abort stops."""
        last = self.steps[-self.section.checkpoint_every :]
        return self.frame.go_on(
            f"{len(self.steps)} attempt(s), best {self.target.key} {self.best:.6g}",
            f"The last {len(last)} attempt(s):\n\n" + ledger_lines(last, self.target),
        )

    def finish(self, reason: str) -> SearchOutcome:
        """The best code run with fresh seeds, the summary in the notebook, the best merged
        into the project."""
        kept = [s for s in self.steps if s.status == KEEP]
        best_step = kept[-1].step if kept else 0
        seeds = (
            seed_values(self.work, self.checkout, self.target, self.ledger, self.section, best_step)
            if best_step and self.section.seeds
            else []
        )
        final = Final(
            best_step, self.best, self.best_tip, {str(best_step): seeds} if seeds else {}, reason
        )
        earlier = {s.step: made_from([k for k in kept if k.step < s.step]) for s in kept}
        return self.frame.conclude(
            self.steps, final, [s.step for s in kept], self.checkout, lambda s: earlier[s.step]
        )


def made_from(steps: list[Step]) -> str:
    """The code an attempt after ``steps`` is made from: the best before it."""
    kept = [s.step for s in steps if s.status == KEEP]
    return f"the code of attempt {kept[-1]}" if kept else "the project's code"
