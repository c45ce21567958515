"""Every LLM call of labtui: litellm with retries, streaming events, JSON re-asks and a budget.

A stage builds one :class:`LLM` per model role and calls :meth:`LLM.chat` (text) or
:meth:`LLM.ask_json` (validated structured output). Around each call this module

- retries transient failures (429, 5xx, timeouts, dropped connections) with exponential backoff
  and jitter, announcing each retry as a ``Notice``, and turns permanent failures into an
  ``LLMError`` that names the setting or environment variable to fix;
- streams the reply as ``AgentChunk`` events, then the whole ``AgentMessage``, under the
  inactivity limits of core/streaming.py (time to the first token, then between tokens), and
  after giving up on a local server's request waits until that server is idle before the next;
- books tokens and dollars in the :class:`Ledger`, which refuses further calls once the hard
  budget cap is reached;
- extracts JSON from chatty replies and re-asks the model with the exact validation problem,
  because small local models often wrap JSON in prose or give out-of-range values;
- asks for a structured answer with its record's JSON schema (``core.records``) where the server
  decodes against one, else for any JSON object, else for none, remembering per model what the
  server rejected; each refused answer is a ``Refused`` event.

litellm takes seconds to import, so it is imported lazily on the first call; importing this
module stays cheap for the CLI and the TUI.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .checkpoints import ResearcherNotes
from .config import LLMSection, ModelSpec
from .errors import BudgetExceeded, LLMError, UnusableAnswer
from .events import AgentChunk, AgentMessage, CostUpdate, Event, Notice, Refused
from .streaming import (
    InactivityTimeout,
    Limits,
    StreamResult,
    abandons_request,
    consume_stream,
    note_abandoned,
    wait_for_abandoned,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; litellm is imported lazily
    import types

T = TypeVar("T")
Emit = Callable[[Event], None]

# The most tokens a structured answer (an idea, a plan, a review) may take.
ANSWER_MAX_TOKENS = 2048

# Backoff before retry n (0-based) is BACKOFF_BASE_S * 2**n, plus up to 50 % jitter, at most
# BACKOFF_MAX_S. Tests shrink the base so that retry paths run in milliseconds.
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 60.0

# Metadata registered for models litellm does not know (local servers). Without it litellm
# cannot price or size the model and reaches for its price map on the network.
LOCAL_CONTEXT_WINDOW = 32768
LOCAL_MAX_OUTPUT_TOKENS = 8192

# The OpenAI client refuses to send a request without some key; local servers ignore it.
NO_KEY_PLACEHOLDER = "sk-no-key"

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
# What litellm and the OpenAI client import lazily inside the first completion (seconds on a
# small machine: the client's resources, a tokenizer for the cost). Imported when litellm is, so
# that no call's timing, and no first-token limit, includes that one-time work.
_FIRST_CALL_IMPORTS = (
    "openai.resources",
    "httpcore",
    "litellm.litellm_core_utils.litellm_logging",
    "litellm.litellm_core_utils.token_counter",
    "litellm.cost_calculator",
)
_prepare_lock = threading.Lock()
_prepared = False
_register_lock = threading.Lock()  # litellm.model_cost is a plain dict shared by all stages
_registered: set[str] = set()  # model names this module registered (re-registered on change)


# ---------------------------------------------------------------------------------------------
# litellm setup
# ---------------------------------------------------------------------------------------------


def prepare_litellm() -> None:
    """Import and quiet litellm once: offline price map, no telemetry, nothing on stderr.

    ``LITELLM_LOCAL_MODEL_COST_MAP`` must be set before the import, or litellm downloads its price
    map (and waits on the network timeout when offline). Its loggers write to stderr, which would
    tear a Textual screen, so they are raised to CRITICAL unless the user asked for LITELLM_LOG.
    """
    global _prepared
    with _prepare_lock:
        if _prepared:
            return
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        if hasattr(litellm, "telemetry"):
            litellm.telemetry = False
        litellm.set_verbose = False
        if "LITELLM_LOG" not in os.environ:
            for name in _LITELLM_LOGGERS:
                logging.getLogger(name).setLevel(logging.CRITICAL)
        for module in _FIRST_CALL_IMPORTS:
            try:
                importlib.import_module(module)
            except Exception:  # a litellm that moved it: the first call imports it instead
                pass
        _prepared = True


def _litellm() -> types.ModuleType:
    prepare_litellm()
    import litellm

    return litellm


def _litellm_errors() -> types.ModuleType:
    """litellm's exception classes (not all are re-exported at the top level of litellm)."""
    prepare_litellm()
    import litellm.exceptions

    return litellm.exceptions


