"""Rewind: `labtui rewind STAGE`, `rewind` at a checkpoint, and Session.request_rewind, driven
through real sessions on the scripted servers; the refusals; journals older than
StageStarted.head."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from support.ports import ScriptedPort, _journal

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.errors import LabtuiError
from labtui.core.events import CheckpointDecided, Rewound, StageFinished, StageStarted
from labtui.core.journal import replay
from labtui.core.pipeline.project_lock import hold_project_lock, rewind_project
from labtui.core.pipeline.session import Session


def git(root, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def started_head(project, stage: str) -> str:
    return next(
        e.head for e in _journal(project) if isinstance(e, StageStarted) and e.stage == stage
    )


def run_to_plan(project) -> None:
    """Ideas and novelty approved, then stopped at the plan's checkpoint."""
    port = ScriptedPort(Decision("approve"), Decision("approve"), Decision("abort"))
    assert Session.open(project.root).run(port) == "stopped"
    assert [r.stage for r in port.asked] == ["ideas", "novelty", "plan"]


def test_rewind_returns_to_before_the_stage_keeps_the_rest_on_a_tag_and_resumes_there(project):
    run_to_plan(project)
    novelty_start = started_head(project, "novelty")
    assert novelty_start and novelty_start != git(project.root, "rev-parse", "HEAD")
    (project.root / "scratch.txt").write_text("a researcher's uncommitted thought\n")
    told = rewind_project(project.root, "novelty")
    assert git(project.root, "rev-parse", "HEAD") == novelty_start
    tag = "labtui/abandoned/novelty-1"
    assert f"tag {tag}" in told and "uncommitted changes were committed first" in told
    # nothing is lost: the abandoned commits and the uncommitted file are on the tag
    assert git(project.root, "show", f"{tag}:scratch.txt") == "a researcher's uncommitted thought"
    assert not (project.root / "scratch.txt").exists()
    assert git(project.root, "status", "--porcelain") == ""
    rewound = _journal(project)[-1]
    assert isinstance(rewound, Rewound)
    assert (rewound.stage, rewound.to_commit, rewound.kept_as) == ("novelty", novelty_start, tag)
    state = replay(_journal(project))
    assert list(state.finished) == ["literature", "ideas"] and state.next_stage == "novelty"
    # the next session goes on from novelty; a second rewind takes the next tag number
    port = ScriptedPort(Decision("abort"))
    Session.open(project.root).run(port)
    assert [r.stage for r in port.asked] == ["novelty"]
    rewind_project(project.root, "ideas")
    assert git(project.root, "tag", "--list", "labtui/abandoned/*").split() == [
        "labtui/abandoned/ideas-1",
        tag,
    ]


def test_rejecting_a_checkpoint_rewinds_to_the_stage_before_with_the_reason(project, llm_server):
    port = ScriptedPort(
        Decision("approve"),  # ideas
        Decision("rewind", "the ideas ignore label noise"),  # novelty: back to the ideas
        Decision("abort"),  # the ideas again
    )
    assert Session.open(project.root).run(port) == "stopped"
    assert [r.stage for r in port.asked] == ["ideas", "novelty", "ideas"]
    assert "rewind" in port.asked[1].options
    events = _journal(project)
    rewound = [e for e in events if isinstance(e, Rewound)]
    assert [(r.stage, r.note) for r in rewound] == [("ideas", "the ideas ignore label noise")]
    assert rewound[0].to_commit == started_head(project, "ideas")  # its first start
    git(project.root, "merge-base", "--is-ancestor", rewound[0].to_commit, "HEAD")
    # the reason reaches the ideas stage's next prompt
    last_ideas = llm_server.requests_for("scripted-ideas")[-1]
    assert "the ideas ignore label noise" in json.dumps(last_ideas["messages"])
    decided = [e.action for e in events if isinstance(e, CheckpointDecided)]
    assert decided == ["approve", "approve", "rewind", "abort"]  # literature passes first


class RewindingPort(ScriptedPort):
    """TEST-ONLY: at the plan checkpoint, asks the session for a rewind from another thread (as
    the TUI's palette does) and never answers itself, as a researcher who walked away."""

    def __init__(self, session: Session, stage: str, *decisions: Decision) -> None:
        super().__init__(*decisions)
        self.session, self.stage = session, stage
        self.released = threading.Event()

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.stage == "plan" and not self.released.is_set():
            self.asked.append(request)
            threading.Thread(target=self.session.request_rewind, args=(self.stage,)).start()
            self.released.wait(60)  # the session answers meanwhile; this answer comes too late
            return Decision("approve")
        return super().ask(request)


