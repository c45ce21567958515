"""The report of a real-model bench (tests/bench/real_model.py): what each template's run did,
from the project's journal (``.labtui/journal.jsonl``), the recording proxy's exchanges and the
project's files: per stage, tokens, model time and refusals; the experiments stage run by run,
and its climb (tests/bench/experiment_report.py); the paper and its review
(tests/bench/paper_outcome.py). Printed as text, then as Markdown (also in DIR/report.md).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from experiment_report import (
    CLIMB_COLUMNS,
    RUN_COLUMNS,
    RUN_NOTE,
    STAGE_NOTE,
    TOTAL_COLUMNS,
    climb_summary,
    experiment_rows,
)
from paper_outcome import (
    PDF,
    REVIEW,
    novelty_outcome,
    paper_sections,
    pdf_pages,
    review_outcome,
)

JOURNAL = Path(".labtui") / "journal.jsonl"
EXCHANGES = "exchanges.jsonl"
Columns = tuple[tuple[str, str, str], ...]  # (key, header, format) of each column


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Every event of a journal as a dict; a torn line (a write cut off) is skipped."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            events.append(json.loads(line))
    return events


def short_reason(reason: str, limit: int = 70) -> str:
    first = reason.strip().splitlines()[0] if reason.strip() else "(none)"
    first = first.split(": ", 1)[0] if len(first) > limit else first
    return first if len(first) <= limit else first[: limit - 1] + "…"


def stage_order(stage: str) -> tuple[int, str]:
    from labtui.core.stage_list import STAGES

    return (STAGES.index(stage) if stage in STAGES else len(STAGES), stage)


def summarize(folder: Path) -> dict[str, Any]:
    """What a template's run did, from its journal, its exchanges and its project files."""
    root = folder / "project"
    events = read_journal(root / JOURNAL)
    meta_path = folder / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_type[event.get("type", "")].append(event)
    exchanges = _exchanges(folder)
    stages = _stage_rows(by_type, exchanges)
    experiment_runs, experiments = experiment_rows(events, exchanges)
    refusals = Counter(
        (e.get("what", ""), short_reason(e.get("reason", ""))) for e in by_type["Refused"]
    )
    failed_runs = [
        {
            "run": e.get("run_id", ""),
            "returncode": e.get("returncode"),
            "timed_out": e.get("timed_out", False),
            "tail": short_reason(e.get("error_tail", "")),
        }
        for e in by_type["RunFinished"]
        if e.get("returncode") != 0 or e.get("timed_out")
    ]
    review = review_outcome(root / REVIEW)
    return {
        "novelty": novelty_outcome(root),
        "sections": paper_sections(root / "latex" / "template.tex"),
        "pdf_pages": pdf_pages(root),
        **meta,
        "template": meta.get("template", folder.name),
        "events": len(events),
        "stages": stages,
        "refusals": [
            {"what": what, "reason": reason, "count": count}
            for (what, reason), count in refusals.most_common()
        ],
        "claims_contradicted": sum(1 for e in by_type["Refused"] if e.get("what") == "claim"),
        "runs": len(by_type["RunFinished"]),
        "failed_runs": failed_runs,
        "reverts": [
            {
                "run": e.get("run_id", ""),
                "attempts": e.get("attempts", 0),
                "problem": short_reason(e.get("problem", "")),
            }
            for e in by_type["RunAbandoned"]
        ],
        "errors": [short_reason(e.get("message", "")) for e in by_type["ErrorEvent"]],
        "pdf": (root / PDF).exists() or any((root / "latex").glob("*.pdf")),
        "review": review,
        "experiment_runs": experiment_runs,
        "experiments": experiments,
        "climb": climb_summary(root, events, exchanges),
    }


def _exchanges(folder: Path) -> list[dict[str, Any]]:
    return read_journal(folder / EXCHANGES)  # the same format: JSON lines


