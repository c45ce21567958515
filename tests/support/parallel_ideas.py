"""TEST-ONLY: a moons project with two ideas run side by side (``experiment.parallel = 2``), for
the parallel-ideas tests of the local runner (tests/steps/test_parallel.py) and of Slurm
(tests/slurm/test_slurm_runs.py)."""

from __future__ import annotations

import json
import re

from labtui.core.checkpoints import CheckpointRequest, Decision
from support.research_script import (
    IDEA,
    MoonsResearch,
    last_user_text,
    scripted_plan,
    whole_file_edit,
)

SECOND = {
    "Name": "longer_training",
    "Title": "Does Training Twice as Long Help on Noisy Two Moons?",
    "Hypothesis": "The baseline stops before the test accuracy has converged.",
    "Experiment": "Double EPOCHS in experiment.py and compare test accuracy with the baseline.",
    "Interestingness": 3,
    "Feasibility": 8,
    "Novelty": 2,
}


class TwoIdeas(MoonsResearch):
    """TEST-ONLY: two ideas; the second (longer training) is edited in its own worktree."""

    def ideas(self, request):
        return self.answer_ideas(request, [IDEA, SECOND])

    def experiments(self, request):
        text = json.dumps(request["messages"])
        is_edit = not any(
            marker in text for marker in ("has finished. What it changed", "Plan the experiment")
        )
        if "Plan the experiment" in text and SECOND["Title"] in text:  # its own plan
            return scripted_plan(last_user_text(request), "Double EPOCHS")
        if is_edit and SECOND["Title"] in text:
            lane = self.root / ".labtui" / "worktrees" / SECOND["Name"]
            code = (lane / "experiment.py").read_text(encoding="utf-8")
            code = re.sub(r"^EPOCHS = \d+", "EPOCHS = 300", code, count=1, flags=re.MULTILINE)
            return whole_file_edit("experiment.py", code, "Train twice as long.")
        return super().experiments(request)


class StopAfterExperiments:
    """TEST-ONLY port: approves every checkpoint, keeps the experiments stage's question and
    asks the session to stop after that stage."""

    def __init__(self) -> None:
        self.session = None
        self.experiments: CheckpointRequest | None = None

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.stage == "experiments":
            self.experiments = request
            self.session.request_stop()
        return Decision("approve")
