from __future__ import annotations

import pytest

from labtui.core.errors import ConfigError
from labtui.core.settings.config import Config, load_config, render_config, save_config


def test_render_and_load_round_trip(tmp_path, own_model):
    config = Config()
    config.models.default = "openai/qwen"
    config.models.api_base = "http://127.0.0.1:8000/v1"
    config.budget.usd = 2.5
    save_config(config, tmp_path)
    assert load_config(tmp_path) == config
    assert "[budget]" in render_config(config)


def test_model_per_stage_falls_back_to_default_then_environment(tmp_path, monkeypatch):
    config = Config()
    own = config.model_for("ideas")  # nothing configured: labtui's own local model
    assert own.local is not None and own.local.source is True and own.api_base == ""
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


@pytest.mark.parametrize(
    ("toml", "message", "hint"),
    [
        (
            "[sandbox]\nmode = 'docker'\n",
            r"\[sandbox\] mode is 'docker'",
            "auto, bwrap, limits, off",
        ),
        ("[review]\ntemperature = 3.5\n", r"\[review\] temperature = 3.5 is above 2", "0.75"),
        ("[review]\nensemble = 0\n", r"\[review\] ensemble = 0 reviews nothing", "1 or more"),
        ("[ideas]\npanel = 1\n", r"\[ideas\] panel = 1 is too few", "or panel = 0"),
        ("[limits]\nmax_runs = -2\n", r"\[limits\] max_runs must not be negative", "0 or more"),
        ("[sandbox]\nnetwork = 'yes'\n", r"\[sandbox\] network must be true or false", "true"),
        ("[models]\ndefault = 3\n", r"\[models\] default must be a string", '"..."'),
        ("[limits]\nrun_timeout = 60\n", r"has unknown field 'run_timeout'", "run_timeout_s"),
        ("[limit]\nmax_runs = 2\n", r"unknown section \[limit\]", "'limits'"),
        ("[limits]\nrun_timeout_s = 0\n", r"\[limits\] run_timeout_s must be above 0", "1800"),
        ("[literature]\nmax_results = 0\n", r"max_results = 0 finds nothing", "1 or more"),
        ("[sandbox]\nmax_processes = 3.0\n", r"max_processes = 3 is too low", "16 or more"),
        ("[llm]\ntimeout_s = -5\n", r"\[llm\] timeout_s must not be negative", "0 or more"),
        ("[experiment]\nstrategy = 'beam'\n", r"strategy is 'beam'", "plan, climb, tree"),
        ("[tree]\ndebug_prob = 1.5\n", r"\[tree\] debug_prob = 1.5 is above 1", "= 0.5"),
        ("[tree]\nworkers = 0\n", r"\[tree\] workers = 0 runs nothing", "1 or more"),
        ("[climb]\nrun_budget_s = 0\n", r"\[climb\] run_budget_s must be above 0", "300"),
        ("[climb]\nmetric = 'test acc'\n", r"metric is 'test acc': a mean's name", "dataset.mean"),
        ("[climb]\nmax_nodes = 3\n", r"\[climb\] has unknown field 'max_nodes'", "max_runs"),
    ],
)
def test_choices_ranges_and_names_are_checked_with_a_fix(tmp_path, toml, message, hint):
    (tmp_path / "labtui.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(tmp_path)
    assert hint in info.value.hint


def test_every_field_says_what_it_means():
    """The sections document themselves: every field a researcher tunes has a description."""
    from labtui.core.settings.sections import LLMSection, SandboxSection

    assert "first token" in LLMSection.model_fields["first_token_s"].description
    assert "threads" in SandboxSection.model_fields["max_processes"].description
    from labtui.core.settings.config import SECTIONS

    undocumented = [
        f"[{name}] {key}"
        for name, section in SECTIONS.items()
        for key, field in section.model_fields.items()
        if not field.description
    ]
    assert undocumented == []


def test_environment_overrides_the_file(tmp_path, monkeypatch):
    (tmp_path / "labtui.toml").write_text("[limits]\nrun_timeout_s = 600\nmax_runs = 2\n")
    monkeypatch.setenv("LABTUI_LIMITS__RUN_TIMEOUT_S", "60")
    monkeypatch.setenv("LABTUI_SANDBOX__NETWORK", "true")
    monkeypatch.setenv("LABTUI_AUTONOMY__MODE", "auto")  # a bare word is text
    config = load_config(tmp_path)
    assert config.limits.run_timeout_s == 60.0 and config.limits.max_runs == 2
    assert config.sandbox.network is True and config.autonomy.mode == "auto"


def test_a_text_field_from_the_environment_stays_text(tmp_path, monkeypatch):
    (tmp_path / "labtui.toml").write_text("[project]\nname = 'moons'\n")
    monkeypatch.setenv("LABTUI_PROJECT__NAME", "2024")
    monkeypatch.setenv("LABTUI_MODELS__DEFAULT", '"openai/qwen"')  # quoted as in the file
    config = load_config(tmp_path)
    assert config.project.name == "2024" and config.models.default == "openai/qwen"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "LABTUI_LIMITS__MAX_RUNS",
            "many",
            r"\$LABTUI_LIMITS__MAX_RUNS: \[limits\] max_runs must be a number",
        ),
        ("LABTUI_LIMITS__MAX_RUN", "3", r"\$LABTUI_LIMITS__MAX_RUN: \[limits\] has unknown field"),
        ("LABTUI_LIMTS__MAX_RUNS", "3", r"\$LABTUI_LIMTS__MAX_RUNS names no section"),
        (
            "LABTUI_AUTONOMY__MODE",
            "yolo",
            r"\$LABTUI_AUTONOMY__MODE: \[autonomy\] mode is 'yolo'",
        ),
        (
            "LABTUI_REVIEW__TEMPERATURE",
            "3",
            r"\$LABTUI_REVIEW__TEMPERATURE: \[review\] temperature = 3 is above 2",
        ),
    ],
)
def test_a_bad_override_names_the_variable(tmp_path, monkeypatch, variable, value, message):
    (tmp_path / "labtui.toml").write_text("[limits]\nmax_runs = 2\n")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(tmp_path)
    assert info.value.hint


