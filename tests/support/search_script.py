"""TEST-ONLY scripted searches: a toy experiment whose score is a constant of its code (with a
seed's noise), and a scripted searcher that proposes changes and makes them as aider edits, one
after the other. Never used by the product.

The toy's score for seeds 0, 1, 2 is SCORE + 0, +0.004, -0.004: the baseline's three runs have a
standard deviation of 0.004, so with ``noise_sigmas = 2`` a change must gain more than 0.008.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.research_script import fenced_json, last_user_text, whole_file_edit

IDEA = {
    "Name": "higher_score",
    "Title": "A Higher Score",
    "Experiment": "Raise the toy's score.",
    "Interestingness": 3,
    "Feasibility": 3,
    "Novelty": 3,
}

TOY = '''\
"""A toy experiment: its score is SCORE, moved a little by the seed."""

import argparse
import json
import os

SCORE = 0.50
SEED_NOISE = {0: 0.0, 1: 0.004, 2: -0.004}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="run_0")
    out = parser.parse_args().out_dir
    os.makedirs(out, exist_ok=True)
    seed = int(os.environ.get("LABTUI_SEED", "0"))
    score = SCORE + SEED_NOISE.get(seed % 3, 0.0)
    print(f"score {score:.4f} seed {seed} budget {os.environ.get('LABTUI_RUN_BUDGET_S')}")
    with open(os.path.join(out, "final_info.json"), "w") as handle:
        json.dump({"toy": {"means": {"score": score}}}, handle)


if __name__ == "__main__":
    main()
'''


def with_score(code: str, score: float) -> str:
    return re.sub(r"^SCORE = .*$", f"SCORE = {score}", code, count=1, flags=re.MULTILINE)


def crashing(code: str) -> str:
    return code.replace(
        "    seed = int(", "    raise RuntimeError('the toy exploded')\n    seed = int(", 1
    )


def fixed(code: str) -> str:
    return code.replace("    raise RuntimeError('the toy exploded')\n", "", 1)


@dataclass
class Change:
    """One scripted step: the proposal's line and what the edit does to the code."""

    description: str
    edit: Callable[[str], str]
    fix: Callable[[str], str] | None = None  # what a fix request does (after a crash)


def score_change(score: float, why: str = "") -> Change:
    return Change(why or f"set SCORE to {score}", lambda code: with_score(code, score))


def constant_change(name: str, value: Any, description: str = "") -> Change:
    """Set the module constant ``name`` of the experiment to ``value``."""

    def edit(code: str) -> str:
        return re.sub(rf"^{name} = .*?$", f"{name} = {value!r}", code, count=1, flags=re.MULTILINE)

    return Change(description or f"set {name} to {value}", edit)


def sleeping(code: str) -> str:
    """The run says so and sleeps: a test kills labtui while it runs."""
    return code.replace(
        "def main() -> None:\n",
        "def main() -> None:\n    print('sleeping now', flush=True)\n    time.sleep(600)\n",
        1,
    )


PROPOSALS = (
    "You are running a hill-climb",
    "You are drafting",
    "You are improving",
    "You are fixing",
)


