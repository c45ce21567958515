"""The literature review stage against the loopback arXiv server and the scripted model: a curated
list with summaries, validated actions, full texts, the cache on a rerun, an outage survived, the
researcher's edit kept, and the review feeding the ideas."""

from __future__ import annotations

import json
import re

import pytest
from support.ports import ScriptedPort, _journal
from support.recorded_replies import replies
from support.research_script import MoonsResearch

from labtui.core.answers.examples import answer_examples
from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import Notice
from labtui.core.literature.record import Paper
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config
from labtui.core.stages.literature import Found, ReadingList, parse_action
from labtui.core.workspace.artifacts import load_literature

ADAM = Paper("1412.6980v9", "Adam", ["D. Kingma"], 2014, "An optimiser.", "u", "cs.LG")


def _review(**curated: str) -> ReadingList:
    return ReadingList(wanted=2, seen={"1412.6980": Found.from_arxiv(ADAM)}, curated=dict(curated))


def test_each_action_is_checked_against_what_the_agent_was_shown():
    review = _review()
    assert (
        parse_action({"action": "search", "query": " adam "}, review, final=False).query == "adam"
    )
    read = parse_action({"action": "read", "arxiv_id": "1412.6980v9"}, review, final=False)
    assert read.arxiv_id == "1412.6980" and not read.full_text
    summary = "Adam adapts per-parameter step sizes from gradient moments; the default here. " * 2
    added = parse_action(
        {"action": "add", "arxiv_id": "1412.6980", "summary": summary}, review, final=False
    )
    assert added.summary == summary.strip()
    for bad, says in [
        ({"action": "browse"}, "field 'action' must be 'search', 'read', 'add' or 'done'"),
        ({"action": "search"}, '"search" needs a "query"'),
        ({"action": "read", "arxiv_id": "2101.00001"}, "not among the papers you were shown"),
        ({"action": "add", "arxiv_id": "1412.6980", "summary": "Adam."}, "one paragraph"),
        ({"action": "done", "summary": "s"}, "the list has 0 of 2 papers"),
    ]:
        with pytest.raises(ValueError, match=re.escape(says)):
            parse_action(bad, review, final=False)
    with pytest.raises(ValueError, match="already on the list"):
        parse_action(
            {"action": "add", "arxiv_id": "1412.6980", "summary": summary},
            _review(**{"1412.6980": summary}),
            final=False,
        )
    with pytest.raises(ValueError, match="this is the last step"):
        parse_action({"action": "search", "query": "x"}, review, final=True)
    done = "Adaptive optimisers are well studied; their effect on small MLPs is open."
    assert parse_action({"action": "done", "summary": done}, review, final=True).summary == done
    with pytest.raises(ValueError, match=r"field 'summary' is a placeholder \('\.\.\.'\)"):
        parse_action({"action": "done", "summary": "..."}, review, final=True)
    with pytest.raises(ValueError, match="field 'query' copies the prompt's example"):
        with answer_examples(["a few precise keywords"]):
            parse_action(
                {"action": "search", "query": "A few precise keywords."}, review, final=False
            )


class LiteraturePort(ScriptedPort):
    """TEST-ONLY: records the literature checkpoint, answers it with ``at_review``, and aborts
    at the ideas checkpoint (after the ideas stage has used the review)."""

    def __init__(self, *at_review: Decision) -> None:
        super().__init__(*at_review, passing=())

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.stage == "ideas":
            self.asked.append(request)
            return Decision("abort", "enough")
        return super().ask(request)


def _librarian_requests(llm_server) -> list[str]:
    return [
        json.dumps(r["messages"])
        for r in llm_server.requests_for("scripted-novelty")
        if "research librarian" in json.dumps(r["messages"][0])
    ]


