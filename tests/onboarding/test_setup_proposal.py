"""A model's reading of a repository for `labtui init`: every value it proposes is checked
against what the survey found, and a refuted one is listed and not used (the draft's stands)."""

from __future__ import annotations

import pytest
from support.research_repo import make_repository
from support.research_script import fenced_json

from labtui.core.answers.setup_answer import SetupAnswer
from labtui.core.onboarding.repo_scan import propose_setup, survey
from labtui.core.onboarding.setup_proposal import ask_model, checked

GOOD = {
    "command": "{python} train.py --output_dir {out_dir} --lr 0.1",
    "smoke_command": "{python} train.py --output_dir {out_dir} --max_steps 5",
    "results_source": "json",
    "results_path": "{out_dir}/metrics.json",
    "metrics": {"eval.accuracy": "higher"},
    "edit": ["train.py", "model.py"],
    "protect": ["evaluate.py"],
    "paper_tex": "paper/main.tex",
    "paper_sections": ["Experiments"],
    "task": "How the learning rate of gradient descent changes how fast logistic regression "
    "finds a linear boundary on a synthetic data set.",
    "why": {"command": "the README runs train.py", "metrics": "metrics.json has eval.accuracy"},
}


@pytest.fixture
def facts(tmp_path):
    facts = survey(make_repository(tmp_path / "repo"))
    return facts, propose_setup(facts)


def test_values_the_facts_bear_out_are_taken_with_the_models_reason(facts):
    found, draft = facts
    proposal = checked(SetupAnswer.model_validate(GOOD), found, draft)
    assert proposal.refused == []
    assert proposal.values["experiment"]["command"] == GOOD["command"]
    assert proposal.values["results"]["metrics"] == {"eval.accuracy": "higher"}
    assert proposal.values["paper"]["sections"] == ["Experiments"]
    assert proposal.reasons["experiment.command"].startswith("the model: the README runs train.py")
    # then bounded, as the draft's command is: the script's 200 steps fit
    assert "--max_steps 200 by default already fits" in proposal.reasons["experiment.command"]


@pytest.mark.parametrize(
    ("change", "refused", "kept"),
    [
        ({"command": "{python} train.py --output_dir {out_dir} --epochs 3"},
         "train.py declares no --epochs", ("experiment", "command")),
        ({"command": "{python} main.py --out {out_dir}"}, "the repository has no main.py",
         ("experiment", "command")),
        ({"edit": ["train.py", "trainer/*.py"]}, "trainer/*.py matches no file",
         ("experiment", "edit")),
        ({"protect": ["train.py"]}, "train.py would be both editable and protected",
         ("experiment", "protect")),
        ({"metrics": {"eval.f1": "higher"}}, "no result file of the repository has eval.f1",
         ("results", "metrics")),
        ({"paper_sections": ["Results"]}, "paper/main.tex has no section Results",
         ("paper", "sections")),
        ({"paper_tex": "paper/paper.tex"}, "no main LaTeX file of the repository",
         ("paper", "tex")),
    ],
)  # fmt: skip
def test_a_value_the_facts_refute_is_refused_and_the_drafts_stands(facts, change, refused, kept):
    found, draft = facts
    proposal = checked(SetupAnswer.model_validate({**GOOD, **change}), found, draft)
    assert any(refused in line for line in proposal.refused), proposal.refused
    section, name = kept
    assert proposal.values[section][name] == draft.values[section][name]


def test_the_model_is_asked_over_http_and_its_prose_wrapped_answer_checked(
    facts, llm_server, monkeypatch
):
    from labtui.core.review.reviewer import standalone_llm

    found, draft = facts
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", "sk-test")
    wrong = {**GOOD, "command": "{python} train.py --output_dir {out_dir} --epochs 3"}
    llm_server.script("scripted-init", fenced_json(wrong, "Here is the set-up I propose:"))
    llm = standalone_llm("openai/scripted-init", 0.5, emit=lambda event: None)
    proposal = ask_model(llm, found, draft, note="use the README's learning rate")
    assert any("declares no --epochs" in line for line in proposal.refused)
    assert proposal.values["experiment"]["command"] == draft.values["experiment"]["command"]
    # the model's 5-step smoke run, made as long as labtui's (every metric written once)
    assert proposal.values["experiment"]["smoke_command"] == (
        GOOD["smoke_command"].replace("--max_steps 5", "--max_steps 10")
    )
    prompt = llm_server.requests_for("scripted-init")[0]["messages"][0]["content"]
    assert "train.py" in prompt and "--output_dir" in prompt
    assert "The researcher asks: use the README's learning rate" in prompt


def test_a_real_small_models_set_up_is_checked_value_by_value(facts, llm_server, monkeypatch):
    """Replays SmolLM2-135M's real answers to `labtui init` (tests/recorded/real_model/
    smollm2_init.jsonl): a bare "python" as the command, the evaluation file as what to edit, a
    path outside the repository as the paper, then the bare "python" again. Each is refused with
    the fact that refutes it; what the model left out is the draft's; nothing wrong survives."""
    from support.recorded_replies import exchanges

    from labtui.core.review.reviewer import standalone_llm

    found, draft = facts
    recorded = [e["reply"] for e in exchanges("smollm2_init") if e["status"] == 200]
    assert len(recorded) == 2
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", "sk-test")
    llm = standalone_llm("openai/scripted-init", 0.5, emit=lambda event: None)
    refused = []
    for reply in recorded:
        llm_server.script("scripted-init", reply)
        proposal = ask_model(llm, found, draft)
        refused += proposal.refused
        assert proposal.values == draft.values, "no value the facts refute is used"
    assert "experiment.command = 'python': it runs no Python file of the repository" in refused
    assert any(
        "experiment.edit = ['evaluate.py']: evaluate.py decides whether a result is true" in r
        for r in refused
    )
    assert any("paper.tex = '/home/" in r and "no main LaTeX file" in r for r in refused)
