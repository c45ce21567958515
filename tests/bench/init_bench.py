"""Benchmarks for `labtui init` (not run by pytest): how long reading a repository takes, what
it proposes, and what a real model adds (and what of it the facts refute).

    .venv/bin/python tests/bench/init_bench.py [--trees DIR,DIR] [--repeat 3]
    .venv/bin/python tests/bench/init_bench.py --url http://127.0.0.1:8080/v1 --model openai/local \
        [--record tests/recorded/real_model/init] [--shape char_tensorboard]

Without --url: the survey and the draft (`survey` + `propose_setup`, code only) timed on the
test research repository (tests/support/research_repo.py), on labtui's own repository, and on
any trees given, as the median of --repeat runs; and `labtui init --yes --no-model` on the test
repository end to end (the smoke run and the baseline included).

With --url: `labtui init --yes --model M` on the test repository through the recording proxy of
real_model.py, so every exchange with the model is kept (`--record FOLDER` copies them for a
replay test); with --shape, on one of tests/repo_shapes/ instead, its smoke run and baseline
included; it prints what the model proposed, what labtui refused of it and why, and the wall
time. With --url and --topic: a project from a topic alone (`labtui new DIR --idea`), and the
code written for one fixed idea (core/steps/scaffold.py: prepare.py, experiment.py, the paper's
skeleton, plot.py) by the model, each file run; it prints what came of each file. Numbers only:
nothing here asserts a goal.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_model import Recorder, RecordingProxy, StageTracker, labtui  # noqa: E402
from support.research_repo import commit_as_researcher, make_repository  # noqa: E402


def time_survey(root: Path, repeat: int) -> dict[str, object]:
    from labtui.core.onboarding.repo_scan import propose_setup, survey

    times, found, draft = [], None, None
    for _ in range(repeat):
        started = time.perf_counter()
        found = survey(root)
        draft = propose_setup(found)
        times.append(time.perf_counter() - started)
    assert found is not None and draft is not None
    return {
        "tree": str(root),
        "files": len(found.files),
        "scripts": len(found.entry_points),
        "results": len(found.result_files),
        "latex": len(found.latex),
        "median_s": round(statistics.median(times), 3),
        "command": draft.values.get("experiment", {}).get("command", "(none)"),
        "questions": len(draft.open_questions),
    }


def time_init_no_model(work: Path) -> dict[str, object]:
    root = make_repository(work / "no-model")
    started = time.perf_counter()
    done = subprocess.run(
        [labtui(), "init", "--yes", "--no-model"], cwd=root, capture_output=True, text=True
    )
    return {
        "returncode": done.returncode,
        "wall_s": round(time.perf_counter() - started, 2),
        "branch": _git(root, "rev-parse", "--abbrev-ref", "HEAD"),
        "baseline": (root / "run_0/final_info.json").read_text().strip()
        if (root / "run_0/final_info.json").exists()
        else "",
    }


def shape_repository(shape: str, root: Path) -> Path:
    """One of tests/repo_shapes/, committed as a researcher's repository."""
    shutil.copytree(TESTS / "repo_shapes" / shape, root)
    return commit_as_researcher(root)


def init_with_model(args: argparse.Namespace, work: Path) -> dict[str, object]:
    root = (
        shape_repository(args.shape, work / "model")
        if args.shape
        else make_repository(work / "model")
    )
    folder = work / "exchanges"
    folder.mkdir()
    recorder = Recorder(folder / "exchanges.jsonl")
    tracker = StageTracker(root / ".labtui" / "journal.jsonl")
    with RecordingProxy(args.url, recorder, tracker) as proxy:
        env = {
            **os.environ,
            "LABTUI_API_BASE": proxy.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        started = time.perf_counter()
        done = subprocess.run(
            # a shape runs its smoke run and baseline: the model's proposal must run as written
            [labtui(), "init", "--yes", *([] if args.shape else ["--no-baseline"]), "--model", args.model],
            cwd=root, env=env, capture_output=True, text=True, timeout=args.timeout,
        )  # fmt: skip
        wall = time.perf_counter() - started
    proposal = (root / ".labtui/init/labtui.toml").read_text()
    run_0 = root / "run_0" / "final_info.json"
    refused = [line[6:] for line in proposal.splitlines() if line.startswith("#   - ")]
    if args.record:
        target = Path(args.record)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "exchanges.jsonl", target / "exchanges.jsonl")
        (target / "proposal.toml").write_text(proposal)
    return {
        "model": args.model,
        "returncode": done.returncode,
        "wall_s": round(wall, 1),
        "exchanges": recorder.count,
        "lines_refused_or_open": refused,
        "run_0": json.loads(run_0.read_text()) if run_0.is_file() else None,
        "stdout_tail": done.stdout[-1500:],
        "stderr_tail": done.stderr[-800:],
    }


