"""The experiments stage of a real-model bench, run by run, and its hill-climb, in numbers.

Read from the project's journal (StageStarted/StageFinished, RunStarted/RunFinished, CostUpdate,
SearchStarted/SearchStep; core/events.py), the recording proxy's exchanges (one line per model
request, with the stage the journal was in) and the climb's ledger, ``ledgers/climb-<idea>/`` in
the project (``steps/NNNN/step.json`` and ``results.tsv``; core/search/ledger.py).

A run's span runs from the end of the run before it (the stage's start, for the first) to its own
RunFinished: the model calls that prepared or fixed it fall in it. Whatever the span's wall time
is neither the model's calls nor the run itself is labtui's own. tests/bench/bench_report.py
prints the rows; the column specs (key, header, format) are here with the numbers they name.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

STAGE = "experiments"
CLIMB = "climb"
KEEP, DISCARD, CRASH = "keep", "discard", "crash"  # core/search/ledger.py's status words
AFTER_RUNS = "(after the last run)"

Event = dict[str, Any]

RUN_COLUMNS = (
    ("run", "run", "{}"),
    ("tries", "tries", "{}"),
    ("result", "result", "{}"),
    ("calls", "model calls", "{}"),
    ("tokens_in", "tok in", "{:,}"),
    ("tokens_out", "tok out", "{:,}"),
    ("model_s", "model s", "{:.1f}"),
    ("run_s", "run s", "{:.1f}"),
    ("span_s", "span wall s", "{:.1f}"),
    ("own_s", "labtui own s", "{:.1f}"),
)
RUN_NOTE = (
    "span: from the previous run's end (the stage's start, for the first) to this run's end; "
    "labtui own = span - model - run"
)
TOTAL_COLUMNS = (
    ("wall_s", "stage wall s", "{:.1f}"),
    ("calls", "model calls", "{}"),
    ("model_s", "model s", "{:.1f}"),
    ("runs", "runs", "{}"),
    ("tries", "run tries", "{}"),
    ("run_s", "run s", "{:.1f}"),
    ("beyond_s", "beyond the runs s", "{:.1f}"),
    ("own_s", "labtui own s", "{:.1f}"),
)
STAGE_NOTE = "beyond the runs = stage wall - run; labtui own = stage wall - model - run"
CLIMB_COLUMNS = (
    ("attempts", "attempts", "{}"),
    ("kept", "kept", "{}"),
    ("discarded", "discarded", "{}"),
    ("crashed", "crashed", "{}"),
    ("by_labtui", "labtui's steps", "{}"),
    ("wall_h", "attempts' wall h", "{:.2f}"),
    ("per_hour", "attempts/h", "{:.1f}"),
    ("calls_per", "model calls/attempt", "{:.1f}"),
    ("model_s_per", "model s/attempt", "{:.1f}"),
    ("run_s_per", "run s/attempt", "{:.1f}"),
    ("own_s_per", "labtui own s/attempt", "{:.1f}"),
)


# -- the experiments stage, run by run ------------------------------------------------------


def experiment_rows(
    events: list[Event], exchanges: list[Event]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per run of the experiments stage's last span (and one for the time after the
    last run), and the stage's totals; ([], {}) when the stage never ran. A run of the stage's name made outside
    its span (run_0, the baseline `labtui new` runs) is left out, and named in the totals."""
    # The last time the stage ran: a project copied from an earlier bench (--start-from) keeps
    # that bench's journal, whose runs are not this one's.
    intervals = stage_intervals(events, last_ts(events, exchanges))[-1:]
    since = intervals[0][0] if intervals else 0.0
    runs = stage_runs([e for e in events if _ts(e) >= since])
    if not runs and not intervals:
        return [], {}
    calls = [x for x in exchanges if x.get("stage") == STAGE]
    costs = [e for e in events if e.get("type") == "CostUpdate" and e.get("stage") == STAGE]
    rows, inside, tail = [], [], _row(AFTER_RUNS, 0, "", 0.0, 0.0)
    for start, end in intervals:
        since = start
        for run in (r for r in runs if start <= r["end"] <= end):
            row = _row(run["run"], run["tries"], run["result"], run["run_s"], run["end"] - since)
            rows.append(_add_calls(row, calls, costs, since, run["end"]))
            inside.append(run)
            since = run["end"]
        _add_calls(tail, calls, costs, since, end)
        tail["span_s"] += end - since
    if inside:
        rows.append(tail)
    for row in rows:
        row["own_s"] = row["span_s"] - row["model_s"] - row["run_s"]
    total = _stage_total(intervals, inside, calls)
    counted = {r["run"] for r in inside}
    earlier = [r["run"] for r in stage_runs(events) if r["end"] < since and r["run"] not in counted]
    total["outside"] = list(dict.fromkeys([*earlier, *(r["run"] for r in runs if r not in inside)]))
    return rows, total


