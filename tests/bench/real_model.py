"""labtui against a real model (not run by pytest): what a whole `--auto` run does with it.

    .venv/bin/python tests/bench/real_model.py --url http://127.0.0.1:8080/v1 \
        --model openai/qwen-coder [--templates moons,grokking] [--out DIR] \
        [--record tests/recorded/real_model] [--quick] [--set llm.first_token_s=900]
    .venv/bin/python tests/bench/real_model.py --report DIR [--record FOLDER]  # an earlier run
    .venv/bin/python tests/bench/real_model.py ... --templates moons --out DIR2 \
        --start-from DIR/moons/project --rewind writeup --set paper.writer=aider  # the other path
    .venv/bin/python tests/bench/real_model.py ... --strategy climb --minutes 30 [--aa]  # a climb

For each template: `labtui new DIR/<template>/project --template T`, then `labtui run --headless
--auto` in it with LABTUI_MODEL and LABTUI_API_BASE set. Between labtui (litellm and aider) and
the model's server sits a small recording reverse proxy on 127.0.0.1: it passes every request on
and every streamed chunk back as it comes, and writes one JSON line per exchange to
`DIR/<template>/exchanges.jsonl` (the request, the reply reassembled from the stream, the
timings, and the stage the journal was in). `--record FOLDER` copies those lines, with the
run's summary, to FOLDER/<template>/ for tests to replay.

Afterwards it reads the project's journal (`.labtui/journal.jsonl`) and prints, per template:
stages reached and passed, refusals and re-asks by reason, failed runs, reverted runs,
contradicted claims, tokens and wall time per stage, and whether `paper.pdf` and `review.json`
came out; the experiments stage run by run (its model calls, the runs, labtui's own time) and,
under `--strategy climb`, the climb's attempts, keeps and pace (tests/bench/bench_report.py,
tests/bench/experiment_report.py); then the same as Markdown (also in DIR/report.md) to paste
into a note.

`--aa` makes the climb an A/A test: it may change only a setting the metric does not depend on
(`--aa-setting`, the moons template's LOG_EVERY by default) and no code, so every keep is a false
keep: the report counts them.

This machine reaches no arXiv: by default the literature stages search the loopback arXiv double
of the tests (tests/support/fake_arxiv.py, a handful of recorded papers); `--arxiv URL` points them at
another server. Numbers only: nothing here asserts a goal. A run takes minutes to hours.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# The benches beside this one import these names from here (calibration_bench.py, init_bench.py,
# real_review.py): the proxy and the report live in modules of their own.
from bench_report import EXCHANGES, JOURNAL, read_journal, record, report, short_reason
from recording_proxy import Recorder, RecordingProxy, StageTracker

__all__ = [
    "EXCHANGES",
    "Recorder",
    "RecordingProxy",
    "StageTracker",
    "apply_settings",
    "labtui",
    "read_journal",
    "run_logged",
    "short_reason",
]

TESTS = Path(__file__).resolve().parents[1]
QUICK_SETTINGS = (  # a shorter run: the tests' wiring (tests/conftest.py wire_project)
    "ideas.count=1",
    "ideas.reflections=1",
    "limits.max_runs=1",
    "review.ensemble=1",
    "review.reflections=0",
)
AA_SETTING = "LOG_EVERY"  # the moons template's log interval: no metric depends on it


def labtui() -> str:
    candidate = Path(sys.executable).with_name("labtui")
    return str(candidate) if candidate.exists() else shutil.which("labtui") or "labtui"


def apply_settings(root: Path, settings: list[str], arxiv_url: str) -> None:
    """Write ``section.key=value`` settings (and the arXiv address) into labtui.toml, typed as
    the field's default is (``typed_value``)."""
    from pydantic import ValidationError

    from labtui.core.settings.config import load_config, save_config

    config = load_config(root)
    if arxiv_url:
        config.literature.arxiv_url = arxiv_url
        config.literature.delay_s = 0.0
    for setting in settings:
        name, sep, value = setting.partition("=")
        section_name, dot, key = name.strip().partition(".")
        section = getattr(config, section_name, None)
        if not sep or not dot or section is None or not hasattr(section, key):
            raise SystemExit(
                f"--set {setting!r}: write SECTION.KEY=VALUE with a field of labtui.toml, "
                "e.g. llm.first_token_s=900 or ideas.count=1"
            )
        try:
            setattr(section, key, typed_value(getattr(section, key), value))
        except ValidationError as exc:  # the section checks what is assigned, as it loads
            raise SystemExit(f"--set {setting!r}: {exc.errors()[0]['msg']}") from exc
    save_config(config, root)