def scaffold_with_model(args: argparse.Namespace, work: Path) -> dict[str, object]:
    """A topic's code written by the model, through the recording proxy, in process."""
    from types import SimpleNamespace

    from labtui.core.errors import LabtuiError
    from labtui.core.pipeline.session import Session
    from labtui.core.steps.scaffold import scaffold
    from labtui.core.workspace.project import Project

    folder = work / "exchanges"
    folder.mkdir()
    recorder = Recorder(folder / "exchanges.jsonl")
    project = Project.create_from_topic(work / "topic", TOPIC)
    tracker = StageTracker(project.root / ".labtui" / "journal.jsonl")
    idea = SimpleNamespace(name="ridge", title=IDEA_TITLE, experiment=IDEA_EXPERIMENT)
    events: list[str] = []
    with RecordingProxy(args.url, recorder, tracker) as proxy:
        config = project.config
        config.models.api_base, config.models.experiments = proxy.base_url, args.model
        config.limits.fix_attempts = args.fix_attempts
        session = Session(project)
        session.bus.subscribe(lambda event: events.append(f"{type(event).__name__}: {event}"))
        started = time.perf_counter()
        try:
            written, outcome = scaffold(session.context_for("plan"), idea), "written"
        except LabtuiError as exc:
            written, outcome = [], f"{exc.message} (fix: {exc.hint})"
        wall = time.perf_counter() - started
    if args.record:
        Path(args.record).mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / "exchanges.jsonl", Path(args.record) / "exchanges.jsonl")
    refusals = [e for e in events if e.startswith(("Refused", "Notice"))]
    return {
        "model": args.model,
        "outcome": outcome,
        "written": [f"{w.name}: {w.shown}" for w in written],
        "wall_s": round(wall, 1),
        "exchanges": recorder.count,
        "refusals_and_notices": refusals[-12:],
        "commits": _git(project.root, "log", "--format=%s").splitlines(),
    }


TOPIC = "Linear classifiers on two Gaussian blobs in 2-D: how much ridge regularisation helps."
IDEA_TITLE = "How Much Ridge Does a Linear Classifier on Blobs Need?"
IDEA_EXPERIMENT = "Vary the ridge strength and compare test accuracy with the baseline."


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", default="", help="more folders to survey, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--url", default="", help="an OpenAI-compatible server (a real model)")
    parser.add_argument("--model", default="openai/local")
    parser.add_argument("--record", default="", help="copy the exchanges to this folder")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--topic", action="store_true", help="a topic's code, by the model")
    parser.add_argument("--fix-attempts", type=int, default=2)
    parser.add_argument("--shape", default="", help="one of tests/repo_shapes/ (with --url)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="labtui-init-bench-") as scratch:
        work = Path(scratch)
        if args.url and args.topic:
            result = scaffold_with_model(args, work)
            print(json.dumps({"bench": "topic-model", **result}, indent=1))
            return
        if args.url:
            print(json.dumps({"bench": "init-model", **init_with_model(args, work)}, indent=1))
            return
        trees = [make_repository(work / "repo"), TESTS.parent]
        trees += [Path(t) for t in args.trees.split(",") if t]
        rows = [time_survey(tree, args.repeat) for tree in trees]
        for row in rows:
            print(
                f"{row['median_s']:>7.3f} s  {row['files']:>6} files  {row['scripts']:>4} "
                f"scripts  {row['results']:>3} results  {row['tree']}\n           command: "
                f"{row['command']}"
            )
        end_to_end = time_init_no_model(work)
        print(f"labtui init --yes --no-model (smoke run and baseline included): {end_to_end}")
        print(json.dumps({"bench": "init", "survey": rows, "init": end_to_end}))


if __name__ == "__main__":
    main()