def stage_runs(events: list[Event]) -> list[dict[str, Any]]:
    """The stage's runs in order: a run's fix attempts (RunFinished events of the same run one
    after another) are one run with several tries. Run seconds are RunFinished's wall_s, or the
    time since its RunStarted when a journal has none."""
    started: dict[str, float] = {}
    runs: list[dict[str, Any]] = []
    for event in sorted(_of(events, "RunStarted", "RunFinished"), key=_ts):
        run_id = event.get("run_id", "")
        if event["type"] == "RunStarted":
            started[run_id] = _ts(event)
            continue
        seconds = event.get("wall_s") or max(0.0, _ts(event) - started.get(run_id, _ts(event)))
        if not runs or runs[-1]["run"] != run_id:
            runs.append({"run": run_id, "tries": 0, "run_s": 0.0})
        run = runs[-1]
        run["tries"] += 1
        run["run_s"] += seconds
        run["end"] = _ts(event)
        run["result"] = _result(event)
    return runs


def stage_intervals(events: list[Event], end_ts: float) -> list[tuple[float, float]]:
    """When the experiments stage was open: each StageStarted to its StageFinished (one still
    open ends at ``end_ts``). A journal without stage events gives the span of its
    experiments events."""
    marks = sorted(_of(events, "StageStarted", "StageFinished"), key=_ts)
    intervals: list[tuple[float, float]] = []
    open_since = None
    for event in marks:
        if event["type"] == "StageStarted":
            if open_since is not None:  # the session died in the stage: it ended at its last word
                intervals.append((open_since, _last_before(events, open_since, _ts(event))))
            open_since = _ts(event)
        elif open_since is not None:
            intervals.append((open_since, _ts(event)))
            open_since = None
    if open_since is not None:
        intervals.append((open_since, max(end_ts, open_since)))
    if not marks:
        times = [_ts(e) for e in events if e.get("stage") == STAGE]
        intervals = [(min(times), max(times))] if times else []
    return intervals


def _last_before(events: list[Event], since: float, until: float) -> float:
    return max((_ts(e) for e in events if since <= _ts(e) < until), default=since)


def last_ts(events: list[Event], exchanges: list[Event]) -> float:
    """The last moment the journal or the proxy saw anything."""
    ends = [_ts(e) for e in events] + [_ts(x) + x.get("total_s", 0.0) for x in exchanges]
    return max(ends, default=0.0)


def _stage_total(
    intervals: list[tuple[float, float]], runs: list[dict[str, Any]], calls: list[Event]
) -> dict[str, Any]:
    wall = sum(end - start for start, end in intervals)
    model = sum(x.get("total_s", 0.0) for x in calls)
    run_s = sum(r["run_s"] for r in runs)
    return {
        "wall_s": wall,
        "calls": len(calls),
        "model_s": model,
        "runs": len(runs),
        "tries": sum(r["tries"] for r in runs),
        "run_s": run_s,
        "beyond_s": wall - run_s,
        "own_s": wall - model - run_s,
    }


def _row(run: str, tries: int, result: str, run_s: float, span_s: float) -> dict[str, Any]:
    return {
        "run": run,
        "tries": tries,
        "result": result,
        "calls": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "model_s": 0.0,
        "run_s": run_s,
        "span_s": span_s,
    }


def _add_calls(
    row: dict[str, Any], calls: list[Event], costs: list[Event], start: float, end: float
) -> dict[str, Any]:
    """The model calls made in [start, end) added to ``row``. Tokens are what the server said
    (the exchange's usage); a server that streams no usage leaves them to labtui's count (the
    journal's CostUpdate events of the span)."""
    within = [x for x in calls if start <= _ts(x) < end]
    row["calls"] += len(within)
    row["model_s"] += sum(x.get("total_s", 0.0) for x in within)
    used = [x.get("usage") or {} for x in within]
    tokens_in = sum(u.get("prompt_tokens", 0) for u in used)
    tokens_out = sum(u.get("completion_tokens", 0) for u in used)
    if not tokens_in and not tokens_out:
        counted = [c for c in costs if start <= _ts(c) < end]
        tokens_in = sum(c.get("tokens_in", 0) for c in counted)
        tokens_out = sum(c.get("tokens_out", 0) for c in counted)
    row["tokens_in"] += tokens_in
    row["tokens_out"] += tokens_out
    return row


def _result(finished: Event) -> str:
    if finished.get("timed_out"):
        return "timed out"
    code = finished.get("returncode")
    return "ok" if code == 0 else f"rc {code}"


# -- the climb ------------------------------------------------------------------------------


