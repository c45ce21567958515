"""litellm, set up for labtui: imported quietly and offline, taught local models, checked.

- :func:`prepare_litellm` imports litellm once with its bundled price map (no network), no
  telemetry and nothing on stderr (which would tear a Textual screen);
- :func:`register_model` gives models litellm does not know (local servers) a context size and
  the prices from labtui.toml;
- :func:`check_model` says, before a run, what a person must fix for a model to be callable;
- :func:`load_litellm` and :func:`litellm_exceptions` are how the rest of core/ reaches litellm.

litellm takes seconds to import, so nothing here imports it at module load.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from ..local_model.server_launch import N_CTX as SERVED_CONTEXT
from ..settings.config import ModelSpec

if TYPE_CHECKING:  # pragma: no cover - typing only; litellm is imported lazily
    import types

# Metadata registered for models litellm does not know (local servers). Without it litellm
# cannot price or size the model and reaches for its price map on the network.
LOCAL_CONTEXT_WINDOW = 32768
LOCAL_MAX_OUTPUT_TOKENS = 8192

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
        # litellm takes seconds to import: core/ imports it here, on the first model call
        import litellm  # noqa: PLC0415

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


def load_litellm() -> types.ModuleType:
    """litellm itself, prepared (and so imported) on first use."""
    prepare_litellm()
    return importlib.import_module("litellm")


def litellm_exceptions() -> types.ModuleType:
    """litellm's exception classes (not all are re-exported at the top level of litellm)."""
    prepare_litellm()
    return importlib.import_module("litellm.exceptions")


def provider_of(spec: ModelSpec) -> str | None:
    """litellm's provider for the model string, or None when litellm cannot route it."""
    litellm = load_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(
            model=spec.name, api_base=spec.api_base or None
        )
    except Exception:
        return None
    return provider or None


def _known_to_litellm(name: str, provider: str) -> bool:
    """Whether litellm's bundled price map has this model (checked without any network call)."""
    cost_map: dict[str, Any] = load_litellm().model_cost
    if name in _registered:
        return False
    if name in cost_map:
        return True
    bare = name.split("/", 1)[1] if name.startswith(f"{provider}/") else name
    entry = cost_map.get(bare)
    return isinstance(entry, dict) and entry.get("litellm_provider") == provider


def register_model(spec: ModelSpec) -> None:
    """Teach litellm a model it does not know, with the prices from labtui.toml (zero default).

    Hosted models litellm knows keep its bundled prices: the [models] prices are meant for local
    servers and apply to every stage, so letting them override e.g. Claude's prices would be wrong.
    """
    provider = provider_of(spec)
    if provider is None:
        return  # check_model reports the unroutable name; nothing litellm could price
    entry = {
        "max_tokens": LOCAL_MAX_OUTPUT_TOKENS,
        # labtui's own server has the context it was started with; other servers an assumed one
        "max_input_tokens": SERVED_CONTEXT if spec.local is not None else LOCAL_CONTEXT_WINDOW,
        "max_output_tokens": LOCAL_MAX_OUTPUT_TOKENS,
        "input_cost_per_token": spec.input_usd_per_mtok / 1e6,
        "output_cost_per_token": spec.output_usd_per_mtok / 1e6,
        "litellm_provider": provider,
        "mode": "chat",
    }
    with _register_lock:
        if _known_to_litellm(spec.name, provider):
            return
        load_litellm().register_model({spec.name: entry})
        _registered.add(spec.name)


def check_model(spec: ModelSpec) -> list[str]:
    """Problems a person must fix before a run, as sentences. Never includes a key's value."""
    if not spec.name.strip():
        return ["no model is configured; set [models] default in labtui.toml or $LABTUI_MODEL"]
    provider = provider_of(spec)
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
    missing = load_litellm().validate_environment(model=spec.name).get("missing_keys") or []
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


# The OpenAI client refuses to send a request without some key; local servers ignore it.
NO_KEY_PLACEHOLDER = "sk-no-key"


def api_key_for(spec: ModelSpec) -> str | None:
    """The key a call to ``spec`` sends: its own, a placeholder for a local server, or none
    (litellm then reads the provider's variable)."""
    return spec.api_key or (NO_KEY_PLACEHOLDER if spec.api_base else None)


def token_price(spec: ModelSpec, tokens_in: int, tokens_out: int) -> float:
    """US dollars for a call: litellm's price for models it knows, labtui.toml's for the rest."""
    try:
        cost_in, cost_out = load_litellm().cost_per_token(
            model=spec.name, prompt_tokens=tokens_in, completion_tokens=tokens_out
        )
        return float(cost_in) + float(cost_out)
    except Exception:
        return (tokens_in * spec.input_usd_per_mtok + tokens_out * spec.output_usd_per_mtok) / 1e6
