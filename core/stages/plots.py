"""Plots: aider updates plot.py for the new runs, it runs (with fix attempts), and the figures
become committed files the LaTeX stage can include. A plot failure is reported, not fatal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..answers.experiment_answers import FigureDescriptions
from ..answers.validation import validate
from ..coding.edit_guard import EditPolicy
from ..runs.plot_run import plot_settings, run_plot
from ..settings.contract import code_text
from ..stage_context import StageContext, StageOutput
from ..stage_protocol import DeclaredStage
from ..workspace.artifacts import FIGURES
from ..workspace.stage_results import ExperimentsResult, PlotsResult


def _existing_figures(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.png"))


def run(ctx: StageContext) -> StageOutput:
    runs = ctx.result(ExperimentsResult).runs
    start = ctx.project.head()  # the last plot.py and figures that worked (or the template's)
    coder = ctx.coder()
    prompt = _first_prompt(ctx, runs)
    problem = ""
    settings = plot_settings(ctx.config)
    if settings["python"] != ctx.config.python:
        ctx.say(f"{ctx.config.python} has no matplotlib: plot.py runs with labtui's own Python")
    for attempt in range(1, max(1, ctx.config.limits.fix_attempts) + 1):
        edit = coder.edit(
            ["plot.py"],
            prompt,
            commit_message=f"plots: update plot.py (attempt {attempt})",
            policy=EditPolicy(),  # plot.py only; the figures are plot.py's to write, not aider's
        )
        if not edit.changed:
            ctx.say(f"plot.py was not changed ({edit.error}); running it as it is")
        result, figures = run_plot(ctx.project.root, emit=ctx.emit, stage=ctx.stage, **settings)
        if result.returncode == 0 and not result.timed_out:
            problem = ""
            break
        problem = (
            "timed out"
            if result.timed_out
            else result.scheduler_end or f"exit status {result.returncode}"
        )
        prompt = ctx.prompt("plot_fix", problem=problem, stderr=result.stderr_tail[-1500:])
    if problem:
        _keep_last_good_plots(ctx, start, problem)
    figures = _existing_figures(ctx.project.root)
    if problem:
        ctx.say(
            f"plotting failed ({problem}); plot.py and the figures are as they last worked, "
            f"and the paper will use those: {', '.join(figures) or 'none'}"
        )
    descriptions = describe_figures(ctx, figures, runs) if figures else {}
    (ctx.project.root / FIGURES).write_text(json.dumps(descriptions, indent=1) + "\n")
    ctx.commit(
        "plots: figures for " + (", ".join(runs) or "baseline"), ["plot.py", FIGURES, *figures]
    )
    return StageOutput(
        summary=f"{len(figures)} figure(s)" + (f"; plot.py failed: {problem}" if problem else ""),
        result=PlotsResult(figures=figures, descriptions=descriptions, plot_failed=bool(problem)),
        checkpoint_body="Figures in the project root:\n\n"
        + "\n".join(f"- `{f}` — {descriptions.get(f, 'no description')}" for f in figures),
        kind="plots",
        product="plot.py",
    )


def _first_prompt(ctx: StageContext, runs: list[str]) -> str:
    """Update the template's plot.py; a repository without one gets it written (an empty file
    first: aider edits what exists)."""
    path = ctx.project.root / "plot.py"
    if path.is_file() and path.read_text(encoding="utf-8").strip():
        return ctx.prompt("plot", runs=", ".join(runs) or "none", notes=ctx.notes_block())
    path.write_text("", encoding="utf-8")
    code = code_text(ctx.project.root, ctx.config.experiment)
    return ctx.prompt("scaffold_plot", code=code, notes=ctx.notes_block()) + (
        f"\nPlot the baseline and these runs: {', '.join(runs) or 'none'}.\n"
    )


def _keep_last_good_plots(ctx: StageContext, start: str, problem: str) -> None:
    """plot.py failed every attempt: it goes back to the commit the stage started from, and
    so do the figures (the PNGs the failed attempts wrote are removed), in one commit."""
    root = ctx.project.root
    good = ctx.project.file_at(start, "plot.py")
    if good is not None:
        (root / "plot.py").write_text(good, encoding="utf-8")
    kept = set(ctx.project.repo.git.ls_tree("--name-only", start).splitlines())
    for png in _existing_figures(root):
        if png not in kept:
            (root / png).unlink()
    pngs = [name for name in kept if name.endswith(".png")]
    if pngs:
        ctx.project.repo.git.checkout(start, "--", *pngs)
    ctx.commit(
        f"plots: plot.py failed ({problem}); plot.py and figures as of {start[:8]}",
        ["plot.py", *pngs],
    )


def parse_descriptions(data: Any, figures: list[str]) -> dict[str, str]:
    """One non-empty description for exactly the figures that exist (ValueError says what not)."""
    described = data.get("figures") if isinstance(data, dict) else None
    if not isinstance(described, dict):
        raise ValueError('answer {"figures": {"<file name>": "<description>", ...}}')
    missing = [f for f in figures if not str(described.get(f) or "").strip()]
    unknown = [f for f in described if f not in figures]
    if missing or unknown:
        raise ValueError(
            "describe exactly these figures: "
            + ", ".join(figures)
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not figures: {', '.join(unknown)}" if unknown else "")
        )
    # Every one present: now whether each says something (not "...", not the example's words).
    checked = validate(FigureDescriptions, data).figures
    return {f: checked[f] for f in figures}


def describe_figures(ctx: StageContext, figures: list[str], runs: list[str]) -> dict[str, str]:
    """What each figure shows, written from plot.py by the plots model."""
    root = ctx.project.root
    prompt = ctx.prompt(
        "figures",
        figures=", ".join(figures),
        labels=", ".join(["run_0", *runs]),
        code=(root / "plot.py").read_text(encoding="utf-8"),
    )
    descriptions = ctx.llm(role="plotter").ask_json(
        [{"role": "user", "content": prompt}],
        lambda data: parse_descriptions(data, figures),
        schema=FigureDescriptions,
    )
    ctx.tell("plotter", "\n".join(f"- `{f}`: {d}" for f, d in descriptions.items()))
    return descriptions


STAGE = DeclaredStage("plots", run)
