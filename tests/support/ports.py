"""TEST-ONLY checkpoint ports that answer as a script says, and the journal of a test project."""

from __future__ import annotations

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.journal import read_events


class ScriptedPort:
    """TEST-ONLY checkpoint port: answers from a list and records what it was asked. The
    checkpoints of ``passing`` stages (by default the literature review, which most tests only
    pass through) are approved without taking a decision from the list, and not recorded."""

    def __init__(self, *decisions: Decision, passing: tuple[str, ...] = ("literature",)) -> None:
        self.decisions = list(decisions)
        self.passing = passing
        self.asked: list[CheckpointRequest] = []

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.stage in self.passing:
            return Decision("approve")
        self.asked.append(request)
        return self.decisions.pop(0) if self.decisions else Decision("abort", "end of script")


def _journal(project):
    return read_events(project.root / ".labtui" / "journal.jsonl")
