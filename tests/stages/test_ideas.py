"""The idea archive and the ideas and novelty stages: validated records, reflection that stops on
the structured done flag, repeats dropped, the researcher's picks and overrides honoured, and
novelty evidence made only of papers the model was shown."""

from __future__ import annotations

import json

import pytest
from support.ports import ScriptedPort, _journal
from support.research_script import IDEA, MoonsResearch, fenced_json, last_user_text

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.errors import StageFailed
from labtui.core.events import AgentMessage, Notice
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config
from labtui.core.stages.novelty import _evidence
from labtui.core.workspace.ideas import load_archive, near_duplicate, parse_idea, similarity

SECOND = {
    "Name": "label_smoothing",
    "Title": "Label Smoothing for a Small MLP on Noisy Moons",
    "Hypothesis": "Softer targets reduce overconfidence on the noisy boundary.",
    "Experiment": "Add label smoothing 0.1 to the cross-entropy and compare test accuracy.",
    "Interestingness": 5,
    "Feasibility": 8,
    "Novelty": 4,
}


# -- records ----------------------------------------------------------------------------------


def test_a_proposal_must_state_its_hypothesis_but_archived_records_may_lack_one():
    without = {k: v for k, v in IDEA.items() if k != "Hypothesis"}
    assert parse_idea(without).hypothesis == ""
    with pytest.raises(ValueError, match="ideas\\[0\\]: field 'Hypothesis' is missing"):
        parse_idea(without, "ideas[0]", proposal=True)
    assert parse_idea(IDEA, proposal=True).hypothesis.startswith("More hidden units")
    assert parse_idea(IDEA).to_dict()["Hypothesis"] == IDEA["Hypothesis"]


def test_a_bad_status_or_score_says_which_field_and_what_is_allowed():
    with pytest.raises(ValueError, match=r"'status' is 'maybe'; use one of seed, proposed"):
        parse_idea({**IDEA, "status": "maybe"})
    with pytest.raises(ValueError, match="'Score' must be a number"):
        parse_idea({**IDEA, "Score": "high"})


def test_a_broken_archive_is_a_clear_error_naming_the_file(tmp_path):
    (tmp_path / "ideas.json").write_text('[{"Name": "x"')
    with pytest.raises(StageFailed, match=r"ideas.json is not valid JSON: line 1") as info:
        load_archive(tmp_path)
    assert "git checkout -- ideas.json" in info.value.hint


def test_near_duplicates_are_recognised_and_different_ideas_are_not():
    a = parse_idea(IDEA)
    reworded = parse_idea(
        {
            **IDEA,
            "Name": "wider_hidden_layers",
            "Title": "Do Wider Hidden Layers Help on Noisy Two Moons",
        }
    )
    other = parse_idea(SECOND)
    assert similarity(a, reworded) >= 0.7 and near_duplicate(reworded, [other, a], 0.7) is a
    assert similarity(a, other) < 0.3 and near_duplicate(other, [a], 0.7) is None


# -- the ideas stage --------------------------------------------------------------------------


def _ideas_config(project, **ideas) -> None:
    config = load_config(project.root)
    for key, value in ideas.items():
        setattr(config.ideas, key, value)
    save_config(config, project.root)


def _reflections(llm_server) -> list[dict]:
    return [
        r
        for r in llm_server.requests_for("scripted-ideas")
        if last_user_text(r).startswith("Reflection round")
    ]


def test_reflection_stops_on_the_done_flag_and_keeps_the_refined_idea(project, llm_server):
    _ideas_config(project, reflections=3)
    sharper = {**IDEA, "Title": "Width Against Noise: a Two-Moons Study"}

    def ideas(request):
        text = last_user_text(request)
        if text.startswith("Reflection round 1"):
            return fenced_json({"done": False, "idea": sharper})
        if text.startswith("Reflection round 2"):
            return fenced_json({"done": True, "idea": sharper})
        if text.startswith("Reflection round"):
            raise AssertionError("a third round after done")
        return fenced_json({"ideas": [IDEA]})

    llm_server.default("scripted-ideas", ideas)
    Session.open(project.root).run(ScriptedPort(Decision("abort")))
    assert len(_reflections(llm_server)) == 2, "round 2 said done: no round 3"
    round_2 = json.dumps(_reflections(llm_server)[1]["messages"])
    assert "Width Against Noise" in round_2, "round 2 sees round 1's refinement"
    archive = {i.name: i for i in load_archive(project.root)}
    assert archive["wider_hidden_layer"].title == sharper["Title"]


