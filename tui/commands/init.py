"""``labtui init`` in a terminal: the proposal for a researcher's repository shown as a
checkpoint (approve · revise with a note · edit · abort), checked, smoke-run, then committed on
labtui's own branch and the baseline run. The engine's work is core/onboarding/repo_init.py; this
module only talks to the researcher.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from .common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    TYPE_CHECKING,
    Subparsers,
)

if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console

    from ..headless import HeadlessPrinter

NAME = "init"
OPTIONS = ("approve", "revise", "edit", "abort")


def add_parser(subparsers: Subparsers) -> None:
    init = subparsers.add_parser(
        NAME, help="set labtui up in your own git repository (run it in the repository)"
    )
    init.add_argument("--idea", default="", help="what you want to study (names the branch)")
    init.add_argument("--branch", default="", help="labtui's branch (default: labtui/<idea>)")
    init.add_argument("--yes", action="store_true", help="approve the proposal without asking")
    init.add_argument(
        "--commit-dirty", action="store_true",
        help="commit uncommitted changes first, on labtui's branch",
    )  # fmt: skip
    init.add_argument("--no-baseline", action="store_true", help="skip running run_0 now")
    init.add_argument("--model", default="", help="a model that reads the repository too")
    init.add_argument("--no-model", action="store_true", help="propose from the facts alone")
    init.add_argument("--budget", type=float, default=0.5, help="US dollars it may spend")
    init.add_argument(
        "--fresh", action="store_true", help="read the repository again, not an earlier proposal"
    )
    init.add_argument(
        "--path", default="",
        help="the folder of the repository whose experiment to set up (one example of many); "
        "runs start there",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from labtui.core.checkpoints import AutoApprove, Checkpoints
    from labtui.core.onboarding import repo_init
    from labtui.core.onboarding.example_folders import repository_and_folder
    from labtui.core.onboarding.setup_draft import propose_setup
    from labtui.core.onboarding.setup_proposal import Proposal

    from ..headless import HeadlessPrinter, TerminalCheckpointPort

    console = Console(highlight=False)
    top, folder = repository_and_folder(Path(args.directory), args.path)
    root = repo_init.check_repository(top)
    dirty = repo_init.uncommitted(root)
    if dirty and not args.commit_dirty:
        repo_init.refuse_dirty(root, dirty)
    branch = args.branch or repo_init.branch_name(args.idea, root.name)
    console.print(f"looking at {escape(str(root))} (by code: nothing of it runs yet) …")
    facts, choice = _surveyed(root, folder, args.fresh or not (root / repo_init.PROPOSAL).is_file())
    settings = repo_init.settings_in_effect(
        root
    )  # [limits] and [sandbox] as the environment sets them
    draft = propose_setup(facts, settings.limits, network=settings.sandbox.network)
    console.print(
        f"  {len(facts.files)} files, {len(facts.entry_points)} script(s), "
        f"{len(facts.result_files)} result file(s), {len(facts.latex)} LaTeX draft(s)"
    )
    llm = _model(args, console)
    printer = HeadlessPrinter(console)
    port = AutoApprove() if args.yes else TerminalCheckpointPort(console=console, root=root)
    checkpoints = Checkpoints(port, printer)
    proposal_path = root / repo_init.PROPOSAL
    sizing = draft.sizing  # an earlier proposal's count is fitted only where it is the draft's
    if proposal_path.is_file() and not args.fresh:
        # an earlier init stopped before approval: the proposal, perhaps edited, is kept
        console.print(f"continuing with the proposal in {repo_init.PROPOSAL} (--fresh: a new one)")
    else:
        proposal = _asked(llm, facts, draft, "", console, settings) if llm else Proposal.of(draft)
        proposal_path = _write(root, proposal, args, branch, facts, choice)
        sizing = proposal.sizing
    while True:
        body = _body(root, proposal_path, facts)
        decision = checkpoints.ask(
            "init", f"init: how labtui runs {root.name}", body, OPTIONS, kind="init",
            product=repo_init.PROPOSAL,
        )  # fmt: skip
        if decision.action == "abort":
            console.print(
                f"nothing was committed; the proposal stays in {repo_init.PROPOSAL} (kept out of "
                "git by .git/info/exclude): `labtui init` continues from it"
            )
            return EXIT_FAILED
        if decision.action == "revise":
            if llm is None:
                console.print("[yellow]revising needs a model (--model, or $LABTUI_MODEL); "
                              "press e to edit the proposal yourself[/]")  # fmt: skip
                continue
            proposal = _asked(llm, facts, draft, decision.note, console, settings)
            proposal_path = _write(root, proposal, args, branch, facts, choice)
            sizing = proposal.sizing
            continue
        if decision.action == "edit":
            continue  # the port opened the file in $EDITOR: show it again as edited
        outcome = _approve(root, proposal_path, args, branch, dirty, sizing, printer, console)
        if outcome is not None:
            return outcome
        if args.yes:
            return EXIT_USAGE
        dirty = repo_init.uncommitted(root)  # --commit-dirty committed them before a failed run


def _approve(
    root: Path,
    proposal_path: Path,
    args: argparse.Namespace,
    branch: str,
    dirty: list[str],
    sizing: Any,
    printer: HeadlessPrinter,
    console: Console,
) -> int | None:
    """Check the approved proposal, run it (the smoke run, then the baseline run_0), and only
    then commit it. None when the proposal must be asked about again (what was wrong has been
    said); with --yes a failed run ends init instead."""
    from labtui.core.errors import ConfigError
    from labtui.core.events import Bus
    from labtui.core.onboarding import init_check, repo_init

    try:
        setup = repo_init.read_proposal(root, proposal_path)
    except ConfigError as exc:
        _say_error(console, exc.message, exc.hint)
        return None
    config = setup.in_effect
    if dirty:
        sha = repo_init.commit_dirty(root, branch)
        console.print(f"your uncommitted work is commit {sha[:8]} on {branch}")
    journal = _journal(root, config)
    bus = Bus()
    bus.subscribe(printer)
    bus.subscribe(journal.append)
    emit = bus.emit
    try:
        checks = [] if not config.experiment.smoke_command else ["smoke"]
        checks += [] if args.no_baseline else ["baseline"]
        for what in checks:
            console.print(_escape(_CHECK_SAYS[what].format(limit=config.limits.run_timeout_s)))
            check = (
                init_check.smoke_check(root, config, emit)
                if what == "smoke"
                else init_check.baseline_check(root, config, emit, repo_init.head(root))
            )
            if not check.ok:
                _say_error(console, check.sentence, _fix_after(what, check.shown, config))
                return EXIT_FAILED if args.yes else None
            console.print(f"[green]{what} run ok[/] ({_escape(check.shown)})")
            _say_strays(check, console)
            if what == "smoke" and (fitted := _fit_to_smoke(proposal_path, sizing, check, config)):
                console.print(f"  the baseline's length, {_escape(fitted)}")
                setup = repo_init.read_proposal(root, proposal_path)
                config = setup.in_effect
    finally:
        journal.close()
    done = repo_init.apply_setup(root, setup.written, branch)
    if "baseline" in checks:
        repo_init.commit_baseline(done.project)
    init_check.forget_checks(root)
    _say_done(done, root, console)
    if not checks:
        console.print("nothing ran (--no-baseline, and no smoke command): `labtui run` runs run_0")
    return EXIT_OK


_CHECK_SAYS = {
    "smoke": "smoke run: the set-up, checked in seconds …",
    "baseline": "baseline run_0 with your code as it is (stopped after {limit:.0f} s, "
    "[limits] run_timeout_s) — nothing is committed before it has given its numbers …",
}
_FIX_AFTER_FAILED = {
    "smoke": "edit the proposal (the command, the smoke command or [results]) in "
    ".labtui/init/labtui.toml and run `labtui init` again; nothing was committed",
    "baseline": "fix the code or the proposal (.labtui/init/labtui.toml), then run `labtui "
    "init` again: it continues from the proposal and runs the baseline again; nothing was "
    "committed",
}


def _fix_after(what: str, problem: str, config: Any) -> str:
    """How to go on after a failed check: a missing package is named, with where it goes."""
    missing = re.search(r"No module named '([\w.]+)'", problem)
    if missing is None:
        return _FIX_AFTER_FAILED[what]
    package = missing.group(1).split(".")[0]
    return (
        f"install {package} in {config.python} (or set [experiment] python in "
        ".labtui/init/labtui.toml to your research environment's interpreter, e.g. "
        ".venv/bin/python after `uv sync`), then run `labtui init` again; nothing was committed"
    )


def _fit_to_smoke(proposal_path: Path, sizing: Any, check: Any, config: Any) -> str:
    """The baseline's count fitted to the smoke run's pace in the proposal file, within the
    budget a run of the search gets; what was done ('' for nothing)."""
    from labtui.core.onboarding.command_draft import fit_to_smoke

    if sizing is None:
        return ""
    budget_s = min(config.limits.run_timeout_s, config.climb.run_budget_s)
    smoke_count = sizing.proposal.smoke_count or 0
    first = check.first_step
    after_first = first.after_first(smoke_count) if first else None
    text, why = fit_to_smoke(
        proposal_path.read_text(encoding="utf-8"), sizing, check.wall_s, budget_s, after_first
    )
    if why:
        proposal_path.write_text(text, encoding="utf-8")
    return why


def _journal(root: Path, config: Any) -> Any:
    """The journal the checks' events go to, as a project's runs' do (the app shows them)."""
    from labtui.core.journal import Journal
    from labtui.core.workspace.project import Project

    return Journal(Project(root, config).state_dir)