def _provider_of(spec: ModelSpec) -> str | None:
    """litellm's provider for the model string, or None when litellm cannot route it."""
    litellm = _litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(
            model=spec.name, api_base=spec.api_base or None
        )
    except Exception:
        return None
    return provider or None


def _known_to_litellm(name: str, provider: str) -> bool:
    """Whether litellm's bundled price map has this model (checked without any network call)."""
    cost_map: dict[str, Any] = _litellm().model_cost
    if name in _registered:
        return False
    if name in cost_map:
        return True
    bare = name.split("/", 1)[1] if name.startswith(f"{provider}/") else name
    entry = cost_map.get(bare)
    return bool(entry) and entry.get("litellm_provider") == provider


def register_model(spec: ModelSpec) -> None:
    """Teach litellm a model it does not know, with the prices from labtui.toml (zero default).

    Hosted models litellm knows keep its bundled prices: the [models] prices are meant for local
    servers and apply to every stage, so letting them override e.g. Claude's prices would be wrong.
    """
    provider = _provider_of(spec)
    if provider is None:
        return  # check_model reports the unroutable name; nothing litellm could price
    entry = {
        "max_tokens": LOCAL_MAX_OUTPUT_TOKENS,
        "max_input_tokens": LOCAL_CONTEXT_WINDOW,
        "max_output_tokens": LOCAL_MAX_OUTPUT_TOKENS,
        "input_cost_per_token": spec.input_usd_per_mtok / 1e6,
        "output_cost_per_token": spec.output_usd_per_mtok / 1e6,
        "litellm_provider": provider,
        "mode": "chat",
    }
    with _register_lock:
        if _known_to_litellm(spec.name, provider):
            return
        _litellm().register_model({spec.name: entry})
        _registered.add(spec.name)


def check_model(spec: ModelSpec) -> list[str]:
    """Problems a person must fix before a run, as sentences. Never includes a key's value."""
    if not spec.name.strip():
        return ["no model is configured; set [models] default in labtui.toml or $LABTUI_MODEL"]
    provider = _provider_of(spec)
    if provider is None:
        bare = spec.name.split("/")[-1]
        return [
            (
                f"model {spec.name!r} is not a litellm model string; write e.g. "
                "'openai/gpt-4o-mini' or 'anthropic/claude-3-5-sonnet-latest', or set [models] "
                f"api_base for a local server and write 'openai/{bare}'"
            )
        ]
    if spec.api_base or spec.api_key:
        # A local server needs no provider key; a key in api_key_env is passed explicitly.
        return []
    missing = _litellm().validate_environment(model=spec.name).get("missing_keys") or []
    if provider in ("ollama", "ollama_chat"):
        # litellm defaults Ollama to http://localhost:11434, so its API base is optional.
        missing = [key for key in missing if key != "OLLAMA_API_BASE"]
    if not missing:
        return []
    return [
        (
            f"{spec.name} needs {' and '.join(missing)} in the environment "
            f"(or put the key in ${spec.api_key_env}, the variable named by [models] api_key_env)"
        )
    ]


# ---------------------------------------------------------------------------------------------
# Ledger
# ---------------------------------------------------------------------------------------------


@dataclass
class _StageTotals:
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