class ScriptedSearcher:
    """The experiments model of a search: each proposal takes the next change; the edit that
    follows applies it to the checkout's code as it is (found by the prompt's run id); a fix
    request applies the change's fix. Other requests (the plan) go to ``otherwise``."""

    def __init__(
        self,
        root: Path,
        changes: list[Change],
        otherwise: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.root = Path(root)
        self.changes = list(changes)
        self.otherwise = otherwise
        self.proposed: dict[str, Change] = {}  # description -> the change proposed
        self.by_run: dict[str, Change] = {}  # run number -> the change its edit made
        self.proposals = 0
        self.edits: list[str] = []

    def install(self, server) -> None:
        server.default("scripted-experiments", self.reply)

    def reply(self, request: dict[str, Any]) -> str:
        text = last_user_text(request)
        if text.startswith(PROPOSALS):
            change = self.changes.pop(0)
            self.proposed[change.description] = change
            self.proposals += 1
            return fenced_json(
                {
                    "description": change.description,
                    "change": f"{change.description}, by editing experiment.py directly.",
                }
            )
        run = re.search(r"\brun_(\d+)\b", text)
        if text.startswith("Make this change to") and run:
            change = next(c for d, c in self.proposed.items() if f"\n{d}, by editing" in text)
            self.by_run[run.group(1)] = change
            self.edits.append(change.description)
            code = self._code(run.group(1))
            return whole_file_edit("experiment.py", change.edit(code), change.description + ".")
        if re.match(r"run_\d+ failed", text) and run and run.group(1) in self.by_run:
            change = self.by_run[run.group(1)]
            assert change.fix is not None, f"no fix scripted for {change.description}"
            self.edits.append(f"fix: {change.description}")
            code = self._code(run.group(1))
            return whole_file_edit("experiment.py", change.fix(code), "Fix the crash.")
        assert self.otherwise is not None, f"not a search's request: {text[:200]}"
        return self.otherwise(request)

    def _code(self, run: str) -> str:
        return (self._checkout(run) / "experiment.py").read_text(encoding="utf-8")

    def _checkout(self, number: str) -> Path:
        """The worktree aider edits: the climb's, or the tree worker's that is on the node of
        run ``number``."""
        for folder in sorted((self.root / ".labtui" / "worktrees").glob("*")):
            branch = subprocess.run(
                ["git", "branch", "--show-current"], cwd=folder, capture_output=True, text=True
            ).stdout.strip()
            if branch.startswith("labtui/climb/") or branch.endswith(f"/node-{number}"):
                return folder
        raise AssertionError(f"no worktree works on run_{number}")


def toy_session(root: Path, llm_url: str, arxiv_url: str, strategy: str, section: Any):
    """A session on a project with the toy experiment, its baseline, IDEA chosen and the search
    ``strategy`` set up with ``section`` (its [climb] or [tree]); ``session.events`` collects
    what it emits from here on."""
    from conftest import wire_project

    from labtui.core.workspace.project import Project

    project = Project.create(root, "moons")
    (project.root / "experiment.py").write_text(TOY)
    (project.root / "ideas.json").write_text(json.dumps([IDEA]))
    project.commit("test: the toy experiment and its idea")
    wire_project(project.root, llm_url, arxiv_url)
    return _searching(project, strategy, section, IDEA["Name"])


def seed_idea_session(root: Path, llm_url: str, arxiv_url: str, idea: str, section: Any):
    """A session on the moons template as it is, its seed idea ``idea`` chosen, its baseline
    run and a climb set up with ``section``: where the real model's recorded climbs ran."""
    from conftest import wire_project

    from labtui.core.settings.templates import find_template
    from labtui.core.workspace.project import Project

    project = Project.create(root, "moons")
    seeds = json.loads((find_template("moons") / "seed_ideas.json").read_text())
    chosen = next(seed for seed in seeds if seed["Name"] == idea)
    (project.root / "ideas.json").write_text(json.dumps([chosen]))
    wire_project(project.root, llm_url, arxiv_url)
    project.commit("test: the moons seed idea the recorded climb worked on, the servers wired")
    return _searching(project, "climb", section, idea)


def _searching(project: Any, strategy: str, section: Any, idea: str):
    from labtui.core.events import StageFinished
    from labtui.core.pipeline.session import Session
    from labtui.core.steps.baseline import run_baseline

    session = Session.open(project.root)
    session.config.experiment.strategy = strategy
    setattr(session.config, strategy, section)
    run_baseline(session.project, session.emit)
    session.state.finished["novelty"] = StageFinished(stage="novelty", result={"idea": idea})
    session.events = []
    session.bus.subscribe(session.events.append)
    return session


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout
