"""The real pipeline under the TUI: a moons project, the scripted LLM server and the loopback arXiv
server, checkpoints answered with the keyboard. Asserts on the engine's decisions (the journal),
on git, and on what the next stages used. Then the app is reopened and resumes from the journal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support.pilot import wait_for
from textual.pilot import Pilot

from labtui.core.events import CheckpointDecided, ResearcherNote, StageFinished
from labtui.core.journal import read_events
from labtui.core.pipeline.session import Session
from labtui.tui.app import LabtuiApp
from labtui.tui.screens import CheckpointScreen, NoteScreen

pytestmark = pytest.mark.slow
SIZE = (100, 30)


def retitle(path: Path) -> str:
    """What the researcher does in $EDITOR: give the proposed idea a better title."""
    ideas = json.loads(path.read_text())
    for idea in ideas:
        if idea["Name"] == "wider_hidden_layer":
            idea["Title"] = "Width Under Label Noise"
    path.write_text(json.dumps(ideas, indent=1))
    return ""


async def next_checkpoint(pilot: Pilot, after: object = None, timeout: float = 90) -> str:
    """Wait for a checkpoint modal other than ``after``; its stage."""
    app = pilot.app
    await wait_for(
        pilot, lambda: isinstance(app.screen, CheckpointScreen) and app.screen is not after, timeout
    )
    await pilot.pause()
    return app.screen.request.stage


def run(app: LabtuiApp, steps: Callable[[Pilot], object]) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await steps(pilot)

    asyncio.run(main())


def decisions(root: Path) -> list[tuple[str, str, str]]:
    events = read_events(root / ".labtui" / "journal.jsonl")
    return [(e.stage, e.action, e.note) for e in events if isinstance(e, CheckpointDecided)]


def test_checkpoint_keys_drive_the_real_pipeline_and_reopening_resumes(project, llm_server):
    root = project.root
    app = LabtuiApp(Session.open(root), edit_file=retitle)

    async def answer(pilot: Pilot) -> None:
        assert await next_checkpoint(pilot) == "literature"
        literature = pilot.app.screen
        await pilot.press("a")
        assert await next_checkpoint(pilot, after=literature) == "ideas"
        first = pilot.app.screen
        await pilot.press("r", *"focus on label noise", "enter")  # revise with a note
        assert await next_checkpoint(pilot, after=first) == "ideas"
        second = pilot.app.screen
        await pilot.press("e")  # edit ideas.json ($EDITOR stand-in), then asked again
        assert await next_checkpoint(pilot, after=second) == "ideas"
        assert "Width Under Label Noise" in pilot.app.screen.request.body
        third = pilot.app.screen
        await pilot.press("a")
        assert await next_checkpoint(pilot, after=third) == "novelty"
        novelty = pilot.app.screen
        await pilot.press("s")  # skip
        assert await next_checkpoint(pilot, after=novelty) == "plan"
        assert "Double HIDDEN_UNITS" in pilot.app.screen.request.body
        plan = pilot.app.screen
        await pilot.press("a")
        assert await next_checkpoint(pilot, after=plan, timeout=120) == "experiments"
        await pilot.press("q")  # abort: safe stop, resumable
        await wait_for(pilot, lambda: pilot.app.outcome is not None, timeout=60)
        await pilot.press("q")

    run(app, answer)
    assert app.outcome == "stopped"
    assert decisions(root) == [
        ("literature", "approve", ""),
        ("ideas", "revise", "focus on label noise"),
        ("ideas", "edit", "ideas.json"),
        ("ideas", "approve", ""),
        ("novelty", "skip", ""),
        ("plan", "approve", ""),
        ("experiments", "abort", ""),
    ]
    ideas_prompts = json.dumps(llm_server.requests_for("scripted-ideas")[-1]["messages"])
    assert "focus on label noise" in ideas_prompts, "the revision note reached the agents"
    assert "ideas: researcher edited ideas.json" in project.repo.git.log("--format=%s")
    assert "Width Under Label Noise" in json.dumps(llm_server.requests_for("scripted-novelty"))
    assert not project.repo.is_dirty(untracked_files=True), "every change is committed"

    # Reopen: the panes show the journal, and the pipeline continues at experiments.
    reopened = LabtuiApp(Session.open(root))
    seen: dict[str, str] = {}

    async def resume(pilot: Pilot) -> None:
        assert await next_checkpoint(pilot, timeout=120) == "experiments"
        dialogue = pilot.app.main_screen.dialogue.log_widget
        seen["dialogue"] = "\n".join(strip.text for strip in dialogue.lines)
        seen["stages"] = str(pilot.app.main_screen.status.query_one("#status-stages").render())
        await pilot.press("n", *"keep three seeds", "enter")  # a note, in the middle of it all
        await pilot.pause()
        assert not isinstance(pilot.app.screen, NoteScreen)
        await pilot.press("q")
        await wait_for(pilot, lambda: pilot.app.outcome is not None, timeout=60)
        await pilot.press("q")

    run(reopened, resume)
    assert "you chose skip" in seen["dialogue"], "history from the journal is on screen"
    assert "✔ ideas" in seen["stages"] and "↷ novelty" in seen["stages"]
    events = read_events(root / ".labtui" / "journal.jsonl")
    finished = [(e.stage, e.status) for e in events if isinstance(e, StageFinished)]
    assert finished == [
        ("literature", "done"),
        ("ideas", "done"),
        ("novelty", "skipped"),
        ("plan", "done"),
    ]
    assert [e.text for e in events if isinstance(e, ResearcherNote)] == ["keep three seeds"]


def test_the_review_checkpoint_runs_an_improvement_round_from_the_keyboard(project):
    """Everything approved up to the review; there `i` revises, recompiles and reviews again,
    and the review checkpoint comes back with the scores before and after; `a` accepts."""
    root = project.root
    app = LabtuiApp(Session.open(root))
    shown: list[dict] = []

    async def answer(pilot: Pilot) -> None:
        screen = None
        while await next_checkpoint(pilot, after=screen, timeout=120) != "review":
            screen = pilot.app.screen
            await pilot.press("a")
        screen = pilot.app.screen
        shown.append(screen.request.details)
        await pilot.press("i")
        assert await next_checkpoint(pilot, after=screen, timeout=120) == "review"
        shown.append(pilot.app.screen.request.details)
        await pilot.press("a")
        await wait_for(pilot, lambda: pilot.app.outcome is not None, timeout=60)
        await pilot.press("q")

    run(app, answer)
    assert app.outcome == "finished"
    assert [d["overall"] for d in shown] == [3.0, 4.0]
    assert shown[1]["improvements"][0]["before"]["Overall"] == 3.0
    assert decisions(root)[-2:] == [("review", "improve", ""), ("review", "approve", "")]
    assert "review: improvement round 1" in project.repo.git.log("--format=%s")
