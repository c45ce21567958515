"""Plots: aider updates plot.py for the new runs, it runs (with fix attempts), and the figures
become committed files the LaTeX stage can include. A plot failure is reported, not fatal.
"""

from __future__ import annotations

from pathlib import Path

from ..stage_context import StageContext, StageOutput


def _existing_figures(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.png"))


def run(ctx: StageContext) -> StageOutput:
    from ..runner import run_plot

    runs = ctx.result_of("experiments").get("runs", [])
    coder = ctx.coder()
    prompt = ctx.prompt("plot", runs=", ".join(runs) or "none", notes=ctx.notes_block())
    problem = ""
    for attempt in range(1, max(1, ctx.config.limits.fix_attempts) + 1):
        edit = coder.edit(
            ["plot.py"], prompt, commit_message=f"plots: update plot.py (attempt {attempt})"
        )
        if not edit.changed:
            ctx.say(f"plot.py was not changed ({edit.error}); running it as it is")
        result, figures = run_plot(
            ctx.project.root,
            python=ctx.config.python,
            timeout_s=ctx.config.limits.plot_timeout_s,
            emit=ctx.emit,
            stage=ctx.stage,
        )
        if result.returncode == 0 and not result.timed_out:
            problem = ""
            break
        problem = "timed out" if result.timed_out else f"exit status {result.returncode}"
        prompt = ctx.prompt("plot_fix", problem=problem, stderr=result.stderr_tail[-1500:])
    figures = _existing_figures(ctx.project.root)
    if problem:
        ctx.say(
            f"plotting failed ({problem}); the paper will use the figures that exist: {figures}"
        )
    ctx.commit("plots: figures for " + (", ".join(runs) or "baseline"), ["plot.py", *figures])
    return StageOutput(
        summary=f"{len(figures)} figure(s)" + (f"; plot.py failed: {problem}" if problem else ""),
        result={"figures": figures, "plot_failed": bool(problem)},
        checkpoint_body="Figures in the project root:\n\n" + "\n".join(f"- {f}" for f in figures),
        kind="plots",
        product="plot.py",
    )
