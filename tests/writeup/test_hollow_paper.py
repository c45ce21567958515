"""Issue 28's hollow paper, reproduced with a scripted model: the write-up leaves the sections a
1.5B model left (one copied sentence three times, labels, promises, no numbers),
and labtui names each gap, waits for the researcher in co-pilot mode, and under --auto ends
with "paper incomplete" (exit status 3), never "every stage done"; its review is a Reject even
where the reviewer accepts it."""

from __future__ import annotations

import json
import signal
from types import SimpleNamespace

from conftest import TEST_API_KEY, wire_project
from support.hollow_paper import HOLLOW, filled
from support.research_script import (
    REVIEW,
    MoonsResearch,
    fenced_json,
    last_user_text,
    whole_file_edit,
)

from labtui.core.checkpoints import AutoApprove, CheckpointRequest, Decision
from labtui.core.engine.status import paper_end_state, paper_open_problems, project_status
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config
from labtui.core.stages.review import _facts
from labtui.core.workspace.project import Project
from labtui.core.writeup.completeness import gap_key, project_gaps, record_gaps
from labtui.tui.commands.run import cmd_run
from labtui.tui.commands.status import status_line
from labtui.tui.exit_status import EXIT_INCOMPLETE

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
        "is too short to say anything (23 words; at least 25)",
        "“512”, “1024”",
        "is too short to say anything (48 words; at least 60)",
        "the figure test_accuracy.png (figures.json) is not in the paper",
    ):
        assert named in gaps, named
    assert draft.body.index("Not yet a whole paper") < draft.body.index("Provenance:")
    tex = (project.root / TEX).read_text(encoding="utf-8")
    assert "\\label{tab:runs}" in tex and "reports no number" not in gaps, (
        "code placed the table of runs beside the model's words: every run has its numbers"
    )


def test_under_auto_the_hollow_paper_ends_incomplete_not_done(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    project = hollow_project(tmp_path, llm_server, arxiv_server, monkeypatch, auto=True)
    session = Session.open(project.root)
    assert session.run(AutoApprove()) == "finished"
    problems = paper_open_problems(session.state)
    assert any("repeats a paragraph of the Abstract" in p for p in problems)
    assert any("is too short to say anything" in p for p in problems)
    end = paper_end_state(problems)
    assert end.startswith(f"paper incomplete: {len(problems)} open problem(s): ")
    assert paper_end_state([]) == "every stage done"
    review = json.loads((project.root / "review.json").read_text(encoding="utf-8"))
    facts = review["facts"]
    # code wrote the table of runs: every run has its numbers, traced; the words are hollow
    assert facts["runs_without_results"] == [] and facts["traced"] > 0 and facts["repeated"]
    capped = {(c["score"], c["to"]) for c in review["capped"]}
    assert ("Presentation", 2) in capped and ("Clarity", 2) in capped, review["capped"]
    assert review["capped"][0]["why"].startswith("parts are not written (Abstract, ")
    assert review["decision"] == "Reject" and review["decision_reason"].startswith(
        f"the paper has {len(review['facts']['open_gaps'])} open gap(s): "
    ), "its open gaps decided, not its reviewer"
    prompts = [json.dumps(r["messages"]) for r in llm_server.requests_for("scripted-review")]
    assert any("Facts about this paper, established by code" in p for p in prompts)
    status = status_line(project_status(project.root))
    assert f"· paper incomplete: {len(problems)} open problem(s)" in status, "labtui status says it"


def accepting_reviewer(request) -> str:
    """TEST-ONLY reviewer taken in by the hollow paper: Accept, 8/10, top marks; done when asked
    to reconsider."""
    if last_user_text(request).startswith("Reflection round"):
        return json.dumps({"done": True})
    scores = {"Quality": 4, "Clarity": 4, "Soundness": 4, "Presentation": 4, "Overall": 8}
    return fenced_json({**REVIEW, **scores, "Decision": "Accept"}, "My review:")


def test_headless_auto_exits_incomplete_and_an_accepting_review_is_a_reject(
    tmp_path, llm_server, arxiv_server, monkeypatch, capsys
):
    project = hollow_project(tmp_path, llm_server, arxiv_server, monkeypatch, auto=True)
    llm_server.default("scripted-review", accepting_reviewer)
    hang_up = signal.getsignal(signal.SIGHUP)  # the headless run takes SIGHUP as Ctrl-C
    try:
        code = cmd_run(project.root, headless=True, auto=True)
    finally:
        signal.signal(signal.SIGHUP, hang_up)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("pipeline finished: paper incomplete: "), last
    assert code == EXIT_INCOMPLETE == 3, "a script tells an incomplete paper from a done one"

    review = json.loads((project.root / "review.json").read_text(encoding="utf-8"))
    gaps = review["facts"]["open_gaps"]
    assert any("is too short to say anything" in gap for gap in gaps), gaps
    assert review["decision"] == "Reject", "an Accept of a paper with open gaps"
    assert review["decision_reason"].startswith(f"the paper has {len(gaps)} open gap(s): ")
    overall = next(c for c in review["capped"] if c["score"] == "Overall")
    assert (overall["from"], overall["to"], overall["why"]) == (8, 3, review["decision_reason"])
    assert review["overall"] == 3.0 and review["reviews"][0]["Decision"] == "Accept", (
        "the reviewer's own word is kept; its score is capped"
    )

    # the gaps the researcher waives are accepted: they no longer reject the paper
    root = project.root
    tex_gaps = project_gaps(root, root / TEX)
    record_gaps(root, tex_gaps, {gap_key(gap): "a first draft, on purpose" for gap in tex_gaps})
    sheet = _facts(SimpleNamespace(project=project, config=load_config(root)), "")
    assert sheet.open_gaps == [] and sheet.rejection == ""
