"""Settings that fit the model: a small local model on a CPU server is not a hosted frontier one.

On a 2-core machine a 1.5B model reads a prompt at about 30 tokens/s and writes about 10: the
tokens labtui sends are the time, so the small-model profile sends fewer (no few-shot review
examples, shorter paper excerpts, fewer rounds) and waits longer for the first token. It uses
aider's ``whole`` edit format, the one such models manage (see ARCHITECTURE.md's measured facts).

``[llm] profile = "auto"`` takes the small-model profile when the models are served from this
machine or a private network (``api_base`` on a loopback or private address, or Ollama), and
for the model labtui brings itself when none is configured (core/local_model). The
profile changes only settings still at labtui's defaults, so anything written in labtui.toml by
hand wins; ``profile = "hosted"`` keeps every default, ``"local"`` forces the profile.
"""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from .config import Config

PROFILES = ("auto", "hosted", "local")

# (section, field) -> the small-model value, with the reason a reader can check.
LOCAL: dict[tuple[str, str], Any] = {
    ("models", "edit_format"): "whole",  # small models fail diff's SEARCH/REPLACE blocks
    ("llm", "first_token_s"): 900.0,  # a 4k-token prompt is minutes of prompt processing
    ("llm", "idle_s"): 180.0,
    ("ideas", "count"): 1,
    ("ideas", "reflections"): 1,
    ("ideas", "novelty_checks"): 1,
    ("literature", "papers"): 3,
    ("literature", "review_steps"): 6,
    ("literature", "full_text_chars"): 4000,  # ~1k tokens of a paper instead of ~5k
    ("limits", "max_runs"): 2,
    # a climb of settings: the 1.5B model's code changes are whole-file edits of minutes that
    # mostly fail, and a climb needs many attempts an hour (issue 42's bench)
    ("climb", "code_changes"): False,
    ("limits", "citation_rounds"): 2,
    ("review", "ensemble"): 1,
    ("review", "reflections"): 1,
    ("review", "few_shot"): 0,  # an example paper with its review is ~4k tokens per reviewer
    ("review", "paper_chars"): 16000,
    # code writes the facts, the model a few checked sentences: a 1.5B model's whole sections
    # held HTML, copied prompts and invented hardware (the moons b8 paper)
    ("paper", "writer"): "slots",  # ~4k tokens: fits an 8k context with the form and reply
}


def is_local_address(api_base: str) -> bool:
    """Whether an API base is served from this machine or a private network."""
    host = urlparse(api_base if "//" in api_base else f"//{api_base}").hostname or ""
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def wants_local(config: Config) -> bool:
    """Whether ``config`` resolves to the small-model profile."""
    profile = config.llm.profile
    if profile != "auto":
        return profile == "local"
    if config.uses_local_model:
        return True
    api_base = config.models.api_base or os.environ.get("LABTUI_API_BASE", "")
    names = [config.models.default or os.environ.get("LABTUI_MODEL", "")]
    return (bool(api_base) and is_local_address(api_base)) or any(
        name.startswith(("ollama/", "ollama_chat/")) for name in names
    )


def apply_profile(config: Config) -> list[str]:
    """Apply the small-model profile where it is wanted; returns what it set ("review.ensemble
    = 1", …), [] when nothing changed. Settings not at labtui's default are left alone."""
    if not wants_local(config):
        return []
    defaults = type(config)()
    changed = []
    for (section, name), value in LOCAL.items():
        current = getattr(getattr(config, section), name)
        if current == getattr(getattr(defaults, section), name) and current != value:
            setattr(getattr(config, section), name, value)
            changed.append(f"{section}.{name} = {value!r}")
    return changed


def profile_notice(
    config: Config,
    changed: list[str],
    kept: str = "values you set in labtui.toml are kept",
    opt_out: str = 'write [llm] profile = "hosted"',
) -> str:
    """What to tell the researcher about the profile in force ('' when it changed nothing);
    ``kept``: where the researcher's own values, which the profile leaves alone, came from;
    ``opt_out``: how to keep labtui's defaults there."""
    if not changed:
        return ""
    where = config.models.api_base or os.environ.get("LABTUI_API_BASE", "") or "a local server"
    model = "labtui's own local model" if config.uses_local_model else f"local model at {where}"
    return (
        f"{model}: small-model settings in force ({', '.join(changed)}); "
        f"{kept}; {opt_out} to keep labtui's defaults"
    )
