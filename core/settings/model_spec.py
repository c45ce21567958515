"""The model a stage calls, as the rest of labtui receives it: its litellm name, server, key and
prices (``ModelSpec``), and for labtui's own local model how it is to be run (``LocalChoice``).
``Config.model_for`` makes them from labtui.toml and the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

# The name litellm routes labtui's own model by: an OpenAI-compatible server that serves one
# model and answers any name with it (llama-cpp-python's does).
LOCAL_MODEL_NAME = "openai/local"


@dataclass(frozen=True)
class LocalChoice:
    """How labtui's own model is to be run ([models] local and local_idle_min)."""

    source: bool | str
    """True: labtui's choice; a path: that GGUF file; "hub" or "wheels": where from."""
    idle_min: float = 30.0


@dataclass(frozen=True)
class ModelSpec:
    name: str
    api_base: str = ""
    api_key_env: str = "LABTUI_API_KEY"
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    local: LocalChoice | None = None
    """Set for labtui's own model (core/local_model): a managed server, started on demand."""

    @property
    def api_key(self) -> str | None:
        if self.local is not None:
            return "none"  # the managed server checks no key; litellm's openai/ wants one
        return os.environ.get(self.api_key_env) or None

    @property
    def is_local(self) -> bool:
        """An OpenAI-compatible server we were pointed at: priced at zero, no provider key."""
        return bool(self.api_base)
