"""The checkpoint after a stage: asked until the researcher decides.

An ``edit`` of the stage's product is committed and the output re-derived from it (the picks a
front end sends are written in first); a ``waive`` or an action the stage declared (the review's
improvement round) is answered by the stage itself; then the question is asked again about the
output as it now is. Any other answer is the decision the session acts on.
"""

from __future__ import annotations

from collections.abc import Callable

from ..checkpoints import ACTIONS, BLOCKED_ACTIONS, WAIVE, Checkpoints, Decision
from ..errors import LabtuiError
from ..llm.budget import Ledger
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import Stage


def ask_until_decided(
    ctx: StageContext,
    stage: Stage,
    output: StageOutput,
    checkpoints: Checkpoints,
    *,
    ledger: Ledger,
    rewind: tuple[str, ...],
    before_ask: Callable[[str], None] = lambda stage: None,
) -> tuple[Decision, StageOutput]:
    """Ask until the researcher decides (``rewind``: the rewind action, where one is offered;
    ``before_ask``: what the session does before each question, given the stage).
    Returns the decision and the output as last derived, which is what later stages use."""
    while True:
        ledger.check()  # the hard cap: stop here, with everything done so far committed
        before_ask(ctx.stage)
        decision = checkpoints.ask(
            ctx.stage,
            f"{ctx.stage}: {output.summary}",
            output.checkpoint_body or output.summary,
            (BLOCKED_ACTIONS if output.blocked else ACTIONS) + output.extra_actions + rewind,
            kind=output.kind,
            product=output.product,
            subjects=tuple(output.subjects),
            details=output.details,
        )
        if decision.action == "edit":
            if decision.picks and not _apply_picks(ctx, stage, decision):
                continue
            output = _keep_edit(ctx, stage, output)
        elif decision.action in (WAIVE, *output.extra_actions):
            # The stage answers these itself: e.g. the write-up's waiver, the review's round.
            output = stage.act(decision.action, ctx, output, decision.note)
        else:
            return decision, output


def _apply_picks(ctx: StageContext, stage: Stage, decision: Decision) -> bool:
    """The researcher's marks written by the stage; False (and said) when they do not fit
    the product, and the question is asked again."""
    try:
        stage.apply_picks(ctx, decision.picks)
    except ValueError as exc:  # a pick that names no idea, or a mark that is no status
        ctx.say(f"could not apply your picks: {exc}")
        return False
    except LabtuiError as exc:  # ideas.json itself is broken: say how to fix it
        ctx.say(f"could not apply your picks: {exc.message} ({exc.hint})")
        return False
    return True


def _keep_edit(ctx: StageContext, stage: Stage, output: StageOutput) -> StageOutput:
    """Commit the researcher's edit of the product and re-derive the stage's output from it."""
    if ctx.keep_edit(output.product) is None:
        return output
    return stage.after_edit(ctx, output)


def interrupted_body(stage: str, what: str, head: str, can_rewind: bool) -> str:
    """What the checkpoint an interrupt opens says."""
    keys = (
        "t retries the stage from its start · r revises it with your note · s skips it · "
        "q stops here (resumable)"
    )
    if can_rewind:
        keys += " · b rewinds to the stage before"
    return (
        f"You interrupted {what} of stage **{stage}**. Everything committed is kept (the "
        f"project is at {head[:8] or 'its first commit'}).\n\n*{keys}.*"
    )
