"""`labtui review` of a real paper against a real model (not run by pytest), recorded.

    PYTHONPATH=... .venv/bin/python tests/bench/real_review.py --url http://127.0.0.1:8765/v1 \
        --model openai/local ../shared/corpus/papers/rl_lr_adaptation.pdf [--out DIR]

Runs `labtui review PDF --json` with the model behind the recording proxy of real_model.py, so
every exchange lands in DIR/exchanges.jsonl (make_fixtures.py turns it into test fixtures), the
review in DIR/review.json, and prints what a reader checks: the scores against their scales, the
decision, how many times an answer was refused and re-asked, and what each strength and weakness
named of the paper (core/review/grounding.py). Numbers only: nothing here asserts a goal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_model import EXCHANGES, Recorder, RecordingProxy, StageTracker, labtui


def review(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out or tempfile.mkdtemp(prefix="labtui-review-"))
    out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(out / EXCHANGES)
    with RecordingProxy(args.url, recorder, StageTracker(out / "no-journal")) as proxy:
        env = {
            **os.environ,
            "LABTUI_MODEL": args.model,
            "LABTUI_API_BASE": proxy.base_url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        started = time.perf_counter()
        with (out / "review.json").open("wb") as stdout, (out / "stderr.log").open("wb") as err:
            code = subprocess.call(
                [labtui(), "review", str(Path(args.pdf).resolve()), "--json"],
                cwd=out,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=err,
                timeout=args.timeout or None,
            )
        elapsed = time.perf_counter() - started
    meta = {
        "pdf": str(args.pdf),
        "model": args.model,
        "returncode": code,
        "wall_s": round(elapsed, 1),
        "exchanges": recorder.count,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{args.pdf}: exit {code}, {elapsed:.0f} s, {recorder.count} exchanges -> {out}")
    return meta | {"out": str(out)}


def report(out: Path) -> None:
    exchanges = [json.loads(line) for line in (out / EXCHANGES).read_text().splitlines() if line]
    reasks = sum(
        1 for e in exchanges if sum(m.get("role") == "user" for m in e["request"]["messages"]) > 1
    )
    tokens = [e.get("usage") or {} for e in exchanges]
    print(
        f"requests {len(exchanges)}, re-asks {reasks}, "
        f"tokens in {sum(t.get('prompt_tokens', 0) for t in tokens)} "
        f"out {sum(t.get('completion_tokens', 0) for t in tokens)}"
    )
    text = (out / "review.json").read_text().strip()
    if not text:
        print("no review:", (out / "stderr.log").read_text()[-1500:])
        return
    record = json.loads(text)
    print(json.dumps(record, indent=1)[:6000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdf", nargs="?", default="")
    parser.add_argument("--url", default="http://127.0.0.1:8765/v1")
    parser.add_argument("--model", default=os.environ.get("LABTUI_MODEL", ""))
    parser.add_argument("--out", default="")
    parser.add_argument("--timeout", type=float, default=0.0, metavar="S")
    parser.add_argument("--report", default="", metavar="DIR", help="only report an earlier run")
    args = parser.parse_args()
    if args.report:
        report(Path(args.report))
        return
    if not args.pdf or not args.model:
        parser.error("give the PDF and --model (or $LABTUI_MODEL)")
    meta = review(args)
    report(Path(meta["out"]))


if __name__ == "__main__":
    main()