def test_the_review_curates_papers_with_summaries_and_feeds_the_ideas(
    project, llm_server, arxiv_server
):
    port = LiteraturePort(Decision("approve"))
    Session.open(project.root).run(port)
    review = json.loads((project.root / "literature.json").read_text())
    assert len(review["papers"]) == 2 and review["summary"].startswith("Small MLPs")
    for paper in review["papers"]:
        assert paper["summary"] and paper["bibtex_key"] and "@misc{" in paper["bibtex"]
        assert paper["arxiv_id"] == paper["id"] and "v" not in paper["id"], "citable base ids"
    question = port.asked[0]
    assert question.stage == "literature" and question.kind == "literature"
    assert question.product == "literature.json"
    assert review["papers"][0]["title"] in question.body
    ideas_prompt = json.dumps(llm_server.requests_for("scripted-ideas")[0]["messages"])
    assert "What the literature review found" in ideas_prompt
    assert review["papers"][1]["bibtex_key"] in ideas_prompt
    assert len(arxiv_server.hits) == 1


def test_a_rerun_of_the_review_asks_arxiv_nothing_again(project, llm_server, arxiv_server):
    port = LiteraturePort(Decision("revise", "more on regularisation"), Decision("approve"))
    Session.open(project.root).run(port)
    assert len([r for r in port.asked if r.stage == "literature"]) == 2
    assert len(arxiv_server.hits) == 1, "the second review's search came from the cache"
    assert any("more on regularisation" in text for text in _librarian_requests(llm_server))


def test_with_arxiv_down_the_review_says_so_and_the_ideas_go_on(project, llm_server, arxiv_server):
    from labtui.core.settings.config import load_config, save_config

    config = load_config(project.root)
    config.literature.review_steps = 3
    config.literature.retries = 1
    config.literature.backoff_s = 0.05
    save_config(config, project.root)
    arxiv_server.fail_next(status=503, times=1000)
    port = LiteraturePort(Decision("approve"))
    Session.open(project.root).run(port)
    notices = [e.text for e in _journal(project) if isinstance(e, Notice)]
    assert any("arXiv search unavailable" in text for text in notices)
    assert any("the literature review found nothing" in text for text in notices)
    assert json.loads((project.root / "literature.json").read_text())["papers"] == []
    assert [r.stage for r in port.asked] == ["literature", "ideas"], "the pipeline went on"


def test_the_agent_can_read_a_full_text(project, llm_server, arxiv_server):
    research = MoonsResearch(project.root)

    def librarian(request):
        text = json.dumps(request["messages"])
        if "research librarian" in text and "Results for" in text and "Full text of" not in text:
            first = re.search(r" id ([0-9]{4}\.[0-9]{4,5})", text.split("Results for")[1])
            return json.dumps({"action": "read", "arxiv_id": first.group(1), "full_text": True})
        return research.novelty(request)

    llm_server.default("scripted-novelty", librarian)
    Session.open(project.root).run(LiteraturePort(Decision("approve")))
    assert any(hit.startswith("/pdf/") for hit in arxiv_server.hits)
    assert any("Full text of " in text for text in _librarian_requests(llm_server))


def test_the_researchers_edit_of_the_list_is_what_the_ideas_see(project, llm_server):
    class EditingPort(LiteraturePort):
        def ask(self, request: CheckpointRequest) -> Decision:
            if request.stage == "literature" and not self.asked:
                self.asked.append(request)
                path = project.root / "literature.json"
                review = json.loads(path.read_text())
                self.dropped = review["papers"].pop(0)
                path.write_text(json.dumps(review))
                return Decision("edit", "literature.json")
            return super().ask(request)

    port = EditingPort(Decision("approve"))
    Session.open(project.root).run(port)
    again = [r for r in port.asked if r.stage == "literature"]
    assert len(again) == 2 and again[1].title == "literature: 1 paper(s) reviewed"
    assert len(load_literature(project.root)["papers"]) == 1
    ideas_prompt = json.dumps(llm_server.requests_for("scripted-ideas")[0]["messages"])
    assert port.dropped["bibtex_key"] not in ideas_prompt


