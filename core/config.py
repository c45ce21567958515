"""``labtui.toml``: models per stage, budget, limits and autonomy of one project.

Each section is a dataclass; loading checks every key and type and says which file, which field
and what to write instead. Environment variables (``LABTUI_MODEL``, ``LABTUI_API_BASE``,
``LABTUI_API_KEY``) fill in models that the file leaves empty, so a project can be created before a
model is chosen.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from .errors import ConfigError

CONFIG_NAME = "labtui.toml"
MODEL_STAGES = ("ideas", "novelty", "experiments", "plots", "writeup", "review")
# Stages without a model setting of their own use the model of the stage whose work they share:
# planning runs is experiment design, compile fixes are edits to the paper.
# The literature review searches and judges papers, as the novelty check does.
MODEL_BORROWED_FROM = {"literature": "novelty", "plan": "experiments", "compile": "writeup"}


@dataclass
class ProjectSection:
    name: str = ""
    template: str = ""
    idea: str = ""


@dataclass
class ModelsSection:
    """litellm model strings. A stage left empty uses ``default``."""

    default: str = ""
    api_base: str = ""
    api_key_env: str = "LABTUI_API_KEY"
    edit_format: str = ""  # aider edit format; empty: aider's choice for known models, else whole
    # Prices for models litellm does not know (local servers): US dollars per million tokens.
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    ideas: str = ""
    novelty: str = ""
    experiments: str = ""
    plots: str = ""
    writeup: str = ""
    review: str = ""


@dataclass
class LLMSection:
    max_tokens: int = 4096
    temperature: float = 0.7
    retries: int = 4
    # Inactivity limits, not a total timeout: a reply that keeps streaming is never cut off.
    first_token_s: float = 600.0  # until the first token: a local CPU server reads the prompt
    idle_s: float = 120.0  # the longest pause between tokens after the first
    reasks: int = 2
    json_mode: bool = True
    # auto | hosted | local: "local" fits small models on this machine (core/profiles.py);
    # "auto" picks it when api_base is a loopback or private address
    profile: str = "auto"


@dataclass
class BudgetSection:
    usd: float = 10.0


@dataclass
class LimitsSection:
    run_timeout_s: float = 1800.0
    max_runs: int = 5  # as The AI Scientist: up to 5 runs, 4 fix attempts each
    fix_attempts: int = 4
    plot_timeout_s: float = 300.0
    latex_timeout_s: float = 120.0
    latex_fix_rounds: int = 3
    citation_rounds: int = 20  # write-up rounds that each add a citation where one is missing
    page_limit: int = 0  # pages the compiled paper may have (0: no limit); over it, fix rounds


@dataclass
class AutonomySection:
    mode: str = "copilot"  # copilot | auto


@dataclass
class ExperimentSection:
    python: str = ""  # the research interpreter; empty: the one labtui runs in
    # Ideas whose runs go on at once: the chosen one here, the next best each in a git
    # worktree of its own (core/parallel.py); `labtui run --parallel K` overrides. 0 or 1: one.
    parallel: int = 1


@dataclass
class SandboxSection:
    """How experiments and plots are contained (see core/sandbox.py). 0 means no limit.

    Defaults let the moons template and real multi-GPU training run untouched while stopping
    the failures LLM-written code actually has: a runaway fork, a file or run folder that fills
    the disk. CPU time and memory are unlimited by default: the wall-clock run_timeout_s already
    kills the whole process group, CPU time counts every thread (a 32-thread data loader uses
    32 CPU-seconds a second), and a memory cap misfires on GPU jobs, which map huge amounts of
    virtual memory (so memory_mb, when set, limits RLIMIT_DATA, never RLIMIT_AS).
    """

    mode: str = "auto"  # auto | bwrap | limits | off
    network: bool = False  # reachable from inside bubblewrap; without bwrap it always is
    cpu_time_s: int = 0  # CPU seconds per process (SIGXCPU)
    memory_mb: int = 0  # private writable memory per process (RLIMIT_DATA)
    max_processes: int = 4096  # processes + threads of a run (RLIMIT_NPROC and a watcher)
    max_file_mb: int = 8192  # size of any one file a run writes (RLIMIT_FSIZE)
    run_dir_cap_mb: int = 20480  # disk use of the run folder (watched; the run is killed)
    tmp_mb: int = 4096  # the private /tmp under bubblewrap (it is held in memory)


@dataclass
class IdeasSection:
    count: int = 2
    reflections: int = 3  # rounds per idea, each ending on the model's structured "done" flag
    panel: int = 0  # personas that discuss before proposing (Virtual Scientists); 0: no panel
    panel_turns: int = 2
    duplicate_threshold: float = 0.7  # similarity (0..1) at which a new idea repeats an old one
    novelty_checks: int = 3  # best-ranked ideas the novelty stage may check, until one is novel


@dataclass
class LiteratureSection:
    arxiv_url: str = "https://export.arxiv.org/api/query"
    max_results: int = 5
    rounds: int = 2
    delay_s: float = 3.0
    retries: int = 3  # per request when a service is down or rate limits (429): then it waits
    backoff_s: float = 5.0  # the first wait; it doubles per retry, capped (Retry-After wins)
    papers: int = 5  # the literature review's list: papers kept, each with a summary
    review_steps: int = 12  # actions (search, read, add) the review may take to fill it
    full_text_chars: int = 20000  # of a paper's text in one prompt (~5k tokens; papers run 60k+)
    # Used only when S2_API_KEY is set (core/semantic_scholar.py); a mirror or proxy goes here.
    s2_url: str = "https://api.semanticscholar.org/graph/v1"


@dataclass
class ReviewSection:
    """The reviewer: E reviewers on the NeurIPS form, each reconsidering its review, and an Area
    Chair's meta-review; the decision is the reviewers' mean Overall against a threshold."""

    ensemble: int = 3  # reviewers; with two or more an Area Chair writes a meta-review
    temperature: float = 0.75  # the reviewers' sampling temperature when there are several
    reflections: int = 2  # rounds in which a reviewer reconsiders its review, until it is done
    few_shot: int = 1  # example papers with their reviews shown to each reviewer (0: none)
    examples: str = ""  # folder of your own <name>.md + <name>.json examples ("": labtui's)
    threshold: float = 6.0  # Accept when the mean Overall reaches it (6: weak accept); 0: the AC's
    improvements: int = 0  # improvement rounds run before the checkpoint (in --auto too)
    # of the paper's text a reviewer reads (40,000: ~10k tokens, a paper without its appendix;
    # 0: all of it). A local model's context and speed want less.
    paper_chars: int = 40000


@dataclass
class Config:
    project: ProjectSection = field(default_factory=ProjectSection)
    models: ModelsSection = field(default_factory=ModelsSection)
    llm: LLMSection = field(default_factory=LLMSection)
    budget: BudgetSection = field(default_factory=BudgetSection)
    limits: LimitsSection = field(default_factory=LimitsSection)
    autonomy: AutonomySection = field(default_factory=AutonomySection)
    experiment: ExperimentSection = field(default_factory=ExperimentSection)
    sandbox: SandboxSection = field(default_factory=SandboxSection)
    ideas: IdeasSection = field(default_factory=IdeasSection)
    literature: LiteratureSection = field(default_factory=LiteratureSection)
    review: ReviewSection = field(default_factory=ReviewSection)

    def model_for(self, stage: str) -> ModelSpec | None:
        """The model a stage uses, or None when no model is configured anywhere."""
        stage = MODEL_BORROWED_FROM.get(stage, stage)
        name = (
            getattr(self.models, stage, "")
            or self.models.default
            or os.environ.get("LABTUI_MODEL", "")
        )
        if not name:
            return None
        api_base = self.models.api_base or os.environ.get("LABTUI_API_BASE", "")
        key_env = self.models.api_key_env or "LABTUI_API_KEY"
        return ModelSpec(
            name=name,
            api_base=api_base,
            api_key_env=key_env,
            input_usd_per_mtok=self.models.input_usd_per_mtok,
            output_usd_per_mtok=self.models.output_usd_per_mtok,
        )

    @property
    def python(self) -> str:
        import sys

        return self.experiment.python or sys.executable


@dataclass(frozen=True)
class ModelSpec:
    name: str
    api_base: str = ""
    api_key_env: str = "LABTUI_API_KEY"
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @property
    def is_local(self) -> bool:
        """An OpenAI-compatible server we were pointed at: priced at zero, no provider key."""
        return bool(self.api_base)


_CHOICES = {
    ("autonomy", "mode"): ("copilot", "auto"),
    ("sandbox", "mode"): ("auto", "bwrap", "limits", "off"),
    ("llm", "profile"): ("auto", "hosted", "local"),
}
# Values that are either 0 (off / no limit) or at least a minimum, and why.
_MINIMUMS = {
    # Python, a BLAS and a data loader need a few processes each.
    ("sandbox", "max_processes"): (16, "is too low for any run to start"),
    ("ideas", "panel"): (2, "is too few: a panel needs at least two personas to discuss"),
}
# Values that must be at least 1: zero would silently do nothing.
_AT_LEAST_ONE = {("review", "ensemble"): "reviews nothing"}
# Fields older labtui.toml files have, and what becomes of them (see _apply_legacy).
_LEGACY = {("llm", "timeout_s")}
# Upper bounds, and a sensible value to suggest instead.
_AT_MOST = {
    ("ideas", "duplicate_threshold"): (1.0, 0.7),  # a similarity: 1.0 drops only exact repeats
    ("review", "threshold"): (10.0, 6),  # on the 1-10 Overall scale
    ("review", "temperature"): (2.0, 0.75),
}


def _coerce(path: Path, section: str, key: str, value: Any, kind: type) -> Any:
    where = f"{path}: [{section}] {key}"
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(
                f"{where} must be true or false, not {value!r}", f"write {key} = true"
            )
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, not {value!r}", f"write {key} = 3")
        if kind is int and not float(value).is_integer():
            raise ConfigError(f"{where} must be a whole number, not {value!r}", f"write {key} = 3")
        if value < 0:
            raise ConfigError(
                f"{where} must not be negative ({value!r})", f"write {key} = 0 or more"
            )
        return kind(value)
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, not {value!r}", f'write {key} = "..."')
    choices = _CHOICES.get((section, key))
    if choices and value not in choices:
        raise ConfigError(f"{where} is {value!r}", f"use one of: {', '.join(choices)}")
    return value


def _check_minimum(path: Path, section: str, key: str, value: Any) -> None:
    minimum, why = _MINIMUMS.get((section, key), (None, ""))
    if minimum is not None and 0 < value < minimum:
        raise ConfigError(
            f"{path}: [{section}] {key} = {value!r} {why}",
            f"write {key} = {minimum} or more, or {key} = 0 to turn it off",
        )
    if (section, key) in _AT_LEAST_ONE and value < 1:
        raise ConfigError(
            f"{path}: [{section}] {key} = {value!r} {_AT_LEAST_ONE[section, key]}",
            f"write {key} = 1 or more",
        )
    most, suggestion = _AT_MOST.get((section, key), (None, None))
    if most is not None and value > most:
        raise ConfigError(
            f"{path}: [{section}] {key} = {value:g} is above {most:g}",
            f"write {key} = {suggestion}",
        )


def config_from_dict(data: dict[str, Any], path: Path) -> Config:
    config = Config()
    sections = {f.name: f for f in dataclasses.fields(Config)}
    for section_name, values in data.items():
        if section_name not in sections:
            raise ConfigError(
                f"{path}: unknown section [{section_name}]",
                f"remove it; known sections: {', '.join(sections)}",
            )
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: {section_name} must be a [section] table")
        section = getattr(config, section_name)
        hints = get_type_hints(type(section))
        for key, value in values.items():
            if (section_name, key) in _LEGACY:
                _apply_legacy(path, section_name, key, value, values, section)
                continue
            if key not in hints:
                raise ConfigError(
                    f"{path}: [{section_name}] has unknown field {key!r}",
                    f"remove it; known fields: {', '.join(hints)}",
                )
            value = _coerce(path, section_name, key, value, hints[key])
            _check_minimum(path, section_name, key, value)
            setattr(section, key, value)
    return config


def _apply_legacy(
    path: Path, section_name: str, key: str, value: Any, values: dict[str, Any], section: Any
) -> None:
    """A field that labtui no longer has, still accepted so that old projects load.

    ``[llm] timeout_s`` was a total request timeout (180 s by default, written into every
    labtui.toml). It is now ``first_token_s`` (until the first token) plus ``idle_s`` (between
    tokens). A legacy value only ever gives more time: it raises first_token_s when larger (the
    user allowed slow prompts that long) and is ignored when smaller (a total of 180 s is exactly
    what cut off slow local answers) or when the file also sets first_token_s.
    """
    seconds = _coerce(path, section_name, key, value, float)
    if "first_token_s" not in values:
        section.first_token_s = max(section.first_token_s, seconds)


def load_config(project_dir: Path) -> Config:
    path = Path(project_dir) / CONFIG_NAME
    if not path.exists():
        raise ConfigError(
            f"{path} not found: this folder is not a labtui project",
            "create one with: labtui new DIR --template moons",
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})", "fix the line it names") from None
    return config_from_dict(data, path)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


_COMMENTS = {
    "models": "litellm model strings per stage (empty: default, then $LABTUI_MODEL).\n"
    "# api_base points at an OpenAI-compatible server (vLLM, Ollama, llama.cpp);\n"
    "# its key is read from the environment variable named by api_key_env.",
    "llm": "every call streams. first_token_s: seconds a model may take before its first\n"
    "# token (reading the prompt: minutes for a long prompt on a CPU server); idle_s: the longest\n"
    "# pause between tokens after that. A reply that keeps coming is never cut off. 0 = no limit.",
    "budget": "hard cap in US dollars; the run stops cleanly at the next checkpoint",
    "limits": "seconds and counts for experiment runs, plots and LaTeX",
    "autonomy": 'mode = "copilot" pauses at checkpoints; "auto" approves everything',
    "experiment": "python: the interpreter experiments run in (empty: labtui's own)",
    "sandbox": 'how runs are contained: mode = "auto" uses bubblewrap when it works, else\n'
    '# limits only (with a warning); "bwrap" requires it; "limits"; "off". 0 = no limit.\n'
    "# network = false: no network inside bubblewrap. Project folder writable, all else\n"
    "# (and labtui.toml, .labtui, .git) read-only.",
    "review": "ensemble reviewers (+ an Area Chair's meta-review), each reconsidering its\n"
    "# review up to `reflections` times; Accept when their mean Overall >= threshold.\n"
    "# improvements: rounds of revising the paper by its review before the checkpoint.",
}


def render_config(config: Config) -> str:
    lines: list[str] = []
    for section_field in dataclasses.fields(Config):
        section = getattr(config, section_field.name)
        if comment := _COMMENTS.get(section_field.name):
            lines.append(f"# {comment}")
        lines.append(f"[{section_field.name}]")
        for f in dataclasses.fields(section):
            lines.append(f"{f.name} = {_toml_value(getattr(section, f.name))}")
        lines.append("")
    return "\n".join(lines)


def save_config(config: Config, project_dir: Path) -> Path:
    path = Path(project_dir) / CONFIG_NAME
    path.write_text(render_config(config), encoding="utf-8")
    return path
