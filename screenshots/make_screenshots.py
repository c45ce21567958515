"""Regenerate the README screenshots: `.venv/bin/python screenshots/make_screenshots.py [--keep DIR]`.

A real moons project runs end to end against the test doubles (the scripted LLM server and the
loopback arXiv server from tests/, so no model or network is needed and the pictures are
repeatable); then the app opens on it and repaints every pane from the journal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
SIZE = (140, 40)


def build_project(root: Path) -> None:
    from conftest import TEST_API_KEY, wire_project
    from fake_arxiv import FakeArxiv
    from research_script import MoonsResearch
    from scripted_llm import ScriptedLLMServer

    os.environ["LABTUI_API_KEY"] = TEST_API_KEY
    labtui = str(Path(sys.executable).with_name("labtui"))
    subprocess.run(
        [labtui, "new", str(root), "--template", "moons"], check=True, capture_output=True
    )
    with ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
        wire_project(root, llm.url, arxiv.url)
        MoonsResearch(root).install(llm)
        subprocess.run(
            [labtui, "run", "--headless", "--auto"], cwd=root, check=True, capture_output=True
        )


async def shoot(session, name: str, *, wait_for: str) -> Path:
    from labtui.tui.app import LabtuiApp

    app = LabtuiApp(session, auto=True)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if wait_for in str(app.sub_title) or wait_for in type(app.screen).__name__:
                break
        await pilot.pause(0.2)
        return Path(app.save_screenshot(filename=f"{name}.svg", path=str(HERE)))


def main() -> None:
    from labtui.core.pipeline import Session

    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", help="build the project here and keep it")
    args = parser.parse_args()
    # A fixed folder: paths shown on screen stay the same from one regeneration to the next.
    tmp = Path(tempfile.gettempdir()) / "labtui-screenshots"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    root = Path(args.keep or Path(tmp) / "wider-hidden-layer")
    try:
        if not (root / "review.json").exists():
            build_project(root)
        print(asyncio.run(shoot(Session.open(root), "main", wait_for="finished")))
        os.environ.pop("LABTUI_API_KEY")
        bare = Path(tmp) / "no-model"
        labtui = str(Path(sys.executable).with_name("labtui"))
        subprocess.run([labtui, "new", str(bare), "--no-baseline"], check=True, capture_output=True)
        print(asyncio.run(shoot(Session.open(bare), "no_model", wait_for="NoModelScreen")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