class Ledger:
    """Thread-safe token and dollar accounting per stage, and the hard budget cap.

    ``spent_usd`` carries over what earlier sessions of the project spent (from the journal), so
    a resumed run cannot exceed the budget by restarting.
    """

    def __init__(self, budget_usd: float, emit: Emit, spent_usd: float = 0.0) -> None:
        self.budget_usd = float(budget_usd)
        self._emit = emit
        self._carried_usd = float(spent_usd)
        self._stages: dict[str, _StageTotals] = {}
        self._lock = threading.RLock()

    def record(
        self,
        stage: str,
        model: str,
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        *,
        first_token_s: float = 0.0,
        seconds: float = 0.0,
    ) -> None:
        """Book one call and emit a CostUpdate with the call, its stage and the project total.

        ``first_token_s`` and ``seconds``: the call's timing when it was measured (0: not), from
        which the status bar and ``labtui doctor`` show the model's speed."""
        with self._lock:
            totals = self._stages.setdefault(stage, _StageTotals())
            totals.tokens_in += tokens_in
            totals.tokens_out += tokens_out
            totals.cost_usd += cost_usd
            # Emitted under the lock so that subscribers see totals in increasing order.
            self._emit(
                CostUpdate(
                    stage=stage,
                    model=model,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    cost_usd=cost_usd,
                    stage_tokens_in=totals.tokens_in,
                    stage_tokens_out=totals.tokens_out,
                    stage_cost_usd=totals.cost_usd,
                    total_cost_usd=self.total_usd,
                    budget_usd=self.budget_usd,
                    first_token_s=first_token_s,
                    seconds=seconds,
                )
            )

    @property
    def total_usd(self) -> float:
        with self._lock:
            return self._carried_usd + sum(t.cost_usd for t in self._stages.values())

    def stage_totals(self, stage: str) -> tuple[int, int, float]:
        """(tokens_in, tokens_out, cost_usd) booked for ``stage`` in this session."""
        with self._lock:
            totals = self._stages.get(stage, _StageTotals())
            return totals.tokens_in, totals.tokens_out, totals.cost_usd

    @property
    def exhausted(self) -> bool:
        """Spent at least the budget. A budget of 0 still lets free (local) models run."""
        total = self.total_usd
        return total > 0 and total >= self.budget_usd

    def check(self) -> None:
        """Raise BudgetExceeded once the cap is reached, so no further call is made."""
        if self.exhausted:
            raise BudgetExceeded(
                f"budget spent: ${self.total_usd:.4f} of ${self.budget_usd:.2f}",
                "raise [budget] usd in labtui.toml to continue",
            )


# ---------------------------------------------------------------------------------------------
# Error classification
# ---------------------------------------------------------------------------------------------


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_retryable(exc: BaseException) -> bool:
    """Transient failures worth another try: rate limits, server errors, timeouts, drops."""
    errors = _litellm_errors()
    transient: tuple[type[BaseException], ...] = (
        errors.RateLimitError,
        errors.Timeout,
        errors.APIConnectionError,
        errors.InternalServerError,
        errors.ServiceUnavailableError,
        errors.BadGatewayError,
        TimeoutError,
        ConnectionError,
    )
    if isinstance(exc, transient):
        return True
    try:
        import httpx

        if isinstance(exc, httpx.TransportError):  # a stream cut off mid-way, unwrapped
            return True
    except ImportError:  # pragma: no cover - httpx ships with litellm
        pass
    status = _status_of(exc)
    return status is not None and (status in (408, 409, 429) or status >= 500)


def _is_api_error(exc: BaseException) -> bool:
    """Errors that come from the provider or the transport (not bugs in labtui)."""
    try:
        import openai

        if isinstance(exc, openai.OpenAIError):
            return True
    except ImportError:  # pragma: no cover - openai ships with litellm
        pass
    return _is_retryable(exc)


# "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached" -> the reason
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+(?:Error|Exception)\s*(?::|-)\s*)*")


def _describe(exc: BaseException, secret: str | None) -> str:
    """A one-line reason: litellm's class prefixes removed, truncated, any key value masked."""
    text = _LITELLM_PREFIX.sub("", str(exc).strip().splitlines()[0] if str(exc).strip() else "")
    text = text or type(exc).__name__
    if secret:
        text = text.replace(secret, "***")
    return text[:400]


