"""A project started from a topic alone (``labtui new DIR --idea "..."``) gets its code here, as
Agent Laboratory's data-preparation and experiment steps write theirs: once an idea is chosen, the
agents write ``prepare.py`` (run: it builds the data set under ``data/`` from what the machine
has), ``experiment.py`` (the baseline, run as run_0), the paper's skeleton (adapted from labtui's
bundled one; it must keep the write-up's placeholders and its bibliography and compile) and
``plot.py`` (run: it must draw at least one figure). Each file is a commit, each is run or compiled,
and a failure goes back to the agent with its error for ``[limits] fix_attempts`` tries. The
template contract is checked by code (the experiment keeps ``--out_dir`` and ``final_info.json``;
its numbers must come from running it, not from its text). A skeleton that never passes its
checks is not worth a failed stage: labtui's bundled one stays, and that is said.

The plan stage calls :func:`scaffold` before it plans, so its checkpoint shows what was written.
A project made from a template or from a repository already has its code: nothing happens.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..coding.edit_guard import LATEX_MARKERS, Contract, EditPolicy
from ..errors import StageFailed
from ..latex.compile import compile_latex
from ..latex.source import section_titles
from ..machine import sandbox_policy
from ..machine.gpu import describe
from ..machine.interpreter import probe_interpreter
from ..machine.processes import run_process
from ..runs.plot_run import plot_settings, run_plot
from ..settings.templates import default_paper, latex_problems
from ..stage_context import StageContext
from ..workspace.run_folder import FINAL_INFO, has_results, recorded_means
from .baseline import BASELINE, run_baseline

if TYPE_CHECKING:
    from ..workspace.ideas import Idea

PREPARE, EXPERIMENT, PLOT = "prepare.py", "experiment.py", "plot.py"
DATA = "data"
# The write-up replaces these; a skeleton that lost one would leave a section unwritten.
PLACEHOLDERS = (
    "TITLE HERE", "ABSTRACT HERE", "INTRO HERE", "RELATED WORK HERE", "METHOD HERE",
    "EXPERIMENTAL SETUP HERE", "RESULTS HERE", "CONCLUSIONS HERE",
)  # fmt: skip
_CONTRACTS = {
    PREPARE: Contract(python=True),
    EXPERIMENT: Contract(python=True, options=("--out_dir",), literals=(FINAL_INFO,)),
    PLOT: Contract(python=True),
}
_SKELETON = Contract(latex=tuple(LATEX_MARKERS))


@dataclass(frozen=True)
class Written:
    """One file the agents wrote, the commit that holds it, and what running it showed."""

    name: str
    commit: str
    shown: str  # e.g. "data/: 2 file(s)", "run_0: test_accuracy 0.91", "2 figure(s)"


def needs_scaffold(ctx: StageContext) -> bool:
    root = ctx.project.root
    return ctx.config.project.origin == "topic" and not all(
        (root / name).is_file() and (root / name).stat().st_size for name in (EXPERIMENT, PLOT)
    )


def _files(ctx: StageContext) -> tuple[str, ...]:
    return (PREPARE, EXPERIMENT, ctx.config.paper.tex, PLOT)


def scaffold(ctx: StageContext, idea: Idea) -> list[Written]:
    """Write (and run) what a topic's project lacks, for ``idea``; what was written earlier (a
    revised plan asks again) is listed as it stands; [] for a project that came with its code."""
    if ctx.config.project.origin != "topic":
        return []
    if not needs_scaffold(ctx):
        return [_as_committed(ctx, name) for name in _files(ctx)]
    root = ctx.project.root
    facts = _facts(ctx, idea)
    written = []
    if not _has_data(root):
        written.append(_write(ctx, PREPARE, ctx.prompt("scaffold_prepare", **facts), _prepared))
    prepare = (root / PREPARE).read_text(encoding="utf-8") if (root / PREPARE).is_file() else ""
    if not has_results(root / BASELINE):
        prompt = ctx.prompt("scaffold_experiment", prepare=prepare, **facts)
        written.append(_write(ctx, EXPERIMENT, prompt, _baseline_ran))
    if _bundled_skeleton(ctx):
        written.append(_adapt_skeleton(ctx, ctx.prompt("scaffold_latex", **facts)))
    code = (root / EXPERIMENT).read_text(encoding="utf-8")
    written.append(_write(ctx, PLOT, ctx.prompt("scaffold_plot", code=code, **facts), _plotted))
    return written


def written_markdown(written: list[Written]) -> str:
    """What the plan checkpoint shows of the code the agents wrote."""
    if not written:
        return ""
    lines = [f"- `{w.name}` (commit `{w.commit[:8]}`): {w.shown}" for w in written]
    return "**Written for this topic** (each file a commit):\n\n" + "\n".join(lines) + "\n\n"


# -- one file: write, run, fix --------------------------------------------------------------


def _bundled_skeleton(ctx: StageContext) -> bool:
    path = ctx.project.root / ctx.config.paper.tex
    return path.is_file() and path.read_text(encoding="utf-8") == default_paper().read_text()


def _adapt_skeleton(ctx: StageContext, prompt: str) -> Written:
    """The paper's skeleton adapted to the topic; labtui's bundled one stays when the agent's
    never keeps the placeholders and the bibliography and compiles."""
    tex = ctx.config.paper.tex
    start = ctx.project.head()
    try:
        return _write(ctx, tex, prompt, _skeleton_compiles, contract=_SKELETON, rewrite=True)
    except StageFailed as exc:
        (ctx.project.root / tex).write_text(default_paper().read_text(), encoding="utf-8")
        ctx.commit(f"plan: {tex} back to labtui's bundled skeleton", [tex])
        ctx.say(f"kept labtui's bundled paper skeleton: {exc.message}")
        return Written(tex, start, f"labtui's bundled skeleton ({exc.message})")


def _write(
    ctx: StageContext,
    name: str,
    prompt: str,
    check: Callable[[StageContext], tuple[str, str]],
    contract: Contract | None = None,
    rewrite: bool = False,
) -> Written:
    """The agent writes ``name`` (a new, empty file first: aider edits what exists), it is run
    by ``check``, and a failure goes back with its output, up to ``[limits] fix_attempts``. A
    file that exists is checked as it is (a resumed project), unless ``rewrite``."""
    path = ctx.project.root / name
    if not path.exists():
        path.write_text("", encoding="utf-8")
    coder = ctx.coder()
    policy = EditPolicy(contracts={name: contract or _CONTRACTS[name]})
    attempts = max(1, ctx.config.limits.fix_attempts)
    problem = "not written"
    for attempt in range(1, attempts + 1):
        ctx.check_stop()
        if attempt > 1 or rewrite or not path.read_text(encoding="utf-8").strip():
            coder.edit([name], prompt, commit_message=f"plan: write {name} (attempt {attempt})",
                       policy=policy)  # fmt: skip
        if not path.read_text(encoding="utf-8").strip():
            problem = f"{name} is still empty"
            continue
        problem, tail = check(ctx)
        if not problem:
            return Written(name, ctx.project.head(), _shown(ctx, name))
        ctx.say(f"{name} attempt {attempt}: {problem}")
        prompt = ctx.prompt(
            "scaffold_fix", command=f"python {name}", problem=problem, stderr=tail[-1500:],
            file=name,
        )  # fmt: skip
    if not path.read_text(encoding="utf-8").strip():
        path.unlink()  # the empty file made for aider is no work of anyone's
    raise StageFailed(
        f"no working {name} after {attempts} attempt(s): {problem}",
        f"write {name} yourself (the project's task is in labtui.toml), commit it, then "
        "`labtui run`; or revise the plan with a note",
    )


def _prepared(ctx: StageContext) -> tuple[str, str]:
    root = ctx.project.root
    spec = sandbox_policy.resolve(ctx.config.sandbox, root, ctx.emit, ctx.stage)
    proc = run_process(
        [ctx.config.python, PREPARE],
        cwd=root,
        timeout_s=ctx.config.limits.run_timeout_s,
        run_id="prepare",
        emit=ctx.emit,
        stage=ctx.stage,
        sandbox=spec,
    )
    tail = f"{proc.stdout_tail}\n{proc.stderr_tail}"
    if proc.timed_out:
        return f"it ran longer than {ctx.config.limits.run_timeout_s:g} s", tail
    if proc.returncode != 0:
        return f"it failed with exit code {proc.returncode}", tail
    if not _has_data(root):
        return f"it ran but wrote nothing under {DATA}/", tail
    ctx.commit(f"plan: {PREPARE} ran", [PREPARE])
    return "", tail


def _baseline_ran(ctx: StageContext) -> tuple[str, str]:
    result = run_baseline(ctx.project, ctx.emit)
    if not result.ok:
        return result.problem, result.stderr_tail
    typed = _typed_numbers(ctx.project.root)
    if typed:
        return (
            f"the numbers of {BASELINE}/{FINAL_INFO} ({', '.join(typed)}) are written in "
            f"{EXPERIMENT} itself: they must be computed by the run",
            "",
        )
    return "", ""


def _skeleton_compiles(ctx: StageContext) -> tuple[str, str]:
    path = ctx.project.root / ctx.config.paper.tex
    text = path.read_text(encoding="utf-8")
    lost = [p for p in PLACEHOLDERS if p not in text]
    problems = latex_problems(path, ctx.config.paper.tex)
    problems += [f"it lost the placeholders {', '.join(lost)}"] if lost else []
    if problems:
        return "; ".join(problems), ""
    scratch = ctx.project.state_dir / "skeleton.pdf"
    outcome = compile_latex(path, scratch, timeout_s=ctx.config.limits.latex_timeout_s)
    scratch.unlink(missing_ok=True)
    if not outcome.ok:
        errors = "; ".join(f"line {e.line}: {e.message}" for e in outcome.errors[:5])
        return f"it does not compile ({errors or 'see the log'})", outcome.log_tail
    return "", ""


def _plotted(ctx: StageContext) -> tuple[str, str]:
    proc, figures = run_plot(
        ctx.project.root, emit=ctx.emit, stage=ctx.stage, **plot_settings(ctx.config)
    )
    tail = f"{proc.stdout_tail}\n{proc.stderr_tail}"
    if proc.timed_out or proc.returncode != 0:
        return f"it failed with exit code {proc.returncode}", tail
    if not figures:
        return "it ran but wrote no PNG figure", tail
    ctx.commit(f"plan: figures of {BASELINE}", [PLOT, *figures])
    return "", tail


# -- facts ------------------------------------------------------------------------------------


def _has_data(root: Path) -> bool:
    folder = root / DATA
    return folder.is_dir() and any(path.is_file() for path in folder.rglob("*"))


def _typed_numbers(root: Path) -> list[str]:
    """The baseline's means when every one of them is a literal in experiment.py: a model that
    wrote its 'results' into the code instead of computing them."""
    values = [
        value
        for entry in recorded_means(root / BASELINE).values()
        for value in entry.values()
        if isinstance(value, int | float) and not isinstance(value, bool)
    ]
    code = (root / EXPERIMENT).read_text(encoding="utf-8")
    literal = [repr(v) for v in values if repr(v) in code]
    return literal if values and len(literal) == len(values) else []


def _facts(ctx: StageContext, idea: Idea) -> dict[str, str]:
    """What every scaffold prompt is told: the task, the idea, the data and the machine."""
    info = probe_interpreter(ctx.config.python, ctx.project.root)
    packages = ", ".join(info.get("packages", {})) or "(unknown: " + info.get("error", "") + ")"
    network = (
        "- the network (the sandbox allows it)"
        if ctx.config.sandbox.network
        else "- no network: the sandbox has none, so nothing can be downloaded"
    )
    return {
        "task": ctx.config.project.task,
        "title": idea.title,
        "experiment": idea.experiment,
        "data": ", ".join(ctx.config.project.data) or "none",
        "packages": packages[:3000],
        "network": network,
        "device": describe(),
        "dataset": "main",
        "notes": ctx.notes_block(),
    }


def _as_committed(ctx: StageContext, name: str) -> Written:
    last = ctx.project.repo.git.log("-1", "--format=%H", "--", name)
    return Written(name, last, _shown(ctx, name))


def _shown(ctx: StageContext, name: str) -> str:
    root = ctx.project.root
    if name == PREPARE:
        files = [p for p in (root / DATA).rglob("*") if p.is_file()]
        return f"ran; {DATA}/ holds {len(files)} file(s)"
    if name.endswith(".tex"):
        sections = section_titles((root / name).read_text(encoding="utf-8"))
        return f"compiles; sections: {', '.join(sections)}"
    if name == EXPERIMENT:
        return f"the baseline {BASELINE} ran: " + json.dumps(recorded_means(root / BASELINE))
    figures = sorted(p.name for p in root.glob("*.png"))
    return f"ran; {len(figures)} figure(s): {', '.join(figures)}"
