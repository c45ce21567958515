"""A finished run's analysis for the lab notebook, written by the model and checked by code.

labtui computes the effects (``core.runs.effects``: each metric against the baseline, identical,
within noise, better or worse) and gives them to the model as fact. Its analysis is then checked
like the paper is (``core.provenance.claims``): a number that no run produced, or a claim of improvement,
decline or significance that the effects contradict, goes back to the model with the numbers, up to
``[llm] reasks`` times. What is still wrong after that never reaches notes.md as the model wrote
it: sentences with untraced numbers are withheld, contradicted claims are withheld and listed,
and the checkpoint shows both. The write-up reads notes.md, so this is where a false "a
significant improvement" on identical results is stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..answers.experiment_answers import RunAnalysis
from ..answers.validation import validate
from ..events import Refused
from ..runs.effect_text import effects_markdown
from .checks import AnalysisCheck, check_analysis
from .claims import sentences
from .record import run_sources

if TYPE_CHECKING:
    from ..runs.effects import Effect
    from ..stage_context import StageContext


@dataclass(frozen=True)
class RunReview:
    analysis: str  # for the notebook: what the numbers show (only what passed the checks)
    next: str  # continue | finish
    why: str
    withheld: list[str] = field(default_factory=list)  # what the checks kept out, and why

    def notebook_text(self) -> str:
        """The analysis as notes.md keeps it: the write-up reads the notebook, so what was
        withheld is counted there, never quoted (the checkpoint and the journal quote it)."""
        if not self.withheld:
            return self.analysis
        return (
            f"{self.analysis or '(nothing of the analysis passed the checks)'}\n\n"
            f"*labtui withheld {len(self.withheld)} sentence(s) of this analysis: they claimed "
            "what the computed effects contradict, or cited numbers no run produced (see the "
            "run's checkpoint and the journal).*"
        )


def parse_run_review(data: Any) -> RunReview:
    """The analysis's shape and content (``core.answers.experiment_answers.RunAnalysis``): real sentences, not a
    placeholder or the prompt's example; ValueError names the field."""
    answer = validate(RunAnalysis, data)
    return RunReview(answer.analysis, answer.next, answer.why)


def review_run(
    ctx: StageContext,
    title: str,
    run_id: str,
    what_changed: str,
    found: list[Effect],
    *,
    done: list[str],
    remaining: int,
) -> RunReview:
    """The computed effects go to the model: an analysis for the notebook (checked against the
    effects and the runs), and go on or finish."""
    prompt = ctx.prompt(
        "experiment_review",
        run_id=run_id,
        title=title,
        what_changed=what_changed.strip() or "(no description)",
        results=effects_markdown(found),
        done=", ".join(done) or "none",
        remaining=remaining,
    )
    llm = ctx.llm(role="experimenter")
    sources = run_sources(ctx.project.root)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for attempt in range(max(0, ctx.config.llm.reasks) + 1):
        review = llm.ask_json(messages, parse_run_review, schema=RunAnalysis)
        check = check_analysis(review.analysis, found, sources)
        if check.ok:
            break
        for problem in check.problems():
            what = "claim" if problem in {c.problem for c in check.contradicted} else "answer"
            ctx.emit(Refused(stage=ctx.stage, what=what, subject=run_id, reason=problem))
        if attempt < ctx.config.llm.reasks:
            messages += [
                {"role": "assistant", "content": review.analysis},
                {"role": "user", "content": _recheck_prompt(check.problems())},
            ]
    else:
        review = _withhold(review, check)
    withheld = "".join(f"\n- withheld: {line}" for line in review.withheld)
    ctx.tell("experimenter", f"{review.analysis}{withheld}\n\n**{review.next}**: {review.why}")
    return review


def _recheck_prompt(problems: list[str]) -> str:
    listed = "\n".join(f"- {problem}" for problem in problems)
    return (
        "Your analysis does not agree with the computed effects:\n"
        f"{listed}\n"
        "Write the analysis again from the effects table: the same JSON object, with only "
        "numbers from the table and only claims the verdicts support."
    )


def _withhold(review: RunReview, check: AnalysisCheck) -> RunReview:
    """The analysis without the sentences that failed the checks; they are listed instead."""
    untraced = {w.text for w in check.untraced}
    contradicted = {c.sentence.strip(): c.problem for c in check.contradicted}
    kept, withheld = [], []
    start = 0
    for sentence in sentences(review.analysis):
        bare = sentence.strip()
        at = review.analysis.find(bare, start)
        start = max(start, at)
        end = at + len(bare)
        defect = next((d.problem for d in check.prose if at <= d.at < end), None)
        if bare in contradicted:
            withheld.append(f"“{bare}” — {contradicted[bare]}")
        elif any(number in bare for number in untraced):
            withheld.append(f"“{bare}” — cites a number no run produced")
        elif defect is not None:
            withheld.append(f"“{bare}” — {defect}")
        else:
            kept.append(bare)
    for sentence, problem in contradicted.items():  # a claim split across sentences
        if not any(sentence in line for line in withheld):
            withheld.append(f"“{sentence}” — {problem}")
    return RunReview(" ".join(kept), review.next, review.why, withheld)
