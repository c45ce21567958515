"""The ``labtui`` command. Imports stay lazy so that ``labtui --help`` answers at once: aider,
litellm, textual and gitpython load only when a command needs them, and even ``traceback`` (with
linecache and tokenize, ~4 ms) only when there is a crash to record.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labtui",
        description="A terminal research co-pilot: ideas, experiments, paper and review. "
        "Without a command, opens the app on the project in the current folder.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("-C", dest="directory", default=".", help="project folder (default: .)")
    parser.add_argument("--auto", action="store_true", help="never pause at checkpoints")
    parser.add_argument(
        "--parallel", type=_ideas_at_once, default=None, metavar="K", help=PARALLEL_HELP
    )
    parser.add_argument("--cluster", choices=CLUSTERS, default=None, help=CLUSTER_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    new = sub.add_parser(
        "new",
        help="create a project from a template (and run its baseline), or from a topic alone",
    )
    new.add_argument("dir", help="folder to create")
    new.add_argument(
        "--template", "-t", default=None,
        help="built-in template name or folder (default: moons; none with --idea alone: the "
        "agents write the code for the topic)",
    )  # fmt: skip
    new.add_argument("--idea", default="", help="your idea, or the topic when there is no template")
    new.add_argument("--notes", type=Path, default=None, help="a file of notes for the agents")
    new.add_argument(
        "--data", action="append", default=[], metavar="PATH",
        help="a local data file or folder the agents may use (repeatable)",
    )  # fmt: skip
    new.add_argument("--no-baseline", action="store_true", help="skip running run_0 now")

    init = sub.add_parser(
        "init", help="set labtui up in your own git repository (run it in the repository)"
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

    evidence = sub.add_parser(
        "import", help="import earlier results as evidence (runs with their commit)"
    )
    evidence.add_argument("files", nargs="+", type=Path, help="result files or a results table")
    evidence.add_argument("--commit", default="", help="the commit of the code that made them")
    evidence.add_argument(
        "--source", default="", choices=["", "final_info", "json", "csv", "tensorboard", "wandb"],
        help="the kind of file (default: by its name)",
    )  # fmt: skip
    evidence.add_argument(
        "--metric", action="append", default=[], type=_metric, metavar="NAME=higher|lower",
        help="a metric to read (repeatable; default: [results] metrics)",
    )  # fmt: skip
    evidence.add_argument(
        "--table", default="", metavar="COLUMN",
        help="a CSV table of earlier runs, one per row, named by COLUMN",
    )  # fmt: skip

    run = sub.add_parser("run", help="run the pipeline from where the project stands")
    run.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")
    run.add_argument(
        "--headless", action="store_true",
        help="print events instead of the app, in this process (ends with the terminal)",
    )  # fmt: skip
    run.add_argument(
        "--detach", action="store_true",
        help="run in a background engine and return at once (labtui attach follows it)",
    )  # fmt: skip
    run.add_argument("--auto", action="store_true", help="never pause at checkpoints")
    run.add_argument(
        "--parallel", type=_ideas_at_once, default=None, metavar="K", help=PARALLEL_HELP
    )
    # SUPPRESS: `labtui --cluster slurm run` keeps the value the main parser read
    run.add_argument("--cluster", choices=CLUSTERS, default=argparse.SUPPRESS, help=CLUSTER_HELP)

    attach = sub.add_parser(
        "attach",
        help="follow the project's background engine (starting one when none runs); "
        "leaving detaches, the run goes on",
    )
    attach.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")
    attach.add_argument("--headless", action="store_true", help="print events instead of the app")
    attach.add_argument("--auto", action="store_true", help="a new engine never pauses")

    status = sub.add_parser(
        "status", help="where each project stands: engine, stage, checkpoint, spending"
    )
    status.add_argument(
        "dirs", nargs="*", type=Path,
        help="project folders (default: this one and every project whose engine runs)",
    )  # fmt: skip

    stop = sub.add_parser("stop", help="stop the project's engine at its next safe point")
    stop.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")
    stop.add_argument(
        "--now", action="store_true",
        help="kill the engine and its experiments at once (the project stays resumable)",
    )  # fmt: skip

    doctor = sub.add_parser(
        "doctor",
        help="check tools, GPUs, models and keys; ask each model for one word and time it",
    )
    doctor.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")

    rewind = sub.add_parser(
        "rewind",
        help="return the project to the commit before STAGE started (the work after it is "
        "kept on a tag); the next run goes on from STAGE",
    )
    rewind.add_argument("stage", help="the stage to go back to (ideas, plan, experiments, …)")
    rewind.add_argument("dir", nargs="?", default=None, help="project folder (default: -C or .)")

    sub.add_parser("templates", help="list the built-in templates")

    review = sub.add_parser(
        "review",
        help="review any PDF on the NeurIPS form (no project needed); --outline shows what the "
        "reviewer reads, --calibrate DIR measures the reviewer, --probe tests it",
    )
    review.add_argument("pdf", nargs="?", default=None, help="the paper")
    review.add_argument(
        "--outline", action="store_true",
        help="print the outline the reviewer reads (title, headings with level and page); "
        "no model is asked",
    )  # fmt: skip
    review.add_argument(
        "--calibrate", type=Path, default=None, metavar="DIR",
        help="review a sample of a benchmark of human-reviewed papers (The AI Scientist's "
        "ratings TSV, or labtui's benchmark.csv) and measure this reviewer against the human "
        "decisions",
    )  # fmt: skip
    review.add_argument(
        "--n", type=_papers, default=None, metavar="N",
        help="with --calibrate: papers in the seeded sample (default 100)",
    )  # fmt: skip
    review.add_argument(
        "--seed", type=int, default=None, help="with --calibrate: the sample's seed (default 1)"
    )
    review.add_argument(
        "--skip-missing", action="store_true",
        help="with --calibrate: leave out rows whose paper is missing (counted, not an error)",
    )  # fmt: skip
    review.add_argument(
        "--name", default=None,
        help="with --calibrate: the benchmark's name (default: the venue its rows name, else "
        "DIR's name)",
    )  # fmt: skip
    review.add_argument(
        "--out", type=Path, default=None, metavar="FILE",
        help="with --calibrate: where calibration.json goes (default: DIR/calibration.json)",
    )  # fmt: skip
    review.add_argument(
        "--probe", action="store_true",
        help="review the paper and a copy with its results table altered to impossible "
        "values, and say whether the reviewer noticed",
    )  # fmt: skip
    review.add_argument("--model", default="", help="reviewer model (default: $LABTUI_MODEL)")
    review.add_argument(
        "--json", action="store_true",
        help="print the result as JSON (the review, the outline, the calibration or the probe)",
    )  # fmt: skip
    review.add_argument(
        "--ensemble",
        type=_reviewers,
        default=None,
        metavar="E",
        help="E reviewers at a sampling temperature, then an Area Chair's meta-review "
        "(default 3, as [review] ensemble)",
    )
    review.add_argument(
        "--reflections",
        type=_rounds,
        default=None,
        metavar="R",
        help="rounds in which each reviewer reconsiders its review (default 2)",
    )
    review.add_argument(
        "--few-shot",
        type=_rounds,
        default=None,
        metavar="N",
        help="example papers with their reviews shown to each reviewer (default 1; 0: none)",
    )
    review.add_argument(
        "--threshold",
        type=_overall,
        default=None,
        metavar="T",
        help="Accept when the reviewers' mean Overall reaches T (default 6; 0: the Area Chair's)",
    )
    review.add_argument(
        "--budget", type=float, default=None,
        help="US dollars it may spend (default 1 for a review, 2 for a probe, 10 for a "
        "calibration, which continues from its cache when run again)",
    )  # fmt: skip
    return parser


CLUSTERS = ("local", "slurm")
CLUSTER_HELP = (
    "where runs execute for this session: on this machine, or as Slurm jobs "
    "(default: [cluster] backend)"
)
PARALLEL_HELP = "run up to K ideas' experiments at once, each in its own git worktree (default: [experiment] parallel)"


def _count_of(what: str, metavar: str, least: int = 1):
    """An argparse type: a whole number of ``what``, ``least`` or more, said clearly otherwise."""

    def count(text: str) -> int:
        if not text.isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(
                f"{metavar} must be a whole number of {what}, {least} or more, not {text!r}"
            )
        return int(text)

    return count


_ideas_at_once = _count_of("ideas", "K")
_reviewers = _count_of("reviewers", "E")
_rounds = _count_of("rounds or examples", "the value", least=0)
_papers = _count_of("papers", "N")


def _overall(text: str) -> float:
    """An argparse type: a score on the 1-10 Overall scale, or 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(
            f"T is an Overall score from 1 to 10 (or 0: the Area Chair decides), not {text!r}"
        )
    return value


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.version:
        from labtui.core import __version__

        print(f"labtui {__version__}")
        return EXIT_OK
    from labtui.core.errors import LabtuiError

    if args.cluster:
        # Read as [cluster] backend by this process and by an engine it starts (labtui.toml
        # keeps its own setting).
        os.environ["LABTUI_CLUSTER__BACKEND"] = args.cluster
    try:
        return _dispatch(args)
    except LabtuiError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  fix: {exc.hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; the project is resumable with `labtui run`", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            return _internal_error()
        where = exc.filename or "the project's disk"
        print(f"error: the disk is full ({where})", file=sys.stderr)
        print(
            "  fix: free space there (old run folders, checkpoints, caches), then run labtui "
            "again: everything journaled so far is kept",
            file=sys.stderr,
        )
        return EXIT_FAILED
    except Exception:
        return _internal_error()


def _internal_error() -> int:
    """A bug in labtui: the traceback goes to a file, not on the screen."""
    import traceback

    crash = Path.home() / ".cache" / "labtui" / "crash.log"
    crash.parent.mkdir(parents=True, exist_ok=True)
    crash.write_text(traceback.format_exc(), encoding="utf-8")
    print(f"internal error: {sys.exc_info()[1]!r}\n  details: {crash}", file=sys.stderr)
    return EXIT_FAILED


def _dispatch(args: argparse.Namespace) -> int:
    match args.command:
        case "new":
            return cmd_new(args)
        case "init":
            from .init_command import cmd_init

            return cmd_init(args)
        case "import":
            from .import_command import cmd_import

            return cmd_import(Path(args.directory), args)
        case "run":
            return cmd_run(
                Path(args.dir or args.directory),
                headless=args.headless,
                auto=args.auto,
                parallel=args.parallel,
                detach=args.detach,
            )
        case "attach" | "status" | "stop":
            return _engine_command(args)
        case "doctor":
            return cmd_doctor(Path(args.dir or args.directory))
        case "rewind":
            return cmd_rewind(Path(args.dir or args.directory), args.stage)
        case "templates":
            return cmd_templates()
        case "review":
            from .review_command import cmd_review_command

            return cmd_review_command(args)
        case _:
            from .engine_commands import cmd_attach

            return cmd_attach(
                Path(args.directory), headless=False, auto=args.auto, parallel=args.parallel
            )


def _engine_command(args: argparse.Namespace) -> int:
    """The commands of a run in a background engine (tui/engine_commands.py)."""
    from . import engine_commands

    if args.command == "status":
        return engine_commands.cmd_status(args.dirs)
    directory = Path(args.dir or args.directory)
    if args.command == "stop":
        return engine_commands.cmd_stop(directory, now=args.now)
    return engine_commands.cmd_attach(directory, headless=args.headless, auto=args.auto)


def cmd_templates() -> int:
    from labtui.core.settings.templates import list_templates

    for name in list_templates():
        print(name)
    return EXIT_OK


def cmd_new(args: argparse.Namespace) -> int:
    from labtui.core.workspace.project import Project

    if args.template is None and args.idea:
        notes = _notes(args.notes)
        project = Project.create_from_topic(Path(args.dir), args.idea, notes=notes, data=args.data)
        print(f"created {project.root} from the topic; no code yet")
        print(
            "  once an idea is chosen, the agents write prepare.py, experiment.py and plot.py\n"
            f"  for it (each a commit) and run its baseline. next: cd {project.root} && labtui"
        )
        return EXIT_OK
    template = args.template or "moons"
    project = Project.create(Path(args.dir), template, idea=args.idea)
    print(f"created {project.root} from template {template}")
    if args.no_baseline:
        return EXIT_OK
    return run_baseline_and_say(project)


def _metric(text: str) -> tuple[str, str]:
    name, _, direction = text.partition("=")
    if not name or direction not in ("higher", "lower"):
        raise argparse.ArgumentTypeError(
            f"--metric {text!r}: write NAME=higher or NAME=lower (which way is better)"
        )
    return name, direction


def _notes(path: Path | None) -> str:
    from labtui.core.errors import LabtuiError

    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabtuiError(f"cannot read the notes {path}: {exc}", "pass a text file") from None


def run_baseline_and_say(project) -> int:
    """run_0 with the project's code, printed as it goes and journaled; the next step said."""
    from labtui.core.events import Bus
    from labtui.core.journal import Journal
    from labtui.core.steps.baseline import run_baseline

    from .headless import HeadlessPrinter

    bus = Bus()
    journal = Journal(project.state_dir)
    bus.subscribe(journal.append)
    bus.subscribe(HeadlessPrinter())
    try:
        result = run_baseline(project, bus.emit)
    finally:
        journal.close()
    if not result.ok:
        from labtui.core.settings.contract import run_argv

        command = " ".join(run_argv(project.config.experiment, "python", "run_0"))
        print(f"error: the baseline run_0 failed: {result.problem}", file=sys.stderr)
        print(f"  fix: make `{command}` work in the project, then `labtui run`", file=sys.stderr)
        return EXIT_FAILED
    print(f"baseline run_0 done in {result.wall_s:.1f} s: {result.means}")
    print(f"next: cd {project.root} && labtui")
    return EXIT_OK


def cmd_run(
    directory: Path,
    *,
    headless: bool,
    auto: bool,
    parallel: int | None = None,
    detach: bool = False,
) -> int:
    """The app follows a background engine (``--detach``: nothing follows it); ``--headless``
    runs the pipeline in this process, as scripts and CI want."""
    from labtui.core.pipeline.session import Session

    if detach or not headless:
        from .engine_commands import cmd_attach, cmd_run_detached

        if detach:
            return cmd_run_detached(directory, auto=auto, parallel=parallel)
        return cmd_attach(directory, headless=False, auto=auto, parallel=parallel)
    session = Session.open(directory)
    if parallel is not None:  # for this session only; labtui.toml keeps its own setting
        session.config.experiment.parallel = parallel
    auto = auto or session.config.autonomy.mode == "auto"
    if not headless:
        return _run_app(session, auto)
    return _run_headless(session, auto)


def _run_app(session, auto: bool) -> int:
    import gc

    # Importing Textual makes hundreds of thousands of objects that live as long as the app;
    # without this, full garbage collections walk them all during the first paint (~50 ms here).
    gc.disable()
    from .app import run_tui

    gc.freeze()
    gc.enable()
    return run_tui(session, auto=auto)


def _run_headless(session, auto: bool) -> int:
    from labtui.core.checkpoints import AutoApprove
    from labtui.core.engine.status import paper_end_state, paper_open_problems

    from .headless import HeadlessPrinter, TerminalCheckpointPort
    from .model_help import MODEL_HELP

    problems = session.model_problems()
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        print("\n" + MODEL_HELP, file=sys.stderr)
        return EXIT_USAGE
    if not auto and not sys.stdin.isatty():
        print(
            "error: checkpoints need a terminal to answer them, and stdin is not one\n"
            "  fix: run with --auto to approve every checkpoint, or run in a terminal",
            file=sys.stderr,
        )
        return EXIT_USAGE
    session.bus.subscribe(HeadlessPrinter())
    port = AutoApprove() if auto else TerminalCheckpointPort(root=session.project.root)
    _hang_up_like_ctrl_c()
    outcome = session.run(port)
    done = (
        f": {paper_end_state(paper_open_problems(session.state))}" if outcome == "finished" else ""
    )
    print(f"pipeline {outcome}{done}")
    return EXIT_OK if outcome == "finished" else EXIT_FAILED


def _hang_up_like_ctrl_c() -> None:
    """A closed terminal (SIGHUP) ends an in-process run the way Ctrl-C does: its experiments
    stopped, the journal closed, the project resumable. (An engine run ignores SIGHUP.)"""
    import signal

    def hung_up(signum, frame) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGHUP, hung_up)