def test_a_reflection_without_a_boolean_done_is_asked_again_with_the_problem(project, llm_server):
    answers = iter(
        [
            fenced_json({"ideas": [IDEA]}),
            fenced_json({"done": "yes", "idea": IDEA}),
            fenced_json({"done": True, "idea": IDEA}),
        ]
    )
    llm_server.default("scripted-ideas", lambda request: next(answers))
    Session.open(project.root).run(ScriptedPort(Decision("abort")))
    last = llm_server.requests_for("scripted-ideas")[-1]
    assert "field 'done' must be true or false, got 'yes'" in last["messages"][-1]["content"]


def test_repeats_of_the_archive_and_of_the_batch_are_dropped_and_said(project, llm_server):
    seed = json.loads((project.root / "seed_ideas.json").read_text())[0]
    near_seed = {
        **IDEA,
        "Name": "seed_again",
        "Title": seed["Title"],
        "Experiment": "Run the seed idea's experiment once more, unchanged.",
    }
    near_first = {**IDEA, "Name": "wider_again", "Title": IDEA["Title"].replace("?", "")}
    _ideas_config(project, count=4)
    proposals = [IDEA, near_seed, near_first, SECOND]
    llm_server.default("scripted-ideas", lambda r: MoonsResearch.answer_ideas(r, proposals))
    port = ScriptedPort(Decision("abort"))
    Session.open(project.root).run(port)
    rows = [row.split(" | ")[0] for row in port.asked[0].body.splitlines() if "| " in row]
    assert rows[1:] == ["| label_smoothing", "| wider_hidden_layer"]
    notices = [e.text for e in _journal(project) if isinstance(e, Notice)]
    assert any(
        t.startswith(f"dropped seed_again: it nearly repeats {seed['Name']}") for t in notices
    )
    assert any(
        t.startswith("dropped wider_again: it nearly repeats wider_hidden_layer") for t in notices
    )
    assert len(_reflections(llm_server)) == 2, "dropped ideas are not refined"


class ArchivePort(ScriptedPort):
    """TEST-ONLY: edits ideas.json at the given stage's first checkpoint, then approves;
    aborts at the plan."""

    def __init__(self, root, stage: str, statuses: dict[str, str]) -> None:
        super().__init__()
        self.root, self.stage, self.statuses, self.edited = root, stage, statuses, False

    def ask(self, request: CheckpointRequest) -> Decision:
        self.asked.append(request)
        if request.stage == self.stage and not self.edited:
            self.edited = True
            path = self.root / "ideas.json"
            archive = json.loads(path.read_text())
            for record in archive:
                record["status"] = self.statuses.get(record["Name"], record["status"])
            path.write_text(json.dumps(archive))
            return Decision("edit", "ideas.json")
        if request.stage == "plan":
            return Decision("abort", "enough")
        return Decision("approve")


class PickPort(ScriptedPort):
    """TEST-ONLY: answers the given stage's first checkpoint with picks, as the idea picker does
    (the engine writes them into ideas.json), then approves; aborts at the plan."""

    def __init__(self, root, stage: str, statuses: dict[str, str]) -> None:
        super().__init__()
        self.stage, self.statuses, self.picked = stage, statuses, False

    def ask(self, request: CheckpointRequest) -> Decision:
        self.asked.append(request)
        if request.stage == self.stage and not self.picked:
            self.picked = True
            assert {i["Name"] for i in request.details["ideas"]} == set(request.subjects)
            return Decision("edit", picks=self.statuses)
        if request.stage == "plan":
            return Decision("abort", "enough")
        return Decision("approve")


