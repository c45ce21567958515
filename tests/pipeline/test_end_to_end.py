"""From template to reviewed PDF, for real: `labtui new` + `labtui run --headless --auto` against the
scripted LLM server and the loopback arXiv server. Real aider edits, real experiment runs, real
matplotlib, real latexmk, real PyMuPDF. A second test kills the run with SIGKILL and resumes it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TEST_API_KEY, kill_a_run_when, run_labtui
from support.pilot import wait_for

from labtui.core.events import StageFinished, StageStarted
from labtui.core.journal import read_events
from labtui.core.pdf.document import pdf_text
from labtui.core.review.form import parse_review
from labtui.core.settings.config import load_config, save_config
from labtui.core.settings.sections import ReviewSection
from labtui.core.stage_list import STAGES

pytestmark = pytest.mark.slow


def _journal(root: Path):
    return read_events(root / ".labtui" / "journal.jsonl")


def _commits_touching(root: Path, path: str, prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%H %s", "--", path],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in out.splitlines() if line.split(" ", 1)[1].startswith(prefix)]


def assert_reviewed_paper(root: Path) -> None:
    """Everything the foundation promises at the end of a run, checked on disk and in the journal."""
    archive = json.loads((root / "ideas.json").read_text())
    idea = next(i for i in archive if i["Name"] == "wider_hidden_layer")
    evidence = idea["novelty_evidence"]
    assert evidence["decision"] == "novel"
    assert evidence["papers_seen"], "the novelty decision must list the papers it saw"
    assert evidence["closest"][0]["arxiv_id"]

    assert _commits_touching(root, "experiment.py", "experiments:"), (
        "no aider commit changed experiment.py"
    )
    info = json.loads((root / "run_1" / "final_info.json").read_text())
    accuracy = info["moons"]["means"]["test_accuracy_mean"]
    record = json.loads((root / "run_1" / "labtui_run.json").read_text())
    assert record["returncode"] == 0 and record["commit"]
    assert record["hardware"]["cores"] >= 1 and record["hardware"]["memory_mb"] > 0

    descriptions = json.loads((root / "figures.json").read_text())
    assert set(descriptions) == {p.name for p in root.glob("*.png")} and all(descriptions.values())

    notebook = (root / "notes.md").read_text()
    assert "Double the hidden layer" in notebook and "def main(" not in notebook
    assert f"{accuracy:.4g}" in notebook, "the notebook copies the run's numbers"

    assert (root / "train_loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = pdf_text(root / "paper.pdf")
    assert f"{accuracy:.3f}" in text, "the PDF must report the run's result"

    saved = json.loads((root / "review.json").read_text())
    meta = parse_review(saved["meta_review"])
    assert saved["decision"] in ("Accept", "Reject") and meta.decision in ("Accept", "Reject")
    assert [parse_review(r).overall for r in saved["reviews"]], "every review is on the form"
    assert idea["Score"] == saved["overall"] and idea["status"] == "done"

    literature = json.loads((root / "literature.json").read_text())
    assert literature["papers"] and all(p["summary"] for p in literature["papers"])
    tex = (root / "latex" / "template.tex").read_text()
    for paper in literature["papers"]:
        assert f"@misc{{{paper['bibtex_key']}," in tex, "the reviewed papers are citable"
    assert _commits_touching(root, "latex/template.tex", "writeup: cite the literature review")
    cites = _commits_touching(root, "latex/template.tex", "writeup: cite ")
    assert cites, "a citation round added a \\cite"
    new_key = cites[0].split("writeup: cite ", 1)[1]
    assert f"\\citep{{{new_key}}}" in tex and f"@misc{{{new_key}," in tex
    title = re.search(rf"@misc\{{{new_key},\s*title\s*=\s*\{{\{{([^}}]+)\}}\}}", tex).group(1)
    pdf_words = " ".join(pdf_text(root / "paper.pdf").split())
    assert " ".join(title.split()[:3]) in pdf_words, "the cited paper is in the PDF's references"
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["traced"] and provenance["untraced"] == [], "every number traced to a run"
    assert {t["run"] for t in provenance["traced"]} >= {"run_0", "run_1"}

    events = _journal(root)
    done = [e.stage for e in events if isinstance(e, StageFinished) and e.status == "done"]
    assert sorted(set(done), key=STAGES.index) == list(STAGES)
    kinds = {e.type for e in events}
    assert {
        "AgentMessage",
        "CodeDiff",
        "LogLine",
        "RunFinished",
        "LatexUpdated",
        "CompileResult",
        "CostUpdate",
        "CheckpointRequested",
        "CheckpointDecided",
    } <= kinds
    journal_text = (root / ".labtui" / "journal.jsonl").read_text()
    assert TEST_API_KEY not in journal_text
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True
    )
    assert status.stdout == "", f"every artifact change must be a commit:\n{status.stdout}"
    assert subprocess.run(["git", "tag"], cwd=root, capture_output=True, text=True).stdout.strip()


def test_template_to_reviewed_pdf(moons_project, llm_server, arxiv_server, network_guard):
    config = load_config(moons_project)
    # The reviewer as a researcher would run it: 3 reviewers reflecting up to twice, an Area
    # Chair, one few-shot example, and one improvement round before the (auto-approved) checkpoint.
    config.review = ReviewSection(ensemble=3, reflections=2, improvements=1)
    save_config(config, moons_project)
    started = time.monotonic()
    result = run_labtui("run", "--headless", "--auto", cwd=moons_project)
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "pipeline finished" in result.stdout
    assert_reviewed_paper(moons_project)
    assert llm_server.errors == []
    assert arxiv_server.hits, "novelty must have searched the (loopback) arXiv"
    assert network_guard.read_text() == "", "nothing may reach for the network (price maps…)"
    print(f"\nend-to-end pipeline wall time: {elapsed:.1f} s")
    saved = json.loads((moons_project / "review.json").read_text())
    assert len(saved["reviews"]) == 3 and saved["improvements"][0]["round"] == 1
    before, after = saved["improvements"][0]["before"], saved["improvements"][0]["after"]
    assert (before["Overall"], after["Overall"]) == (3.0, 4.0), "revised, recompiled, re-reviewed"
    assert "| Overall | 4.00 ± 0.00 /10 | 4 | 4 | 4 | 3.00 → 4.00 |" in result.stdout

    # The same paper, reviewed again without the project: `labtui review` on the pipeline's PDF.
    env = {
        **os.environ,
        "LABTUI_API_BASE": llm_server.url,
        "LABTUI_MODEL": "openai/scripted-review",
    }
    again = run_labtui("review", str(moons_project / "paper.pdf"), "--json", cwd="/", env=env)
    assert again.returncode == 0, again.stderr
    assert parse_review(json.loads(again.stdout)["meta_review"]).decision in ("Accept", "Reject")


def test_killed_run_resumes_to_the_same_end(moons_project, llm_server, network_guard):
    root = moons_project
    journal = root / ".labtui" / "journal.jsonl"
    # Kill in the middle of the experiment run itself: the harshest point to resume from.
    killed = kill_a_run_when(
        root,
        lambda: journal.exists() and '"run_id": "run_1"' in journal.read_text(),
        "the run reaching the kill point",
        timeout_s=600,
    )
    assert killed == -signal.SIGKILL
    before = _journal(root)
    finished_before = {
        e.stage for e in before if isinstance(e, StageFinished) and e.status == "done"
    }
    assert "review" not in finished_before

    result = run_labtui("run", "--headless", "--auto", cwd=root)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert_reviewed_paper(root)
    assert network_guard.read_text() == ""
    after = _journal(root)
    for stage in finished_before:  # work finished before the crash is not redone
        starts = [e for e in after if isinstance(e, StageStarted) and e.stage == stage]
        assert len(starts) == 1, f"stage {stage} ran again after resume"


def test_the_app_runs_the_real_pipeline_to_a_reviewed_paper(moons_project):
    """The same run inside the Textual app: aider, runs and TeX under a UI that captures stdout."""
    import asyncio

    from labtui.core.pipeline.session import Session
    from labtui.tui.app import LabtuiApp

    async def drive() -> str:
        app = LabtuiApp(Session.open(moons_project), auto=True)
        async with app.run_test(size=(120, 36)) as pilot:
            # A hang, not a slow machine, is what reaches this deadline.
            await wait_for(pilot, lambda: app.outcome is not None, timeout=900)
            await wait_for(pilot, lambda: app.pending_events == 0)
            return f"{app.outcome}: {app.progress.phase} {app.progress.stages}"

    outcome = asyncio.run(drive())
    assert outcome.startswith("finished"), outcome
    assert "'review': 'done'" in outcome
    assert_reviewed_paper(moons_project)


def test_the_network_guard_refuses_and_records(network_guard):
    """The guard the end-to-end tests rely on: refused before any packet leaves the machine."""
    import sys

    probe = "import socket; socket.getaddrinfo('pypi.org', 443)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode != 0 and "refused by the test guard" in result.stderr
    assert "lookup pypi.org" in network_guard.read_text()
    local = "import socket; socket.getaddrinfo('127.0.0.1', 80)"
    assert subprocess.run([sys.executable, "-c", local], capture_output=True).returncode == 0