def _stage_rows(
    by_type: dict[str, list[dict[str, Any]]], exchanges: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}

    def row(stage: str) -> dict[str, Any]:
        return rows.setdefault(
            stage,
            {
                "stage": stage,
                "started": 0,
                "status": "",
                "wall_s": 0.0,
                "calls": 0,
                "tokens_in": 0,
                "tokens_out": 0,
                "llm_s": 0.0,
                "first_token_s": 0.0,
                "exchanges": 0,
                "proxy_s": 0.0,
                "refused": 0,
            },
        )

    open_since: dict[str, float] = {}
    for event in sorted(
        by_type["StageStarted"] + by_type["StageFinished"], key=lambda e: e.get("ts", 0)
    ):
        stage = event.get("stage", "")
        if event["type"] == "StageStarted":
            row(stage)["started"] += 1
            open_since[stage] = event.get("ts", 0)
        else:
            row(stage)["status"] = event.get("status", "")
            if stage in open_since:
                row(stage)["wall_s"] += event.get("ts", 0) - open_since.pop(stage)
    last_ts = max(
        (e.get("ts", 0) for e in by_type["CostUpdate"] + by_type["StageStarted"]), default=0
    )
    for stage, since in open_since.items():  # still running, or the run died in it
        row(stage)["status"] = row(stage)["status"] or "unfinished"
        row(stage)["wall_s"] += max(0.0, last_ts - since)
    for cost in by_type["CostUpdate"]:
        target = row(cost.get("stage", "") or "(project)")
        target["calls"] += 1
        target["tokens_in"] += cost.get("tokens_in", 0)
        target["tokens_out"] += cost.get("tokens_out", 0)
        target["llm_s"] += cost.get("seconds", 0.0)
        target["first_token_s"] += cost.get("first_token_s", 0.0)
    for refused in by_type["Refused"]:
        row(refused.get("stage", "") or "(project)")["refused"] += 1
    for exchange in exchanges:
        stage = exchange.get("stage", "")
        stage = "(between stages)" if stage.startswith("after ") else stage or "(project)"
        row(stage)["exchanges"] += 1
        row(stage)["proxy_s"] += exchange.get("total_s", 0.0)
    for values in rows.values():
        values["prompt_tps"] = (
            values["tokens_in"] / values["first_token_s"] if values["first_token_s"] else 0.0
        )
        writing = values["llm_s"] - values["first_token_s"]
        values["output_tps"] = values["tokens_out"] / writing if writing > 0 else 0.0
    return sorted(rows.values(), key=lambda r: stage_order(r["stage"]))


STAGE_COLUMNS = (
    ("stage", "stage", "{}"),
    ("status", "status", "{}"),
    ("started", "starts", "{}"),
    ("wall_s", "wall s", "{:.0f}"),
    ("calls", "LLM calls", "{}"),
    ("exchanges", "proxied", "{}"),
    ("proxy_s", "model s", "{:.0f}"),
    ("tokens_in", "tok in", "{:,}"),
    ("tokens_out", "tok out", "{:,}"),
    ("prompt_tps", "prompt tok/s", "{:.1f}"),
    ("output_tps", "gen tok/s", "{:.1f}"),
    ("refused", "refused", "{}"),
)


def report_lines(summary: dict[str, Any], *, markdown: bool) -> list[str]:
    """One template's report: the per-stage table, then the counts, as text or Markdown."""
    lines = [
        f"## {summary['template']} ({summary.get('model', '?')})"
        if markdown
        else f"== {summary['template']} ({summary.get('model', '?')}) =="
    ]
    if summary.get("schema_as_object"):
        lines.append("(the proxy rewrote json_schema response formats to json_object + schema)")
    lines.append(
        f"labtui run: exit {summary.get('run_returncode')}, {summary.get('run_s', 0):.0f} s; "
        f"{summary['events']} journal events, {summary.get('exchanges', 0)} model exchanges"
    )
    lines.append("")
    lines += columns_table(STAGE_COLUMNS, summary["stages"], markdown=markdown)
    passed = [r["stage"] for r in summary["stages"] if r["status"] == "done"]
    reached = [r["stage"] for r in summary["stages"] if r["started"]]
    facts = [
        f"stages reached {len(reached)}: {', '.join(reached) or '-'}",
        f"stages passed {len(passed)}: {', '.join(passed) or '-'}",
        f"runs {summary['runs']}, failed {len(summary['failed_runs'])}"
        + "".join(
            f"; {f['run']} rc={f['returncode']}" + (" timed out" if f["timed_out"] else "")
            for f in summary["failed_runs"]
        ),
        f"reverted runs (RunAbandoned) {len(summary['reverts'])}"
        + "".join(
            f"; {r['run']} after {r['attempts']}: {r['problem']}" for r in summary["reverts"]
        ),
        f"contradicted claims {summary['claims_contradicted']}",
        f"novelty: {summary.get('novelty') or 'not reached'}",
        "sections written "
        f"{sum(v == 'written' for v in summary.get('sections', {}).values())} of "
        f"{len(summary.get('sections', {}))}"
        + "".join(
            f"; {title}: {state}"
            for title, state in summary.get("sections", {}).items()
            if state != "written"
        ),
        f"PDF pages {summary.get('pdf_pages', 0)}",
        f"PDF ({PDF}): {'yes' if summary['pdf'] else 'no'}; "
        f"review ({REVIEW}): {json.dumps(summary['review']) if summary['review'] else 'no'}",
    ]
    if summary["errors"]:
        facts.append(f"errors {len(summary['errors'])}: " + " | ".join(summary["errors"][:5]))
    lines.append("")
    lines += [f"- {fact}" for fact in facts] if markdown else facts
    lines.append("")
    refusal_rows = [[r["what"], str(r["count"]), r["reason"]] for r in summary["refusals"]]
    lines.append("Refusals and re-asks by reason:" if refusal_rows else "Refusals: none")
    if refusal_rows:
        lines.append("")
        lines += _table(["what", "count", "reason"], refusal_rows, markdown=markdown)
    lines.append("")
    return lines + experiment_lines(summary, markdown=markdown)


