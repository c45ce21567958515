"""The real-model bench's report of the experiments stage (tests/bench/experiment_report.py,
tests/bench/bench_report.py) and its climb options (tests/bench/real_model.py), on a small
journal, proxy exchanges and ledger written here: every number below is computed by hand from
the timestamps and records written, nothing waits and nothing reaches a network."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from labtui.core.settings.config import Config, load_config, save_config

BENCH = Path(__file__).resolve().parent / "bench"
LEDGER = "ledgers/climb-moons_idea"


@pytest.fixture
def bench(monkeypatch) -> Any:
    """The bench's modules, imported as the bench scripts import each other (by bare name)."""
    monkeypatch.syspath_prepend(str(BENCH))
    names = ("experiment_report", "bench_report", "real_model")
    modules: dict[str, ModuleType] = {name: importlib.import_module(name) for name in names}
    return argparse.Namespace(**modules)


def ev(kind: str, ts: float, stage: str = "experiments", **fields: Any) -> dict[str, Any]:
    return {"type": kind, "stage": stage, "ts": ts, **fields}


def call(ts: float, total_s: float, usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {"ts": ts, "stage": "experiments", "total_s": total_s, "usage": usage or {}}


def finished(ts: float, run_id: str, wall_s: float, returncode: int = 0) -> dict[str, Any]:
    return ev("RunFinished", ts, run_id=run_id, returncode=returncode, wall_s=wall_s)


# A planned experiments stage, 100 s to 145 s: run_0 came before it (with the project); run_1
# after two calls; run_2 failed once, was fixed by one call and ran again; one call after.
PLANNED = [
    ev("RunStarted", 40, run_id="run_0"),
    finished(50, "run_0", 10.0),
    ev("StageStarted", 100),
    ev("RunStarted", 110, run_id="run_1"),
    finished(120, "run_1", 9.5),
    ev("RunStarted", 123, run_id="run_2"),
    finished(130, "run_2", 6.0, returncode=1),
    ev("CostUpdate", 133, tokens_in=70, tokens_out=7),  # the tokens of a call without usage
    ev("RunStarted", 134, run_id="run_2"),
    finished(140, "run_2", 5.0),
    ev("StageFinished", 145, status="done"),
]
PLANNED_CALLS = [
    call(101, 4.0, {"prompt_tokens": 100, "completion_tokens": 20}),
    call(106, 3.0, {"prompt_tokens": 50, "completion_tokens": 10}),
    call(131, 2.0),
    call(142, 1.0, {"prompt_tokens": 5, "completion_tokens": 1}),
    {**call(150, 9.0), "stage": "plots"},  # another stage's call counts nowhere here
]


def test_each_run_of_the_stage_has_its_calls_its_run_and_labtuis_own_time(bench):
    rows, total = bench.experiment_report.experiment_rows(PLANNED, PLANNED_CALLS)
    by_run = {row["run"]: row for row in rows}
    assert [row["run"] for row in rows] == ["run_1", "run_2", "(after the last run)"]
    assert by_run["run_1"] == {
        "run": "run_1",
        "tries": 1,
        "result": "ok",
        "calls": 2,
        "tokens_in": 150,
        "tokens_out": 30,
        "model_s": 7.0,
        "run_s": 9.5,
        "span_s": 20.0,  # the stage's start (100) to its RunFinished (120)
        "own_s": 20.0 - 7.0 - 9.5,
    }
    fixed = by_run["run_2"]
    assert (fixed["tries"], fixed["result"], fixed["calls"]) == (2, "ok", 1)
    assert (fixed["tokens_in"], fixed["tokens_out"]) == (70, 7)  # labtui's count: no usage
    assert (fixed["model_s"], fixed["run_s"], fixed["span_s"]) == (2.0, 11.0, 20.0)
    assert fixed["own_s"] == pytest.approx(20.0 - 2.0 - 11.0)
    after = by_run["(after the last run)"]
    assert (after["calls"], after["model_s"], after["span_s"], after["own_s"]) == (1, 1.0, 5, 4.0)
    assert total == {
        "wall_s": 45.0,
        "calls": 4,
        "model_s": 10.0,
        "runs": 2,
        "tries": 3,
        "run_s": 20.5,
        "beyond_s": 45.0 - 20.5,
        "own_s": 45.0 - 10.0 - 20.5,
        "outside": ["run_0"],
    }


def test_a_stage_that_never_ran_has_no_rows(bench):
    assert bench.experiment_report.experiment_rows([ev("StageStarted", 1, "plan")], []) == ([], {})


def climb_journal() -> list[dict[str, Any]]:
    """Three climb attempts from SearchStarted at 200, told at 260, 330 and 400."""
    steps = [(260, 1, "keep"), (330, 2, "discard"), (400, 3, "crash")]
    return [
        ev("SearchStarted", 200, strategy="climb", ledger=f"{LEDGER}/results.tsv"),
        *(finished(ts - 10, f"run_{n}", 20.0 + n) for ts, n, _ in steps),
        *(
            ev("SearchStep", ts, strategy="climb", step=n, status=s, run_id=f"run_{n}")
            for ts, n, s in steps
        ),
    ]


CLIMB_CALLS = [call(201, 10.0), call(230, 5.0), call(270, 6.0), call(340, 3.0), call(500, 99.0)]


def write_steps(root: Path) -> None:
    for n, status, run_s in ((1, "keep", 30.0), (2, "discard", 31.0), (3, "crash", 0.0)):
        folder = root / LEDGER / "steps" / f"{n:04d}"
        folder.mkdir(parents=True)
        record = {"step": n, "status": status, "run_id": f"run_{n}", "run_s": run_s}
        record |= {"wall_s": 60.0 + 5 * n, "model_s": 1.0}
        record |= {"proposer": "labtui"} if n == 2 else {}
        (folder / "step.json").write_text(json.dumps(record), encoding="utf-8")


def test_the_climb_is_read_from_its_ledger_and_its_calls_from_the_proxy(bench, tmp_path):
    write_steps(tmp_path)
    climb = bench.experiment_report.climb_summary(tmp_path, climb_journal(), CLIMB_CALLS)
    wall = 65.0 + 70.0 + 75.0
    model = 10.0 + 5.0 + 6.0 + 3.0  # the call at 500 comes after the last attempt
    assert climb == {
        "source": "ledger steps",
        "ledger": LEDGER,
        "attempts": 3,
        "kept": 1,
        "discarded": 1,
        "crashed": 1,
        "by_labtui": 1,
        "wall_h": wall / 3600,
        "per_hour": pytest.approx(3 / (wall / 3600)),
        "calls_per": 4 / 3,
        "model_s_per": model / 3,
        "run_s_per": (30.0 + 31.0 + 23.0) / 3,  # the crash's run time from its RunFinished
        "own_s_per": pytest.approx((wall - model - 84.0) / 3),
        "ended": "",
    }


def test_without_step_records_the_climb_is_read_from_results_tsv(bench, tmp_path):
    ledger = tmp_path / LEDGER
    ledger.mkdir(parents=True)
    header = "attempt\tcommit\tacc\tmemory_mb\tstatus\tdescription\twall_s\ttokens"
    lines = [
        header,
        "0\tabc1234\t0.9\t\tbaseline\tthe project's code (run_0)\t\t",
        "0/seed1\tabc1234\t0.91\t\tbaseline\trun_0's code with seed 1\t\t",
        "1\tdef5678\t0.95\t12\tkeep\twider layer\t100.0\t900",
        "2\t\t\t\tcrash\tbad edit\t80.0\t400",
        "1/seed1\tdef5678\t0.94\t\tseed\tstep 1's code with seed 1\t\t",
    ]
    (ledger / "results.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    journal = [
        ev("SearchStarted", 0, strategy="climb", ledger=f"{LEDGER}/results.tsv"),
        finished(50, "run_1", 40.0),
    ]
    climb = bench.experiment_report.climb_summary(tmp_path, journal, [])
    assert climb["source"] == "results.tsv"
    assert (climb["attempts"], climb["kept"], climb["crashed"]) == (2, 1, 1)
    assert climb["per_hour"] == pytest.approx(2 / (180.0 / 3600))
    assert climb["run_s_per"] == 20.0  # run_1's 40 s, and none for the crash


def test_a_project_that_did_not_climb_has_no_climb(bench, tmp_path):
    assert bench.experiment_report.climb_summary(tmp_path, PLANNED, PLANNED_CALLS) == {}


def test_the_report_of_an_aa_climb_counts_its_false_keeps(bench, tmp_path):
    folder = tmp_path / "moons"
    root = folder / "project"
    write_steps(root)
    journal = root / ".labtui" / "journal.jsonl"
    lines = [ev("StageStarted", 190), *climb_journal(), ev("StageFinished", 410)]
    journal.parent.mkdir(parents=True)
    journal.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    exchanges = "".join(json.dumps(x) + "\n" for x in CLIMB_CALLS)
    (folder / "exchanges.jsonl").write_text(exchanges, encoding="utf-8")
    meta = {"template": "moons", "strategy": "climb", "minutes": 30.0}
    meta |= {"aa": True, "aa_setting": "LOG_EVERY"}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    summary = bench.bench_report.summarize(folder)
    text = "\n".join(bench.bench_report.report_lines(summary, markdown=False))
    markdown = "\n".join(bench.bench_report.report_lines(summary, markdown=True))

    assert "A/A climb (only LOG_EVERY may change, no code): false keeps: 1 of 3" in text
    assert "Strategy climb, 30 minutes" in text
    assert [row["run"] for row in summary["experiment_runs"]][:3] == ["run_1", "run_2", "run_3"]
    for header in ("model calls", "labtui own s", "beyond the runs s", "attempts/h"):
        assert header in text
    assert "| run | tries | result | model calls |" in markdown
    assert "| 3 | 1 | 1 | 1 |" in markdown  # attempts, kept, discarded, crashed


def test_climb_options_become_settings_and_the_list_is_written_as_toml(bench, tmp_path):
    save_config(Config(), tmp_path)
    args = argparse.Namespace(strategy="climb", minutes=30.0, aa=True, aa_setting="")
    bench.real_model.check_search_options(args)
    settings = bench.real_model.search_settings(args)
    assert settings == [
        "experiment.strategy=climb",
        "climb.max_hours=0.5",
        'climb.settings=["LOG_EVERY"]',
        "climb.code_changes=false",
    ]
    bench.real_model.apply_settings(tmp_path, settings, "")
    config = load_config(tmp_path)
    assert config.experiment.strategy == "climb"
    assert (config.climb.max_hours, config.climb.code_changes) == (0.5, False)
    assert config.climb.settings == ["LOG_EVERY"]
    assert 'settings = ["LOG_EVERY"]' in (tmp_path / "labtui.toml").read_text(encoding="utf-8")
    # a shell that took the quotes away still gives the list
    bench.real_model.apply_settings(tmp_path, ["climb.settings=[EPOCHS, LOG_EVERY]"], "")
    assert load_config(tmp_path).climb.settings == ["EPOCHS", "LOG_EVERY"]


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"strategy": "", "minutes": 5.0}, "--minutes"),
        ({"strategy": "plan", "aa": True}, "--aa"),
        ({"strategy": "climb", "aa_setting": "EPOCHS"}, "--aa-setting"),
    ],
)
def test_climb_options_that_do_not_go_together_are_refused(bench, options, complaint):
    args = argparse.Namespace(**{"minutes": 0.0, "aa": False, "aa_setting": "", **options})
    with pytest.raises(SystemExit, match=complaint):
        bench.real_model.check_search_options(args)