def _two_ideas(project, llm_server) -> None:
    _ideas_config(project, count=2)
    research = MoonsResearch(project.root)
    llm_server.default("scripted-ideas", lambda r: research.answer_ideas(r, [IDEA, SECOND]))


@pytest.mark.parametrize("port_class", [ArchivePort, PickPort], ids=["hand-edit", "picker"])
def test_the_researchers_pick_leads_and_rejected_ideas_are_never_checked(
    project, llm_server, port_class
):
    _two_ideas(project, llm_server)
    third = {
        **SECOND,
        "Name": "dropout_study",
        "Title": "Dropout on Moons",
        "Experiment": "Add dropout 0.2 after the hidden layer and compare test accuracy.",
    }
    llm_server.default(
        "scripted-ideas", lambda r: MoonsResearch.answer_ideas(r, [IDEA, SECOND, third])
    )
    _ideas_config(project, count=3)
    port = port_class(
        project.root, "ideas", {"label_smoothing": "chosen", "wider_hidden_layer": "rejected"}
    )
    session = Session.open(project.root)
    session.run(port)
    ideas_again = [r for r in port.asked if r.stage == "ideas"][1]
    assert "wider_hidden_layer" not in ideas_again.body
    assert ideas_again.body.index("label_smoothing") < ideas_again.body.index("dropout_study")
    checked = [
        json.dumps(r["messages"])
        for r in llm_server.requests_for("scripted-novelty")
        if "research librarian" not in json.dumps(r["messages"][0])  # the literature review
    ]
    assert checked and all("label_smoothing" in text for text in checked)
    assert session.state.result("novelty")["idea"] == "label_smoothing", (
        "the researcher's pick is run even though the check found it novel or not"
    )
    log = project.repo.git.log("--format=%s")
    assert "ideas: researcher edited ideas.json" in log  # committed as the researcher's edit


def test_picks_that_do_not_fit_the_ideas_are_said_and_asked_again(project, llm_server):
    _two_ideas(project, llm_server)
    port = PickPort(project.root, "ideas", {"ghost": "chosen"})
    Session.open(project.root).run(port)
    ideas_asked = [r for r in port.asked if r.stage == "ideas"]
    assert len(ideas_asked) == 2  # asked again, the archive untouched
    said = [e.text for e in _journal(project) if isinstance(e, Notice)]
    assert any("could not apply your picks: no idea named 'ghost'" in t for t in said)


def test_at_the_novelty_checkpoint_the_researcher_can_override_the_choice(project, llm_server):
    _two_ideas(project, llm_server)  # label_smoothing ranks first, is checked and chosen
    port = ArchivePort(project.root, "novelty", {"wider_hidden_layer": "chosen"})
    session = Session.open(project.root)
    session.run(port)
    first, again = [r for r in port.asked if r.stage == "novelty"][:2]
    assert first.title.startswith("novelty: label_smoothing: novel")
    assert again.title.startswith("novelty: wider_hidden_layer: not checked")
    assert session.state.result("novelty")["idea"] == "wider_hidden_layer"
    archive = {i.name: i for i in load_archive(project.root)}
    assert archive["wider_hidden_layer"].status == "chosen"
    assert archive["label_smoothing"].status == "novel", "the earlier choice is undone"
    plan_prompts = json.dumps(llm_server.requests_for("scripted-experiments"))
    assert IDEA["Title"] in plan_prompts, "the plan is made for the researcher's choice"


def test_novelty_evidence_keeps_only_papers_the_model_was_shown():
    seen = {"1412.6980v9": {"arxiv_id": "1412.6980v9", "title": "Adam", "year": 2014}}
    closest = [
        {"arxiv_id": "1412.6980", "overlap": "same optimiser"},
        {"arxiv_id": "2101.00001", "overlap": "remembered, never shown"},
    ]
    assert _evidence(closest, seen) == [
        {"arxiv_id": "1412.6980v9", "title": "Adam", "year": 2014, "overlap": "same optimiser"}
    ]


