"""Issue 28's hollow paper, reproduced with a scripted model: the write-up leaves the sections a
1.5B model left (one copied sentence three times, labels, promises, no numbers),
and labtui names each gap, waits for the researcher in co-pilot mode, and under --auto ends
with "paper incomplete", never "every stage done"."""

from __future__ import annotations

import json

from conftest import TEST_API_KEY, wire_project
from support.hollow_paper import HOLLOW, filled
from support.research_script import MoonsResearch, last_user_text, whole_file_edit

from labtui.core.checkpoints import AutoApprove, CheckpointRequest, Decision
from labtui.core.engine.status import paper_end_state, paper_open_problems, project_status
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config
from labtui.core.workspace.project import Project
from labtui.tui.commands.status import status_line

TEX = "latex/template.tex"


def hollow_project(tmp_path, llm_server, arxiv_server, monkeypatch, *, auto: bool) -> Project:
    """A moons project whose write-up model (aider's whole-file edits) answers the hollow
    paper; every other stage is the scripted researcher's."""
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "p", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url, auto=auto)
    config = load_config(project.root)
    config.paper.writer = "aider"
    save_config(config, project.root)
    research = MoonsResearch(project.root)
    research.install(llm_server)

    def writeup(request):
        if "Replace exactly these placeholders" in last_user_text(request):
            tex = (project.root / TEX).read_text(encoding="utf-8")
            return whole_file_edit(TEX, filled(tex, HOLLOW), "Filled the sections.")
        return research.writeup(request)

    llm_server.default("scripted-writeup", writeup)
    return project


class DraftPort:
    """TEST-ONLY: approves until the draft, which it records, then aborts."""

    def __init__(self) -> None:
        self.draft: CheckpointRequest | None = None

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.stage == "writeup" and "paper drafted" in request.title:
            self.draft = request
            return Decision("abort", "seen")
        return Decision("approve")


def test_in_co_pilot_mode_the_hollow_paper_waits_with_each_gap_named(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    project = hollow_project(tmp_path, llm_server, arxiv_server, monkeypatch, auto=False)
    port = DraftPort()
    Session.open(project.root).run(port)
    draft = port.draft
    assert draft is not None and "approve" not in draft.options
    assert "the draft is not yet a whole paper" in draft.title
    gaps = draft.body.split("\n\n")[0]
    for named in (
        "Introduction, line",
        "repeats a paragraph of the Abstract",
        "the label “METHOD:”",
        "promises what will be done",
        "is too short to be written (23 words; at least 25)",
        "“512”, “1024”",
        "reports no number of run_1",
        "the figure test_accuracy.png (figures.json) is not in the paper",
    ):
        assert named in gaps, named
    assert draft.body.index("Not yet a whole paper") < draft.body.index("Provenance:")


def test_under_auto_the_hollow_paper_ends_incomplete_not_done(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    project = hollow_project(tmp_path, llm_server, arxiv_server, monkeypatch, auto=True)
    session = Session.open(project.root)
    assert session.run(AutoApprove()) == "finished"
    problems = paper_open_problems(session.state)
    assert any("repeats a paragraph of the Abstract" in p for p in problems)
    assert any("reports no number of run_1" in p for p in problems)
    end = paper_end_state(problems)
    assert end.startswith(f"paper incomplete: {len(problems)} open problem(s): ")
    assert paper_end_state([]) == "every stage done"
    review = json.loads((project.root / "review.json").read_text(encoding="utf-8"))
    facts = review["facts"]
    assert facts["runs_without_results"] == ["run_1"] and facts["repeated"], "the reviewer's facts"
    capped = {(c["score"], c["to"]) for c in review["capped"]}
    assert ("Quality", 1) in capped and ("Soundness", 1) in capped, review["capped"]
    assert all(r["Quality"] <= 1 and r["Soundness"] <= 1 for r in review["reviews"])
    assert review["capped"][0]["why"] == "no number in the paper is traced to a run"
    prompts = [json.dumps(r["messages"]) for r in llm_server.requests_for("scripted-review")]
    assert any("Facts about this paper, established by code" in p for p in prompts)
    status = status_line(project_status(project.root))
    assert f"· paper incomplete: {len(problems)} open problem(s)" in status, "labtui status says it"