def test_labtuis_own_model_is_the_default_a_configured_one_wins_and_false_turns_it_off(
    tmp_path, monkeypatch, own_model
):
    monkeypatch.delenv("LABTUI_MODEL", raising=False)
    config = Config()
    assert config.uses_local_model and config.model_for("review").local.idle_min == 30
    config.use_local_server("http://127.0.0.1:4321/v1")  # once its server runs
    assert config.model_for("writeup").api_base == "http://127.0.0.1:4321/v1"
    assert "local_url" not in render_config(config)  # the port is never written down
    config.models.review = "anthropic/claude-y"  # one stage configured: the rest stay local
    assert config.model_for("review").local is None and config.uses_local_model
    (tmp_path / "labtui.toml").write_text("[models]\nlocal = false\n", encoding="utf-8")
    assert load_config(tmp_path).model_for("ideas") is None
    (tmp_path / "labtui.toml").write_text(
        '[models]\nlocal = "/models/other.gguf"\nlocal_idle_min = 5\n', encoding="utf-8"
    )
    choice = load_config(tmp_path).model_for("ideas").local
    assert choice.source == "/models/other.gguf" and choice.idle_min == 5
    monkeypatch.setenv("LABTUI_MODELS__LOCAL", "false")
    assert load_config(tmp_path).model_for("ideas") is None
    monkeypatch.delenv("LABTUI_MODELS__LOCAL")
    monkeypatch.setenv("LABTUI_MODEL", "openai/gpt-4o-mini")
    assert load_config(tmp_path).model_for("ideas").local is None  # a configured model wins
