"""[notify] command: run in the background with the event in placeholders and the environment,
at a waiting checkpoint, an abandoned run, the budget share (once), the pipeline's end, a
search's new best and a search's end; failures said once as a Notice; bad config named."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from support.ports import ScriptedPort, _journal

from labtui.core.checkpoints import Decision
from labtui.core.errors import ConfigError
from labtui.core.events import (
    CheckpointRequested,
    CostUpdate,
    Event,
    Notice,
    PipelineEnded,
    RunAbandoned,
    SearchEnded,
    SearchStarted,
    SearchStep,
)
from labtui.core.pipeline.notify import Notifier
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import config_from_dict, load_config, save_config
from labtui.core.settings.sections import NOTIFY_EVENTS, NotifySection


def recording_command(out: Path) -> str:
    """A command that writes its placeholders and environment, one line per notification."""
    shell = 'printf "%s|%s|%s|%s|%s\\n" "$LABTUI_EVENT" "$LABTUI_PROJECT" "$LABTUI_STAGE" "$1" "$2"'
    return f"sh -c {shlex.quote(shell + ' >> ' + shlex.quote(str(out)))} _ {{message}} {{dir}}"


def notifier(tmp_path: Path, command: str, **settings) -> tuple[Notifier, list[Event]]:
    said: list[Event] = []
    note = Notifier(
        NotifySection(command=command, **settings),
        project="moons-study",
        directory=tmp_path,
        budget_usd=10.0,
        spent_usd=0.0,
        emit=said.append,
    )
    return note, said


def cost(total: float) -> CostUpdate:
    return CostUpdate(
        stage="writeup",
        model="m",
        tokens_in=1,
        tokens_out=1,
        cost_usd=0.1,
        stage_tokens_in=1,
        stage_tokens_out=1,
        stage_cost_usd=0.1,
        total_cost_usd=total,
        budget_usd=10.0,
    )


def test_each_moment_runs_the_command_with_its_text_once(tmp_path):
    out = tmp_path / "sent.txt"
    note, said = notifier(tmp_path, recording_command(out))
    for event in (
        CheckpointRequested(stage="plan", checkpoint_id="plan-1", title="plan: 3 runs", body=""),
        cost(7.9),  # below 80 %: nothing
        RunAbandoned(stage="experiments", run_id="run_2", attempts=4, problem="NameError"),
        cost(8.0),
        cost(9.5),  # the budget is said once
        PipelineEnded(stage="review", outcome="finished"),
    ):
        note(event)
    note.close()
    lines = out.read_text().splitlines()
    assert lines == [
        f"checkpoint|moons-study|plan|checkpoint waits: plan: 3 runs|{tmp_path}",
        "run_failed|moons-study|experiments|run_2 failed 4 attempt(s) and was abandoned: "
        f"NameError|{tmp_path}",
        f"budget|moons-study|writeup|spent $8.00 of the $10.00 budget|{tmp_path}",
        f"ended|moons-study|review|pipeline finished|{tmp_path}",
    ]
    assert said == []


def test_auto_checkpoints_and_unchosen_moments_are_not_sent(tmp_path):
    out = tmp_path / "sent.txt"
    note, _ = notifier(tmp_path, recording_command(out), on=["ended"])
    note.checkpoints_wait = False
    note(CheckpointRequested(stage="plan", checkpoint_id="plan-1", title="t", body=""))
    note(cost(9.0))
    note(PipelineEnded(outcome="stopped"))
    note.close()
    assert [line.split("|")[0] for line in out.read_text().splitlines()] == ["ended"]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("false", "exit status 1"),
        ("labtui-no-such-notifier {message}", "could not start"),
        ("sleep 30", "still running after 0.2 s ([notify] command_timeout_s); stopped"),
    ],
)
def test_a_failing_command_is_one_notice_and_never_stops_the_engine(tmp_path, command, said):
    note, notices = notifier(tmp_path, command, command_timeout_s=0.2)
    note(PipelineEnded(outcome="failed"))
    note(PipelineEnded(outcome="failed"))
    note.close()
    assert len(notices) == 1 and isinstance(notices[0], Notice)
    assert said in notices[0].text and "fix [notify] command" in notices[0].text


def test_an_unsplittable_command_is_a_config_error_naming_the_field():
    with pytest.raises(ConfigError) as error:
        config_from_dict({"notify": {"command": 'notify-send "labtui'}}, Path("labtui.toml"))
    assert (
        "[notify] command" in error.value.message and "No closing quotation" in error.value.message
    )
    assert "close every quote" in error.value.hint


def test_a_session_notifies_its_checkpoint_and_its_end(project, tmp_path):
    out = tmp_path / "sent.txt"
    config = load_config(project.root)
    config.notify.command = recording_command(out)
    save_config(config, project.root)
    assert Session.open(project.root).run(ScriptedPort(Decision("abort"))) == "stopped"
    events = [line.split("|")[0] for line in out.read_text().splitlines()]
    assert events == ["checkpoint", "checkpoint", "ended"]  # literature, ideas, then the end
    assert out.read_text().splitlines()[-1].split("|")[3] == "pipeline stopped"
    assert not [e for e in _journal(project) if isinstance(e, Notice) and "[notify]" in e.text]


def search_events(strategy: str) -> list[Event]:
    """A search's start, a step that is no better, a new best, and its end."""
    step = SearchStep(
        stage="experiments",
        strategy=strategy,
        step=2,
        status="discard" if strategy == "climb" else "ok",
        description="set SCORE to 0.6",
        value=0.6,
        best=0.65,
    )
    return [
        SearchStarted(
            stage="experiments",
            strategy=strategy,
            idea="toy",
            metric="toy.score",
            direction="higher",
            baseline=0.5,
            noise=0.02,
            run_budget_s=60.0,
            limit=100,
            ledger=".labtui/search/results.tsv",
            branch=f"labtui/{strategy}/toy",
        ),
        step,
        SearchStep(
            stage="experiments",
            strategy=strategy,
            step=3,
            status="keep" if strategy == "climb" else "ok",
            description="set SCORE to 0.7",
            value=0.7,
            best=0.7,
            new_best=True,
        ),
        SearchEnded(
            stage="experiments",
            strategy=strategy,
            reason="100 attempts made",
            steps=100,
            best_step=3,
            best=0.7,
            seed_mean=0.69,
            seed_std=0.012,
            seed_runs=3,
            counts={"keep": 1, "discard": 99},
        ),
    ]