def typed_value(current: Any, value: str) -> Any:
    """``value`` as the type of the field's default ``current``: yes/no words for a bool, a
    number, a list or table written as TOML (``["LOG_EVERY"]``), else the text. A list whose
    quotes a shell took away (``[LOG_EVERY]``, ``A,B``) is read as its comma-separated words."""
    if isinstance(current, bool):
        return value.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(current, (int, float)):
        return type(current)(value)
    if not isinstance(current, (list, dict)):
        return value
    try:
        return tomllib.loads(f"value = {value}")["value"]
    except tomllib.TOMLDecodeError:
        if isinstance(current, dict):
            raise SystemExit(f"{value!r}: write a TOML table, e.g. {{ key = 1 }}") from None
    words = value.strip().removeprefix("[").removesuffix("]").split(",")
    return [word.strip().strip("'\"") for word in words if word.strip()]


def search_settings(args: argparse.Namespace) -> list[str]:
    """The settings that --strategy, --minutes and --aa stand for (--set's come after, and
    win). An A/A climb may change only ``--aa-setting`` and no code."""
    if not args.strategy:
        return []
    settings = [f"experiment.strategy={args.strategy}"]
    if args.minutes:
        settings.append(f"{args.strategy}.max_hours={args.minutes / 60!r}")
    if args.aa:
        settings += [f'climb.settings=["{args.aa_setting}"]', "climb.code_changes=false"]
    return settings


def check_search_options(args: argparse.Namespace) -> None:
    """--minutes needs a search strategy, --aa a climb; --aa-setting goes with --aa."""
    if args.minutes and args.strategy not in ("climb", "tree"):
        raise SystemExit("--minutes: give --strategy climb (or tree) too")
    if args.aa and args.strategy != "climb":
        raise SystemExit("--aa: an A/A test is of a climb; give --strategy climb too")
    if args.aa_setting and not args.aa:
        raise SystemExit("--aa-setting: give --aa too")
    args.aa_setting = args.aa_setting or (AA_SETTING if args.aa else "")


