"""Checkpoints: the pipeline asks, a front end answers, and both sides are journaled.

A front end implements ``CheckpointPort.ask`` (blocking until the researcher decides). The engine
only sees ``Decision`` values; it never knows whether a TUI, a terminal prompt or ``--auto``
answered.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .events import CheckpointDecided, CheckpointRequested, Event

ACTIONS = ("approve", "revise", "skip", "abort")


@dataclass(frozen=True)
class CheckpointRequest:
    checkpoint_id: str
    stage: str
    title: str
    body: str  # Markdown: what is proposed, for the researcher to judge
    options: tuple[str, ...] = ACTIONS


@dataclass(frozen=True)
class Decision:
    action: str  # one of ACTIONS
    note: str = ""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown checkpoint action {self.action!r}; use one of {ACTIONS}")


class CheckpointPort(Protocol):
    def ask(self, request: CheckpointRequest) -> Decision:
        """Block until the researcher decides."""
        ...


class AutoApprove:
    """``--auto``: every checkpoint is approved at once (and still journaled)."""

    def ask(self, request: CheckpointRequest) -> Decision:
        return Decision("approve")


class Checkpoints:
    """Asks the port and records request and decision as events."""

    def __init__(self, port: CheckpointPort, emit: Callable[[Event], None]) -> None:
        self.port = port
        self._emit = emit
        self._ids = itertools.count(1)

    def ask(
        self, stage: str, title: str, body: str, options: tuple[str, ...] = ACTIONS
    ) -> Decision:
        checkpoint_id = f"{stage}-{next(self._ids)}"
        request = CheckpointRequest(checkpoint_id, stage, title, body, options)
        self._emit(
            CheckpointRequested(
                stage=stage,
                checkpoint_id=checkpoint_id,
                title=title,
                body=body,
                options=list(options),
            )
        )
        decision = self.port.ask(request)
        self._emit(
            CheckpointDecided(
                stage=stage, checkpoint_id=checkpoint_id, action=decision.action, note=decision.note
            )
        )
        return decision
