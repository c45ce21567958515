"""labtui's own time per attempt of a hill-climb and per node of a tree search (not run by
pytest): the overhead that decides how many attempts fit in a night.

    .venv/bin/python tests/bench/search_bench.py [--attempts 12] [--budget-s 5] [--workers 2]

A moons project (its runs honour $LABTUI_RUN_BUDGET_S; the budget is cut to seconds here, as a
smoke setting would), the scripted LLM server on 127.0.0.1 answering as a searcher
(tests/support/search_script.py: each proposal changes one constant of experiment.py), and the
experiments stage run in this process: a climb, then a tree with one worker, then a tree with
``--workers`` at once. Per step, from the ledger's records and the journal's times:

- wall: from the previous step's record (or the search's start) to this step's record;
- run: the runs' own wall time (the experiment process);
- model: the model calls' time (here the scripted server's, near zero);
- overhead = wall - run - model: the proposal's prompt, aider's edit machinery, the checks,
  git, the run's start (interpreter probe, sandbox), judging and the ledger's commit.

Attempts an hour at 2-minute runs = 3600 / (120 + overhead): what labtui leaves of a night, before
the model's own time (seconds for a hosted model, minutes for a small local one). Prints one
table and one JSON line, like the other bench scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from conftest import TEST_API_KEY, wire_project  # noqa: E402
from support.scripted_llm import ScriptedLLMServer  # noqa: E402
from support.search_script import ScriptedSearcher, constant_change  # noqa: E402
from tui_bench import Row, print_report  # noqa: E402

from labtui.core.events import SearchStarted, SearchStep, StageFinished  # noqa: E402
from labtui.core.pipeline.session import Session  # noqa: E402
from labtui.core.search.ledger import SearchLedger  # noqa: E402
from labtui.core.stages import experiments as experiments_stage  # noqa: E402
from labtui.core.steps.baseline import run_baseline  # noqa: E402
from labtui.core.workspace.project import Project  # noqa: E402

RUN_BUDGET_S = 120.0  # the budget the goal is stated for: two minutes a run
IDEA = {
    "Name": "tuned_moons",
    "Title": "Tuning a Small MLP on Two Moons",
    "Experiment": "Change one setting of experiment.py at a time.",
    "Interestingness": 3,
    "Feasibility": 9,
    "Novelty": 2,
}
SETTINGS = {
    "HIDDEN_UNITS": [24, 40, 48, 56, 64, 80, 96, 128],
    "EPOCHS": [100, 110, 120, 130, 140, 160, 170, 180],
    "BATCH_SIZE": [8, 16, 24, 48, 64, 96, 128, 200],
    "LEARNING_RATE": [0.002, 0.003, 0.005, 0.007, 0.012, 0.015, 0.02, 0.03],
}


def changes(count: int) -> list:
    """``count`` distinct changes, one constant each, cycling through the settings."""
    pairs = [
        (name, value)
        for i in range(8)
        for name, values in SETTINGS.items()
        for value in values[i : i + 1]
    ]
    return [constant_change(name, value) for name, value in pairs[:count]]


def search(
    strategy: str, attempts: int, budget_s: float, workers: int, server: ScriptedLLMServer
) -> dict:
    """One search on a fresh project: its steps' times, from the ledger and the events."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Project.create(Path(tmp) / "p", "moons")
        root = project.root
        (root / "ideas.json").write_text(json.dumps([IDEA]))
        project.commit("bench: the idea")
        wire_project(root, server.url, "http://127.0.0.1:9")
        session = Session.open(root)
        config = session.config
        config.experiment.strategy = strategy
        section = getattr(config, strategy)
        section.metric, section.run_budget_s, section.overrun_s = (
            "test_accuracy_mean",
            budget_s,
            5.0,
        )
        section.baseline_repeats, section.seeds = 1, 0
        if strategy == "climb":
            config.climb.max_runs = attempts
        else:
            config.tree.max_nodes, config.tree.workers, config.tree.drafts = attempts, workers, 2
        run_baseline(session.project, session.emit)
        session.state.finished["novelty"] = StageFinished(
            stage="novelty", result={"idea": IDEA["Name"]}
        )
        events: list = []
        session.bus.subscribe(events.append)
        ScriptedSearcher(root, changes(attempts + 4)).install(server)
        started = time.monotonic()
        experiments_stage.run(session.context_for("experiments"))
        total = time.monotonic() - started
        metric = next(e.metric for e in events if isinstance(e, SearchStarted))
        steps = SearchLedger(root, strategy, IDEA["Name"], metric).steps()
        first = next(e.ts for e in events if isinstance(e, SearchStarted))
        recorded = [e.ts for e in events if isinstance(e, SearchStep)]
        walls = [b - a for a, b in zip([first, *recorded], recorded, strict=False)]
        return {
            "steps": steps,
            "walls": walls if workers == 1 else [s.wall_s for s in steps],
            "search_s": recorded[-1] - first,
            "total_s": total,
        }