def climb_summary(root: Path, events: list[Event], exchanges: list[Event]) -> dict[str, Any]:
    """The climb's attempts, kept, discarded and crashed, and per attempt its model calls, model
    seconds, run seconds and labtui's own; {} when the project did not climb.

    The attempts come from the ledger's records (steps/NNNN/step.json), else its results.tsv,
    else the journal's SearchStep events. Model calls are the proxy's exchanges between one
    SearchStep and the next (from SearchStarted, for the first); model seconds are theirs, or the
    ledger's own count when the proxy saw none."""
    steps = [e for e in _of(events, "SearchStep") if e.get("strategy") == CLIMB]
    folder = climb_ledger(root, events)
    attempts, source = _attempts(folder, steps)
    if not attempts:
        return {}
    runs = {r["run"]: r["run_s"] for r in stage_runs(events)}
    spans = attempt_spans(events)
    calls = [x for x in exchanges if x.get("stage") == STAGE]
    in_spans = [x for x in calls if any(s <= _ts(x) < e for s, e in spans.values())]
    n = len(attempts)
    wall = sum(a.get("wall_s") or 0.0 for a in attempts)
    run_s = sum(
        a["run_s"] if a.get("run_s") else runs.get(a.get("run_id", ""), 0.0) for a in attempts
    )
    model = sum(x.get("total_s", 0.0) for x in in_spans)
    if not in_spans:
        model = sum(a.get("model_s") or 0.0 for a in attempts)
    if not wall:  # attempts recorded without their times: the journal's spans say
        wall = sum(end - start for start, end in spans.values())
    statuses = [a.get("status", "") for a in attempts]
    return {
        "source": source,
        "ledger": str(folder.relative_to(root)) if folder else "",
        "attempts": n,
        "kept": statuses.count(KEEP),
        "discarded": statuses.count(DISCARD),
        "crashed": statuses.count(CRASH),
        "by_labtui": sum(1 for a in attempts if a.get("proposer") == "labtui"),
        "wall_h": wall / 3600,
        "per_hour": n / (wall / 3600) if wall else 0.0,
        "calls_per": len(in_spans) / n,
        "model_s_per": model / n,
        "run_s_per": run_s / n,
        "own_s_per": (wall - model - run_s) / n,
        "ended": next((e.get("reason", "") for e in reversed(_of(events, "SearchEnded"))), ""),
    }


def climb_ledger(root: Path, events: list[Event]) -> Path | None:
    """The climb's ledger folder: the one its last SearchStarted names, else the newest
    ledgers/climb-* of the project."""
    named = [
        e.get("ledger", "") for e in _of(events, "SearchStarted") if e.get("strategy") == CLIMB
    ]
    if named and named[-1]:
        return (root / named[-1]).parent
    found = sorted((root / "ledgers").glob(f"{CLIMB}-*"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def attempt_spans(events: list[Event]) -> dict[int, tuple[float, float]]:
    """Each climb attempt's time: from the SearchStep before it (or the SearchStarted that began
    or resumed the climb, when later) to its own SearchStep."""
    marks = [e for e in _of(events, "SearchStarted", "SearchStep") if e.get("strategy") == CLIMB]
    spans, since = {}, None
    for event in sorted(marks, key=_ts):
        if event["type"] == "SearchStep" and since is not None:
            spans[int(event.get("step", 0))] = (since, _ts(event))
        since = _ts(event)
    return spans


def _attempts(folder: Path | None, steps: list[Event]) -> tuple[list[dict[str, Any]], str]:
    if folder is not None:
        records = [_read_json(p) for p in sorted(folder.glob("steps/[0-9]*/step.json"))]
        if records := [r for r in records if isinstance(r, dict)]:
            return records, "ledger steps"
        if rows := _tsv_attempts(folder / "results.tsv"):
            return rows, "results.tsv"
    events = [{**e, "run_id": e.get("run_id", "")} for e in steps]
    return events, "journal SearchStep events" if events else ""


def _tsv_attempts(path: Path) -> list[dict[str, Any]]:
    """The attempts' lines of a results.tsv: the baseline's and the seeds' lines left out."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for line in csv.DictReader(lines, delimiter="\t"):
        attempt = line.get("attempt") or ""
        if attempt.isdigit() and int(attempt) > 0 and line.get("status") in (KEEP, DISCARD, CRASH):
            wall = float(line.get("wall_s") or 0.0)
            rows.append({"step": int(attempt), "status": line["status"], "wall_s": wall})
            rows[-1]["run_id"] = f"run_{attempt}"  # a climb's attempt n runs run_n
    return rows


# -- small helpers --------------------------------------------------------------------------


def _of(events: Iterable[Event], *types: str) -> list[Event]:
    """The events of these types, in the experiments stage."""
    return [e for e in events if e.get("type") in types and e.get("stage") == STAGE]


def _ts(event: Event) -> float:
    return float(event.get("ts") or 0.0)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
