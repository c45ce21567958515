"""What the pipeline knows of a stage: how to run it, how to re-derive its output after the
researcher edited its product, and the extra checkpoint actions it answers itself.

Each module in ``core/stages/`` declares its ``STAGE`` at the bottom. The pipeline only calls what
a stage declared: an action a stage offers at its checkpoint but did not declare is a bug caught
before the researcher can pick it, not an ``AttributeError`` afterwards.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .checkpoints import WAIVE
from .errors import LabtuiError
from .settings.config import Config
from .stage_context import StageContext, StageOutput

StageRun = Callable[[StageContext], StageOutput]
# Re-derives the output from the product the researcher edited (e.g. plan.json).
StageReload = Callable[[StageContext, StageOutput], StageOutput]
# A checkpoint action the stage answers itself, with the note given: ``waive``, ``improve``.
StageAction = Callable[[StageContext, StageOutput, str], StageOutput]
# Applies the researcher's marks of the checkpoint's subjects to the stage's product.
StagePicks = Callable[[StageContext, Mapping[str, str]], None]
# Whether, under these settings, the stage's work left half done (a kill) goes on from where it
# is rather than from the commit the stage began at (a search resumes from its ledger).
StageResumes = Callable[[Config], bool]


@runtime_checkable
class Stage(Protocol):
    name: str

    def run(self, ctx: StageContext) -> StageOutput: ...

    def after_edit(self, ctx: StageContext, output: StageOutput) -> StageOutput: ...

    def offers(self, action: str) -> bool: ...

    def apply_picks(self, ctx: StageContext, picks: Mapping[str, str]) -> None: ...

    def act(
        self, action: str, ctx: StageContext, output: StageOutput, note: str
    ) -> StageOutput: ...

    def resumes_in_place(self, config: Config) -> bool: ...


@dataclass(frozen=True)
class DeclaredStage:
    """A stage declared by its module: ``STAGE = DeclaredStage("plan", run, reload=reload)``."""

    name: str
    run_stage: StageRun
    reload: StageReload | None = None
    actions: Mapping[str, StageAction] = field(default_factory=dict)
    picks: StagePicks | None = None
    resumes: StageResumes | None = None

    def resumes_in_place(self, config: Config) -> bool:
        """True when a half-done attempt of this stage goes on from where it is (its own
        record says what is finished), instead of being rewound to where it began."""
        return self.resumes is not None and self.resumes(config)

    def run(self, ctx: StageContext) -> StageOutput:
        output = self.run_stage(ctx)
        self.check_offers(output)
        return output

    def after_edit(self, ctx: StageContext, output: StageOutput) -> StageOutput:
        """The output as the edited product gives it (the same output for a stage whose
        product is read again by the next stage, not by itself)."""
        if self.reload is None:
            return output
        return self.check_offers(self.reload(ctx, output))

    def offers(self, action: str) -> bool:
        return action in self.actions

    def apply_picks(self, ctx: StageContext, picks: Mapping[str, str]) -> None:
        """Write the researcher's marks into the product (then committed as their edit)."""
        if self.picks is None:
            raise LabtuiError(
                f"the {self.name} checkpoint was answered with picks, which it does not take",
                "this is a front-end bug; the project is resumable",
            )
        self.picks(ctx, picks)

    def act(self, action: str, ctx: StageContext, output: StageOutput, note: str) -> StageOutput:
        if not self.offers(action):
            raise LabtuiError(
                f"the {self.name} stage was asked to {action!r}, which it does not declare",
                "this is a bug in labtui; the project is resumable",
            )
        return self.check_offers(self.actions[action](ctx, output, note))

    def check_offers(self, output: StageOutput) -> StageOutput:
        """An output may offer only actions the stage answers (and a blocked one must be
        waivable); said at once, before a checkpoint offers them."""
        offered = [*output.extra_actions, *([WAIVE] if output.blocked else [])]
        missing = [action for action in offered if not self.offers(action)]
        if missing:
            raise LabtuiError(
                f"the {self.name} stage offers {', '.join(missing)} but does not declare it",
                "this is a bug in labtui; the project is resumable",
            )
        return output


def load_stage(name: str) -> Stage:
    """The ``STAGE`` declared by ``core/stages/<name>.py`` (imported when first run)."""
    module = importlib.import_module(f"labtui.core.stages.{name}")
    stage: Stage = module.STAGE
    return stage
