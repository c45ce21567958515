"""The reviewer's calibration and fabrication probe against a real model (not run by pytest).

    .venv/bin/python tests/bench/calibration_bench.py --url http://127.0.0.1:8089/v1 \
        --model openai/smollm2 [--bench DIR] [--n 6] [--seed 1] [--paper PAPER] \
        [--set review.paper_chars=4000] [--schema-as-object] [--out DIR] \
        [--record tests/recorded/real_model] [--name smollm2] [--skip probe|calibrate]

Runs `labtui review --calibrate` on a benchmark folder (by default the synthetic one of
tests/support/review_bench.py, written in both of its formats: The AI Scientist's TSV, then
labtui's CSV, whose papers mostly come from the first run's review cache), then `labtui review
PAPER --probe` on a paper with a results table (by default the ICLR-like PDF of
tests/support/paper_styles.py, compiled here), with `--ensemble 1 --reflections 0 --few-shot 0`
unless `--flags` says otherwise. The model is reached through the recording reverse proxy of
tests/bench/real_model.py, so every exchange is written to DIR/exchanges.jsonl.

The calibration measures a project's reviewer: a labtui.toml in DIR/project holds the `--set`
settings (by default `[review] paper_chars = 4000`). The review cache and the registry of
calibrations are DIR's own (XDG_CACHE_HOME, XDG_DATA_HOME), so a run starts from nothing.

Prints each calibration's table (labtui's own `print_calibration`), the probe's verdict with its
alterations, scores and evidence, refusals by reason, tokens and wall time per command.
`--record FOLDER` writes the exchanges, cut as tests/recorded/real_model/README.md describes,
to FOLDER/<name>_calibration.jsonl and FOLDER/<name>_probe.jsonl. Numbers only: nothing here
asserts a goal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from real_model import (  # noqa: E402  (a script beside this one, found through sys.path)
    Recorder,
    RecordingProxy,
    StageTracker,
    apply_settings,
    labtui,
    read_journal,
    run_logged,
    short_reason,
)

DEFAULT_SETTINGS = ("review.paper_chars=4000",)
ONE_REVIEWER = "--ensemble 1 --reflections 0 --few-shot 0"
EXCHANGES, RUNS = "exchanges.jsonl", "runs.json"
KEPT_CHARS = 1500  # of each message in a recording (README: the cut is marked)
REFUSED = re.compile(r"^\s+refused (?P<what>[^:]+): (?P<reason>.*)$")


class Step(StageTracker):
    """What the bench is doing now, for the proxy to write as each exchange's ``stage``."""

    def __init__(self) -> None:
        super().__init__(Path(os.devnull))
        self.label = ""

    def current(self) -> str:
        return self.label


# -- the inputs -----------------------------------------------------------------------------


def benchmarks(args: argparse.Namespace, out: Path) -> list[Path]:
    """The benchmark folders to calibrate on: ``--bench``, or the synthetic set in both formats."""
    if args.bench:
        return [Path(args.bench)]
    from support.review_bench import write_csv_benchmark, write_tsv_benchmark

    return [
        write_tsv_benchmark(out / "review_iclr_bench"),
        write_csv_benchmark(out / "synthetic_csv"),
    ]


# The probed paper by default: short, so that a small model on a CPU reviews it in minutes, with
# one results table (accuracy in %, F1, loss) whose values the abstract and the text repeat.
PROBE_PAPER = """\
# Wider Hidden Layers Generalise Better on Noisy Two Moons

## Abstract

We train one-hidden-layer MLPs of three widths on the noisy two-moons data set. The widest
network reaches 94.2% test accuracy against 88.7% for the narrowest, with an F1 of 0.94.

## 1 Introduction

How wide must a small network be to separate two noisy moons? We vary only the width and keep
the optimiser, the data and the number of epochs fixed.

## 2 Results

Table 1: Test accuracy (%), F1 and loss on noisy two moons, mean over five seeds.

Width | Accuracy (%) | F1 | Loss
16 | 88.7 | 0.88 | 0.31
64 | 92.5 | 0.92 | 0.22
256 | 94.2 | 0.94 | 0.17

The widest network has the lowest test loss (0.17) and the highest accuracy (94.2%).

## 3 Conclusion

Width helps on noisy two moons, with diminishing returns past 64 units.
"""


