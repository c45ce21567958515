"""Checkpoint decisions and the budget cap, driven in-process through Session.run."""

from __future__ import annotations

import json

import pytest
from support.ports import ScriptedPort, _journal
from support.recorded_replies import replies

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import CheckpointDecided, ErrorEvent, Notice, Refused, StageFinished
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config


def novelty_requests(llm_server) -> list[dict]:
    """The novelty stage's requests; the literature review shares its model."""
    return [
        r
        for r in llm_server.requests_for("scripted-novelty")
        if "research librarian" not in json.dumps(r["messages"][0])
    ]


def test_revise_note_reaches_the_next_prompt_and_abort_stops_resumably(project, llm_server):
    port = ScriptedPort(Decision("revise", "focus on label noise"), Decision("abort"))
    outcome = Session.open(project.root).run(port)
    assert outcome == "stopped"
    ideas_requests = llm_server.requests_for("scripted-ideas")
    first_prompts = [r for r in ideas_requests if '"done"' not in json.dumps(r["messages"][-1])]
    assert "focus on label noise" not in json.dumps(first_prompts[0]["messages"])
    assert "focus on label noise" in json.dumps(first_prompts[-1]["messages"])
    events = _journal(project)
    decisions = [e.action for e in events if isinstance(e, CheckpointDecided)]
    assert decisions == ["approve", "revise", "abort"], "literature approved, then the ideas"
    done = [e.stage for e in events if isinstance(e, StageFinished) and e.status == "done"]
    assert done == ["literature"], "the ideas stage did not finish"
    # the checkpoint showed the ideas with their scores
    assert "wider_hidden_layer" in port.asked[0].body


def test_skip_finishes_the_stage_as_skipped_and_moves_on(project):
    port = ScriptedPort(Decision("skip"), Decision("abort"))
    Session.open(project.root).run(port)
    finished = [e for e in _journal(project) if isinstance(e, StageFinished)]
    assert [(e.stage, e.status) for e in finished] == [("literature", "done"), ("ideas", "skipped")]
    assert port.asked[1].stage == "novelty"


def test_budget_cap_stops_cleanly_at_the_next_checkpoint(project):
    from labtui.core.settings.config import load_config, save_config

    config = load_config(project.root)
    config.budget.usd = 0.000001
    config.models.input_usd_per_mtok = 1000.0
    config.models.output_usd_per_mtok = 1000.0
    save_config(config, project.root)
    port = ScriptedPort(Decision("approve"))
    outcome = Session.open(project.root).run(port)
    assert outcome == "stopped"
    assert port.asked == [], "no checkpoint is asked once the budget is spent"
    errors = [e for e in _journal(project) if isinstance(e, ErrorEvent)]
    assert errors and "budget" in errors[-1].message.lower()
    assert "labtui.toml" in errors[-1].hint


def test_model_problems_name_the_missing_key(project, monkeypatch):
    monkeypatch.delenv("LABTUI_API_KEY")
    from labtui.core.settings.config import load_config, save_config

    config = load_config(project.root)
    for stage in ("ideas", "novelty", "experiments", "plots", "writeup", "review"):
        setattr(config.models, stage, "")
    config.models.api_base = ""
    config.models.default = "anthropic/claude-3-5-sonnet-20241022"
    save_config(config, project.root)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    problems = Session.open(project.root).model_problems()
    assert problems and "ANTHROPIC_API_KEY" in " ".join(problems)


def test_a_revised_attempt_may_propose_the_same_idea_again(project, llm_server):
    port = ScriptedPort(Decision("revise", "sharper title"), Decision("approve"), Decision("abort"))
    Session.open(project.root).run(port)
    finished = [e for e in _journal(project) if isinstance(e, StageFinished)]
    assert [(e.stage, e.status) for e in finished] == [("literature", "done"), ("ideas", "done")]
    assert finished[1].result["ideas"] == ["wider_hidden_layer"]
    archive = json.loads((project.root / "ideas.json").read_text())
    assert [i["Name"] for i in archive].count("wider_hidden_layer") == 1


def test_only_repeats_of_seed_ideas_are_asked_again_then_the_seeds_go_on(project, llm_server):
    from support.research_script import IDEA, MoonsResearch

    seed = json.loads((project.root / "seed_ideas.json").read_text())[0]["Name"]
    repeat = [{**IDEA, "Name": seed}]
    llm_server.default("scripted-ideas", lambda r: MoonsResearch.answer_ideas(r, repeat))
    port = ScriptedPort(Decision("approve"), Decision("abort"))
    assert Session.open(project.root).run(port) == "stopped"
    journal = _journal(project)
    refusals = [e.reason for e in journal if isinstance(e, Refused)]
    assert len([r for r in refusals if f"{seed} repeats {seed} (seed" in r]) == 3, "re-asked"
    notices = [e.text for e in journal if isinstance(e, Notice)]
    assert any("going on with the template's 2 seed idea(s)" in text for text in notices)
    [ideas] = [e for e in journal if isinstance(e, StageFinished) and e.stage == "ideas"]
    assert ideas.status == "done" and seed in ideas.result["ideas"]


