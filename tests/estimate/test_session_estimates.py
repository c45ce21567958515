"""The estimate in a scripted run: made before the first model call and again as facts arrive,
the time cap's clean stop at a checkpoint, and `labtui run --estimate` asking no model."""

from __future__ import annotations

import time

from conftest import run_labtui
from support.ports import ScriptedPort, _journal

from labtui.core.checkpoints import Decision
from labtui.core.estimate.speeds import read_speeds
from labtui.core.events import (
    CostUpdate,
    ErrorEvent,
    EstimateChecked,
    EstimateMade,
    StageFinished,
    StageStarted,
)
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config


def test_the_estimate_comes_before_the_first_model_call_and_again_after_each_stage(project):
    outcome = Session.open(project.root).run(ScriptedPort(Decision("abort")))
    assert outcome == "stopped"
    events = _journal(project)
    first_call = next(i for i, e in enumerate(events) if isinstance(e, CostUpdate))
    estimates = [(i, e) for i, e in enumerate(events) if isinstance(e, EstimateMade)]
    assert estimates[0][0] < first_call
    assert "estimate before the run" in estimates[0][1].text
    assert [s["stage"] for s in estimates[0][1].stages][:2] == ["literature", "ideas"]
    after = [e for _, e in estimates if "after literature" in e.text]
    assert after and after[0].stages[0]["done"], "literature is counted as spent"
    # every timed call of the run went into the model's speed on this machine
    timed = [e for e in events if isinstance(e, CostUpdate) and e.first_token_s > 0]
    assert timed, "the scripted server streams: its calls are timed"
    speeds = read_speeds()
    for model in {e.model for e in timed}:
        assert speeds[model].calls == sum(1 for e in timed if e.model == model)
        assert speeds[model].known and speeds[model].measured_by == "run"
    # the estimate made before the run is held against what literature spent
    checked = [e for e in events if isinstance(e, EstimateChecked)]
    assert checked and "literature" in checked[-1].text
    # and so does `labtui status`
    from labtui.tui.commands.status import estimate_words

    said = estimate_words(project.root)
    assert said.startswith("the estimate before the run against what was spent")
    assert "literature" in said and "time est" in said


def test_the_time_cap_stops_at_the_next_checkpoint_and_says_what_is_left(project):
    config = load_config(project.root)
    config.budget.max_hours = 0.000001  # spent by the first stage's first call
    save_config(config, project.root)
    port = ScriptedPort(Decision("approve"), passing=())
    outcome = Session.open(project.root).run(port)
    assert outcome == "stopped"
    assert [asked.stage for asked in port.asked] == ["literature"], "its checkpoint, then stop"
    events = _journal(project)
    error = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert "max_hours" in error.message and "left undone: ideas, novelty" in error.message
    assert "[budget] max_hours" in error.hint
    assert project.repo.is_dirty(untracked_files=True) is False, "the work is committed"
    done = [(e.stage, e.status) for e in events if isinstance(e, StageFinished)]
    assert done == [("literature", "done")], "the literature review is kept as decided"
    literature_calls = sum(1 for e in events if isinstance(e, CostUpdate))
    # nothing lost: with the cap raised, the next session goes on from the ideas
    config.budget.max_hours = 0
    save_config(config, project.root)
    port = ScriptedPort(Decision("abort"), passing=())
    Session.open(project.root).run(port)
    assert port.asked and port.asked[0].stage == "ideas"
    again = _journal(project)
    started = [e.stage for e in again if isinstance(e, StageStarted)]
    assert started == ["literature", "ideas"], "literature is not run again"
    assert sum(1 for e in again if isinstance(e, CostUpdate) and e.stage == "literature") == (
        literature_calls
    )


def test_run_estimate_prints_the_table_and_asks_no_model(project, llm_server):
    started = time.monotonic()
    result = run_labtui("run", "--estimate", str(project.root), timeout=60)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert llm_server.requests == [], "no model call"
    out = result.stdout
    assert "stage" in out and "experiments" in out and "total" in out
    assert "never timed; run `labtui doctor` to time it" in out
    assert not (project.root / ".labtui" / "journal.jsonl").exists() or not _journal(project)
    assert took < 10, f"took {took:.1f} s (the issue asks under 2 s; this machine is shared)"


def test_status_of_a_project_not_run_yet_shows_its_estimate(project, capsys):
    from labtui.tui.commands.status import cmd_status

    cmd_status([project.root])
    out = capsys.readouterr().out
    assert "not run yet" in out and "literature" in out and "labtui doctor" in out


def test_at_the_plans_checkpoint_the_estimate_counts_the_planned_runs(project):
    port = ScriptedPort(Decision("approve"), Decision("approve"), Decision("abort"))
    Session.open(project.root).run(port)
    assert [asked.stage for asked in port.asked] == ["ideas", "novelty", "plan"]
    made = [e for e in _journal(project) if isinstance(e, EstimateMade) and e.stage == "plan"]
    assert made and "estimate with the plan's runs" in made[0].text
    assert "experiments: runs 1 planned × 1 seed" in made[0].text