def rows_for(name: str, label: str, result: dict, workers: int = 1) -> list[Row]:
    steps = result["steps"]
    overheads = [
        max(0.0, w - s.run_s - s.model_s) for w, s in zip(result["walls"], steps, strict=True)
    ]
    steady = overheads[1:] or overheads  # the first step also starts aider (once a search)
    per_hour = 3600 * len(steps) / result["search_s"]
    overhead = statistics.mean(steady)
    at_budget = workers * 3600 / (RUN_BUDGET_S + overhead)  # a GPU (or CPU) per worker
    return [
        Row(
            f"{name}_overhead_s",
            f"{label}: overhead per step (mean)",
            overhead,
            "s",
            "≤ 12 s",
            f"{100 * overhead / RUN_BUDGET_S:.1f} % of a 2-min run; median {statistics.median(steady):.2f} s",
        ),
        Row(
            f"{name}_first_overhead_s",
            f"{label}: overhead of the first step",
            overheads[0],
            "s",
            "",
            "includes starting aider's coder",
        ),
        Row(
            f"{name}_run_s",
            f"{label}: run per step (mean)",
            statistics.mean(s.run_s for s in steps),
            "s",
            "",
            "moons, three seeds",
        ),
        Row(
            f"{name}_model_s",
            f"{label}: model per step (mean)",
            statistics.mean(s.model_s for s in steps),
            "s",
            "",
            "the scripted server",
        ),
        Row(
            f"{name}_per_hour_here",
            f"{label}: steps an hour here",
            per_hour,
            "/h",
            "",
            f"{len(steps)} steps in {result['search_s']:.0f} s",
        ),
        Row(
            f"{name}_per_hour_2min",
            f"{label}: steps an hour at 2-min runs",
            at_budget,
            "/h",
            "≥ 20",
            f"{workers} × 3600 / (120 s + overhead): a GPU per worker",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=12, help="attempts (and nodes) per search")
    parser.add_argument("--budget-s", type=float, default=5.0, help="the bench's run budget")
    parser.add_argument("--workers", type=int, default=2, help="the parallel tree's workers")
    args = parser.parse_args()
    os.environ["LABTUI_API_KEY"] = TEST_API_KEY
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    load = os.getloadavg()[0]
    rows: list[Row] = []
    with ScriptedLLMServer() as server:
        for name, label, strategy, workers in (
            ("climb", "climb", "climb", 1),
            ("tree", "tree, 1 worker", "tree", 1),
            (f"tree{args.workers}", f"tree, {args.workers} workers", "tree", args.workers),
        ):
            result = search(strategy, args.attempts, args.budget_s, workers, server)
            found = rows_for(name, label, result, workers)
            if workers > 1:  # nodes overlap: their own times, and the throughput
                found = [r for r in found if not r.key.endswith("first_overhead_s")]
            rows += found
    print_report(rows, load)


if __name__ == "__main__":
    main()