def _reason(exc: BaseException) -> str:
    """What kind of transient failure this was, for the retry notice."""
    errors = _litellm_errors()
    status = _status_of(exc)
    if isinstance(exc, errors.RateLimitError) or status == 429:
        return "rate limited (HTTP 429)"
    if isinstance(exc, (errors.Timeout, TimeoutError)):
        return "timed out"
    # litellm reports a refused connection as InternalServerError "Connection error." (HTTP 500)
    if isinstance(exc, errors.APIConnectionError | ConnectionError) or (
        "connection error" in str(exc).lower()
    ):
        return "connection failed"
    return f"server error (HTTP {status})" if status else "server error"


def _retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, when it sent one (rate limits usually do)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(
        exc, "headers", None
    )
    if not headers:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def backoff_s(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): exponential with jitter, capped."""
    delay = BACKOFF_BASE_S * (2**attempt) * (1.0 + 0.5 * random.random())
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, BACKOFF_MAX_S)


# ---------------------------------------------------------------------------------------------
# LLM
# ---------------------------------------------------------------------------------------------


class _ResponseFormatRejected(Exception):
    """The server refused response_format; the caller asks again without it."""


# Structured output, best first: the record's JSON schema (constrained decoding on llama.cpp,
# vLLM, OpenAI, ...), any JSON object, or no response_format (extraction + re-ask). What a model
# rejected is remembered for the rest of the process, per model and server, so each rejection
# costs one quick HTTP 400 and not one per call.
# json_object_schema is llama.cpp's own form ({"type": "json_object", "schema": ...}): servers
# built on it (llama-cpp-python) refuse OpenAI's json_schema but constrain their grammar to this.
STRUCTURED_MODES = ("json_schema", "json_object_schema", "json_object", "none")
_structured_lock = threading.Lock()
_structured_mode: dict[tuple[str, str], str] = {}


def structured_mode(spec: ModelSpec) -> str:
    """The best structured-output mode not yet rejected by this model at this server."""
    with _structured_lock:
        return _structured_mode.get((spec.name, spec.api_base), STRUCTURED_MODES[0])


def _step_down(spec: ModelSpec, rejected: str) -> str:
    """Remember that ``rejected`` failed for this model; the mode to try next."""
    fallback = STRUCTURED_MODES[STRUCTURED_MODES.index(rejected) + 1]
    with _structured_lock:
        key = (spec.name, spec.api_base)
        current = _structured_mode.get(key, STRUCTURED_MODES[0])
        if STRUCTURED_MODES.index(fallback) > STRUCTURED_MODES.index(current):
            _structured_mode[key] = fallback
    return fallback


def forget_structured_modes() -> None:
    """Forget what models rejected (tests start each server afresh)."""
    with _structured_lock:
        _structured_mode.clear()


def _response_format(mode: str, schema: Any) -> dict[str, Any]:
    if mode == "json_schema":
        from .records import response_format

        return response_format(schema)
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema.model_json_schema(by_alias=True)}
    return {"type": "json_object"}


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
        schema: Any = None,
        stream: bool = True,
    ) -> str:
        """Send ``messages``, return the reply text; retries, events and accounting included.

        ``json_mode`` asks for JSON through ``response_format``; with ``schema`` (a pydantic
        model, ``core.records``) for that record's JSON schema first. A server that rejects one
        gets the next (json_object with the schema, plain json_object, then none), and the model
        keeps that for later calls.
        """
        self.ledger.check()
        self._prepare()
        if self.notes is not None:
            messages = self.notes.attach_to_messages(messages)
        kwargs = self._request_kwargs(messages, temperature, max_tokens, stream)
        for mode in self._structured_modes(json_mode, schema):
            response_format = _response_format(mode, schema)
            try:
                return self._call_with_retries(
                    messages, {**kwargs, "response_format": response_format}, stream
                )
            except _ResponseFormatRejected as rejected:
                fallback = _step_down(self.spec, mode)
                self._notice(
                    f"{self.spec.name} rejected response_format {mode} ({rejected}); "
                    + (
                        "asking without it (set [llm] json_mode = false to skip this)"
                        if fallback == "none"
                        else f"asking with {fallback} instead"
                    )
                )
        return self._call_with_retries(messages, kwargs, stream)

    def _structured_modes(self, json_mode: bool, schema: Any) -> list[str]:
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
        schema: Any = None,
        examples: Iterable[str] | None = None,
        reasks: int | None = None,
        **chat_kwargs: Any,
    ) -> T:
        """Ask for JSON, validate it with ``parse`` and re-ask with the exact problem if needed.

        ``parse`` converts the decoded JSON and raises ValueError with a precise message; values
        are never clamped here, because a silently "fixed" score would misreport the model.
        ``schema``: the record's pydantic model (``core.records``), sent as the response format
        and naming the record in refusals. ``examples``: the strings of the prompt's format
        example that an answer must not copy (default: those of the JSON snippets the prompt
        shows). Each refused answer is a ``Refused`` event; after the re-asks, UnusableAnswer
        says what was wrong with the last one.
        """
        from .records import answer_examples, example_strings, record_name

        chat_kwargs.setdefault("json_mode", True)
        # A record is a few hundred tokens; a small model that loops would otherwise write to
        # [llm] max_tokens, which is sized for whole files (minutes at 10 tokens/s).
        chat_kwargs.setdefault("max_tokens", ANSWER_MAX_TOKENS)
        chat_kwargs["schema"] = schema
        allowed_reasks = self.settings.reasks if reasks is None else reasks
        shown = example_strings(messages) if examples is None else frozenset(examples)
        subject = record_name(schema) if schema is not None else "JSON answer"
        conversation = list(messages)
        problem = ""
        for attempt in range(allowed_reasks + 1):
            text = self.chat(conversation, **chat_kwargs)
            try:
                with answer_examples(shown):
                    return parse(extract_json(text))
            except ValueError as exc:
                problem = str(exc) or type(exc).__name__
            self.emit(Refused(stage=self.stage, what="answer", subject=subject, reason=problem))
            if attempt < allowed_reasks:
                self._notice(f"{self.spec.name} gave an unusable {subject}; asking again")
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": _reask_prompt(problem)},
                ]
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
            # A backstop only: core/streaming.py's inactivity limits end a quiet call first.
            "timeout": Limits.of(self.settings).http_timeout_s,
            "num_retries": 0,  # retries are ours, with notices and the budget check
            "drop_params": True,  # a provider that lacks a parameter gets the call without it
            "stream": stream,
        }
        if stream:
            kwargs["stream_options"] = {"include_usage": True}
        if self.spec.api_base:
            kwargs["api_base"] = self.spec.api_base
        api_key = self.spec.api_key or (NO_KEY_PLACEHOLDER if self.spec.api_base else None)
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
        for attempt in range(retries + 1):
            try:
                return self._call_once(messages, kwargs, stream)
            except Exception as exc:
                if not _is_api_error(exc):
                    raise
                if "response_format" in kwargs and _rejects_response_format(exc):
                    raise _ResponseFormatRejected(_describe(exc, self.spec.api_key)) from exc
                if not _is_retryable(exc):
                    raise self._permanent_error(exc) from exc
                if attempt == retries:
                    raise self._exhausted_error(exc, retries + 1) from exc
                delay = backoff_s(attempt, _retry_after_s(exc))
                # An inactivity timeout says which limit it hit and which setting raises it.
                what = (
                    str(exc)
                    if isinstance(exc, InactivityTimeout)
                    else f"{self.spec.name} {_reason(exc)}"
                )
                self._notice(
                    f"{what}; retrying in {delay:.1f} s (retry {attempt + 1} of {retries})"
                )
                time.sleep(delay)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _call_once(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any], stream: bool
    ) -> str:
        """One request. A request that times out on a local server is noted as abandoned, and
        the next request to that server (this retry, another stage's call, aider's) first waits
        until the server is idle: a single-slot server would otherwise make it queue."""
        litellm = _litellm()
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
        except Exception as exc:
            if self.spec.api_base and abandons_request(exc):
                note_abandoned(self.spec.api_base)
            raise
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
            self._cost(tokens_in, tokens_out),
            first_token_s=result.first_token_s,
            seconds=result.seconds,
        )

    def _count_tokens(self, messages: list[dict[str, Any]], text: str) -> tuple[int, int]:
        """Our own count when the server reports no usage (some local servers do not)."""
        litellm = _litellm()
        try:
            return (
                int(litellm.token_counter(model=self.spec.name, messages=messages)),
                int(litellm.token_counter(model=self.spec.name, text=text)) if text else 0,
            )
        except Exception:
            prompt = "".join(str(m.get("content", "")) for m in messages)
            return len(prompt) // 4 + 1, len(text) // 4 + 1 if text else 0

    def _cost(self, tokens_in: int, tokens_out: int) -> float:
        """litellm's price for known models; the configured prices for the rest."""
        try:
            cost_in, cost_out = _litellm().cost_per_token(
                model=self.spec.name, prompt_tokens=tokens_in, completion_tokens=tokens_out
            )
            return float(cost_in) + float(cost_out)
        except Exception:
            return (
                tokens_in * self.spec.input_usd_per_mtok
                + tokens_out * self.spec.output_usd_per_mtok
            ) / 1e6

    # -- errors and notices -----------------------------------------------------------------

    def _notice(self, text: str) -> None:
        self.emit(Notice(stage=self.stage, text=text))

    def _key_hint(self) -> str:
        if self.spec.api_base:
            return (
                f"put the key of the server at {self.spec.api_base} in ${self.spec.api_key_env} "
                "(the variable named by [models] api_key_env in labtui.toml)"
            )
        provider = _provider_of(self.spec) or "the provider"
        env_var = self.spec.api_key_env if self.spec.api_key else f"{provider.upper()}_API_KEY"
        return f"check the API key in ${env_var}"

    def _permanent_error(self, exc: BaseException) -> LLMError:
        """A failure that retrying cannot fix, with the setting to change."""
        errors = _litellm_errors()
        name, status = self.spec.name, _status_of(exc)
        reason = _describe(exc, self.spec.api_key)
        where = f" at {self.spec.api_base}" if self.spec.api_base else ""
        if isinstance(exc, errors.AuthenticationError) or status == 401:
            return LLMError(
                f"{name}{where} rejected the API key (HTTP 401): {reason}", self._key_hint()
            )
        if isinstance(exc, errors.PermissionDeniedError) or status == 403:
            return LLMError(f"{name}{where} denied access (HTTP 403): {reason}", self._key_hint())
        if isinstance(exc, errors.NotFoundError) or status == 404:
            return LLMError(
                f"{name}{where} was not found (HTTP 404): {reason}",
                f"check the model name for stage '{self.stage}' and [models] api_base in "
                "labtui.toml",
            )
        if isinstance(exc, errors.ContextWindowExceededError):
            return LLMError(
                f"the prompt is too long for {name}: {reason}",
                f"use a model with a larger context for stage '{self.stage}' in labtui.toml",
            )
        if isinstance(exc, errors.BadRequestError) or status == 400:
            return LLMError(
                f"{name}{where} refused the request (HTTP 400): {reason}",
                f"check [models] {self.stage} and the [llm] settings in labtui.toml "
                "(json_mode = false helps servers that reject response_format)",
            )
        return LLMError(
            f"{name}{where} failed{f' (HTTP {status})' if status else ''}: {reason}",
            f"check [models] for stage '{self.stage}' in labtui.toml",
        )

    def _exhausted_error(self, exc: BaseException, attempts: int) -> LLMError:
        where = f" at {self.spec.api_base}" if self.spec.api_base else ""
        if isinstance(exc, InactivityTimeout):  # it names the limit it hit and its setting
            last, limit = exc.reason, f"[llm] {exc.setting}"
        else:
            last = f"{_reason(exc)}: {_describe(exc, self.spec.api_key)}"
            limit = "[llm] first_token_s / idle_s" if abandons_request(exc) else ""
        return LLMError(
            f"{self.spec.name}{where} failed {attempts} times; last: {last}",
            f"wait and resume, raise [llm] retries{f' or {limit}' if limit else ''} in "
            "labtui.toml, or check that the server is up",
        )