def probe_paper(args: argparse.Namespace, out: Path) -> Path:
    """``--paper`` (``iclr``: the ICLR-like PDF of the outline tests, compiled here), or the
    short Markdown paper above."""
    if args.paper == "iclr":
        from support.paper_styles import iclr_like

        return iclr_like().compile(out / "paper")
    if args.paper:
        return Path(args.paper)
    path = out / "paper" / "wider_moons.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PROBE_PAPER, encoding="utf-8")
    return path


def project_with(settings: list[str], out: Path) -> Path:
    """A project folder whose labtui.toml holds ``settings``: the reviewer calibrated."""
    root = out / "project"
    root.mkdir(parents=True)
    (root / "labtui.toml").write_text("")
    apply_settings(root, settings, arxiv_url="")
    return root


# -- running --------------------------------------------------------------------------------


def run_step(
    argv: list[str], step: Step, label: str, env: dict[str, str], out: Path, timeout: float
) -> dict[str, Any]:
    """One labtui command, its output to ``out/<label>.log``: exit code, seconds, the log."""
    step.label = label
    log = out / f"{label.replace(' ', '_')}.log"
    print(f"[{label}] {' '.join(argv[1:])}", flush=True)
    started = time.perf_counter()
    returncode = run_logged([labtui(), *argv[1:]], out, env, log, timeout)
    seconds = time.perf_counter() - started
    print(f"[{label}] exit {returncode}, {seconds:.0f} s", flush=True)
    said = " ".join(argv).replace(str(out), "$OUT")
    return {"label": label, "returncode": returncode, "seconds": seconds, "log": log, "argv": said}


def calibrate(
    args: argparse.Namespace, step: Step, env: dict[str, str], out: Path
) -> list[dict[str, Any]]:
    project = project_with([*DEFAULT_SETTINGS, *args.set], out)
    runs = []
    for folder in benchmarks(args, out):
        saved = out / f"calibration_{folder.name}.json"
        argv = ["labtui", "-C", str(project), "review", "--calibrate", str(folder)]
        argv += ["--model", args.model, "--n", str(args.n), "--seed", str(args.seed)]
        argv += [*args.flags.split(), "--out", str(saved)]
        run = run_step(argv, step, f"calibrate {folder.name}", env, out, args.timeout)
        run.update(saved=saved, folder=folder)
        runs.append(run)
    return runs


def probe(args: argparse.Namespace, step: Step, env: dict[str, str], out: Path) -> dict[str, Any]:
    paper = probe_paper(args, out)
    argv = ["labtui", "review", str(paper), "--probe", "--model", args.model, *args.flags.split()]
    run = run_step(argv, step, "probe", env, out, args.timeout)
    run["paper"] = paper
    return run


# -- the report -----------------------------------------------------------------------------


def problems(reason: str) -> list[str]:
    """The problems one refusal names, each without its values ("field 'Quality' must be from 1
    to 4"), so that refusals group by what was wrong."""
    found = []
    for part in reason.split("; "):
        part = re.sub(r"\s*\(and \d+ more problems?\)", "", part)
        if part.startswith("answer one JSON object") or not part.strip():
            continue
        part = re.split(r", got |: write | \(|\s*\(Invalid", part, maxsplit=1)[0]
        found.append(short_reason(part))
    return found or [short_reason(reason)]


def refusals(log: Path) -> tuple[int, Counter[str]]:
    """Refused answers said on stderr (``tui/review_session.py``): how many, and each problem
    they named with the number of refusals that named it."""
    count, named = 0, Counter[str]()
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if match := REFUSED.match(line):
            count += 1
            named.update(set(problems(match["reason"])))
    return count, named