def cmd_rewind(directory: Path, stage: str) -> int:
    from labtui.core.engine import files as engine_files
    from labtui.core.pipeline.session import rewind_project

    root = directory.resolve()
    if engine_files.engine_running(root):
        return _rewind_through_engine(root, stage)
    print(rewind_project(directory, stage))
    print(f"next: labtui run {directory} goes on from {stage}")
    return EXIT_OK


def _rewind_through_engine(root: Path, stage: str) -> int:
    """An engine runs the project: it rewinds at its next safe point (an open checkpoint, or
    between stages), which is the only way that keeps its journal and git in step."""
    from labtui.core.stage_list import STAGES

    from .remote_session import RemoteSession

    if stage not in STAGES:
        print(f"error: unknown stage {stage!r}", file=sys.stderr)
        print(f"  fix: name one of {', '.join(STAGES)}", file=sys.stderr)
        return EXIT_USAGE
    session = RemoteSession.attach(root, replay=False)
    try:
        session.request_rewind(stage)
    finally:
        session.detach()
    print(f"asked the running engine to rewind to {stage} at its next safe point")
    print(f"next: labtui attach {root} to follow it")
    return EXIT_OK


def cmd_doctor(directory: Path) -> int:
    from rich.console import Console
    from rich.markup import escape

    from labtui.core.doctor import run_checks

    project_dir = directory if (directory / "labtui.toml").exists() else None
    console = Console(highlight=False)
    checks = run_checks(project_dir)
    for check in checks:
        mark = (
            "[green]ok[/]  "
            if check.ok
            else ("[red]FAIL[/]" if check.required else "[yellow]warn[/]")
        )
        console.print(f"{mark} {check.name:<22} {escape(check.detail)}")
    failed = [c for c in checks if c.required and not c.ok]
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