def _rejects_response_format(exc: BaseException) -> bool:
    """A 400 whose message is about response_format, JSON mode or the JSON schema sent with it
    (servers word it differently)."""
    status, message = _status_of(exc), str(exc).lower()
    if status in (400, 422, None):
        words = ("response_format", "response format", "json", "schema")
        return any(word in message for word in words)
    # llama-cpp-python's server answers a response_format type it lacks (json_schema) with a
    # 500 whose message names the field: retrying the same request would only repeat it.
    return status >= 500 and "response_format" in message


def _reask_prompt(problem: str) -> str:
    return (
        f"Your previous reply could not be used: {problem}\n"
        "Reply again with the corrected JSON only: no prose, no explanation, no code fence."
    )


# ---------------------------------------------------------------------------------------------
# JSON extraction
# ---------------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}


def _strip_reasoning(text: str) -> str:
    """Drop <think>…</think> blocks, and everything before a lone </think> (its opening tag was
    part of the prompt template of some reasoning models)."""
    text = _THINK_BLOCK.sub("", text)
    close = text.lower().rfind("</think>")
    if close != -1:
        text = text[close + len("</think>") :]
    open_ = text.lower().find("<think>")
    if open_ != -1:  # unclosed: the model ran out of tokens while thinking
        text = text[:open_]
    return text


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes text[start], respecting JSON strings."""
    stack: list[str] = []
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif char in "]}":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
    return None


def _is_structured(value: Any) -> bool:
    """An object, or a list of objects/lists: what callers ask for (not a citation like [1])."""
    if isinstance(value, dict):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict | list) for item in value)
    )


def _scan_balanced(text: str) -> Any:
    """First balanced {...}/[...] that parses, preferring structured values over e.g. [1].

    Raises ValueError naming the parse problem of the first broken object, if there was one.
    """
    first: tuple[Any] | None = None
    problem = ""
    index = 0
    while index < len(text):
        starts = [pos for pos in (text.find("{", index), text.find("[", index)) if pos != -1]
        if not starts:
            break
        start = min(starts)
        end = _balanced_end(text, start)
        if end is None:
            index = start + 1
            continue
        try:
            value = json.loads(text[start:end])
        except json.JSONDecodeError as exc:
            if not problem and text[start] == "{":
                problem = (
                    f"the JSON does not parse ({exc.msg} at line {exc.lineno} col {exc.colno})"
                )
            # Skip the broken candidate whole: an inner object of broken JSON (one idea out of
            # a list with a trailing comma) would be a silently wrong answer.
            index = end
            continue
        if _is_structured(value):
            return value
        first = first or (value,)
        index = end
    if first is not None:
        return first[0]
    raise ValueError("no JSON object found in the reply" + (f"; {problem}" if problem else ""))


def extract_json(text: str) -> Any:
    """The JSON value in a model's reply.

    Order: the last ```json block that parses, then the last fenced block that parses, then the
    first balanced {...} or [...] in the text. Broken JSON (e.g. trailing commas) is not repaired:
    the ValueError names the problem so the model can be asked to fix it itself.
    """
    text = _strip_reasoning(text or "")
    fenced = _FENCE.findall(text)
    for wanted in ("json", None):
        for language, body in reversed(fenced):
            if wanted is not None and language.lower() != wanted:
                continue
            try:
                return json.loads(body)
            except json.JSONDecodeError:
                continue
    stripped = text.strip()
    if stripped:
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            pass
    return _scan_balanced(text)