def test_with_an_s2_key_semantic_scholar_adds_citation_counts_and_its_own_papers(
    project, llm_server, arxiv_server, monkeypatch
):
    from support.fake_s2 import FakeS2

    from labtui.core.settings.config import load_config, save_config

    research = MoonsResearch(project.root)

    def librarian(request):
        text = json.dumps(request["messages"])
        if "research librarian" in text and "Nothing yet" in text:
            return json.dumps({"action": "search", "query": "adam optimizer"})
        return research.novelty(request)

    llm_server.default("scripted-novelty", librarian)
    with FakeS2() as s2:
        monkeypatch.setenv("S2_API_KEY", s2.api_key)
        config = load_config(project.root)
        config.literature.s2_url = s2.url
        config.literature.papers = 4
        save_config(config, project.root)
        Session.open(project.root).run(LiteraturePort(Decision("approve")))
        assert s2.hits and s2.keys[0] == s2.api_key
    results = [t for t in _librarian_requests(llm_server) if "Results for" in t]
    assert "Cited by 150000" in results[0], "the arXiv paper gains S2's citation count"
    review = json.loads((project.root / "literature.json").read_text())
    by_id = {paper["id"]: paper for paper in review["papers"]}
    assert by_id["1412.6980"]["citations"] == 150000
    s2_only = [paper for paper in review["papers"] if paper["id"].startswith("S2:")]
    assert s2_only and s2_only[0]["bibtex"].startswith("@") and not s2_only[0]["arxiv_id"]


def test_a_real_small_model_that_cannot_do_the_review_ends_it_and_the_ideas_go_on(
    project, llm_server
):
    """Replays SmolLM2-135M's real answers (tests/recorded/real_model/
    smollm2_moons_literature.jsonl): prose as a query, then the prompt's own example copied
    three times. The review once failed the stage and stopped the whole pipeline there."""
    from support.recorded_replies import replies

    from labtui.core.events import Refused

    recorded = replies("smollm2_moons_literature", "literature")
    research = MoonsResearch(project.root)

    def librarian(request):
        if "research librarian" in json.dumps(request["messages"][0]):
            return recorded.pop(0) if len(recorded) > 1 else recorded[0]
        return research.novelty(request)

    llm_server.default("scripted-novelty", librarian)
    config = load_config(project.root)
    config.literature.review_steps = 3
    save_config(config, project.root)
    session = Session.open(project.root)
    refused = []
    session.bus.subscribe(lambda e: refused.append(e) if isinstance(e, Refused) else None)
    port = LiteraturePort(Decision("approve"))
    session.run(port)

    literature = session.state.result("literature")
    assert session.state.finished["literature"].status == "done"
    assert json.loads((project.root / "literature.json").read_text())["papers"] == []
    assert any(e.what == "answer" for e in refused), "the unusable steps were refused"
    assert any(r.stage == "ideas" for r in port.asked), "the ideas went on"
    assert literature is not None


def test_a_summary_that_names_papers_no_search_found_is_refused():
    # Recorded (qwen15_diffusion_2d_invented_papers_literature.jsonl): after searches that found
    # nothing, the 1.5B model summed up the field with three papers and their authors, invented.
    (reply,) = replies("qwen15_diffusion_2d_invented_papers_literature")
    invented = json.loads(reply)
    nothing_found = ReadingList(wanted=2, seen={}, curated={})
    with pytest.raises(ValueError) as refused:
        parse_action(invented, nothing_found, final=True)
    assert "“Denoising Diffusion Probabilistic Models: Sampling, Inference and Training”" in str(
        refused.value
    )
    assert "Alquran et al., " in str(refused.value) and "the papers found: none" in str(
        refused.value
    )
    # a summary that names what was found, by title, author or id, passes
    named = (
        "Kingma et al. introduce 'Adam: A Method for Stochastic Optimization' (1412.6980), the "
        "optimiser every run here uses; its effect on small networks is open."
    )
    review = _review()
    review.seen["1412.6980"] = Found.from_arxiv(
        Paper(
            "1412.6980v9",
            "Adam: A Method for Stochastic Optimization",
            ["Diederik P. Kingma"],
            2014,
            "",
            "u",
            "cs.LG",
        )
    )
    assert parse_action({"action": "done", "summary": named}, review, final=True).summary == named
