"""What went wrong with a model call: transient or permanent, in words, with the fix.

core/llm/client.py retries what :func:`is_retryable` calls transient (rate limits, 5xx, timeouts,
dropped connections), announcing each retry with :func:`transient_reason`; it turns the rest into
an ``LLMError`` from :func:`permanent_error` that names the setting or environment variable to
fix, and the last failure of a spent retry budget into one from :func:`exhausted_error`. A
server that refuses ``response_format`` (:func:`rejects_response_format`) is asked again without
it. No message ever contains the API key's value.

litellm is reached through ``litellm_setup`` when a failure is classified, and openai's and httpx's
errors are looked up only among the modules already loaded: importing this module stays cheap.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from ..errors import LLMError
from ..retry import RetryPolicy, retry_after_from_headers
from ..settings.config import ModelSpec
from .litellm_setup import litellm_exceptions, provider_of
from .server_idle import abandons_request
from .streaming import InactivityTimeout


class ResponseFormatRejected(Exception):
    """The server refused response_format; the caller asks again without it."""


# ---------------------------------------------------------------------------------------------
# Classifying
# ---------------------------------------------------------------------------------------------


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_retryable(exc: BaseException) -> bool:
    """Transient failures worth another try: rate limits, server errors, timeouts, drops."""
    errors = litellm_exceptions()
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
    if _raised_by(exc, "httpx", "TransportError"):  # a stream cut off mid-way, unwrapped
        return True
    status = status_of(exc)
    return status is not None and (status in (408, 409, 429) or status >= 500)


def is_api_error(exc: BaseException) -> bool:
    """Errors that come from the provider or the transport (not bugs in labtui)."""
    return _raised_by(exc, "openai", "OpenAIError") or is_retryable(exc)


def _raised_by(exc: BaseException, library: str, error: str) -> bool:
    """Whether ``exc`` is ``library``'s ``error``. A library never imported raised nothing, so
    it is looked up only if already loaded (openai takes more than a second to import)."""
    module = sys.modules.get(library)
    error_class = getattr(module, error, None) if module is not None else None
    return isinstance(error_class, type) and isinstance(exc, error_class)


# "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached" -> the reason
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+(?:Error|Exception)\s*(?::|-)\s*)*")


def describe_failure(exc: BaseException, secret: str | None) -> str:
    """A one-line reason: litellm's class prefixes removed, truncated, any key value masked."""
    text = _LITELLM_PREFIX.sub("", str(exc).strip().splitlines()[0] if str(exc).strip() else "")
    text = text or type(exc).__name__
    if secret:
        text = text.replace(secret, "***")
    return text[:400]


def transient_reason(exc: BaseException) -> str:
    """What kind of transient failure this was, for the retry notice."""
    errors = litellm_exceptions()
    status = status_of(exc)
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


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, when it sent one (rate limits usually do)."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(
        exc, "headers", None
    )
    try:
        return retry_after_from_headers(headers)
    except AttributeError:  # headers of an unexpected kind: no Retry-After to honour
        return None


def rejects_response_format(exc: BaseException) -> bool:
    """A 400 whose message is about response_format, JSON mode or the JSON schema sent with it
    (servers word it differently)."""
    status, message = status_of(exc), str(exc).lower()
    if status in (400, 422, None):
        words = ("response_format", "response format", "json", "schema")
        return any(word in message for word in words)
    # llama-cpp-python's server answers a response_format type it lacks (json_schema) with a
    # 500 whose message names the field: retrying the same request would only repeat it.
    return status >= 500 and "response_format" in message


# ---------------------------------------------------------------------------------------------
# Describing
# ---------------------------------------------------------------------------------------------


def key_hint(spec: ModelSpec) -> str:
    """Where the API key for ``spec`` comes from, for a 401 or 403."""
    if spec.api_base:
        return (
            f"put the key of the server at {spec.api_base} in ${spec.api_key_env} "
            "(the variable named by [models] api_key_env in labtui.toml)"
        )
    provider = provider_of(spec) or "the provider"
    env_var = spec.api_key_env if spec.api_key else f"{provider.upper()}_API_KEY"
    return f"check the API key in ${env_var}"