def test_a_real_small_models_copy_of_a_seed_idea_is_asked_again(project, llm_server):
    # Recorded (qwen15_moons_seed_copy_ideas.jsonl): Qwen2.5-Coder-1.5B proposed the moons
    # template's first seed idea word for word (2026-11-28, one idea asked for); it was dropped
    # and the stage ended with no idea. The re-ask's answer and reflection are the model's own
    # from another moons run (label smoothing with dropout).
    copy, fresh, reflection = replies("qwen15_moons_seed_copy_ideas", "ideas")
    config = load_config(project.root)
    config.ideas.count, config.ideas.reflections = 1, 1
    save_config(config, project.root)
    llm_server.script("scripted-ideas", copy, fresh, reflection)
    port = ScriptedPort(Decision("approve"), Decision("abort"))
    assert Session.open(project.root).run(port) == "stopped"
    journal = _journal(project)
    [ideas] = [e for e in journal if isinstance(e, StageFinished) and e.stage == "ideas"]
    assert ideas.status == "done" and ideas.result["ideas"] == ["label_smoothing_with_dropout"]
    [refused] = [e.reason for e in journal if isinstance(e, Refused)]
    assert "weight_decay_label_noise repeats weight_decay_label_noise (seed" in refused


def test_a_second_run_on_the_same_project_is_refused_clearly(project):
    from labtui.core.errors import LabtuiError
    from labtui.core.pipeline.project_lock import hold_project_lock

    lock = hold_project_lock(project.state_dir)
    try:
        with pytest.raises(LabtuiError, match=r"another labtui is running on this project \(pid"):
            Session.open(project.root).run(ScriptedPort())
    finally:
        lock.close()
    port = ScriptedPort(Decision("approve"), Decision("abort"))
    assert Session.open(project.root).run(port) == "stopped"


class NoteLeavingPort(ScriptedPort):
    """TEST-ONLY: leaves a note (as the TUI's `n` does) when the first checkpoint is asked."""

    def __init__(self, session: Session, note: str, *decisions: Decision) -> None:
        super().__init__(*decisions)
        self.session, self.note = session, note

    def ask(self, request: CheckpointRequest) -> Decision:
        if not self.asked and request.stage not in self.passing:
            self.session.leave_note(self.note)
        return super().ask(request)


def test_a_note_left_at_any_time_reaches_only_the_next_llm_call(project, llm_server):
    from labtui.core.events import ResearcherNote

    session = Session.open(project.root)
    port = NoteLeavingPort(session, "prefer ideas about label noise", Decision("approve"))
    session.run(port)
    novelty = novelty_requests(llm_server)
    assert novelty, "the novelty stage called its model"
    assert "prefer ideas about label noise" in json.dumps(novelty[0]["messages"])
    later = novelty[1:] + llm_server.requests_for("scripted-experiments")
    assert all("prefer ideas about label noise" not in json.dumps(r["messages"]) for r in later)
    notes = [e for e in _journal(project) if isinstance(e, ResearcherNote)]
    assert [n.text for n in notes] == ["prefer ideas about label noise"]


class EditingPort(ScriptedPort):
    """TEST-ONLY: at the first checkpoint, edits the product the way $EDITOR would, then answers
    `edit`; every later question gets the next scripted decision."""

    def __init__(self, root, change, *decisions: Decision) -> None:
        super().__init__(*decisions)
        self.root, self.change = root, change

    def ask(self, request: CheckpointRequest) -> Decision:
        if not self.asked and request.stage not in self.passing:
            self.asked.append(request)
            assert "edit" in request.options and request.product
            self.change(self.root / request.product)
            return Decision("edit", request.product)
        return super().ask(request)


def test_an_edit_at_a_checkpoint_is_committed_and_used(project, llm_server):
    def retitle(path):
        ideas = json.loads(path.read_text())
        for idea in ideas:
            if idea["Name"] == "wider_hidden_layer":
                idea["Title"] = "Width Under Label Noise"
        path.write_text(json.dumps(ideas, indent=1))

    port = EditingPort(project.root, retitle, Decision("approve"))
    Session.open(project.root).run(port)
    first, again = port.asked[0], port.asked[1]
    assert (first.kind, first.product) == ("ideas", "ideas.json")
    assert again.stage == "ideas", "after an edit the same checkpoint is asked again"
    assert "Width Under Label Noise" in again.body
    assert "ideas: researcher edited ideas.json" in project.repo.git.log("--format=%s")
    decisions = [e.action for e in _journal(project) if isinstance(e, CheckpointDecided)]
    assert decisions[:3] == ["approve", "edit", "approve"], "literature, then the ideas"
    # the next stage works on the edited idea
    assert "Width Under Label Noise" in json.dumps(novelty_requests(llm_server))


def test_editing_a_checkpoint_without_a_product_is_not_offered(project):
    from labtui.core.checkpoints import Checkpoints

    asked = []
    Checkpoints(ScriptedPort(Decision("approve")), asked.append).ask("x", "t", "b")
    assert "edit" not in asked[0].options


def test_a_ref_lock_left_by_a_killed_git_is_removed_when_the_session_starts(project):
    """A kill during `git tag` leaves refs/tags/....lock: every later `git tag -f` of that name
    failed on it (seen resuming a kill at the experiments' start). With no git running, the
    next session removes it, says so, and the tag can be written."""
    locks = project.root / ".git" / "refs" / "tags" / "labtui" / "experiments"
    locks.mkdir(parents=True)
    (locks / "start.lock").write_text("")
    session = Session.open(project.root)
    said = []
    session.bus.subscribe(said.append)
    session._recover_uncommitted_work()
    assert not (locks / "start.lock").exists()
    notes = [e.text for e in said if isinstance(e, Notice)]
    assert any("removed a stale" in n and "start.lock" in n for n in notes), notes
    project.tag("labtui/experiments/start", "the tag can be written again")
    session.journal.close()
