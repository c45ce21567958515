"""The novelty check: a verdict stands only on papers the model was shown and names; otherwise the
idea is recorded as unchecked, never as novel, and the pipeline goes on.

The scripted replies here are written by hand (TEST-ONLY), shaped after what Qwen2.5-Coder-1.5B
answered in issue 27: a search without a query, "novel" before any search.
"""

from __future__ import annotations

import json
import re
import socket

import pytest
from support.recorded_replies import replies
from support.research_script import IDEA, MoonsResearch, last_user_text

from labtui.core.answers.idea_answers import NOVELTY_DECISIONS, novelty_step
from labtui.core.answers.validation import validate
from labtui.core.events import Refused, StageFinished
from labtui.core.pipeline.session import Session
from labtui.core.stages import novelty as novelty_stage
from labtui.core.workspace.ideas import load_archive, novelty_status

NOVELTY_MODEL = "scripted-novelty"
SEARCH = {
    "decision": "search",
    "query": "hidden layer width MLP",
    "reason": "look for width studies",
}


@pytest.fixture
def session(project):
    """The moons project with IDEA proposed by the ideas stage; events collected."""
    (project.root / "ideas.json").write_text(json.dumps([IDEA]))
    project.commit("test: the idea")
    session = Session.open(project.root)
    session.state.finished["ideas"] = StageFinished(stage="ideas", result={"ideas": [IDEA["Name"]]})
    session.events = []
    session.bus.subscribe(session.events.append)
    return session


def _closed_port() -> int:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _check(session):
    return novelty_stage.run(session.context_for("novelty"))


def _schemas(llm_server) -> list[str]:
    return [
        json.dumps(r.get("response_format") or {}) for r in llm_server.requests_for(NOVELTY_MODEL)
    ]


# -- the records ------------------------------------------------------------------------------


def test_the_first_turn_can_only_search_and_a_search_needs_its_query():
    first = novelty_step(("search",))
    with pytest.raises(ValueError, match="field 'query' is missing"):
        validate(first, {"decision": "search", "reason": "look for width studies"})
    with pytest.raises(ValueError, match="decision"):
        validate(first, {"decision": "novel", "reason": "no paper does this at all"})
    assert first.model_json_schema()["required"] == ["decision", "query", "reason"]


def test_a_verdict_names_papers_from_the_results_and_only_those():
    later = novelty_step(NOVELTY_DECISIONS, ("1412.6980v9", "1711.05101v3"))
    verdict = {"decision": "novel", "reason": "no paper varies the width on moons"}
    with pytest.raises(ValueError, match="closest"):
        validate(later, verdict)
    with pytest.raises(ValueError, match="closest"):
        validate(later, {**verdict, "closest": []})
    with pytest.raises(ValueError, match=re.escape("1412.6980v9")):
        validate(
            later,
            {**verdict, "closest": [{"arxiv_id": "2101.00001", "overlap": "a remembered paper"}]},
        )
    good = {**verdict, "closest": [{"arxiv_id": "1412.6980v9", "overlap": "the optimiser only"}]}
    assert validate(later, good).root.closest[0].arxiv_id == "1412.6980v9"
    unsure = validate(later, {"decision": "unsure", "reason": "the results do not settle it"})
    assert unsure.root.closest == []
    schema = json.dumps(later.model_json_schema(by_alias=True))
    assert '"enum": ["1412.6980v9", "1711.05101v3"]' in schema, "the ids are the only choices"


def test_the_last_round_decides_and_no_verdict_without_papers():
    assert novelty_stage.open_decisions(1, 3, False) == ("search",)
    assert novelty_stage.open_decisions(2, 3, False) == ("search", "unsure")
    assert novelty_stage.open_decisions(2, 3, True) == ("search", "novel", "not_novel", "unsure")
    assert novelty_stage.open_decisions(3, 3, True) == ("novel", "not_novel", "unsure")
    assert novelty_stage.open_decisions(3, 3, False) == ()


