"""The function-edit coder on a real small model's answer: Qwen2.5-Coder-1.5B, asked to add
input noise in moons' train (tests/bench/edit_formats.py, recorded in
tests/recorded/real_model/qwen15_moons_function_edit_experiments.jsonl), named the right
function and wrote it whole, but dropped its deadline's `break` and called a helper it never
wrote: refused with both reasons and asked again; a usable answer (scripted) is spliced in and
committed, the rest of the file byte for byte."""

from __future__ import annotations

import json

import pytest
from support.recorded_replies import exchanges
from support.research_script import fenced_json

from labtui.core.answers.code_answers import function_edits_answer
from labtui.core.coding.function_coder import FunctionCoder
from labtui.core.coding.function_edit import FunctionEditError, definitions, replace_definition
from labtui.core.pipeline.session import Session

RECORDED = "qwen15_moons_function_edit_experiments"


def test_the_recorded_answer_names_a_real_function_and_is_refused_for_what_it_dropped(project):
    (exchange,) = exchanges(RECORDED)
    code = (project.root / "experiment.py").read_text()
    names = tuple(d.name for d in definitions(code))
    schema = json.dumps(exchange["request"]["response_format"]["schema"])
    assert '"train"' in schema and '"Adam.step"' in schema, "the code's definitions were the enum"
    answer = function_edits_answer(names).model_validate(json.loads(exchange["reply"]))
    (edit,) = answer.edits
    assert edit.function == "train"
    with pytest.raises(FunctionEditError, match="drops a break statement"):
        replace_definition(code, "train", edit.code)
    stop_line = '(seed {seed})")\n'
    kept_break = edit.code.replace(stop_line, stop_line + "            break\n")
    with pytest.raises(FunctionEditError, match="uses add_noise_to_input, which the code does"):
        replace_definition(code, "train", kept_break)


def test_a_refused_answer_is_asked_again_and_a_usable_one_is_committed(project, llm_server):
    (exchange,) = exchanges(RECORDED)
    code = (project.root / "experiment.py").read_text()
    train = code[code.index("def train(") : code.index("\ndef summarize(")]
    # Scripted (not recorded): the same change made as asked, one line in train.
    noisy = train.replace(
        "            probs, cache = forward(params, x_train[batch])",
        "            noisy = x_train[batch] + rng.normal(0.0, 0.05, x_train[batch].shape)\n"
        "            probs, cache = forward(params, noisy)",
    )
    good = {"explanation": "Adds Gaussian noise to each minibatch.", "edits": [
        {"function": "train", "code": noisy}
    ]}  # fmt: skip
    llm_server.script("scripted-experiments", exchange["reply"], fenced_json(good))
    ctx = Session.open(project.root).context_for("experiments")
    coder = FunctionCoder(
        ctx.project, ctx.llm("coder"), emit=ctx.emit, stage="experiments", fallback=ctx.coder
    )
    result = coder.edit(["experiment.py"], "Add input noise.", commit_message="experiments: run_1")
    assert result.changed and result.files == ["experiment.py"]
    assert (project.root / "experiment.py").read_text() == code.replace(train, noisy)
    asked = llm_server.requests_for("scripted-experiments")
    assert "drops a break statement" in json.dumps(asked[-1]["messages"])
    assert project.repo.git.log("-1", "--format=%s") == "experiments: run_1: train"
