"""One search's frame, the same for a hill-climb (core/search/climb.py) and a tree search
(core/search/tree.py): how it is announced (``SearchStarted``, the ledger's first lines, a
commit), how each step is told (``SearchStep``), and how it ends (``conclude``): the ledger's last
lines, the notebook's entries of the path and its summary, one commit, the best code merged into
the project, ``SearchEnded``, and the ``SearchOutcome`` the stage reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Aborted
from ..events import SearchEnded, SearchStarted, SearchStep
from ..workspace.artifacts import NOTES
from ..workspace.project import Project
from ..workspace.run_folder import run_name
from ..workspace.stage_results import ExperimentsResult, SearchSummary
from .ledger import Final, Noise, SearchLedger, Step
from .shared import note_step, search_markdown
from .target import Target
from .worktrees import bring_home, diff_between

if TYPE_CHECKING:
    from ..settings.sections import ClimbSection, TreeSection
    from ..stage_context import StageContext
    from ..workspace.ideas import Idea

NAMES = {"climb": ("climb", "attempt"), "tree": ("tree search", "node")}


@dataclass
class SearchFrame:
    """What one search works with from its start to its end."""

    ctx: StageContext  # in the project itself
    strategy: str  # climb | tree
    idea: Idea
    target: Target
    ledger: SearchLedger
    start: str  # the commit the search started from
    noise: Noise = field(default_factory=lambda: Noise([], 0.0))

    @property
    def name(self) -> str:
        return NAMES[self.strategy][0]

    @property
    def step_name(self) -> str:
        return NAMES[self.strategy][1]

    def announce(self, section: ClimbSection | TreeSection, branch: str) -> None:
        """The search begins (or goes on after a resume): told, and its ledger's first lines
        committed."""
        ctx, ledger, noise = self.ctx, self.ledger, self.noise
        ctx.emit(
            SearchStarted(
                stage=ctx.stage,
                strategy=self.strategy,
                idea=self.idea.name,
                metric=self.target.key,
                direction=self.target.direction,
                baseline=noise.values[0],
                noise=noise.threshold,
                run_budget_s=section.run_budget_s,
                limit=section.limit,
                ledger=f"{ledger.relative}/results.tsv",
                branch=branch,
            )
        )
        ledger.write_tsv(noise.values[0], self.start)
        ctx.commit(
            f"experiments: {self.name} of {self.idea.name} on {self.target.key} "
            f"(noise {noise.threshold:.4g})",
            [ledger.relative, NOTES],
        )

    def tell(self, step: Step, best: float | None) -> None:
        self.ctx.emit(
            SearchStep(
                stage=self.ctx.stage,
                strategy=self.strategy,
                step=step.step,
                status=step.status,
                description=step.description,
                value=step.value,
                best=best,
                new_best=step.new_best,
                run_id=step.run_id,
                commit=step.commit,
                parent=step.parent,
                action=step.action,
                problem=step.problem or step.verdict,
                wall_s=step.wall_s,
                tokens=step.tokens,
            )
        )

    def conclude(
        self,
        steps: list[Step],
        final: Final,
        path: list[int],
        checkout: Project,
        made_from: Callable[[Step], str],
        more: str = "",
    ) -> SearchOutcome:
        """The end: the ledger's last lines, the notebook's entries of the path (from the
        checkout, which holds the best code and the path's runs) and its summary, committed; the
        best merged into the project; told. ``more``: what the summary adds (the tree)."""
        ctx, ledger, target, root = self.ctx, self.ledger, self.target, self.ctx.project.root
        ledger.write_final(final)
        ledger.write_tsv(self.noise.values[0], self.start)
        summary = search_markdown(target, self.noise, steps, final, ledger, path)
        by_number = {step.step: step for step in steps}
        for number in path:
            step = by_number[number]
            note_step(root, step, checkout.root / step.run_id, made_from(step))
        heading = f"The {self.name}"
        put_summary(root, heading, f"It ended: {final.reason}.\n\n{summary}{more}")
        ctx.commit(
            f"experiments: {self.name} of {self.idea.name} ended ({final.reason})",
            [ledger.relative, NOTES],
        )
        branch = ""
        if final.best_step:
            branch = self.best_branch(final.best_step)
            bring_home(
                ctx,
                branch,
                f"experiments: the {self.name}'s best, {self.step_name} {final.best_step}, "
                f"from {branch}",
            )
        outcome = SearchOutcome(
            strategy=self.strategy,
            idea=self.idea.name,
            target=target,
            noise=self.noise,
            steps=steps,
            final=final,
            path=path,
            ledger=ledger.relative,
            branch=branch,
            summary=summary,
            best_diff=diff_between(checkout, self.start, final.commit) if final.best_step else "",
        )
        ctx.emit(outcome.ended_event(ctx.stage))
        return outcome

    def go_on(self, title: str, body: str) -> bool:
        """A checkpoint inside the search (every ``checkpoint_every`` steps): approve goes on, a
        note reaches the next proposals, skip ends the search here (its best is the result),
        abort stops it (resumable)."""
        decision = self.ctx.ask(
            f"experiments: {self.name} — {title}",
            f"{body}\n\n*approve goes on · r gives the next proposals your note · s ends the "
            f"{self.name} here (its best is the result) · q stops (resumable).*",
            kind="search",
            options=("approve", "revise", "skip", "abort"),
        )
        if decision.action == "abort":
            raise Aborted(decision.note or f"stopped at the {self.name}'s checkpoint; resumable")
        return decision.action != "skip"

    def best_branch(self, step: int) -> str:
        if self.strategy == "climb":
            return f"labtui/climb/{self.idea.name}"
        return f"labtui/tree/{self.idea.name}/node-{step}"


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
        return [run_name(n) for n in self.path]

    def counts(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for step in self.steps:
            counted[step.status] = counted.get(step.status, 0) + 1
        return counted

    def ended_event(self, stage: str) -> SearchEnded:
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

    def result(
        self, baseline: dict[str, Any], means: dict[str, dict[str, Any]]
    ) -> ExperimentsResult:
        """The stage's result: what the plots and the write-up read."""
        final = self.final
        return ExperimentsResult(
            idea=self.idea,
            runs=self.runs,
            means=means,
            baseline=baseline,
            search=SearchSummary(
                strategy=self.strategy,
                metric=self.target.key,
                direction=self.target.direction,
                best={
                    "step": final.best_step,
                    "run": run_name(final.best_step),
                    "value": final.best_value,
                    "commit": final.commit,
                    "seeds": final.seed_values(),
                    "mean": final.mean,
                    "std": final.std,
                },
                noise={"values": self.noise.values, "threshold": self.noise.threshold},
                counts=self.counts(),
                ledger=f"{self.ledger}/results.tsv",
                branch=self.branch,
                reason=final.reason,
            ),
        )


def put_summary(root: Path, heading: str, text: str) -> None:
    """The notebook's section ``heading``, written anew (a resumed search writes it again)."""
    path = Path(root) / NOTES
    notes = path.read_text(encoding="utf-8") if path.is_file() else ""
    marker = f"\n## {heading}\n"
    if marker in notes:
        before, _, after = notes.partition(marker)
        rest = after.split("\n## ", 1)
        notes = before + (("\n## " + rest[1]) if len(rest) > 1 else "")
    path.write_text(notes.rstrip("\n") + f"\n{marker}\n{text}\n", encoding="utf-8")
