"""Checkpoints: the pipeline asks, a front end answers, and both sides are journaled.

A front end implements ``CheckpointPort.ask`` (blocking until the researcher decides). The engine
only sees ``Decision`` values; it never knows whether a TUI, a terminal prompt or ``--auto``
answered.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import LabtuiError
from .events import CheckpointDecided, CheckpointRequested, Event, ResearcherNote

# `edit` means: the researcher changed the checkpoint's product file; commit it and ask again.
ACTIONS = ("approve", "revise", "edit", "skip", "abort")
# `waive` (with the reason as its note) accepts what blocks approval, e.g. numbers of the paper
# that match no run; offered only where a stage blocks approval, and asked again after.
WAIVE = "waive"
BLOCKED_ACTIONS = ("revise", "edit", WAIVE, "abort")  # no approve, and no skip around it
# `improve` revises the product by its own judgement (the paper by its review) and asks again;
# offered only where a stage can improve what it judged.
IMPROVE = "improve"
# `retry` runs an interrupted stage again (offered at the checkpoint an interrupt opens).
RETRY = "retry"
INTERRUPTED_ACTIONS = (RETRY, "revise", "skip", "abort")
# `rewind` returns the project to the commit before a stage started (``Decision.to_stage``;
# empty: the stage before the one asking) and goes on from there; the work after is kept on a
# tag. Offered at the pipeline's checkpoints; a rewind the session was asked for answers any.
REWIND = "rewind"


@dataclass(frozen=True)
class CheckpointRequest:
    checkpoint_id: str
    stage: str
    title: str
    body: str  # Markdown: what is proposed, for the researcher to judge
    options: tuple[str, ...] = ACTIONS
    kind: str = "stage"  # literature, ideas, novelty, plan, run, plots, section, paper, review
    product: str = ""  # project-relative file that `edit` opens; "" when there is none
    # What the researcher may pick from in the product (the round's idea names), for a picker.
    subjects: tuple[str, ...] = ()
    # Structured facts for a front end to lay out (the review's scores), beside the Markdown.
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    action: str  # one of ACTIONS
    note: str = ""
    # With ``edit``: the researcher's marks of the checkpoint's subjects ({idea name: "chosen" |
    # "rejected" | "proposed"}), which the stage applies to its product instead of a file edit.
    picks: Mapping[str, str] = field(default_factory=dict)
    # With ``rewind``: the stage to go back to ('' for the stage before the one asking).
    to_stage: str = ""

    def __post_init__(self) -> None:
        if self.action not in (*ACTIONS, WAIVE, IMPROVE, RETRY, REWIND):
            raise ValueError(f"unknown checkpoint action {self.action!r}; use one of {ACTIONS}")


class RewindRequested(BaseException):
    """A checkpoint was answered with ``rewind``: raised out of the stage (whose own
    ``except Exception`` must not take it) to the pipeline, which rewinds and goes on."""

    def __init__(self, stage: str, to_stage: str, note: str) -> None:
        super().__init__(to_stage or f"the stage before {stage}")
        self.stage = stage  # the stage whose checkpoint was answered
        self.to_stage = to_stage
        self.note = note


class CheckpointPort(Protocol):
    def ask(self, request: CheckpointRequest) -> Decision:
        """Block until the researcher decides."""
        ...


class AutoApprove:
    """``--auto``: every checkpoint is approved at once (and still journaled). Where there is
    nothing to approve but a skip (a run that failed every attempt) it skips; where approval is
    blocked (numbers that match no run, say), it stops safely instead: only a researcher may
    waive."""

    unattended = True  # no researcher answers: what only a researcher may accept is not

    def ask(self, request: CheckpointRequest) -> Decision:
        if request.kind == "interrupted":  # an interrupt is the researcher's: they decide
            return Decision("abort", "interrupted under --auto; run labtui again to go on")
        if "approve" in request.options:
            return Decision("approve")
        if "skip" in request.options:  # a run that failed every attempt: on to the next
            return Decision("skip")
        return Decision(
            "abort", f"--auto cannot approve this: {request.title}; resume without --auto"
        )


class Checkpoints:
    """Asks the port and records request and decision as events."""

    def __init__(
        self, port: CheckpointPort, emit: Callable[[Event], None], *, unattended: bool = False
    ) -> None:
        self.port = port
        self.unattended = unattended  # --auto: every question is answered without a researcher
        self._emit = emit
        self._ids = itertools.count(1)

    def ask(
        self,
        stage: str,
        title: str,
        body: str,
        options: tuple[str, ...] = ACTIONS,
        *,
        kind: str = "stage",
        product: str = "",
        subjects: tuple[str, ...] = (),
        details: dict[str, Any] | None = None,
    ) -> Decision:
        if not product:
            options = tuple(option for option in options if option != "edit")
        checkpoint_id = f"{stage}-{next(self._ids)}"
        request = CheckpointRequest(
            checkpoint_id,
            stage,
            title,
            body,
            options,
            kind,
            product,
            tuple(subjects),
            details or {},
        )
        self._emit(
            CheckpointRequested(
                stage=stage,
                checkpoint_id=checkpoint_id,
                title=title,
                body=body,
                options=list(options),
                kind=kind,
                product=product,
                subjects=list(subjects),
                details=details or {},
            )
        )
        decision = self.port.ask(request)
        # A rewind the session was asked for (it names its stage) may answer any question.
        offered = decision.action in options or (decision.action == REWIND and decision.to_stage)
        if not offered:
            raise LabtuiError(
                f"the checkpoint {checkpoint_id} was answered with {decision.action!r}, "
                f"which it did not offer ({', '.join(options)})",
                "this is a front-end bug; the project is resumable",
            )
        self._emit(
            CheckpointDecided(
                stage=stage,
                checkpoint_id=checkpoint_id,
                action=decision.action,
                note=decision.note,
                picks=dict(decision.picks),
            )
        )
        if decision.action == REWIND:
            raise RewindRequested(stage, decision.to_stage, decision.note)
        return decision


class AnswerablePort:
    """The front end's port as a session asks it: a rewind asked for while a question waits
    answers that question (whichever answers first decides), and one asked for between
    questions answers the next. The front end's own ``ask`` runs in a thread of its own so
    the session can stop waiting for it; its late answer to a decided question is dropped
    (front ends close the question when they see it decided)."""

    def __init__(self, port: CheckpointPort, before_ask: Callable[[], None] = lambda: None) -> None:
        self.port = port
        self._before_ask = before_ask  # e.g. an interrupt pending is spent: the pause is here
        self._lock = threading.Lock()
        self._open: queue.Queue[tuple[str, Any]] | None = None
        self._pending: Decision | None = None
        self.asking = threading.Event()  # set while a question waits for its answer

    def ask(self, request: CheckpointRequest) -> Decision:
        answers: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._before_ask()
        with self._lock:
            if self._pending is not None:
                decision, self._pending = self._pending, None
                return decision
            self._open = answers
            self.asking.set()
        threading.Thread(
            target=self._ask_front_end, args=(request, answers), daemon=True,
            name=f"labtui-ask-{request.checkpoint_id}",
        ).start()  # fmt: skip
        try:
            kind, value = answers.get()
        finally:
            with self._lock:
                self._open = None
                self.asking.clear()
        if kind == "error":
            raise value
        return value

    def _ask_front_end(
        self, request: CheckpointRequest, answers: queue.Queue[tuple[str, Any]]
    ) -> None:
        try:
            answers.put(("answer", self.port.ask(request)))
        except BaseException as exc:  # handed to the pipeline thread, which raises it
            answers.put(("error", exc))

    def answer(self, decision: Decision) -> None:
        """Answer the question waiting now, or else the next one asked."""
        with self._lock:
            if self._open is not None:
                self._open.put(("answer", decision))
            else:
                self._pending = decision

    def take_pending(self) -> Decision | None:
        """The answer kept for the next question, taken (None when there is none)."""
        with self._lock:
            decision, self._pending = self._pending, None
        return decision


class ResearcherNotes:
    """Notes the researcher leaves at any time; the next LLM call (chat or aider edit) takes them.

    Front ends call ``leave`` from the UI thread while the pipeline thread calls ``take``, so the
    box is locked. Each note is journaled when left and delivered exactly once.
    """

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._lock = threading.Lock()
        self._pending: list[str] = []

    def leave(self, text: str, stage: str = "") -> None:
        text = text.strip()
        if not text:
            return
        with self._lock:
            self._pending.append(text)
        self._emit(ResearcherNote(stage=stage, text=text))

    def take(self) -> list[str]:
        with self._lock:
            notes, self._pending = self._pending, []
        return notes

    def attach_to_prompt(self, prompt: str) -> str:
        """``prompt`` followed by the pending notes (which are then delivered)."""
        notes = self.take()
        if not notes:
            return prompt
        lines = "\n".join(f"- {note}" for note in notes)
        return f"{prompt}\n\nThe researcher left you a note while you worked; take it into account:\n{lines}\n"

    def attach_to_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A copy of ``messages`` whose last user message carries the pending notes."""
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                if not self._has_pending():
                    return messages
                updated = dict(message, content=self.attach_to_prompt(message["content"]))
                return [*messages[:index], updated, *messages[index + 1 :]]
        return messages

    def _has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending)
