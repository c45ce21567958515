"""The plan stage: runs proposed before any code changes, validated, approved or edited, and
followed by the experiments stage."""

from __future__ import annotations

import json

import pytest
from research_script import fenced_json
from test_pipeline import ScriptedPort, _journal, project  # noqa: F401 (the fixture)

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import StageFinished
from labtui.core.pipeline import Session
from labtui.core.stages.plan import PlannedRun, parse_plan


def test_a_plan_is_validated_with_a_message_that_says_what_to_fix():
    good = {"runs": [{"change": "width 32", "measure": "accuracy vs run_0"}]}
    assert parse_plan(good, 5) == [PlannedRun("width 32", "accuracy vs run_0")]
    for bad, says in [
        ({}, '{"runs"'),
        ({"runs": []}, '{"runs"'),
        ({"runs": [{"change": "x"}]}, "run 1 of the plan needs a non-empty measure"),
        ({"runs": [{"change": " ", "measure": "m"}]}, "needs a non-empty change"),
        ({"runs": [good["runs"][0]] * 3}, "the plan has 3 runs; at most 2"),
    ]:
        with pytest.raises(ValueError, match=says.replace("{", r"\{")):
            parse_plan(bad, 2)


class PlanPort(ScriptedPort):
    """TEST-ONLY: approves until the plan checkpoint, where ``at_plan`` decides."""

    def __init__(self, root, at_plan) -> None:
        super().__init__()
        self.root, self.at_plan = root, at_plan

    def ask(self, request: CheckpointRequest) -> Decision:
        self.asked.append(request)
        if request.stage == "plan":
            return self.at_plan(self, request)
        if request.stage == "experiments":
            return Decision("abort", "enough for this test")
        return Decision("approve")


def test_an_edited_plan_is_what_the_experiments_follow(project, llm_server):
    def edit_then_approve(port, request):
        if sum(r.stage == "plan" for r in port.asked) == 1:
            assert (request.kind, request.product) == ("plan", "plan.json")
            assert "Double HIDDEN_UNITS" in request.body
            plan = json.loads((port.root / "plan.json").read_text())
            plan["runs"][0]["change"] = "Triple HIDDEN_UNITS instead"
            (port.root / "plan.json").write_text(json.dumps(plan))
            return Decision("edit", "plan.json")
        assert "Triple HIDDEN_UNITS instead" in request.body
        return Decision("approve")

    Session.open(project.root).run(PlanPort(project.root, edit_then_approve))
    coder_prompts = json.dumps(llm_server.requests_for("scripted-experiments")[1:])
    assert "It changes: Triple HIDDEN_UNITS instead" in coder_prompts
    assert "plan: researcher edited plan.json" in project.repo.git.log("--format=%s")
    finished = [e for e in _journal(project) if isinstance(e, StageFinished)]
    assert ("plan", "done") in [(e.stage, e.status) for e in finished]


def test_a_malformed_plan_is_asked_again_with_the_problem(project, llm_server):
    too_many = {"runs": [{"change": "a", "measure": "b"}] * 4}
    llm_server.script("scripted-experiments", fenced_json(too_many), "not json at all")
    port = PlanPort(project.root, lambda port, request: Decision("abort"))
    Session.open(project.root).run(port)
    plan_requests = [
        r for r in llm_server.requests_for("scripted-experiments")
        if "Plan the experiment runs" in json.dumps(r["messages"])
    ]
    assert len(plan_requests) == 3, "two bad answers, each re-asked with what was wrong"
    assert "at most 1 are allowed" in json.dumps(plan_requests[1]["messages"][-1])
    assert json.loads((project.root / "plan.json").read_text())["runs"][0]["change"]