def experiment_lines(summary: dict[str, Any], *, markdown: bool) -> list[str]:
    """The experiments stage run by run and in all, then its climb, with an A/A climb's false
    keeps (every keep of a climb that may change only a setting the metric ignores is one)."""
    lines = []
    if strategy := summary.get("strategy"):
        minutes = summary.get("minutes")
        lines += [f"Strategy {strategy}" + (f", {minutes:g} minutes" if minutes else ""), ""]
    if rows := summary.get("experiment_runs"):
        lines += ["Experiments stage, run by run:", ""]
        lines += columns_table(RUN_COLUMNS, rows, markdown=markdown)
        lines += ["", f"({RUN_NOTE})", ""]
    if total := summary.get("experiments"):
        lines += ["Experiments stage in all:", ""]
        lines += columns_table(TOTAL_COLUMNS, [total], markdown=markdown)
        outside = total.get("outside") or []
        apart = f"; runs before or after the stage, not counted: {', '.join(outside)}"
        lines += ["", f"({STAGE_NOTE}{apart if outside else ''})", ""]
    climb = summary.get("climb") or {}
    if climb:
        where = f", {climb['ledger']}" if climb["ledger"] else ""
        lines += [f"Climb (from the {climb['source']}{where}):", ""]
        lines += columns_table(CLIMB_COLUMNS, [climb], markdown=markdown)
        lines += ["", f"climb ended: {climb['ended'] or 'no SearchEnded in the journal'}"]
    if summary.get("aa"):
        lines.append(
            f"A/A climb (only {summary.get('aa_setting', '?')} may change, no code): "
            f"false keeps: {climb.get('kept', 0)} of {climb.get('attempts', 0)}"
        )
    return [*lines, ""] if climb or summary.get("aa") else lines


def columns_table(columns: Columns, rows: list[dict[str, Any]], *, markdown: bool) -> list[str]:
    """A table of ``rows`` (dicts) with a column per (key, header, format) of ``columns``."""
    headers = [title for _, title, _ in columns]
    body = [[fmt.format(row[key]) for key, _, fmt in columns] for row in rows]
    return _table(headers, body, markdown=markdown)


def _table(headers: list[str], rows: list[list[str]], *, markdown: bool) -> list[str]:
    if markdown:
        escape = [[cell.replace("|", "\\|") for cell in row] for row in rows]
        return [
            "| " + " | ".join(headers) + " |",
            "|" + "|".join("---" for _ in headers) + "|",
            *("| " + " | ".join(row) + " |" for row in escape),
        ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    return [
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
        "  ".join("-" * w for w in widths),
        *("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows),
    ]


def report(out: Path, templates: list[str]) -> None:
    summaries = [summarize(out / t) for t in templates]
    for summary in summaries:
        (out / summary["template"] / "summary.json").write_text(
            json.dumps(summary, indent=2) + "\n"
        )
        print("\n".join(report_lines(summary, markdown=False)))
    markdown = ["# labtui with a real model", ""]
    for summary in summaries:
        markdown += report_lines(summary, markdown=True)
    (out / "report.md").write_text("\n".join(markdown))
    print("---- Markdown (also in", out / "report.md", ") ----")
    print("\n".join(markdown))


def record(out: Path, templates: list[str], folder: Path) -> None:
    """Copy the exchanges and the summary of each template to ``folder`` for tests to replay."""
    for template in templates:
        target = folder / template
        target.mkdir(parents=True, exist_ok=True)
        for name in (EXCHANGES, "summary.json", "meta.json"):
            if (out / template / name).exists():
                shutil.copy2(out / template / name, target / name)
        print(f"recorded {out / template / EXCHANGES} -> {target}")