def permanent_error(spec: ModelSpec, stage: str, exc: BaseException) -> LLMError:
    """A failure that retrying cannot fix, with the setting to change."""
    errors = litellm_exceptions()
    name, status = spec.name, status_of(exc)
    reason = describe_failure(exc, spec.api_key)
    where = f" at {spec.api_base}" if spec.api_base else ""
    if isinstance(exc, errors.AuthenticationError) or status == 401:
        return LLMError(f"{name}{where} rejected the API key (HTTP 401): {reason}", key_hint(spec))
    if isinstance(exc, errors.PermissionDeniedError) or status == 403:
        return LLMError(f"{name}{where} denied access (HTTP 403): {reason}", key_hint(spec))
    if isinstance(exc, errors.NotFoundError) or status == 404:
        return LLMError(
            f"{name}{where} was not found (HTTP 404): {reason}",
            f"check the model name for stage '{stage}' and [models] api_base in labtui.toml",
        )
    if isinstance(exc, errors.ContextWindowExceededError):
        return LLMError(
            f"the prompt is too long for {name}: {reason}",
            f"use a model with a larger context for stage '{stage}' in labtui.toml",
        )
    if isinstance(exc, errors.BadRequestError) or status == 400:
        return LLMError(
            f"{name}{where} refused the request (HTTP 400): {reason}",
            f"check [models] {stage} and the [llm] settings in labtui.toml "
            "(json_mode = false helps servers that reject response_format)",
        )
    return LLMError(
        f"{name}{where} failed{f' (HTTP {status})' if status else ''}: {reason}",
        f"check [models] for stage '{stage}' in labtui.toml",
    )


def exhausted_error(spec: ModelSpec, exc: BaseException, attempts: int) -> LLMError:
    """The last failure once every retry is spent, with the limits that could be raised."""
    where = f" at {spec.api_base}" if spec.api_base else ""
    if isinstance(exc, InactivityTimeout):  # it names the limit it hit and its setting
        last, limit = exc.reason, f"[llm] {exc.setting}"
    else:
        last = f"{transient_reason(exc)}: {describe_failure(exc, spec.api_key)}"
        limit = "[llm] first_token_s / idle_s" if abandons_request(exc) else ""
    return LLMError(
        f"{spec.name}{where} failed {attempts} times; last: {last}",
        f"wait and resume, raise [llm] retries{f' or {limit}' if limit else ''} in "
        "labtui.toml, or check that the server is up",
    )


def final_error(spec: ModelSpec, stage: str, exc: BaseException, attempts: int) -> LLMError:
    """What a model call that failed for good means and what to change: labtui's calls and
    aider's alike. A stream given up for inactivity is explained by its limit."""
    if isinstance(exc.__cause__, InactivityTimeout):  # aider's call, given up by the watchdog
        exc = exc.__cause__
    if is_retryable(exc):
        return exhausted_error(spec, exc, attempts)
    if is_api_error(exc):
        return permanent_error(spec, stage, exc)
    where = f" at {spec.api_base}" if spec.api_base else ""
    return LLMError(
        f"{spec.name}{where} failed ({type(exc).__name__}): {describe_failure(exc, spec.api_key)}",
        "check labtui.toml [models] and the provider's status, then resume the run",
    )


# Backoff before retry n (0-based) is BACKOFF_BASE_S * 2**n, plus up to 50 % jitter, at most
# BACKOFF_MAX_S. Tests shrink the base so that retry paths run in milliseconds.
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 60.0


def model_retry_policy(spec: ModelSpec, retries: int, notice: Callable[[str], None]) -> RetryPolicy:
    """How every call to a model is retried, labtui's own and aider's: transient failures
    (rate limits, 5xx, timeouts, dropped connections, a stream that went quiet) up to
    ``retries`` times, with backoff or the server's Retry-After, and a notice before each wait
    that says what failed (an inactivity timeout names the limit and its setting)."""
    retries = max(0, retries)

    def tell(exc: BaseException, wait_s: float, attempt: int, _attempts: int) -> None:
        what = (
            str(exc)
            if isinstance(exc, InactivityTimeout)
            else f"{spec.name} {transient_reason(exc)}"
        )
        notice(f"{what}; retrying in {wait_s:.1f} s (retry {attempt - 1} of {retries})")

    return RetryPolicy(
        attempts=retries + 1,
        base_s=BACKOFF_BASE_S,
        retry_if=lambda exc, _failed: is_api_error(exc) and is_retryable(exc),
        retry_after=retry_after_s,
        on_retry=tell,
        max_wait_s=BACKOFF_MAX_S,
    )