def _say_error(console: Console, message: str, hint: str) -> None:
    console.print(f"[red]error:[/] {_escape(message)}\n  [bold]fix:[/] {_escape(hint)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _say_strays(check: Any, console: Console) -> None:
    if check.strays:
        shown = ", ".join(check.strays[:6]) + (" …" if len(check.strays) > 6 else "")
        console.print(
            f"  the {check.what} run wrote {len(check.strays)} file(s) outside its folder "
            f"({_escape(shown)}): kept out of git in this clone (.git/info/exclude)"
        )


def _say_done(done: Any, root: Path, console: Console) -> None:
    from rich.markup import escape

    paper = (
        f"; labtui's bundled paper is at {done.project.config.paper.tex}"
        if done.paper_copied
        else ""
    )
    console.print(
        f"[green]labtui works on the branch {escape(done.branch)}[/] (made from your HEAD; "
        f"your branch is as it was){escape(paper)}.\n"
        f"  merge what you keep: git merge {escape(done.branch)}\n"
        f"  next: cd {escape(str(root))} && labtui"
    )


def _model(args: argparse.Namespace, console: Console) -> Any:
    """The model that reads the repository, or None (no model: the draft from facts alone)."""
    if args.no_model or not (args.model or os.environ.get("LABTUI_MODEL")):
        console.print("  no model: the proposal is labtui's reading of the facts alone")
        return None
    from labtui.core.review.reviewer import standalone_llm

    from ..headless import HeadlessPrinter

    return standalone_llm(args.model, args.budget, emit=HeadlessPrinter(console))


def _asked(llm: Any, facts: Any, draft: Any, note: str, console: Console, settings: Any) -> Any:
    from rich.markup import escape

    from labtui.core.errors import LabtuiError
    from labtui.core.onboarding.setup_proposal import Proposal, ask_model

    console.print(f"  asking {escape(llm.spec.name)} to read the repository …")
    try:
        return ask_model(llm, facts, draft, note, settings.limits)
    except LabtuiError as exc:
        console.print(f"[yellow]the model's reading failed ({escape(exc.message)}); "
                      "the proposal is labtui's reading of the facts alone[/]")  # fmt: skip
        return Proposal.of(draft)


def _surveyed(root: Path, folder: str, fresh: bool) -> tuple[Any, Any]:
    """The facts of the folder to set up and, at the top of a repository of many examples,
    the one chosen and why (None elsewhere, and where an earlier proposal is continued)."""
    from labtui.core.onboarding.example_folders import (
        choose_example,
        example_folders,
        folder_survey,
    )
    from labtui.core.onboarding.repo_scan import survey

    if folder:
        return folder_survey(root, folder), None
    facts = survey(root)
    folders = example_folders(facts) if fresh else []
    if not folders:
        return facts, None
    choice = choose_example(facts, folders)
    return folder_survey(root, choice.folder), choice


def _write(
    root: Path,
    proposal: Any,
    args: argparse.Namespace,
    branch: str,
    facts: Any,
    choice: Any = None,
) -> Path:
    """The proposal file, with the interpreter that has what the experiment imports, and
    labtui's bundled paper where the repository has no LaTeX; a folder's proposal made the
    project's (``facts`` are the folder's), and the examples it was chosen among asked about."""
    from labtui.core.machine.interpreter import imports_in
    from labtui.core.onboarding import python_choice, repo_init
    from labtui.core.onboarding.example_folders import place_in_folder
    from labtui.core.onboarding.metric_choice import csv_where_no_tensorboard

    values = {section: dict(fields) for section, fields in proposal.values.items()}
    reasons = dict(proposal.reasons)
    questions = list(proposal.open_questions)
    folder = Path(facts.root).resolve().relative_to(root).as_posix()
    place_in_folder(values, reasons, "" if folder == "." else folder)
    if choice is not None:
        reasons["experiment.workdir"] = f"one example of {len(choice.candidates)}: {choice.why}"
        questions.append(choice.question())
    command = values.get("experiment", {}).get("command", "")
    python, why, question = python_choice.choose_python(root, facts, command)
    if why:
        values.setdefault("experiment", {})["python"] = python
        reasons["experiment.python"] = why
    questions += [question] if question else []
    if values.get("results", {}).get("source") == "tensorboard":
        probe = imports_in(python, ["tensorboard", "tensorboardX"])
        has_tensorboard = probe is None or len(probe.missing) < 2  # unknown: as surveyed
        csv_where_no_tensorboard(values, reasons, python, has_tensorboard)
    if not values.get("paper", {}).get("tex"):
        values["paper"] = {"tex": repo_init.BUNDLED_PAPER, "sections": []}
        reasons["paper.tex"] = (
            "no LaTeX draft found: labtui's bundled paper (a one-column article in an ML "
            "conference layout, with a bibliography) will be copied here"
        )
    if args.idea:
        values.setdefault("project", {})["idea"] = args.idea
    text = repo_init.render_proposal(
        values, reasons, questions, proposal.refused, name=root.name, branch=branch
    )
    return repo_init.write_proposal(root, text)


def _body(root: Path, path: Path, facts: Any) -> str:
    """What the checkpoint shows: the proposal file as written, and the earlier results that
    can be imported as evidence."""
    text = path.read_text(encoding="utf-8")
    found = facts.result_files[:8]
    evidence = (
        "\n\nEarlier results found (import them as evidence after init, each with the commit of "
        "the code that made it; a table with --table <the column naming each run>):\n"
        + "\n".join(f"    labtui import {_import_words(r)} --commit <sha>" for r in found)
        if found
        else ""
    )
    return f"{path.relative_to(root)}:\n\n{text}{evidence}"


def _import_words(result: Any) -> str:
    return f"{result.path} --table <column>" if result.source == "csv" else result.path
