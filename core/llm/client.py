"""Every LLM call of labtui: litellm with retries, streaming events, JSON re-asks and a budget.

A stage builds one :class:`LLM` per model role and calls :meth:`LLM.chat` (text) or
:meth:`LLM.ask_json` (validated structured output). Around each call this module

- retries transient failures (429, 5xx, timeouts, dropped connections) with exponential backoff
  and jitter, announcing each retry as a ``Notice``, and turns permanent failures into an
  ``LLMError`` that names the setting or environment variable to fix;
- streams the reply as ``AgentChunk`` events, then the whole ``AgentMessage``, under the
  inactivity limits of core/llm/streaming.py (time to the first token, then between tokens), and
  after giving up on a local server's request waits until that server is idle before the next;
- books tokens and dollars in the :class:`Ledger`, which refuses further calls once the hard
  budget cap is reached;
- extracts JSON from chatty replies and re-asks the model with the exact validation problem,
  because small local models often wrap JSON in prose or give out-of-range values;
- asks for a structured answer with its record's JSON schema (``core.answers.schemas``) where the server
  decodes against one, else for any JSON object, else for none, remembering per model what the
  server rejected; each refused answer is a ``Refused`` event.

Its neighbours hold the parts that are not the call itself: core/llm/litellm_setup.py (importing
litellm quietly and offline, registering local models, :func:`check_model`), core/llm/budget.py
(the :class:`Ledger`), core/llm/failures.py (which failures are transient, and the ``LLMError``
for the rest, and the retry policy of every model call), core/llm/response_formats.py (which
``response_format`` each server takes) and core/answers/json_reply.py (:func:`extract_json` and the
re-ask).

litellm takes seconds to import, so it is imported lazily on the first call; importing this
module stays cheap for the CLI and the TUI.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..answers.examples import answer_examples, example_strings
from ..answers.json_reply import extract_json, reask_prompt, reask_temperature, same_answer
from ..answers.record import record_name
from ..checkpoints import ResearcherNotes
from ..errors import UnusableAnswer
from ..events import AgentChunk, AgentMessage, Notice, Refused
from ..settings.config import ModelSpec
from ..settings.sections import LLMSection
from .budget import Emit, Ledger
from .failures import (
    ResponseFormatRejected,
    describe_failure,
    final_error,
    is_api_error,
    model_retry_policy,
    rejects_response_format,
)
from .litellm_setup import api_key_for, load_litellm, prepare_litellm, register_model, token_price
from .local_server import Restarts, done_with, ready_spec
from .response_formats import STRUCTURED_MODES, response_format_for, step_down, structured_mode
from .server_idle import abandons_request, note_abandoned, wait_for_abandoned
from .streaming import Interrupted, Limits, StreamResult, consume_stream

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T")

# The most tokens a structured answer (an idea, a plan, a review) may take.
ANSWER_MAX_TOKENS = 2048


# ---------------------------------------------------------------------------------------------
# LLM
# ---------------------------------------------------------------------------------------------


class LLM:
    """One model, used by one stage in one role: chat, structured answers, accounting."""

    def __init__(
        self,
        spec: ModelSpec,
        settings: LLMSection,
        ledger: Ledger,
        emit: Emit,
        stage: str,
        role: str = "",
        notes: ResearcherNotes | None = None,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.ledger = ledger
        self.emit = emit
        self.stage = stage
        self.role = role or stage
        self.notes = notes  # the researcher's notes left at any time reach the next call
        self._ready = False

    # -- public -----------------------------------------------------------------------------

    def speaking_as(self, role: str) -> LLM:
        """The same model, budget and notes under another name in the dialogue, so that
        several calls at once (an ensemble of reviewers) stream apart."""
        clone = copy.copy(self)
        clone.role = role
        return clone

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
        stream: bool = True,
        seed: int | None = None,
    ) -> str:
        """Send ``messages``, return the reply text; retries, events and accounting included.

        ``json_mode`` asks for JSON through ``response_format``; with ``schema`` (a pydantic
        model, ``core.answers.schemas``) for that record's JSON schema first. A server that rejects one
        gets the next (json_object with the schema, plain json_object, then none), and the model
        keeps that for later calls. ``seed``: the sampling seed, where the provider takes one.
        """
        self.ledger.check()
        self._prepare()
        if self.notes is not None:
            messages = self.notes.attach_to_messages(messages)
        kwargs = self._request_kwargs(messages, temperature, max_tokens, stream)
        if seed is not None:
            kwargs["seed"] = seed
        for mode in self._structured_modes(json_mode, schema):
            response_format = response_format_for(mode, schema)
            try:
                return self._call_with_retries(
                    messages, {**kwargs, "response_format": response_format}, stream
                )
            except ResponseFormatRejected as rejected:
                fallback = step_down(self.spec, mode)
                self._notice(
                    f"{self.spec.name} rejected response_format {mode} ({rejected}); "
                    + (
                        "asking without it (set [llm] json_mode = false to skip this)"
                        if fallback == "none"
                        else f"asking with {fallback} instead"
                    )
                )
        return self._call_with_retries(messages, kwargs, stream)

    def _structured_modes(self, json_mode: bool, schema: type[BaseModel] | None) -> list[str]:
        """The response_format modes to try for this call, best first."""
        if not (json_mode and self.settings.json_mode):
            return []
        wanted = (
            ["json_schema", "json_object_schema", "json_object"]
            if schema is not None
            else ["json_object"]
        )
        best = STRUCTURED_MODES.index(structured_mode(self.spec))
        return [mode for mode in wanted if STRUCTURED_MODES.index(mode) >= best]

    def ask_json(
        self,
        messages: list[dict[str, Any]],
        parse: Callable[[Any], T],
        *,
        schema: type[BaseModel] | None = None,
        examples: Iterable[str] | None = None,
        reasks: int | None = None,
        fallback: Callable[[Any], T] | None = None,
        **chat_kwargs: Any,
    ) -> T:
        """Ask for JSON, validate it with ``parse`` and re-ask with the exact problem if needed.

        ``parse`` converts the decoded JSON and raises ValueError with a precise message; values
        are never clamped here, because a silently "fixed" score would misreport the model.
        ``schema``: the record's pydantic model (``core.answers.schemas``), sent as the response format
        and naming the record in refusals. ``examples``: the strings of the prompt's format
        example that an answer must not copy (default: those of the JSON snippets the prompt
        shows). Each refused answer is a ``Refused`` event. A re-ask quotes the refused field and
        samples differently (hotter, another seed), and names a repeated answer a loop; after the
        re-asks, UnusableAnswer says what was wrong with the last one. Raw line breaks and tabs
        inside the JSON's strings are taken: a small model writes a section's LaTeX as it is,
        and a novelty verdict whose reason held one was lost to strict JSON (moons b8: the idea
        stayed unchecked after 5 papers were seen). ``fallback``: after the
        re-asks, what the refused answers (the last first) may still give, with what failed left
        out (a review without its one point about nothing in the paper); ValueError where not.
        """
        chat_kwargs.setdefault("json_mode", True)
        # A record is a few hundred tokens; a small model that loops would otherwise write to
        # [llm] max_tokens, which is sized for whole files (minutes at 10 tokens/s).
        chat_kwargs.setdefault("max_tokens", ANSWER_MAX_TOKENS)
        chat_kwargs["schema"] = schema
        allowed_reasks = self.settings.reasks if reasks is None else reasks
        shown = example_strings(messages) if examples is None else frozenset(examples)
        subject = record_name(schema) if schema is not None else "JSON answer"
        conversation = list(messages)
        base = chat_kwargs.pop("temperature", None)
        base = self.settings.temperature if base is None else base
        problem, previous = "", None
        refused_answers: list[Any] = []
        for attempt in range(allowed_reasks + 1):
            # The first request as asked; each re-ask hotter and with a seed of its own.
            text = self.chat(
                conversation,
                **chat_kwargs,
                temperature=reask_temperature(base, attempt),
                seed=attempt or None,
            )
            try:
                data = extract_json(text, strict=False)
            except ValueError as exc:
                readable, problem, refused = False, str(exc), exc
            else:
                try:
                    with answer_examples(shown):
                        return parse(data)
                except ValueError as exc:
                    # An empty {} is what a scan finds in a run-on reply ("\\begin{x}{}"): no answer.
                    readable, problem, refused = data != {}, str(exc) or type(exc).__name__, exc
                    refused_answers.insert(0, data)
            self.emit(Refused(stage=self.stage, what="answer", subject=subject, reason=problem))
            if attempt < allowed_reasks:
                what = (
                    "gave the same answer twice in a row (a loop)"
                    if previous is not None and same_answer(previous, text)
                    else f"gave an unusable {subject}"
                )
                hotter = reask_temperature(base, attempt + 1)
                self._notice(f"{self.spec.name} {what}; asking again at temperature {hotter:g}")
                conversation = _reasked(conversation, messages, text, readable, problem, refused)
            previous = text
        for data in refused_answers:
            try:
                if fallback is not None:
                    with answer_examples(shown):
                        return fallback(data)
            except ValueError:
                continue
        attempts = allowed_reasks + 1
        raise UnusableAnswer(
            f"{self.spec.name} gave no usable {subject} in {attempts} attempt"
            f"{'s' if attempts > 1 else ''}; the last answer: {problem}",
            f"use a stronger model for stage '{self.stage}' in labtui.toml "
            f"([models] {self.stage} = ...), or raise [llm] reasks",
            model=self.spec.name,
            record=subject,
            attempts=attempts,
            problem=problem,
        )

    # -- request ----------------------------------------------------------------------------

    def _prepare(self) -> None:
        if not self._ready:
            prepare_litellm()
            register_model(self.spec)
            self._ready = True

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        temperature: float | None,
        max_tokens: int | None,
        stream: bool,
    ) -> dict[str, Any]:
        cap = self.settings.max_tokens
        kwargs: dict[str, Any] = {
            "model": self.spec.name,
            "messages": messages,
            "temperature": self.settings.temperature if temperature is None else temperature,
            # Always capped: a looping small model otherwise runs to the end of its context.
            "max_tokens": min(max_tokens, cap) if max_tokens else cap,
            # A backstop only: core/llm/streaming.py's inactivity limits end a quiet call first.
            "timeout": Limits.of(self.settings).http_timeout_s,
            "num_retries": 0,  # retries are ours, with notices and the budget check
            "drop_params": True,  # a provider that lacks a parameter gets the call without it
            "stream": stream,
        }
        if stream:
            kwargs["stream_options"] = {"include_usage": True}
        if self.spec.api_base:
            kwargs["api_base"] = self.spec.api_base
        api_key = api_key_for(self.spec)
        if api_key:
            kwargs["api_key"] = api_key
        return kwargs

    def _call_with_retries(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any], stream: bool
    ) -> str:
        """Call until success, a permanent error, or ``settings.retries`` retries are spent.

        A stream that breaks off mid-way is retried whole; its partial chunks were already
        emitted, so a front end sees the retry notice and then the reply from the start.
        """
        retries = max(0, self.settings.retries)
        restarts = Restarts()

        def once() -> str:
            try:
                self._ready_server(kwargs, restarts)
                return self._call_once(messages, kwargs, stream)
            except Exception as exc:
                if (
                    is_api_error(exc)
                    and "response_format" in kwargs
                    and rejects_response_format(exc)
                ):
                    raise ResponseFormatRejected(describe_failure(exc, self.spec.api_key)) from exc
                raise

        try:
            return model_retry_policy(self.spec, retries, self._notice).call(once)
        except Exception as exc:
            if not is_api_error(exc):
                raise
            raise final_error(self.spec, self.stage, exc, retries + 1) from exc

    def _ready_server(self, kwargs: dict[str, Any], restarts: Restarts) -> None:
        """labtui's own model: its server running (started again if it stopped), and the
        request sent where it answers now."""
        if self.spec.local is not None:
            self.spec = ready_spec(self.spec, self._notice, restarts)
            kwargs["api_base"] = self.spec.api_base
            kwargs["api_key"] = api_key_for(self.spec)

    def _call_once(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any], stream: bool
    ) -> str:
        """One request. A request that times out on a local server is noted as abandoned, and
        the next request to that server (this retry, another stage's call, aider's) first waits
        until the server is idle: a single-slot server would otherwise make it queue."""
        litellm = load_litellm()
        limits = Limits.of(self.settings)
        wait_for_abandoned(self.spec.api_base, limits, self._notice, self.spec.api_key)
        try:
            if stream:
                result = self._consume_stream(lambda: litellm.completion(**kwargs), limits)
            else:
                started = time.monotonic()
                response = litellm.completion(**kwargs)
                text = (response.choices[0].message.content or "") if response.choices else ""
                # Unstreamed: when the first token came is unknown, so only the total is timed.
                result = StreamResult(
                    text, getattr(response, "usage", None), seconds=time.monotonic() - started
                )
        except (Exception, Interrupted) as exc:
            # An interrupted request, like one that timed out, may still run on the server.
            if self.spec.api_base and (isinstance(exc, Interrupted) or abandons_request(exc)):
                note_abandoned(self.spec.api_base)
            raise
        finally:
            done_with(self.spec)
        self.emit(AgentMessage(stage=self.stage, role=self.role, text=result.text))
        self._book(messages, result)
        return result.text

    def _consume_stream(
        self, open_stream: Callable[[], Iterable[Any]], limits: Limits
    ) -> StreamResult:
        """Emit each delta as an AgentChunk; the whole text, usage and timing when it ends."""
        return consume_stream(
            open_stream,
            limits,
            lambda piece: self.emit(AgentChunk(stage=self.stage, role=self.role, text=piece)),
            what=self.spec.name,
        )

    # -- accounting -------------------------------------------------------------------------

    def _book(self, messages: list[dict[str, Any]], result: StreamResult) -> None:
        usage = result.usage
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        if not usage or (tokens_in == 0 and tokens_out == 0):
            tokens_in, tokens_out = self._count_tokens(messages, result.text)
        self.ledger.record(
            self.stage,
            self.spec.name,
            tokens_in,
            tokens_out,
            token_price(self.spec, tokens_in, tokens_out),
            first_token_s=result.first_token_s,
            seconds=result.seconds,
        )

    def _count_tokens(self, messages: list[dict[str, Any]], text: str) -> tuple[int, int]:
        """Our own count when the server reports no usage (some local servers do not)."""
        litellm = load_litellm()
        try:
            return (
                int(litellm.token_counter(model=self.spec.name, messages=messages)),
                int(litellm.token_counter(model=self.spec.name, text=text)) if text else 0,
            )
        except Exception:
            prompt = "".join(str(m.get("content", "")) for m in messages)
            return len(prompt) // 4 + 1, len(text) // 4 + 1 if text else 0

    # -- errors and notices -----------------------------------------------------------------

    def _notice(self, text: str) -> None:
        self.emit(Notice(stage=self.stage, text=text))


# A reply this long that holds no JSON value ran on (a loop, or the token cap): quoted back, it
# primes the same run. Qwen2.5-Coder-1.5B, asked for a conclusion, looped on
# "\\begin{thebibliographykey}" to 1,600 tokens, and twice more when its reply was quoted.
RUN_ON_CHARS = 2000


def _reasked(
    conversation: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    text: str,
    readable: bool,
    problem: str,
    refused: Any,
) -> list[dict[str, Any]]:
    """The conversation of the next try: the refused reply and the problem; after a run-on
    reply with no JSON in it, the original request afresh with the problem, without the reply."""
    if not readable and len(text) >= RUN_ON_CHARS:
        note = f"{problem} (the reply ran on for {len(text):,} characters without one)"
        return [*messages, {"role": "user", "content": reask_prompt(note)}]
    return [
        *conversation,
        {"role": "assistant", "content": text},
        {"role": "user", "content": reask_prompt(problem, refused)},
    ]