def run_logged(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    log: Path,
    limit_s: float,
    until: Callable[[], bool] | None = None,
) -> int:
    """Run a command with its output going to ``log``; a run past ``limit_s`` (0: none) has its
    whole process group killed. ``until``: once it says so, the run is interrupted (SIGINT, as
    a researcher's ctrl-c: labtui stops resumably). Returns the exit code (-9 when killed)."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            if until is not None:
                return _wait_until(process, until, limit_s, out)
            return process.wait(timeout=limit_s or None)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            out.write(f"\n[real_model.py: killed after {limit_s:g} s]\n".encode())
            return -9


def _wait_until(
    process: subprocess.Popen[bytes], until: Callable[[], bool], limit_s: float, out: Any
) -> int:
    """Wait for ``process``; once ``until()`` holds, interrupt it and give it a minute."""
    deadline = time.monotonic() + limit_s if limit_s else float("inf")
    while process.poll() is None:
        if until():
            out.write(b"\n[real_model.py: --until reached, interrupting]\n")
            os.killpg(process.pid, signal.SIGINT)
            return process.wait(timeout=120)
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(process.args, limit_s)
        time.sleep(2)
    return process.returncode


def stage_finished(journal: Path, stage: str) -> Callable[[], bool]:
    """Whether the journal says ``stage`` finished (after the run began)."""

    def finished() -> bool:
        if not journal.is_file():
            return False
        text = journal.read_text(encoding="utf-8", errors="replace")
        return f'"type": "StageFinished", "stage": "{stage}"' in text[start:]

    start = journal.stat().st_size if journal.is_file() else 0
    return finished


@contextlib.contextmanager
def arxiv_server(url: str) -> Iterator[str]:
    """The arXiv address for the literature stages: ``url``, or the loopback double."""
    if url:
        yield url
        return
    sys.path.insert(0, str(TESTS))
    from support.fake_arxiv import FakeArxiv

    with FakeArxiv() as server:
        yield server.url


def run_template(args: argparse.Namespace, template: str, arxiv_url: str) -> dict[str, Any]:
    folder = Path(args.out) / template
    root = folder / "project"
    if root.exists():
        raise SystemExit(f"{root} exists already: give another --out, or --report {args.out}")
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "run.log"
    recorder = Recorder(folder / EXCHANGES)
    settings = [*(QUICK_SETTINGS if args.quick else ()), *search_settings(args), *args.set]
    tracker = StageTracker(root / JOURNAL)
    with RecordingProxy(
        args.url, recorder, tracker, schema_as_object=args.schema_as_object
    ) as proxy:
        env = {
            **os.environ,
            "LABTUI_MODEL": args.model,
            "LABTUI_API_BASE": proxy.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # offline: no price-map fetch per model
        }
        started = time.perf_counter()
        if args.start_from:
            new_rc = copy_and_rewind(Path(args.start_from), root, args.rewind, env, log)
        else:
            print(f"[{template}] labtui new {root} (log: {log})", flush=True)
            new_rc = run_logged(
                [labtui(), "new", str(root), "--template", template], folder, env, log, 0
            )
        new_s = time.perf_counter() - started
        run_rc, run_s = None, 0.0
        if new_rc == 0:
            apply_settings(root, settings, arxiv_url)
            print(
                f"[{template}] labtui run --headless --auto (proxy {proxy.base_url} -> {args.url})",
                flush=True,
            )
            started = time.perf_counter()
            until = stage_finished(root / JOURNAL, args.until) if args.until else None
            run_rc = run_logged(
                [labtui(), "run", "--headless", "--auto"], root, env, log, args.timeout, until
            )
            run_s = time.perf_counter() - started
    meta = {
        "template": template,
        "start_from": args.start_from,
        "rewind": args.rewind,
        "model": args.model,
        "url": args.url,
        "settings": settings,
        "schema_as_object": args.schema_as_object,
        "strategy": args.strategy,
        "minutes": args.minutes,
        "aa": args.aa,
        "aa_setting": args.aa_setting,
        "new_returncode": new_rc,
        "new_s": round(new_s, 1),
        "run_returncode": run_rc,
        "run_s": round(run_s, 1),
        "exchanges": recorder.count,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def copy_and_rewind(source: Path, root: Path, stage: str, env: dict[str, str], log: Path) -> int:
    """A copy of an earlier bench's project, rewound to before ``stage`` (`labtui rewind`): the
    same runs and figures, the stage asked again (another write-up path, say)."""
    print(f"copy {source} -> {root}; labtui rewind {stage} (log: {log})", flush=True)
    shutil.copytree(source, root, symlinks=True)
    for stale in (root / ".labtui").glob("engine*"):  # the earlier session's engine files
        if stale.is_file():
            stale.unlink()
    if not stage:  # go on from where the copy stands
        return 0
    return run_logged([labtui(), "rewind", stage], root, env, log, 0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Run labtui --auto on templates against a real OpenAI-compatible model, "
        "recording every exchange, and report what happened per stage.",
    )
    parser.add_argument(
        "--url",
        default="http://127.0.0.1:8080/v1",
        help="the model server's OpenAI base URL (default: %(default)s)",
    )
    parser.add_argument(
        "--model",
        default=os.environ.get("LABTUI_MODEL", ""),
        help="litellm model string, e.g. openai/qwen-coder (default: $LABTUI_MODEL)",
    )
    parser.add_argument(
        "--templates", default="moons", help="comma-separated template names (default: %(default)s)"
    )
    parser.add_argument("--out", default="", help="output folder (default: a new one in /tmp)")
    parser.add_argument(
        "--record",
        default="",
        metavar="FOLDER",
        help="also copy each template's exchanges and summary to FOLDER/<t>/",
    )
    parser.add_argument(
        "--arxiv",
        default="",
        metavar="URL",
        help="arXiv API for the literature stages (default: the loopback "
        "double of the tests, as this machine reaches no arXiv)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the tests' short settings: " + ", ".join(QUICK_SETTINGS),
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a labtui.toml setting for the run (repeatable)",
    )
    parser.add_argument(
        "--schema-as-object",
        action="store_true",
        help="rewrite response_format json_schema to {type: json_object, schema} on the way "
        "(llama-cpp-python's server refuses json_schema with HTTP 500); recorded per exchange",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="kill a template's labtui run after S seconds (default: never)",
    )
    parser.add_argument(
        "--until",
        default="",
        metavar="STAGE",
        help="interrupt the run (resumably) once STAGE has finished (default: run to the end)",
    )
    parser.add_argument(
        "--start-from",
        default="",
        metavar="PROJECT",
        help="instead of `labtui new`: a copy of an earlier bench's project (one template)",
    )
    parser.add_argument(
        "--rewind",
        default="writeup",
        metavar="STAGE",
        help="with --start-from: the stage to rewind the copy to ('' : go on from where it "
        "stands; default: %(default)s)",
    )
    parser.add_argument(
        "--strategy",
        default="",
        choices=("plan", "climb", "tree"),
        help="the experiments' strategy ([experiment] strategy; default: the project's)",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        metavar="M",
        help="with --strategy climb or tree: the search's time ([<strategy>] max_hours = M/60)",
    )
    parser.add_argument(
        "--aa",
        action="store_true",
        help="with --strategy climb: an A/A climb, which may change only --aa-setting and no "
        "code ([climb] settings, code_changes = false); the report counts its false keeps",
    )
    parser.add_argument(
        "--aa-setting",
        default="",
        metavar="NAME",
        help=f"with --aa: the setting the climb may change (default: {AA_SETTING}, the moons "
        "template's log interval)",
    )
    parser.add_argument(
        "--report",
        default="",
        metavar="DIR",
        help="only print the report of an earlier run's output folder",
    )
    return parser


def main() -> None:
    args = _parser().parse_args()
    check_search_options(args)
    if args.report:
        out = Path(args.report)
        templates = sorted(p.parent.name for p in out.glob(f"*/{EXCHANGES}"))
        templates = templates or sorted(p.name for p in out.iterdir() if (p / "project").is_dir())
        if not templates:
            raise SystemExit(f"{out}: no <template>/{EXCHANGES} or <template>/project inside")
        report(out, templates)
        if args.record:
            record(out, templates, Path(args.record))
        return
    if not args.model:
        raise SystemExit(
            "--model: give a litellm model string, e.g. openai/qwen-coder (or set LABTUI_MODEL)"
        )
    args.out = args.out or tempfile.mkdtemp(prefix="labtui-real-")
    templates = [t.strip() for t in args.templates.split(",") if t.strip()]
    with arxiv_server(args.arxiv) as arxiv_url:
        for template in templates:
            meta = run_template(args, template, arxiv_url)
            print(
                f"[{template}] done: exit {meta['run_returncode']}, {meta['run_s']:.0f} s, "
                f"{meta['exchanges']} exchanges",
                flush=True,
            )
    report(Path(args.out), templates)
    if args.record:
        record(Path(args.out), templates, Path(args.record))


if __name__ == "__main__":
    main()