def test_request_rewind_answers_the_open_checkpoint_and_the_pipeline_goes_on(project):
    session = Session.open(project.root)
    port = RewindingPort(session, "novelty", Decision("approve"), Decision("approve"))
    try:
        outcome = session.run(port)
    finally:
        port.released.set()
    assert outcome == "stopped"  # the scripted decisions ran out at novelty's second ask
    assert [r.stage for r in port.asked] == ["ideas", "novelty", "plan", "novelty"]
    rewound = [e for e in _journal(project) if isinstance(e, Rewound)]
    assert [r.stage for r in rewound] == ["novelty"]
    with pytest.raises(LabtuiError, match="no pipeline runs"):
        session.request_rewind("novelty")


def test_refusals_name_the_problem_and_the_fix(project):
    run_to_plan(project)
    with pytest.raises(LabtuiError, match="'nope' is no stage") as unknown:
        rewind_project(project.root, "nope")
    assert "literature, ideas" in unknown.value.hint
    with pytest.raises(LabtuiError, match="stage writeup has not started") as early:
        rewind_project(project.root, "writeup")
    assert "journal.jsonl" in early.value.message and "plan" in early.value.hint
    lock = hold_project_lock(project.state_dir)
    try:
        with pytest.raises(LabtuiError, match="another labtui is running") as running:
            rewind_project(project.root, "ideas")
        assert "palette" in running.value.hint
    finally:
        lock.close()
    merge_head = project.root / ".git" / "MERGE_HEAD"
    merge_head.write_text(git(project.root, "rev-parse", "HEAD") + "\n")
    with pytest.raises(LabtuiError, match="in the middle of a merge") as merging:
        rewind_project(project.root, "ideas")
    assert "git merge --abort" in merging.value.hint
    merge_head.unlink()
    git(project.root, "checkout", "--detach", "HEAD")
    with pytest.raises(LabtuiError, match="detached HEAD"):
        rewind_project(project.root, "ideas")
    git(project.root, "checkout", "-")
    head = git(project.root, "rev-parse", "HEAD")
    assert git(project.root, "tag", "--list") == "" and head  # nothing was touched


def test_a_journal_without_start_commits_finds_them_from_the_commits_it_saw(project):
    run_to_plan(project)
    expected = started_head(project, "plan")
    journal = project.state_dir / "journal.jsonl"
    lines = []
    for line in journal.read_text().splitlines():
        data = json.loads(line)
        if data["type"] == "StageStarted":
            data.pop("head")  # as labtui wrote it before StageStarted had a head
        lines.append(json.dumps(data))
    journal.write_text("\n".join(lines) + "\n")
    told = rewind_project(project.root, "plan")
    assert git(project.root, "rev-parse", "HEAD") == expected
    assert "predates the record of where stages start" in told


def test_replay_forgets_the_stage_and_later_ones_and_keeps_the_spend():
    from labtui.core.events import CostUpdate

    cost = dict(model="m", tokens_in=1, tokens_out=1, stage_tokens_in=1, stage_tokens_out=1)
    events = [
        StageStarted(stage="ideas", head="a"),
        StageFinished(stage="ideas"),
        CheckpointDecided(stage="ideas", checkpoint_id="ideas-1", action="revise", note="x"),
        StageStarted(stage="novelty", head="b"),
        CheckpointDecided(stage="novelty", checkpoint_id="n-1", action="revise", note="y"),
        StageFinished(stage="novelty"),
        CostUpdate(
            stage="novelty", cost_usd=1, stage_cost_usd=1, total_cost_usd=2.0, budget_usd=9, **cost
        ),
        Rewound(stage="novelty", to_commit="b", note="try a harder baseline"),
    ]
    state = replay(events)
    assert list(state.finished) == ["ideas"] and list(state.started) == ["ideas"]
    assert state.notes_for("ideas") == ["x"]
    assert state.notes_for("novelty") == ["try a harder baseline"]
    assert state.total_cost_usd == 2.0