def test_with_a_panel_the_personas_discuss_turn_by_turn_then_ideas_are_refined(project, llm_server):
    from support.personas import ADA, BO, PanelModel
    from support.personas import IDEA as PANEL_IDEA

    _ideas_config(project, panel=2, panel_turns=2, count=1)
    panel = PanelModel()

    def ideas(request):
        if last_user_text(request).startswith("Reflection round"):
            return MoonsResearch.answer_ideas(request, [PANEL_IDEA])
        return panel(request)

    llm_server.default("scripted-ideas", ideas)
    port = ScriptedPort(Decision("abort"))
    Session.open(project.root).run(port)
    roles = [e.role for e in _journal(project) if isinstance(e, AgentMessage)]
    talk = [r for r in roles if r in (ADA["name"], BO["name"], "leader")]
    assert talk[1:7] == [ADA["name"], BO["name"], "leader"] * 2, "two turns, each summarised"
    assert "ideator" in roles[roles.index("leader", 6) :], "the panel's ideas are refined"
    member_prompts = json.dumps(llm_server.requests_for("scripted-ideas")[1]["messages"])
    assert "<experiment.py>" in member_prompts, "members see the code and the archive"
    assert "Answer with JSON only" not in member_prompts
    assert "wider_hidden_layer" in port.asked[0].body


def test_the_novel_flag_follows_the_checks_decision_not_the_later_status():
    idea = parse_idea({**IDEA, "status": "done", "novelty_evidence": {"decision": "novel"}})
    assert idea.to_dict()["novel"] is True
    idea.novelty_evidence = {"decision": "not_novel"}
    assert idea.to_dict()["novel"] is False


def test_marks_from_the_picker_are_checked_before_ideas_json_is_written(tmp_path):
    from labtui.core.workspace.ideas import mark_ideas, save_archive

    save_archive(tmp_path, [parse_idea(IDEA), parse_idea(SECOND)])
    before = (tmp_path / "ideas.json").read_text()
    with pytest.raises(ValueError, match="no idea named 'ghost'"):
        mark_ideas(tmp_path, {"ghost": "chosen"})
    with pytest.raises(ValueError, match="marked chosen or rejected, not 'done'"):
        mark_ideas(tmp_path, {"label_smoothing": "done"})
    assert (tmp_path / "ideas.json").read_text() == before, "nothing written on bad marks"
    mark_ideas(tmp_path, {"label_smoothing": "chosen", "wider_hidden_layer": "rejected"})
    assert {i.name: i.status for i in load_archive(tmp_path)} == {
        "wider_hidden_layer": "rejected",
        "label_smoothing": "chosen",
    }


def test_a_model_that_gives_no_usable_idea_leaves_the_template_seeds_to_go_on(project, llm_server):
    """Replays SmolLM2-135M's real answers to the ideas prompt (tests/recorded/real_model/
    smollm2_moons_ideas.jsonl): an idea that is only a name, three times. The stage once failed
    and stopped the project; now the template's seed ideas are the ideas, and it says so."""
    from support.recorded_replies import replies

    recorded = replies("smollm2_moons_ideas", "ideas")
    assert recorded[0].strip().startswith('{\n  "Name"') or '"Name"' in recorded[0]
    llm_server.script("scripted-ideas", *recorded)
    session = Session.open(project.root)
    said = []
    session.bus.subscribe(lambda e: said.append(e.text) if isinstance(e, Notice) else None)
    port = ScriptedPort(Decision("abort", "enough"))
    session.run(port)
    assert port.asked[0].stage == "ideas"
    assert "weight_decay_label_noise" in port.asked[0].subjects
    assert any("going on with the template's 2 seed idea(s)" in text for text in said)
    assert {i.status for i in load_archive(project.root)} == {"seed"}
    assert llm_server.remaining("scripted-ideas") == 0
