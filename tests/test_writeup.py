"""The write-up, section by section: each section written in order with its tips, reflected on
once, judged by the researcher in co-pilot mode; then related work and a whole-paper pass."""

from __future__ import annotations

import json

from support.research_script import MoonsResearch, last_user_text, whole_file_edit

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.pipeline import Session
from labtui.core.stages.writeup import SECTIONS

TEX = "latex/template.tex"  # a template project's paper ([paper] tex)


class SectionPort:
    """TEST-ONLY: approves, revises the introduction once with a note, aborts at compile."""

    NOTE = "say why small networks are worth studying"

    def __init__(self) -> None:
        self.asked: list[CheckpointRequest] = []

    def ask(self, request: CheckpointRequest) -> Decision:
        self.asked.append(request)
        if request.stage == "compile":
            return Decision("abort", "enough")
        if request.title == "writeup: introduction written" and not any(
            r.title == request.title for r in self.asked[:-1]
        ):
            return Decision("revise", self.NOTE)
        return Decision("approve")


def test_sections_are_written_in_order_reflected_on_and_judged(project, llm_server):
    research = MoonsResearch(project.root)

    def writeup(request):  # the reflection on the results finds a word to sharpen
        if last_user_text(request).startswith("Read the results you just wrote"):
            tex = (project.root / TEX).read_text()
            return whole_file_edit(
                TEX, tex.replace("shows the training loss", "plots the training loss"), "Sharper."
            )
        return research.writeup(request)

    llm_server.default("scripted-writeup", writeup)
    port = SectionPort()
    Session.open(project.root).run(port)
    assert "writeup: results, reflected" in project.repo.git.log("--format=%s")
    assert "plots the training loss" in (project.root / TEX).read_text(), "the reflection is kept"
    log = project.repo.git.log("--reverse", "--format=%s").splitlines()
    written = [
        m.removeprefix("writeup: ") for m in log if m.startswith("writeup: ") and "," not in m
    ]
    order = [s.name for s in SECTIONS]
    assert [w for w in written if w in order] == order, "each section once, in order"
    asks = [last_user_text(r) for r in llm_server.requests_for("scripted-writeup")]
    reflections = [a for a in asks if a.startswith("Read the ")]
    assert [a.split(" you just wrote")[0].removeprefix("Read the ") for a in reflections] == order
    results = next(a for a in asks if "Write the results" in a)
    assert "the figures go here and only here" in results, "the section's tips are in its prompt"
    assert any(a.startswith("Now read the whole paper") for a in asks), "the refinement pass"
    revise = [a for a in asks if a.startswith("The researcher read the introduction")]
    assert revise and SectionPort.NOTE in revise[0]
    section_questions = [r.title for r in port.asked if r.title.endswith(" written")]
    assert section_questions[:3] == [
        "writeup: title and abstract written",
        "writeup: introduction written",
        "writeup: introduction written",
    ]
    intro = next(r for r in port.asked if r.title == "writeup: introduction written")
    assert "Capacity and generalisation" in intro.body, "the checkpoint shows the section"
    assert json.loads((project.root / "provenance.json").read_text())["untraced"] == []


def test_a_section_the_model_cannot_write_keeps_its_text_and_the_paper_goes_on(project, llm_server):
    """A weak model's failed section does not end the write-up: it keeps its previous text
    (the placeholder), the leftover round asks for it again, and the draft is still judged."""
    research = MoonsResearch(project.root)

    def writeup(request):
        text = last_user_text(request)
        if "Write the background" in text or "BACKGROUND HERE" in text.split("\n")[0]:
            return "I am not sure what to write here."
        return research.writeup(request)

    llm_server.default("scripted-writeup", writeup)
    port = SectionPort()
    Session.open(project.root).run(port)
    titles = [r.title for r in port.asked]
    assert "writeup: background written" not in titles
    assert "writeup: results written" in titles, "the sections after it were written"
    assert any(r.stage == "compile" for r in port.asked), "the draft went on to compile"
