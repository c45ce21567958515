"""A real small model's reading of the four repository shapes (Qwen2.5-Coder-1.5B, recorded by
`tests/bench/init_bench.py --shape`, tests/recorded/real_model/qwen15_init_*.jsonl), replayed:
what it invents is refused with the fact that refutes it, what it copies of the draft stays, and
the set-up that results still runs bounded and names the metrics the code writes.

What it really said: for the TensorBoard script, the draft's own results (copied); for the Hydra
app, first a "why" that repeats the README into its keys, then a results file from a date that
never happened (`outputs/2023-10-05/20:48:10/main.py.stdout`) with no source; for the W&B and
library shapes, the draft's commands echoed back, counts and all."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from support.recorded_replies import exchanges
from support.research_repo import commit_as_researcher

from labtui.core.onboarding.repo_scan import survey
from labtui.core.onboarding.setup_draft import propose_setup
from labtui.core.onboarding.setup_proposal import ask_model
from labtui.core.review.reviewer import standalone_llm
from labtui.core.settings.sections import LimitsSection

SHAPES = Path(__file__).parents[1] / "repo_shapes"
LIMITS = LimitsSection(run_timeout_s=120)  # as the bench ran them


def _replayed(shape: str, tmp_path: Path, llm_server, monkeypatch):
    root = commit_as_researcher(shutil.copytree(SHAPES / shape, tmp_path / shape))
    facts = survey(root)
    draft = propose_setup(facts, LIMITS)
    replies = [e["reply"] for e in exchanges(f"qwen15_init_{shape}") if e["status"] == 200]
    monkeypatch.setenv("LABTUI_API_BASE", llm_server.url)
    monkeypatch.setenv("LABTUI_API_KEY", "sk-test")
    llm_server.script("scripted-init", *replies)
    llm = standalone_llm("openai/scripted-init", 0.5, emit=lambda event: None)
    return draft, ask_model(llm, facts, draft, limits=LIMITS)


def _count(command: str, flag: str) -> int:
    words = shlex.split(command)
    return int(words[words.index(flag) + 1])


@pytest.mark.parametrize(
    ("shape", "metric", "length"),
    [
        ("char_tensorboard", "Loss/test", "--max-steps"),
        ("grokking_wandb", "validation/accuracy", "--num_steps"),
        ("tinynn_library", "val_acc", "--epochs"),
    ],
)
def test_what_the_model_copies_of_the_draft_stays_bounded_and_measured(
    shape, metric, length, tmp_path, llm_server, monkeypatch
):
    draft, proposal = _replayed(shape, tmp_path, llm_server, monkeypatch)
    assert proposal.refused == []
    assert metric in proposal.values["results"]["metrics"]
    assert proposal.values["results"] == draft.values["results"]
    command = proposal.values["experiment"]["command"]
    assert 0 < _count(command, length) < 10_000, "the run has an end"
    assert proposal.sizing is not None and proposal.sizing.proposal.count == _count(command, length)
    smoke = proposal.values["experiment"].get("smoke_command", "")
    assert smoke, "a smoke run that writes the metrics"


def test_a_results_file_from_a_date_that_never_happened_is_refused(
    tmp_path, llm_server, monkeypatch
):
    _draft, proposal = _replayed("hydra_colour", tmp_path, llm_server, monkeypatch)
    assert len(llm_server.requests_for("scripted-init")) == 2, "its first answer was asked again"
    assert any(
        "outputs/2023-10-05/20:48:10/main.py.stdout" in line and "reads no source ''" in line
        for line in proposal.refused
    )
    assert proposal.values["results"] == {
        "source": "stdout",
        "metrics": {"validation_accuracy": "higher"},
    }
    assert "trainer.max_epochs=" in proposal.values["experiment"]["command"]


def test_no_question_of_an_output_folder_where_the_numbers_do_not_need_one(tmp_path):
    for shape in ("grokking_wandb", "tinynn_library"):  # W&B into {out_dir}; metrics printed
        root = commit_as_researcher(shutil.copytree(SHAPES / shape, tmp_path / shape))
        draft = propose_setup(survey(root), LIMITS)
        assert not any("output-folder" in q for q in draft.open_questions), shape
