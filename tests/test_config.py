from __future__ import annotations

import pytest

from labtui.core.config import Config, load_config, render_config, save_config
from labtui.core.errors import ConfigError


def test_render_and_load_round_trip(tmp_path):
    config = Config()
    config.models.default = "openai/qwen"
    config.models.api_base = "http://127.0.0.1:8000/v1"
    config.budget.usd = 2.5
    save_config(config, tmp_path)
    assert load_config(tmp_path) == config
    assert "[budget]" in render_config(config)


def test_model_per_stage_falls_back_to_default_then_environment(tmp_path, monkeypatch):
    config = Config()
    assert config.model_for("ideas") is None
    monkeypatch.setenv("LABTUI_MODEL", "anthropic/claude-x")
    assert config.model_for("ideas").name == "anthropic/claude-x"
    config.models.default = "openai/gpt-4o-mini"
    config.models.review = "anthropic/claude-y"
    assert config.model_for("ideas").name == "openai/gpt-4o-mini"
    assert config.model_for("review").name == "anthropic/claude-y"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[budget]\nusd = 'lots'\n", r"\[budget\] usd must be a number"),
        ("[nope]\nx = 1\n", r"unknown section \[nope\]"),
        ("[models]\nmodel = 'x'\n", r"\[models\] has unknown field 'model'"),
        ("[autonomy]\nmode = 'yolo'\n", r"\[autonomy\] mode is 'yolo'"),
        ("[limits]\nmax_runs = 1.5\n", r"whole number"),
        ("[budget\nusd = 1\n", r"not valid TOML"),
    ],
)
def test_bad_config_names_file_field_and_fix(tmp_path, toml, message):
    (tmp_path / "labtui.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(tmp_path)
    assert "labtui.toml" in str(info.value)
    assert info.value.hint


def test_missing_config_says_how_to_create_a_project(tmp_path):
    with pytest.raises(ConfigError, match="not a labtui project") as info:
        load_config(tmp_path)
    assert "labtui new" in info.value.hint


@pytest.mark.parametrize(
    ("llm", "first_token_s"),
    [
        ("timeout_s = 180.0\n", 600.0),  # the old default, in every old labtui.toml: ignored
        ("timeout_s = 900\n", 900.0),  # someone allowed slow answers that long: kept
        ("timeout_s = 900\nfirst_token_s = 300\n", 300.0),  # the new setting wins
    ],
)
def test_an_old_total_timeout_still_loads_and_only_ever_gives_more_time(
    tmp_path, llm, first_token_s
):
    (tmp_path / "labtui.toml").write_text(f"[llm]\n{llm}")
    config = load_config(tmp_path)
    assert config.llm.first_token_s == first_token_s
    assert config.llm.idle_s == 120.0
    assert "\ntimeout_s" not in render_config(config)  # saved again, it is gone


def test_inactivity_limits_are_explained_where_they_are_written(tmp_path):
    text = render_config(Config())
    assert "first_token_s = 600.0" in text and "idle_s = 120.0" in text
    assert "never cut off" in text
    (tmp_path / "labtui.toml").write_text("[llm]\ntimeout_s = 'long'\n")
    with pytest.raises(ConfigError, match=r"\[llm\] timeout_s must be a number"):
        load_config(tmp_path)
