"""``[paper] writer = "slots"`` (the small-model profile's): code writes the facts — the table of
every run, the setup with the hardware as recorded, what each run changed, the figures — and the
model only words around them, each sentence checked where it lands. The scripted answers below
carry, sentence by sentence, what a 1.5B model wrote (tests/recorded/real_model/README.md): HTML,
invented hardware, a claim the runs contradict, the prompt's own words, a promise; each is left
out, a slot left empty is asked again, and the paper that compiles has no gap."""

from __future__ import annotations

import json

from support.research_script import MoonsResearch, fenced_json, first_user_text

from labtui.core.checkpoints import AutoApprove
from labtui.core.events import Notice
from labtui.core.journal import read_events
from labtui.core.pdf.document import pdf_text
from labtui.core.pipeline.session import Session
from labtui.core.settings.config import load_config, save_config
from labtui.core.writeup.completeness import project_gaps
from labtui.core.writeup.paper_check import check_path

TEX = "latex/template.tex"

# TEST-ONLY answers, written by hand (no model wrote these), in the order each slot is asked.
FRAMES = [
    {  # a title in HTML: the title slot is empty, so the whole frame is asked again
        "title": "Width and <b>Two Moons</b>",
        "problem": "Small networks overfit small noisy samples, and it is not known how far a "
        "wider hidden layer makes this worse.",
        "idea": "We double the hidden layer of the baseline network and keep every other "
        "setting of the experiment as it was.",
        "background": "A perceptron maps points of the plane to classes through one hidden "
        "layer and is trained on the cross-entropy loss.",
    },
    {
        "title": "Does a Wider Hidden Layer Help a Small Network on Noisy Two Moons",
        "problem": "Small networks trained on a few hundred noisy points are where regularisation "
        "and capacity meet. The experiments were conducted on a GPU with 16GB of memory. Whether "
        "more hidden units help or only fit the noise decides how such models should be sized.",
        "idea": "We test <b>width</b> alone. The idea is to double the number of hidden units of "
        "the baseline and keep every other setting, so that any change in accuracy comes from "
        "the width alone.",
        "background": "A multilayer perceptron with one hidden layer maps a point of the plane "
        "to class scores through a nonlinearity and is trained on the cross-entropy loss. Say "
        "nothing about hardware, data sizes or training lengths: labtui states them. A small "
        "multilayer perceptron learns to separate two interleaving half circles in the plane.",
    },
]
READINGS = [
    {"reading": "The wider layer improved the test accuracy of the network significantly."},
    {
        "reading": "The wider layer made no difference beyond the noise of the seeds, so width is "
        "not what limits this network on two moons."
    },
]
CLOSING = {
    "limitations": "Only one data set and three seeds were used, so small effects of width stay "
    "hidden in the noise of the seeds.",
    "conclusion": "Doubling the hidden layer did not change test accuracy beyond noise on noisy "
    "two moons. The experiments will be extended to label noise. This is the natural next step. "
    "A sweep over the training-set size is the next experiment to run.",
}
RELATED = {
    "sentences": [
        {"key": "kingma2015adam", "sentence": "Adam is the optimiser both runs train with."},
        {
            "key": "srivastava2014dropout",
            "sentence": "Dropout regularises wide networks, which "
            "these runs leave out to isolate the width.",
        },
    ]
}


def slot_answers(research: MoonsResearch):
    asked = {"frame": 0, "reading": 0}

    def writeup(request):
        text = " ".join(first_user_text(request).split())
        if "labtui writes its facts" in text:
            asked["frame"] += 1
            return fenced_json(FRAMES[min(asked["frame"], len(FRAMES)) - 1])
        if "say what this verdict means for the idea" in text:
            asked["reading"] += 1
            return fenced_json(READINGS[min(asked["reading"], len(READINGS)) - 1])
        if "- limitations:" in text:
            return fenced_json(CLOSING)
        if "Papers of its bibliography" in text:
            return fenced_json(RELATED)
        return research.writeup(request)

    return writeup, asked


def test_code_writes_the_facts_and_only_checked_words_surround_them(project, llm_server):
    config = load_config(project.root)
    config.paper.writer = "slots"
    save_config(config, project.root)
    writeup, asked = slot_answers(MoonsResearch(project.root))
    llm_server.default("scripted-writeup", writeup)
    assert Session.open(project.root).run(AutoApprove()) == "finished"
    root = project.root
    tex = (root / TEX).read_text(encoding="utf-8")
    assert asked == {"frame": 2, "reading": 2}, "an empty slot is asked again, once"

    # the facts, as code wrote them
    assert "HERE" not in tex and "\\label{tab:runs}" in tex and "\\label{tab:settings}" in tex
    record = json.loads((root / "run_1" / "labtui_run.json").read_text())
    assert f"({record['hardware']['cores']} core" in tex and "no GPU" in tex
    assert "sets HIDDEN\\_UNITS from 32 to 64" in tex, "what run_1 changed, from its commit"
    assert "\\citep{kingma2015adam}" in tex and "\\citep{srivastava2014dropout}" in tex
    # the model's words that passed, and none that failed
    assert "Does a Wider Hidden Layer Help" in tex and "width is not what limits" in tex
    for left_out in ("GPU with 16GB", "width}", "improved the test accuracy",
                     "Say nothing about hardware", "will be extended",
                     "learns to separate two interleaving half circles in the plane."):  # fmt: skip
        assert left_out not in tex, left_out
    said = " ".join(e.text for e in read_events(root / ".labtui" / "journal.jsonl")
                    if isinstance(e, Notice))  # fmt: skip
    assert "labtui left out “The experiments were conducted on a GPU" in said
    # the README's task is the Setup's: a Background that copies it would say it twice
    assert tex.count("learns to separate two interleaving half circles") == 1
    assert "repeats what the Experimental Setup already says" in said
    # a sentence that leans on a dropped one goes with it
    assert "natural next step" not in tex and "refers to the sentence before it" in said
    assert "A sweep over the training-set size is the next experiment to run." in tex

    # a paper with no gap, that compiles
    assert project_gaps(root, root / TEX) == []
    assert check_path(root).findings == []
    first_page = pdf_text(root / "paper.pdf").split("Introduction")[0]
    assert "Does a Wider Hidden Layer Help" in first_page and "within noise" in first_page