# -- the stage --------------------------------------------------------------------------------


def test_a_search_then_a_verdict_on_the_papers_shown(session, llm_server):
    output = _check(session)

    evidence = output.result.evidence
    assert evidence["decision"] == "novel" and evidence["queries"]
    assert evidence["closest"][0]["title"], "the title comes from the search, not the model"
    first, second = _schemas(llm_server)
    assert '"novel"' not in first, "the first turn's schema offers the search alone"
    shown = [p["arxiv_id"] for p in evidence["papers_seen"]]
    assert all(f'"{arxiv_id}"' in second for arxiv_id in shown)


def test_a_search_without_a_query_is_asked_again_quoting_the_field(session, llm_server):
    # Written by hand after issue 27: the 1.5B model's search with no query, three times.
    llm_server.script(
        NOVELTY_MODEL,
        json.dumps({"decision": "search", "reason": "to find similar work on width"}),
    )

    output = _check(session)

    refused = [e for e in session.events if isinstance(e, Refused)]
    assert "query" in refused[0].reason
    assert output.result.evidence["decision"] == "novel", "the re-ask got a query"


def test_novel_before_any_search_leaves_the_idea_unchecked_not_novel(session, llm_server):
    # Written by hand after issue 27: "novel" straight away, with no search and no papers.
    straight = json.dumps({"decision": "novel", "reason": "this has not been done before"})
    llm_server.default(NOVELTY_MODEL, lambda request: straight)

    output = _check(session)

    evidence = output.result.evidence
    assert evidence["decision"] == "unchecked" and evidence["papers_seen"] == []
    assert "unchecked" in output.checkpoint_body and "not judged novel" in output.checkpoint_body
    idea = next(i for i in load_archive(session.project.root) if i.name == IDEA["Name"])
    assert idea.status == "chosen" and idea.novelty_evidence["decision"] == "unchecked"
    status = novelty_status(session.project.root)
    assert status is not None and "**unchecked**" in status.line


def test_an_unreachable_arxiv_leaves_the_idea_unchecked_and_says_why(session, llm_server):
    session.config.literature.arxiv_url = f"http://127.0.0.1:{_closed_port()}/api/query"
    session.config.literature.retries = 0

    output = _check(session)

    evidence = output.result.evidence
    assert evidence["decision"] == "unchecked"
    assert "arXiv was unreachable" in evidence["reason"]
    assert len(llm_server.requests_for(NOVELTY_MODEL)) == 1, "no verdict is asked for"


def test_a_verdict_naming_a_paper_never_shown_is_refused(session, llm_server):
    research = MoonsResearch(session.project.root)

    def remembers(request):
        if last_user_text(request).startswith("Results of the query"):
            # Written by hand: a verdict citing a paper from memory, not from the results.
            return json.dumps(
                {
                    "decision": "not_novel",
                    "reason": "a known paper does the same",
                    "closest": [{"arxiv_id": "2101.00001", "overlap": "the same width study"}],
                }
            )
        return research.novelty(request)

    llm_server.default(NOVELTY_MODEL, remembers)

    output = _check(session)

    refused = [e for e in session.events if isinstance(e, Refused)]
    assert refused and "2101.00001" in refused[0].reason
    assert output.result.evidence["decision"] == "unchecked"


def test_a_real_small_models_search_for_an_address_is_refused_and_asked_again(session, llm_server):
    # Recorded: Qwen2.5-Coder-1.5B's first novelty turn on moons (qwen15_moons_novelty.jsonl,
    # line 1), a URL for a query; after the refusal the scripted research searches properly.
    (address,) = replies("qwen15_moons_novelty")
    assert json.loads(address)["query"].startswith("arxiv.org/search")
    llm_server.script(NOVELTY_MODEL, address)

    output = _check(session)

    refused = [e for e in session.events if isinstance(e, Refused)]
    assert "field 'query' is an address" in refused[0].reason
    assert all("/" not in query for query in output.result.evidence["queries"])