class TokenCounter:
    """Tokens of the exchanges: the server's usage when its stream reports it, otherwise the
    server's own tokenizer (llama-cpp-python's /extras/tokenize/count) on the texts."""

    def __init__(self, url: str) -> None:
        self.endpoint = url.rstrip("/").removesuffix("/v1") + "/extras/tokenize/count"
        self.how = "usage reported by the server"

    def count(self, text: str) -> int | None:
        import urllib.request

        request = urllib.request.Request(
            self.endpoint,
            data=json.dumps({"input": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return int(json.load(answer)["count"])
        except (OSError, ValueError, KeyError):
            return None

    def of(self, exchange: dict[str, Any]) -> tuple[int, int] | None:
        usage = exchange.get("usage") or {}
        if usage:
            return usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
        if exchange.get("status") != 200:
            return 0, 0
        prompt, reply = self.count(request_text(exchange)), self.count(exchange["reply"])
        if prompt is None or reply is None:
            return None
        self.how = "counted by the server's tokenizer (its stream reports no usage)"
        return prompt, reply


def exchange_totals(exchanges: list[dict[str, Any]], label: str, counter: TokenCounter) -> str:
    mine = [e for e in exchanges if e.get("stage") == label]
    counts = [counter.of(e) for e in mine]
    model_s = sum(e.get("total_s", 0.0) for e in mine)
    statuses = Counter(e.get("status") for e in mine)
    tokens = "tokens n/a"
    if all(c is not None for c in counts):
        tokens_in = sum(c[0] for c in counts if c)
        tokens_out = sum(c[1] for c in counts if c)
        tokens = f"{tokens_in:,} tokens in, {tokens_out:,} out ({counter.how})"
    return (
        f"{len(mine)} model calls (HTTP {dict(sorted(statuses.items()))}), {tokens}, "
        f"{model_s:.0f} s in the model"
    )


def report_calibration(
    run: dict[str, Any], exchanges: list[dict[str, Any]], counter: TokenCounter
) -> None:
    from labtui.tui.commands.calibrate import print_calibration

    print(f"\n== {run['label']}: exit {run['returncode']}, {run['seconds']:.0f} s wall ==")
    log_lines = Path(run["log"]).read_text(encoding="utf-8", errors="replace").splitlines()
    for line in log_lines:
        if line.lstrip().startswith(("[", "calibrating", "reviewed", "stopped", "budget")):
            print(line)
    saved = Path(run["saved"])
    if saved.exists():
        print_calibration(json.loads(saved.read_text(encoding="utf-8")), saved)
    else:  # the command's error says why
        ending = [line for line in log_lines if line.startswith(("error:", "  fix:"))]
        print("no calibration saved: " + (" / ".join(ending) or "the command was stopped"))
    print(exchange_totals(exchanges, run["label"], counter))
    print_refusals(*refusals(Path(run["log"])))


def report_probe(
    run: dict[str, Any], exchanges: list[dict[str, Any]], counter: TokenCounter
) -> None:
    print(
        f"\n== probe of {Path(run['paper']).name}: exit {run['returncode']}, "
        f"{run['seconds']:.0f} s wall =="
    )
    log = Path(run["log"]).read_text(encoding="utf-8", errors="replace")
    print(log.strip().split("\n", 1)[-1])  # below the command line: what labtui said
    print(exchange_totals(exchanges, run["label"], counter))
    print_refusals(*refusals(Path(run["log"])))


def print_refusals(count: int, named: Counter[str]) -> None:
    if not count:
        print("refusals: none")
        return
    print(f"{count} refused answers; the problems they named (refusals naming each):")
    for problem, times in named.most_common():
        print(f"  {times:3d}  {problem}")


# -- the recording --------------------------------------------------------------------------


def cut(content: Any) -> Any:
    if not isinstance(content, str) or len(content) <= KEPT_CHARS:
        return content
    trimmed = len(content) - KEPT_CHARS
    return f"{content[:KEPT_CHARS]} [... {trimmed} characters trimmed from this recording]"


def recorded(
    exchange: dict[str, Any], model_file: str, command: str, *, whole_prompts: bool = False
) -> dict[str, Any]:
    """An exchange as tests/recorded/real_model keeps it: the reply whole, messages cut (the
    prompts whole with ``whole_prompts``: the probe's replay reads the paper from them; earlier
    replies are cut either way, each is recorded whole as its own exchange's reply)."""
    request = exchange.get("request") or {}
    wanted = request.get("response_format") or {}
    line = {
        "stage": exchange.get("stage", ""),
        "model": exchange.get("model", ""),
        "prompt_head": exchange.get("prompt_head", ""),
        "status": exchange.get("status"),
        "reply": exchange.get("reply", ""),
        "finish_reason": exchange.get("finish_reason", ""),
        "usage": exchange.get("usage") or {},
        "first_token_s": exchange.get("first_token_s"),
        "total_s": exchange.get("total_s"),
        "response_format": wanted.get("type", "") if isinstance(wanted, dict) else "",
    }
    if "sent_response_format" in exchange:
        line["sent_response_format"] = exchange["sent_response_format"]["type"] + " + schema"
    if exchange.get("error"):
        line["error"] = exchange["error"]
    line["model_file"] = model_file
    line["command"] = command
    line["messages"] = [
        message
        if whole_prompts and message.get("role") != "assistant"
        else {**message, "content": cut(message.get("content"))}
        for message in request.get("messages") or []
    ]
    return line


def request_text(exchange: dict[str, Any]) -> str:
    messages = (exchange.get("request") or {}).get("messages") or []
    return "\n".join(str(m.get("content", "")) for m in messages)


def paper_of(exchange: dict[str, Any], heads: dict[str, str]) -> str:
    """Which benchmark paper a review request is about: the one whose text's opening it holds."""
    text = request_text(exchange)
    return next((paper_id for paper_id, head in heads.items() if head in text), "")


def paper_heads(folder: Path) -> dict[str, str]:
    from labtui.core.review.benchmark import load_benchmark

    return {p.paper_id: p.text().strip()[:300] for p in load_benchmark(folder).papers}


def which_paper(exchange: dict[str, Any], changed: list[str]) -> str:
    """ "altered" for a request holding a line the fabrication changed, else "original"."""
    text = request_text(exchange)
    return "altered" if any(line in text for line in changed) else "original"


def changed_lines(paper: Path) -> list[str]:
    from labtui.core.review.fabricate import fabricate
    from labtui.core.review.probe import probe_text

    text = probe_text(paper)
    altered = fabricate(text, str(paper)).text.splitlines()
    return [new for old, new in zip(text.splitlines(), altered, strict=True) if old != new]


def write_recording(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    print(f"recorded {len(lines)} exchanges -> {path}")


def record(
    args: argparse.Namespace, exchanges: list[dict[str, Any]], done: dict[str, Any], model_file: str
) -> None:
    """The exchanges of each finished command, as tests replay them: the calibrations' with the
    paper each review request was about, the probe's with which paper it was (original or
    altered). A command killed by --timeout or by hand is left out."""
    folder = Path(args.record)
    settings = ", ".join(done["settings"])
    lines = []
    for run in done["calibrations"]:
        if run["returncode"] < 0:
            print(f"not recorded: {run['label']} (killed)")
            continue
        heads = paper_heads(Path(run["folder"]))
        said = f"{run['argv']} ($OUT/project/labtui.toml: {settings})"
        for exchange in exchanges:
            if exchange.get("stage") == run["label"]:
                line = recorded(exchange, model_file, said)
                lines.append({"paper_id": paper_of(exchange, heads), **line})
    if lines:
        write_recording(folder / f"{args.name}_calibration.jsonl", lines)
    probed = done.get("probe")
    if probed and probed["returncode"] >= 0:
        changed = changed_lines(Path(probed["paper"]))
        lines = [
            {
                "paper": which_paper(e, changed),
                **recorded(e, model_file, probed["argv"], whole_prompts=True),
            }
            for e in exchanges
            if e.get("stage") == probed["label"]
        ]
        write_recording(folder / f"{args.name}_probe.jsonl", lines)


def served_model(url: str) -> str:
    """What the server says it serves (llama-cpp-python: the GGUF's path), for the recording."""
    import urllib.request

    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=10) as answer:
            data = json.load(answer)
        return ", ".join(Path(m["id"]).name for m in data.get("data", []))
    except (OSError, ValueError, KeyError):
        return "unknown"


# -- main -----------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="labtui review --calibrate and --probe against a real OpenAI-compatible "
        "model, through a recording proxy."
    )
    parser.add_argument("--url", default="http://127.0.0.1:8089/v1", help="(default: %(default)s)")
    parser.add_argument("--model", default=os.environ.get("LABTUI_MODEL", ""))
    parser.add_argument("--bench", default="", help="a benchmark folder (default: synthetic)")
    parser.add_argument("--n", type=int, default=6, help="papers sampled (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--paper",
        default="",
        help="the probed paper: a PDF, .md or .txt, or 'iclr' for the ICLR-like PDF of "
        "tests/support/paper_styles.py (default: a short Markdown paper with one results table)",
    )
    parser.add_argument(
        "--flags", default=ONE_REVIEWER, help="reviewer flags (default: %(default)s)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a labtui.toml setting of the calibrated project (repeatable; default "
        + ", ".join(DEFAULT_SETTINGS)
        + ")",
    )
    parser.add_argument(
        "--schema-as-object",
        action="store_true",
        help="rewrite json_schema to {type: json_object, schema} on the way, as real_model.py",
    )
    parser.add_argument("--skip", choices=("probe", "calibrate"), default=None)
    parser.add_argument("--timeout", type=float, default=0.0, metavar="S", help="per command")
    parser.add_argument("--out", default="", help="output folder (default: a new one in /tmp)")
    parser.add_argument(
        "--report", default="", metavar="DIR", help="only report (and record) an earlier run"
    )
    parser.add_argument("--record", default="", metavar="FOLDER")
    parser.add_argument("--name", default="smollm2", help="recordings' prefix (%(default)s)")
    parser.add_argument("--model-file", default="", help="what answered, for the recording")
    return parser


def run_all(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The commands, through the recording proxy; what ran, as runs.json keeps it."""
    step = Step()
    done: dict[str, Any] = {"settings": [*DEFAULT_SETTINGS, *args.set], "calibrations": []}
    with RecordingProxy(
        args.url, Recorder(out / EXCHANGES), step, schema_as_object=args.schema_as_object
    ) as proxy:
        env = {
            **os.environ,
            "LABTUI_API_BASE": proxy.base_url,
            "LABTUI_API_KEY": os.environ.get("LABTUI_API_KEY", "not-needed"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # offline: no price-map fetch per model
        }
        if args.skip != "calibrate":
            done["calibrations"] = calibrate(args, step, env, out)
        if args.skip != "probe":
            done["probe"] = probe(args, step, env, out)
    (out / RUNS).write_text(json.dumps(done, indent=2, default=str) + "\n")
    return json.loads((out / RUNS).read_text())


def main() -> None:
    args = _parser().parse_args()
    out = Path(args.report or args.out or tempfile.mkdtemp(prefix="labtui-calibration-"))
    # the review cache and the registry of calibrations are this run's own
    os.environ.update(XDG_CACHE_HOME=str(out / "cache"), XDG_DATA_HOME=str(out / "data"))
    started = time.perf_counter()
    if args.report:
        done = json.loads((out / RUNS).read_text())
    elif not args.model:
        raise SystemExit("--model: a litellm model string, e.g. openai/smollm2")
    else:
        out.mkdir(parents=True, exist_ok=True)
        done = run_all(args, out)
    exchanges = read_journal(out / EXCHANGES)  # JSON lines, as a journal is
    counter = TokenCounter(args.url)
    for run in done["calibrations"]:
        report_calibration(run, exchanges, counter)
    if done.get("probe"):
        report_probe(done["probe"], exchanges, counter)
    if not args.report:
        print(f"\nwall time {time.perf_counter() - started:.0f} s; output in {out}")
    if args.record:
        record(args, exchanges, done, args.model_file or served_model(args.url))


if __name__ == "__main__":
    main()
