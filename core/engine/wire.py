"""The wire between a background engine and the front ends attached to it: JSON lines over a
unix stream socket, one message (a JSON object with a ``kind``) per line.

The client speaks first, then the engine answers::

    client → engine   attach     {"protocol": 1, "replay": true}  (replay: false for `labtui stop`)
    engine → client   hello      project_name, project_root, budget_usd, stage_models,
                                 model_problems, auto, pid
                      replay     {"events": [...]}  the journal so far, in batches
                      live       replay is over: what follows is live
                      events     {"events": [...]}  live events, in emission order (batched)
                      checkpoint {"request": {...}}  a checkpoint waits for an answer
                      answered   {"checkpoint_id", "action"}  someone answered it (close the modal)
                      error      {"message"}  a message of this client was refused
                      ended      {"outcome"}  finished | stopped | failed | crashed
                      refused    {"message"}  the connection is not allowed (another user)
    client → engine   answer     {"checkpoint_id", "action", "note", "picks"}
                      note       {"text"}   a researcher's note for the next LLM call
                      stop       stop at the next safe point (resumable)
                      interrupt  stop the current LLM call or run step and ask a checkpoint
                      rewind     {"stage"}  go back to the commit before that stage

Events travel as ``Event.to_dict()`` and are rebuilt with ``event_from_dict``, as the journal does.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from ..checkpoints import CheckpointRequest, Decision
from ..events import Event, event_from_dict

PROTOCOL = 1
MAX_LINE_BYTES = 64 * 1024 * 1024  # a replay batch of LaTeX drafts is large, never this large
BATCH_EVENTS = 500  # events per replay/events message

ENGINE_KINDS = frozenset(
    {"hello", "replay", "live", "events", "checkpoint", "answered", "error", "ended", "refused"}
)
CLIENT_KINDS = frozenset({"attach", "answer", "note", "stop", "interrupt", "rewind"})


class WireError(ValueError):
    """A line that is not a message of this protocol."""


def encode(kind: str, **fields: Any) -> bytes:
    return (json.dumps({"kind": kind, **fields}, ensure_ascii=False, default=str) + "\n").encode()


def decode(line: bytes, kinds: frozenset[str]) -> dict[str, Any]:
    """The message of one line; WireError when it is not JSON, not an object, or of no known kind."""
    try:
        message = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WireError(f"not a JSON message: {exc}") from None
    if not isinstance(message, dict) or message.get("kind") not in kinds:
        raise WireError(f"not a message this side understands: {line[:120]!r}")
    return message


def events_message(kind: str, events: list[dict[str, Any]]) -> bytes:
    return encode(kind, events=events)


def events_of(message: dict[str, Any]) -> list[Event]:
    """The events of a replay/events message; a type this side does not know is left out (an
    engine newer than its front end), as the journal reader would refuse it."""
    events: list[Event] = []
    for data in message.get("events", []):
        try:
            events.append(event_from_dict(data))
        except (ValueError, TypeError):
            continue
    return events


def request_message(request: CheckpointRequest) -> bytes:
    return encode("checkpoint", request=asdict(request))


def request_of(message: dict[str, Any]) -> CheckpointRequest:
    data = dict(message.get("request") or {})
    try:
        data["options"] = tuple(data.get("options", ()))
        data["subjects"] = tuple(data.get("subjects", ()))
        return CheckpointRequest(**data)
    except TypeError as exc:
        raise WireError(f"a checkpoint message without its request: {exc}") from None


def answer_message(checkpoint_id: str, decision: Decision) -> bytes:
    return encode(
        "answer",
        checkpoint_id=checkpoint_id,
        action=decision.action,
        note=decision.note,
        picks=dict(decision.picks),
        to_stage=decision.to_stage,
    )


def decision_of(message: dict[str, Any]) -> Decision:
    """The decision of an answer message; WireError (with what is wrong) when it is none."""
    picks = message.get("picks") or {}
    if not isinstance(picks, dict):
        raise WireError("an answer's picks must be an object of idea name → mark")
    try:
        return Decision(
            str(message.get("action", "")),
            str(message.get("note", "")),
            picks,
            to_stage=str(message.get("to_stage", "")),
        )
    except ValueError as exc:
        raise WireError(str(exc)) from None


class LineReader:
    """Messages read from a socket, one per line, until the other side closes it."""

    def __init__(self, sock: socket.socket, kinds: frozenset[str]) -> None:
        self._sock = sock
        self._kinds = kinds
        self._buffer = b""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            line = self.read_line()
            if line is None:
                return
            yield decode(line, self._kinds)

    def read_line(self) -> bytes | None:
        """The next line (without its newline), or None at the end of the stream."""
        chunks = [self._buffer]
        newline = self._buffer.find(b"\n")
        size = len(self._buffer)
        while newline < 0:
            if size > MAX_LINE_BYTES:
                raise WireError(f"a message longer than {MAX_LINE_BYTES} bytes")
            try:
                chunk = self._sock.recv(1 << 16)
            except OSError:
                return None
            if not chunk:
                return None
            if (found := chunk.find(b"\n")) >= 0:
                newline = size + found
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)  # joined once: a large replay line costs no quadratic copying
        line, self._buffer = data[:newline], data[newline + 1 :]
        return line
