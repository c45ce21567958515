"""Both search strategies from template to reviewed PDF, for real: `labtui run --headless
--auto` on the moons template against the scripted servers, killed with SIGKILL while an
attempt's run is under way, then resumed: the finished attempts are not made again, the search
goes on from its ledger, and the paper reports its best result with the ledger as an appendix,
every number traced to a run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import kill_a_run_when, run_labtui
from support.research_script import MoonsResearch
from support.search_script import Change, ScriptedSearcher, constant_change, sleeping

from labtui.core.events import SearchEnded, SearchStep, StageFinished
from labtui.core.journal import read_events
from labtui.core.pdf.document import pdf_text
from labtui.core.settings.config import load_config, save_config
from labtui.core.stage_list import STAGES

pytestmark = pytest.mark.slow


class SearchResearch(MoonsResearch):
    """TEST-ONLY: the moons research, with a scripted searcher for the experiments and a
    write-up that quotes the best run the search merged into the project."""

    def __init__(self, root: Path, changes: list[Change]) -> None:
        super().__init__(root)
        self.searcher = ScriptedSearcher(root, changes, otherwise=super().experiments)

    def experiments(self, request):
        return self.searcher.reply(request)

    def _accuracy(self, run_id: str) -> float:
        if run_id != "run_0":
            runs = sorted(
                self.root.glob("run_*/final_info.json"), key=lambda p: int(p.parent.name[4:])
            )
            run_id = runs[-1].parent.name
        return super()._accuracy(run_id)


def _configure(root: Path, strategy: str, **settings) -> None:
    config = load_config(root)
    config.experiment.strategy = strategy
    section = getattr(config, strategy)
    for name, value in {
        "metric": "test_accuracy_mean",
        "run_budget_s": 60.0,
        "overrun_s": 10.0,
        "baseline_repeats": 1,
        "seeds": 1,
        **settings,
    }.items():
        setattr(section, name, value)
    save_config(config, root)


def _kill_while_sleeping(root: Path, recorded: int) -> None:
    """Start the pipeline, and SIGKILL it (and every process in the project) while a run of
    the sleeping change is under way, once ``recorded`` steps are in the ledger."""
    journal = root / ".labtui" / "journal.jsonl"
    kill_a_run_when(
        root,
        lambda: _sleeping(journal) and journal.read_text().count('"SearchStep"') >= recorded,
        f"a run of the sleeping change, and {recorded} step(s) recorded",
    )


def _sleeping(journal: Path) -> bool:
    """The run of the sleeping change has said so (not the coder's reply that wrote it)."""
    if not journal.exists():
        return False
    return any(
        '"type": "LogLine"' in line and "sleeping now" in line
        for line in journal.read_text().splitlines()
    )


def _assert_reviewed_search_paper(root: Path, strategy: str) -> dict:
    events = read_events(root / ".labtui" / "journal.jsonl")
    done = [e.stage for e in events if isinstance(e, StageFinished) and e.status == "done"]
    assert sorted(set(done), key=STAGES.index) == list(STAGES)
    result = next(
        e.result for e in events if isinstance(e, StageFinished) and e.stage == "experiments"
    )
    assert result["strategy"] == strategy and result["metric"] == "moons.test_accuracy_mean"
    ledger = root / result["ledger"]
    assert ledger.is_file()
    tex = (root / "latex" / "template.tex").read_text()
    assert "\\section{The search ledger}" in tex and "\\begin{longtable}" in tex
    text = " ".join(pdf_text(root / "paper.pdf").split())
    assert "The search ledger" in text
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["untraced"] == [], provenance["untraced"]
    assert any(t["run"].startswith(f"{strategy}-") for t in provenance["traced"]), (
        "the ledger's numbers trace to the ledger's runs"
    )
    saved = json.loads((root / "review.json").read_text())
    assert saved["decision"] in ("Accept", "Reject")
    assert any(isinstance(e, SearchEnded) for e in events)
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    )
    assert status.stdout == "", status.stdout
    return result


def _steps_of(root: Path) -> list[int]:
    events = read_events(root / ".labtui" / "journal.jsonl")
    return [e.step for e in events if isinstance(e, SearchStep)]


def test_a_climb_killed_mid_attempt_resumes_and_ends_at_a_reviewed_paper(
    moons_project, llm_server, network_guard
):
    root = moons_project
    # moons' accuracy moves in steps of 0.001 and its runs report a standard error of about
    # 0.002: half a sigma lets the 120 epochs (+0.0023) count as better
    _configure(root, "climb", max_runs=3, fix_attempts=1, noise_sigmas=0.5)
    research = SearchResearch(
        root,
        [
            constant_change("EPOCHS", 120, "train for 120 epochs"),
            Change("sleep before training", sleeping),
            constant_change("HIDDEN_UNITS", 64, "widen the hidden layer to 64 units"),
            constant_change("BATCH_SIZE", 16, "halve the batch size"),
        ],
    )
    research.install(llm_server)
    _kill_while_sleeping(root, recorded=1)
    before = _steps_of(root)
    assert before == [1], "attempt 1 was recorded, attempt 2 was cut short"

    result = run_labtui("run", "--headless", "--auto", cwd=root, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert _steps_of(root) == [1, 2, 3], "no attempt was made twice"
    assert research.searcher.proposals == 4
    saved = _assert_reviewed_search_paper(root, "climb")
    assert saved["best"]["step"] == 1 and "run_1" in saved["runs"]
    tags = subprocess.run(["git", "tag"], cwd=root, capture_output=True, text=True).stdout
    assert "labtui/abandoned/climb-wider_hidden_layer-" in tags, "the cut attempt is kept"
    printed = " ".join(result.stdout.split())
    assert "climb attempt 2: discard" in printed and "climb ended (3 attempts made)" in printed
    assert llm_server.errors == []
    assert network_guard.read_text() == ""


def test_a_tree_search_with_two_workers_killed_mid_node_resumes_and_ends_at_a_reviewed_paper(
    moons_project, llm_server, network_guard
):
    root = moons_project
    _configure(root, "tree", max_nodes=4, drafts=2, workers=2, finalists=2, debug_prob=0.5)
    research = SearchResearch(
        root,
        [
            constant_change("EPOCHS", 120, "a draft with 120 epochs"),
            Change("a draft that sleeps", sleeping),
            constant_change("HIDDEN_UNITS", 48, "a draft with 48 hidden units"),
            constant_change("BATCH_SIZE", 16, "halve the batch size"),
            constant_change("LEARNING_RATE", 0.005, "halve the learning rate"),
            constant_change("EPOCHS", 100, "train for 100 epochs"),
        ],
    )
    research.install(llm_server)
    _kill_while_sleeping(root, recorded=1)
    before = _steps_of(root)
    assert len(before) == 1, "one worker's node was recorded while the other's run slept"

    result = run_labtui("run", "--headless", "--auto", cwd=root, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    after = _steps_of(root)
    assert sorted(after) == [1, 2, 3, 4] and after[: len(before)] == before, (
        "the nodes finished before the kill are not grown again"
    )
    saved = _assert_reviewed_search_paper(root, "tree")
    tags = subprocess.run(["git", "tag"], cwd=root, capture_output=True, text=True).stdout
    assert "labtui/abandoned/tree-wider_hidden_layer-node-" in tags, "the cut node is kept"
    assert saved["best"]["step"] in (1, 2, 3, 4) and saved["runs"][-1] == saved["best"]["run"]
    assert llm_server.errors == []
    assert network_guard.read_text() == ""
