"""The small-model profile: settings that fit a slow local model, applied only where the
researcher kept labtui's defaults, and said."""

from __future__ import annotations

import pytest

from labtui.core.settings.config import Config, ConfigError, config_from_dict
from labtui.core.settings.profiles import apply_profile, is_local_address, profile_notice


@pytest.mark.parametrize(
    ("api_base", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://10.0.0.5/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://my-vllm.example.org/v1", False),
    ],
)
def test_local_addresses(api_base, local):
    assert is_local_address(api_base) is local


def test_a_local_api_base_gets_the_small_model_profile_and_says_which():
    config = Config()
    config.models.default = "openai/qwen"
    config.models.api_base = "http://127.0.0.1:8080/v1"
    config.review.ensemble = 5  # the researcher's own choice is kept
    changed = apply_profile(config)
    assert config.models.edit_format == "whole"
    assert config.review.few_shot == 0 and config.limits.citation_rounds == 2
    assert config.review.ensemble == 5
    assert "review.few_shot = 0" in changed and not any("ensemble" in c for c in changed)
    notice = profile_notice(config, changed)
    assert "127.0.0.1:8080" in notice and 'profile = "hosted"' in notice


def test_a_hosted_model_and_an_explicit_hosted_profile_keep_the_defaults(monkeypatch):
    monkeypatch.delenv("LABTUI_API_BASE", raising=False)
    hosted = Config()
    hosted.models.default = "anthropic/claude-sonnet-4-5"
    assert apply_profile(hosted) == [] and hosted.review.few_shot == Config().review.few_shot
    pinned = Config()
    pinned.models.api_base = "http://127.0.0.1:8080/v1"
    pinned.llm.profile = "hosted"
    assert apply_profile(pinned) == []
    forced = Config()
    forced.llm.profile = "local"
    assert apply_profile(forced) and forced.models.edit_format == "whole"


def test_ollama_models_are_local(monkeypatch):
    monkeypatch.delenv("LABTUI_API_BASE", raising=False)
    config = Config()
    config.models.default = "ollama/qwen2.5-coder:1.5b"
    assert apply_profile(config)


def test_an_unknown_profile_is_named_with_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"\[llm\] profile is 'tiny'") as info:
        config_from_dict({"llm": {"profile": "tiny"}}, tmp_path / "labtui.toml")
    assert "auto, hosted, local" in info.value.hint


def test_doctor_says_which_settings_the_profile_changes(monkeypatch):
    from labtui.core.doctor import run_checks

    monkeypatch.setenv("LABTUI_API_BASE", "http://127.0.0.1:9/v1")  # nothing listens there
    settings = next(c for c in run_checks(None) if c.name == "settings")
    assert "small-model profile" in settings.detail and "review.few_shot = 0" in settings.detail
    monkeypatch.delenv("LABTUI_API_BASE")
    assert "labtui's defaults" in next(c for c in run_checks(None) if c.name == "settings").detail


def test_a_review_without_a_project_takes_the_profile_from_a_local_server(monkeypatch, capsys):
    from labtui.tui.review_session import review_settings

    monkeypatch.setenv("LABTUI_API_BASE", "http://127.0.0.1:8765/v1")
    settings = review_settings({"ensemble": None, "few_shot": None})
    assert (settings.ensemble, settings.few_shot) == (1, 0), "one reviewer: a one-slot server"
    said = capsys.readouterr().err
    assert "small-model settings in force (review.ensemble = 1" in said
    assert "given on the command line are kept; set LABTUI_LLM__PROFILE=hosted" in said
    assert review_settings({"ensemble": 2}).ensemble == 2, "what the command line says stays"
    monkeypatch.setenv("LABTUI_LLM__PROFILE", "hosted")
    assert review_settings({}).ensemble == Config().review.ensemble


def test_labtuis_own_model_gets_the_small_model_profile(monkeypatch):
    monkeypatch.delenv("LABTUI_MODEL", raising=False)
    monkeypatch.delenv("LABTUI_API_BASE", raising=False)
    config = Config()
    config.llm.profile = "auto"
    changed = apply_profile(config)
    assert config.paper.writer == "slots" and changed
    assert profile_notice(config, changed).startswith("labtui's own local model: small-model")
    hosted = Config()
    hosted.llm.profile = "auto"
    hosted.models.local = False
    assert apply_profile(hosted) == []