def test_a_search_tells_each_new_best_and_its_end(tmp_path):
    assert {"best", "search"} <= set(NOTIFY_EVENTS) == set(NotifySection().on)
    out = tmp_path / "sent.txt"
    note, said = notifier(tmp_path, recording_command(out))
    for event in [*search_events("climb"), *search_events("tree")]:
        note(event)
    note.close()
    assert out.read_text().splitlines() == [
        f"best|moons-study|experiments|climb of toy: new best toy.score 0.7 at attempt 3|{tmp_path}",
        "search|moons-study|experiments|climb of toy ended (100 attempts made): best toy.score "
        f"0.7 at attempt 3; seed mean 0.69 ± 0.012 over 3 run(s)|{tmp_path}",
        "best|moons-study|experiments|tree search of toy: new best toy.score 0.7 at node 3|"
        f"{tmp_path}",
        "search|moons-study|experiments|tree search of toy ended (100 attempts made): best "
        f"toy.score 0.7 at node 3; seed mean 0.69 ± 0.012 over 3 run(s)|{tmp_path}",
    ]
    assert said == []


def test_a_search_that_beat_nothing_says_so_and_unchosen_moments_stay_quiet(tmp_path):
    out = tmp_path / "sent.txt"
    note, _ = notifier(tmp_path, recording_command(out), on=["search"])
    for event in [
        *search_events("climb")[:-1],  # its own end replaced by one that beat nothing
        SearchEnded(
            stage="experiments",
            strategy="climb",
            reason="stopped by you",
            steps=3,
            best_step=0,
            best=0.5,
        ),
    ]:
        note(event)
    note.close()
    (line,) = out.read_text().splitlines()
    assert line.split("|")[3] == (
        "climb of toy ended (stopped by you): nothing beat the baseline (toy.score 0.5)"
    )
