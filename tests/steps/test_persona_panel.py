"""The persona panel (Virtual Scientists' team discussion): personas validated, turns spoken in
order and summarised by the leader, later turns bounded to the summaries, ideas parsed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.personas import ADA, BO, IDEA, PanelModel, message_text, remark, summary

from labtui.core.errors import ConfigError, StageFailed
from labtui.core.events import AgentMessage, Notice
from labtui.core.pipeline.session import Session
from labtui.core.steps.persona_panel import PanelResult, Persona, parse_personas, run_panel
from labtui.core.workspace.ideas import Idea

MODEL = "scripted-ideas"


def _run(project, llm_server, model: PanelModel, **settings: int) -> tuple[PanelResult, list]:
    llm_server.default(MODEL, model)
    session = Session.open(project.root)
    events: list = []
    session.bus.subscribe(events.append)
    ctx = session.context_for("ideas")
    arguments = {"members": 2, "turns": 2, "count": 1, **settings}
    result = run_panel(ctx, topic="Classify two moons.", context="CODE<experiment.py>", **arguments)
    assert llm_server.errors == []
    return result, events


def _requests(llm_server, opening: str) -> list[list[str]]:
    """The message texts of each request whose first user message starts with ``opening``."""
    found = []
    for request in llm_server.requests_for(MODEL):
        texts = [message_text(m) for m in request["messages"]]
        users = [message_text(m) for m in request["messages"] if m["role"] == "user"]
        if users and users[0].startswith(opening):
            found.append(texts)
    return found


def _prompts(llm_server, opening: str) -> list[str]:
    return ["\n".join(texts) for texts in _requests(llm_server, opening)]


def test_personas_are_validated_with_a_message_that_says_what_to_fix():
    assert parse_personas({"personas": [ADA, BO]}, 2) == [Persona(**ADA), Persona(**BO)]
    assert parse_personas([ADA, {**BO, "stance": "  A theorist. "}], 2)[1].stance == "A theorist."
    for bad, says in [
        ({"panel": [ADA, BO]}, 'the reply must be {"personas"'),
        ({"personas": [ADA]}, "exactly 2 personas; the reply has 1"),
        ({"personas": [ADA, BO, ADA]}, "exactly 2 personas; the reply has 3"),
        ([ADA, "Bo"], "personas[1]: must be a JSON object with fields name, expertise, stance"),
        ([ADA, {**BO, "stance": " "}], "personas[1]: field 'stance' must be a non-empty"),
        ([ADA, {"name": "Bo", "expertise": "x"}], "personas[1]: field 'stance'"),
        ([ADA, {**BO, "name": "Dr. " + "B" * 70}], "a short display name on one line"),
        ([ADA, {**BO, "name": "Leader"}], "is the panel leader's; choose another name"),
        ([ADA, {**BO, "name": "ada (OPTIMISATION)"}], "persona names must be unique"),
    ]:
        with pytest.raises(ValueError, match=re.escape(says)):
            parse_personas(bad, 2)


def test_a_bad_persona_answer_is_asked_again_with_the_problem(project, llm_server):
    model = PanelModel(
        {"personas": [ADA, ADA]}, {"personas": [ADA, BO, BO]}, {"personas": [ADA, BO]}
    )
    result, events = _run(project, llm_server, model, turns=1)
    assert result.personas == [Persona(**ADA), Persona(**BO)]
    asked = _requests(llm_server, "You lead a small research team")
    assert len(asked) == 3, "two bad answers, each re-asked with what was wrong"
    assert "persona names must be unique" in asked[1][-1]
    assert "exactly 2 personas; the reply has 3" in asked[2][-1]
    retries = [e.text for e in events if isinstance(e, Notice) and "asking again" in e.text]
    assert len(retries) == 2


def test_each_member_speaks_once_a_turn_then_the_leader_summarises(project, llm_server):
    result, events = _run(project, llm_server, PanelModel())
    said = [(e.role, e.text.strip()) for e in events if isinstance(e, AgentMessage)]
    ada, bo = ADA["name"], BO["name"]
    discussion = said[1:-1]  # between the leader's personas JSON and its ideas JSON
    assert [role for role, _ in discussion] == [ada, bo, "leader", ada, bo, "leader"]
    assert [text for _, text in discussion] == [
        remark(ada, 1),
        remark(bo, 1),
        summary(1),
        remark(ada, 2),
        remark(bo, 2),
        summary(2),
    ]
    assert [role for role, _ in (said[0], said[-1])] == ["leader", "leader"]
    assert all(e.stage == "ideas" for e in events if isinstance(e, AgentMessage))
    turns = [e.text for e in events if isinstance(e, Notice) and e.text.startswith("panel turn")]
    assert turns == ["panel turn 1 of 2", "panel turn 2 of 2"]
    assert result.summaries == [summary(1), summary(2)]


def test_a_persona_hears_who_it_is_and_what_was_said_before_it(project, llm_server):
    _run(project, llm_server, PanelModel(), turns=1)
    ada_asks, bo_asks = [
        r
        for r in llm_server.requests_for(MODEL)
        if message_text(r["messages"][-1]).startswith("Panel discussion")
    ]
    assert ada_asks["messages"][0]["role"] == "system"
    assert "Your expertise: Optimisers." in message_text(ada_asks["messages"][0])
    assert "How you argue: A theorist." in message_text(bo_asks["messages"][0])
    assert "CODE<experiment.py>" in message_text(ada_asks["messages"][-1])
    assert "nobody has spoken yet" in message_text(ada_asks["messages"][-1])
    assert remark(ADA["name"], 1) in message_text(bo_asks["messages"][-1])


def test_a_later_turn_hears_the_summaries_not_the_earlier_remarks(project, llm_server):
    _run(project, llm_server, PanelModel())
    earlier = [remark(ADA["name"], 1), remark(BO["name"], 1)]
    turn_two = _prompts(llm_server, "Panel discussion, turn 2")
    turn_two += _prompts(llm_server, "You lead the panel. Summarise turn 2")
    turn_two += _prompts(llm_server, "You lead the panel, and its discussion")
    assert len(turn_two) == 4
    for text in turn_two:
        assert summary(1) in text
        assert not any(said in text for said in earlier)
    assert remark(ADA["name"], 2) in turn_two[1], "Bo hears Ada's remark of this turn"


def test_the_leader_proposes_ideas_that_come_back_as_parsed_records(project, llm_server):
    result, _ = _run(project, llm_server, PanelModel(), count=1)
    assert [type(idea) for idea in result.ideas] == [Idea]
    assert result.ideas[0].name == "wider_hidden_layer"
    assert result.ideas[0].hypothesis == IDEA["Hypothesis"]
    (proposal,) = _prompts(llm_server, "You lead the panel, and its discussion")
    assert summary(1) in proposal and summary(2) in proposal
    assert '"Hypothesis"' in proposal and "1 new research ideas" in proposal


class SilentModel(PanelModel):
    """TEST-ONLY: ``silent`` speakers (persona names, or "leader") answer with nothing."""

    def __init__(self, *silent: str) -> None:
        super().__init__()
        self.silent = silent

    def __call__(self, request: dict[str, Any]) -> str:
        answer = super().__call__(request)
        if answer == summary(1) and "leader" in self.silent:
            return ""
        speakers = [remark(name, 1) for name in self.silent]
        return "" if answer in speakers else answer


def test_a_silent_member_is_noted_and_a_silent_turn_stops_the_panel(project, llm_server):
    result, events = _run(project, llm_server, SilentModel(ADA["name"]), turns=1)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert f"{ADA['name']} said nothing in panel turn 1" in notices
    (bo_asks,) = _prompts(llm_server, "Panel discussion, turn 1")[1:]
    assert "nobody has spoken yet" in bo_asks
    assert result.summaries == [summary(1)]
    for silent, says in [
        ((ADA["name"], BO["name"]), "no panel member said anything in panel turn 1"),
        (("leader",), "the panel leader gave an empty summary of panel turn 1"),
    ]:
        with pytest.raises(StageFailed, match=says):
            _run(project, llm_server, SilentModel(*silent), turns=1)


def test_a_panel_that_cannot_discuss_is_refused_before_any_call(project, llm_server):
    ctx = Session.open(project.root).context_for("ideas")
    for settings, says in [
        ({"members": 1}, "[ideas] panel = 1"),
        ({"members": 0}, "[ideas] panel = 0"),
        ({"turns": 0}, "[ideas] panel_turns = 0"),
        ({"count": 0}, "[ideas] count = 0"),
    ]:
        arguments = {"members": 2, "turns": 2, "count": 1, **settings}
        with pytest.raises(ConfigError, match=re.escape(says)):
            run_panel(ctx, topic="t", context="c", **arguments)
    assert llm_server.requests_for(MODEL) == []


def test_the_prompts_render_and_their_json_examples_are_checked():
    # Each prompt uses exactly the values core/steps/persona_panel.py gives it; the personas' example is a
    # shape the parser accepts, the ideas' example only describes its fields.
    from labtui.core.settings.prompts import load_prompt
    from labtui.core.workspace.ideas import parse_idea_list

    values = {
        "panel_personas": ("topic", "context", "members", "name_chars"),
        "panel_turn": (
            "persona",
            "topic",
            "context",
            "panel",
            "summaries",
            "remarks",
            "turn",
            "turns",
        ),
        "panel_summary": ("topic", "summaries", "remarks", "turn", "turns"),
        "panel_ideas": ("topic", "context", "summaries", "count", "code_files"),
    }
    rendered = {}
    for name, keys in values.items():
        rendered[name] = load_prompt(name, None, **{key: f"<{key}>" for key in keys})
        assert "$" not in rendered[name], name
        assert all(f"<{key}>" in rendered[name] for key in keys), name
    personas = _example(rendered["panel_personas"], '{"personas"')
    assert parse_personas(personas, 1)[0].name == "Dr. Ada (optimisation)"
    # The ideas' example describes each field in <angle brackets>: a model that copies it is
    # refused and asked again (a small model's copied example must never become an idea).
    with pytest.raises(ValueError, match="placeholder"):
        parse_idea_list(_example(rendered["panel_ideas"], '{"ideas"'), proposal=True)


def _example(prompt: str, opening: str) -> Any:
    return json.loads(next(line for line in prompt.splitlines() if line.startswith(opening)))
