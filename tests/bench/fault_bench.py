"""The fault suite's reference run, recorded and timed (not run by pytest).

    .venv/bin/python tests/bench/fault_bench.py [--record] [--kills N]

Runs the lean scripted moons project of tests/support/fault_run.py headless to its end and prints
the wall time of each stage and of the engine's start. With --record it writes the run's journal
profile ([stage, event type] per line) to tests/recorded/fault_reference.json, from which
tests/pipeline/test_faults.py draws its kill points at collection time (re-record when the pipeline's
events change: the points are located by stage, so a stale record still kills in the same stage
at the same relative place). With --kills N it also kills and resumes the first N of the
suite's kill points, one after the other, and prints each one's wall time. Numbers only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from support import fault_run  # noqa: E402
from support.fake_arxiv import FakeArxiv  # noqa: E402
from support.scripted_llm import ScriptedLLMServer  # noqa: E402

RECORD = TESTS / "recorded" / "fault_reference.json"


def stage_times(root: Path, start: int) -> list[tuple[str, float]]:
    """Seconds from the engine's start (the journal's first line after ``start``) to each
    stage's start, and to the last line."""
    events = fault_run.read_journal(root)[start:]
    first: dict[str, float] = {}
    for event in events:
        first.setdefault(event.get("stage") or "project", event["ts"])
    return [(stage, ts - events[0]["ts"]) for stage, ts in first.items()] + [
        ("end", events[-1]["ts"] - events[0]["ts"])
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help=f"write {RECORD.name}")
    parser.add_argument("--kills", type=int, default=0, help="kill and resume N points too")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory() as folder:
        base = args.keep or Path(folder)
        os.environ["HOME"] = str(base)
        fresh = fault_run.fresh_project(base / "shared")
        start = fault_run.journal_lines(fresh)
        with ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
            root = fault_run.prepare(fresh, base / "reference", llm, arxiv)
            began = time.monotonic()
            code = fault_run.run_to_end(root, base / "reference.log")
            print(f"reference run: exit {code}, {time.monotonic() - began:.1f} s wall")
        for stage, seconds in stage_times(root, start):
            print(f"  {stage:<12} starts at {seconds:6.2f} s")
        profile = fault_run.journal_profile(root, start)
        print(f"  {len(profile)} journal lines after the {start} of `labtui new`")
        if args.record:
            RECORD.write_text(json.dumps({"start": start, "profile": profile}) + "\n")
            print(f"recorded {RECORD}")
        reference = fault_run.end_state(root)
        points = fault_run.choose_kill_points(profile, start, fault_run.SEED)
        for point in points[: args.kills]:
            with ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
                target = fault_run.prepare(fresh, base / point.id, llm, arxiv)
                began = time.monotonic()
                outcome = fault_run.kill_and_resume(target, point, profile, start)
                wall = time.monotonic() - began
                found = fault_run.differences(reference, fault_run.end_state(target))
                print(f"  kill {point.id}: {wall:5.1f} s, {outcome.summary()}")
                for difference in found:
                    print(f"    differs: {difference}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
