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

With --repos (issue 43): public repositories nobody here wrote, listed in a data file
(tests/bench/init_repos.toml: name, source, commit, shape, kind, path), each cloned unedited from its
fetched snapshot (--mirrors, the folder the search tool's `fetch` fills) into a fresh folder under
--work, then `labtui init --yes --no-model` with the research environment --venv first on the PATH
and as $VIRTUAL_ENV, stopped after --timeout seconds (600). Before it, on another clean clone,
`labtui init --no-model` with no input: the proposal as drafted, nothing run. It writes a Markdown
table (repository, commit, shape, proposed command, metrics, run_0, time, as proposed) and, for
each failure, the reason `labtui status` and init's own output give, beside a JSON record of every
row (--out). --survey-only stops after the drafted proposal (nothing trains).

    .venv/bin/python tests/bench/init_bench.py --repos tests/bench/init_repos.toml \
        --venv /tmp/initbench/venv --work /tmp/initbench/runs [--only minGPT,...] [--survey-only]
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
import tomllib
from dataclasses import asdict, dataclass
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


# -- public repositories (--repos) -----------------------------------------------------------

REPOS = Path(__file__).with_name("init_repos.toml")
SURVEY_TIMEOUT_S = 180


@dataclass(frozen=True)
class BenchRepo:
    """One public repository of the data file: where its snapshot is and what shape it has."""

    name: str
    source: str  # github:owner/name, as the search tool's fetch names it
    commit: str
    shape: str
    kind: str = ""  # the shape in a few words, for the table
    path: str = ""  # the folder init runs in, where not the top

    @property
    def owner_name(self) -> str:
        return self.source.removeprefix("github:").split("@")[0]


def read_repos(path: Path) -> list[BenchRepo]:
    data = tomllib.loads(path.read_text())
    fields = set(BenchRepo.__dataclass_fields__)
    return [BenchRepo(**{k: v for k, v in entry.items() if k in fields}) for entry in data["repo"]]


def mirror_of(repo: BenchRepo, mirrors: Path) -> Path:
    """The git directory of the fetched snapshot: <mirrors>/<owner>+<name>/repo[/.git]."""
    base = mirrors / repo.owner_name.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise SystemExit(f"{repo.name}: no snapshot of {repo.source} under {mirrors} (fetch it first)")


def clean_clone(repo: BenchRepo, mirrors: Path, target: Path) -> list[str]:
    """`repo` at its commit in `target`, files unedited; returns the paths the snapshot lacks
    (large files a snapshot may hold only by name), left out by a sparse checkout so the tree is
    clean as a researcher's is."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "clone", "-q", "--no-checkout", str(mirror_of(repo, mirrors)), str(target)],
        check=True, capture_output=True,
    )  # fmt: skip
    absent = missing_blobs(target, repo.commit)
    if absent:
        _git(target, "config", "core.sparseCheckout", "true")
        patterns = ["/*", *(f"!/{path}" for path in absent)]
        (target / ".git/info/sparse-checkout").write_text("\n".join(patterns) + "\n")
    branch = _git(target, "symbolic-ref", "--short", "HEAD") or "main"
    done = subprocess.run(
        ["git", "checkout", "-q", "-B", branch, repo.commit], cwd=target, capture_output=True,
        text=True,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{repo.name}: checkout of {repo.commit} failed: {done.stderr.strip()}")
    _git(target, "remote", "remove", "origin")
    return absent


def missing_blobs(root: Path, commit: str) -> list[str]:
    """Paths at `commit` whose content the clone does not have."""
    listing = _git(root, "ls-tree", "-r", "--full-tree", commit, strip=False)
    entries = [line.split("\t", 1) for line in listing.splitlines() if "\t" in line]
    blobs = {meta.split()[2]: path for meta, path in entries if meta.split()[1] == "blob"}
    if not blobs:
        return []
    checked = subprocess.run(
        ["git", "cat-file", "--batch-check"], cwd=root, input="\n".join(blobs) + "\n",
        capture_output=True, text=True,
    )  # fmt: skip
    return sorted(
        blobs[line.split()[0]] for line in checked.stdout.splitlines() if line.endswith(" missing")
    )


def research_env(venv: Path) -> dict[str, str]:
    """The environment a researcher has after `source venv/bin/activate`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LABTUI_", "CONDA_"))}
    for name in ("PYTHONHOME", "PYTHONPATH"):
        env.pop(name, None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["COLUMNS"] = "200"  # rich wraps at 80 where there is no terminal
    return env


def run_limited(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int, str, float]:
    """argv's exit status (124 when stopped at `timeout`), its output, and its wall time; on
    timeout the whole process group is ended, runs included."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, _ = process.communicate()
        code = 124
    return code, out, round(time.perf_counter() - started, 1)


def init_argv(repo: BenchRepo, *options: str) -> tuple[list[str], str]:
    """`labtui init` with `options`, and the folder it runs in (relative to the clone): a repo
    with a path is given --path where this labtui has it, else init runs in the folder."""
    argv = [labtui(), "init", *options]
    if not repo.path:
        return argv, ""
    helped = subprocess.run([labtui(), "init", "--help"], capture_output=True, text=True).stdout
    return ([*argv, "--path", repo.path], "") if "--path" in helped else (argv, repo.path)


def proposal_of(root: Path) -> dict[str, object]:
    """What a proposal says: the committed labtui.toml where init finished, else init's own."""
    for where in (root / "labtui.toml", root / ".labtui/init/labtui.toml"):
        if where.is_file():
            try:
                data = tomllib.loads(where.read_text())
            except tomllib.TOMLDecodeError as exc:
                return {"file": str(where.relative_to(root)), "error": str(exc)}
            experiment, results = data.get("experiment", {}), data.get("results", {})
            return {
                "file": str(where.relative_to(root)),
                "command": experiment.get("command", ""),
                "smoke_command": experiment.get("smoke_command", ""),
                "python": experiment.get("python", ""),
                "prepare": experiment.get("prepare", []),
                "source": results.get("source", ""),
                "metrics": results.get("metrics", {}),
                "questions": _open_questions(where.read_text()),
            }
    return {}


def _open_questions(text: str) -> list[str]:
    """The proposal's "To decide" comment lines, one string each."""
    questions, inside = [], False
    for line in text.splitlines():
        if line.startswith("# To decide"):
            inside = True
            continue
        if inside and line.startswith("#   - "):
            questions.append(line[6:].strip())
        elif inside and line.startswith("#     ") and questions:
            questions[-1] += " " + line[1:].strip()
        elif inside:
            inside = not line.strip() == ""
            if not inside:
                break
    return questions


def run_0_of(root: Path) -> dict[str, object]:
    """run_0's numbers (final_info.json's means), from the tree or from init's failed/ folder."""
    for where in (root / "run_0/final_info.json", *sorted(root.glob(".labtui/init/failed/**/final_info.json"))):  # fmt: skip
        if where.is_file():
            try:
                data = json.loads(where.read_text())
            except json.JSONDecodeError:
                return {}
            means = {k: v.get("means", {}) for k, v in data.items() if isinstance(v, dict)}
            return next(iter(means.values())) if len(means) == 1 else means
    return {}


def run_record_of(root: Path) -> dict[str, object]:
    """run_0's labtui_run.json (or the last failed run's): what ran, how long, what went wrong."""
    found = [root / "run_0/labtui_run.json"] if (root / "run_0/labtui_run.json").is_file() else []
    found = (
        found
        or sorted(
            root.glob(".labtui/init/failed/**/labtui_run.json"), key=lambda p: p.stat().st_mtime
        )[-1:]
    )
    if not found:
        return {}
    try:
        data = json.loads(found[0].read_text())
    except json.JSONDecodeError:
        return {}
    keep = ("argv", "wall_s", "returncode", "timed_out", "problem", "smoke", "threads")
    return {"file": str(found[0].relative_to(root)), **{k: data.get(k) for k in keep}}


def committed_baseline(root: Path) -> str:
    """The labtui branch whose last commit holds run_0's final_info.json, or ''."""
    for branch in _git(root, "branch", "--list", "labtui/*", "--format=%(refname:short)").split():
        if _git(root, "ls-tree", "--name-only", branch, "run_0/final_info.json"):
            return branch
    return ""


def failure_reason(root: Path, output: str, env: dict[str, str]) -> str:
    """Why init stopped: `labtui status` in the repository and init's last error lines."""
    status = subprocess.run(
        [labtui(), "status"], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    said = [
        line.strip() for line in output.splitlines()
        if any(word in line.lower() for word in ("error", "failed", "refused", "fix:", "timed out", "no module"))
    ]  # fmt: skip
    return "\n".join([status.stdout.strip(), *said[-8:]])


def bench_repo(repo: BenchRepo, args: argparse.Namespace) -> dict[str, object]:
    """One repository: the proposal as drafted (nothing run), then init --yes on a fresh clone."""
    work, venv, mirrors = Path(args.work), Path(args.venv), Path(args.mirrors)
    env = research_env(venv)
    row: dict[str, object] = {**asdict(repo)}
    draft_root = work / "drafted" / repo.name
    row["absent_from_snapshot"] = clean_clone(repo, mirrors, draft_root)
    argv, sub = init_argv(repo, "--no-model")
    code, out, wall = run_limited(argv, draft_root / sub, env, SURVEY_TIMEOUT_S)
    (work / f"{repo.name}.survey.log").write_text(out)
    row["drafted"] = proposal_of(draft_root / sub)
    row["survey_s"] = wall
    survey_line = next((line.strip() for line in out.splitlines() if " script(s)" in line), "")
    row["survey"] = survey_line
    if args.survey_only:
        return row
    root = work / "runs" / repo.name
    clean_clone(repo, mirrors, root)
    argv, sub = init_argv(repo, "--yes", "--no-model")
    code, out, wall = run_limited(argv, root / sub, env, args.timeout)
    (work / f"{repo.name}.init.log").write_text(out)
    branch = committed_baseline(root)
    row.update(
        returncode=code,
        wall_s=wall,
        final=proposal_of(root / sub),
        run_0=run_0_of(root / sub),
        run_record=run_record_of(root / sub),
        branch=branch,
        as_proposed=code == 0 and bool(branch),
        fitted=[line.strip() for line in out.splitlines() if "the baseline's length" in line],
    )
    if not row["as_proposed"]:
        problem = dict(row["run_record"]).get("problem")
        row["reason"] = failure_reason(root / sub, out, env) + (
            f"\nthe run's record: {problem}" if problem else ""
        )
    return row


def markdown_table(rows: list[dict[str, object]]) -> str:
    """The closing note's table, then the reasons for the failures."""
    head = (
        "| repository | commit | shape | proposed command | metrics | run_0 | time | as proposed |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        drafted = row.get("drafted") or {}
        final = row.get("final") or {}
        command = f"`{drafted.get('command') or '(none)'}`"
        if final.get("command") and final.get("command") != drafted.get("command"):
            command += f" → run as `{final['command']}`"
        metrics = ", ".join(f"{k} ({v})" for k, v in dict(drafted.get("metrics") or {}).items())
        run_0 = ", ".join(f"{k} {_short(v)}" for k, v in dict(row.get("run_0") or {}).items())
        done = row.get("as_proposed")
        cells = [
            f"{row['source'].removeprefix('github:')}",
            f"`{str(row['commit'])[:8]}`",
            str(row.get("kind") or row["shape"]),
            command,
            metrics or "(none)",
            run_0 or "—",
            f"{row['wall_s']} s" if "wall_s" in row else "—",
            "—" if done is None else ("yes" if done else f"no (exit {row.get('returncode')})"),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    for row in rows:
        if row.get("as_proposed") is False:
            reason = str(row.get("reason", "")).strip().replace("\n", "\n    ")
            lines.append(f"\n**{row['name']}** (exit {row.get('returncode')}):\n    {reason}")
    return "\n".join(lines)


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def bench_repos(args: argparse.Namespace) -> None:
    repos = read_repos(Path(args.repos))
    if args.only:
        wanted = set(args.only.split(","))
        repos = [repo for repo in repos if repo.name in wanted]
    Path(args.work).mkdir(parents=True, exist_ok=True)
    rows = []
    for repo in repos:
        print(f"== {repo.name} ({repo.source} @ {repo.commit[:8]})", flush=True)
        row = bench_repo(repo, args)
        rows.append(row)
        done = row.get("as_proposed")
        print(f"   {row.get('survey')}; drafted: {row['drafted'].get('command', '(none)')}; "
              f"metrics {row['drafted'].get('metrics', {})}"
              + ("" if done is None else f"; as proposed: {done} in {row.get('wall_s')} s; run_0 {row.get('run_0')}"),
              flush=True)  # fmt: skip
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1, default=str))
    table = markdown_table(rows)
    print(table)
    if args.out:
        Path(args.out).with_suffix(".md").write_text(table + "\n")
    ran = [row for row in rows if row.get("as_proposed") is not None]
    if ran:
        print(f"\n{sum(bool(row['as_proposed']) for row in ran)} of {len(ran)} ran as proposed")


def _git(root: Path, *args: str, strip: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout
    return out.strip() if strip else out


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
    parser.add_argument("--repos", default="", help=f"public repositories (e.g. {REPOS.name})")
    parser.add_argument("--venv", default="", help="the research environment (with --repos)")
    parser.add_argument("--mirrors", default="/work/.mirror", help="the fetched snapshots")
    parser.add_argument("--work", default="", help="where the clones go (with --repos)")
    parser.add_argument("--only", default="", help="these names of the data file, comma-separated")
    parser.add_argument("--survey-only", action="store_true", help="the drafted proposal only")
    parser.add_argument("--out", default="", help="the rows as JSON here, the table beside it")
    args = parser.parse_args()
    if args.repos:
        if not args.venv or not args.work:
            parser.error("--repos needs --venv and --work")
        args.timeout = 600.0 if args.timeout == 3600 else args.timeout  # 10 minutes each
        bench_repos(args)
        return
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
