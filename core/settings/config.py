"""``labtui.toml``: models per stage, budget, limits and autonomy of one project.

The sections are pydantic models (core/settings/sections.py). Loading validates every key and type
and turns any failure into a ``ConfigError`` that says which file, which field and what to write
instead; unknown sections and fields are refused with the nearest known name.

The environment fills in and overrides the file, as Posting's settings do:

- ``LABTUI_MODEL``, ``LABTUI_API_BASE`` and ``LABTUI_API_KEY`` give models that the file leaves
  empty, so a project can be created before a model is chosen;
- ``LABTUI_<SECTION>__<FIELD>`` sets any field, e.g. ``LABTUI_LIMITS__RUN_TIMEOUT_S=60`` or
  ``LABTUI_SANDBOX__NETWORK=true``, its value read as TOML (a bare word is a string). It is
  checked like the file, and its errors name the variable.
"""

from __future__ import annotations

import difflib
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..errors import ConfigError
from ..stage_list import STAGE_MODEL_NEEDS, model_key
from . import CONFIG_NAME
from .model_spec import LOCAL_MODEL_NAME, LocalChoice, ModelSpec
from .sections import (
    AutonomySection,
    BudgetSection,
    ClimbSection,
    ClusterSection,
    ExperimentSection,
    IdeasSection,
    LimitsSection,
    LiteratureSection,
    LLMSection,
    ModelsSection,
    NotifySection,
    PaperSection,
    ProjectSection,
    ResultsSection,
    ReviewSection,
    SandboxSection,
    TreeSection,
)

ENV_PREFIX = "LABTUI_"


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    project: ProjectSection = Field(default_factory=ProjectSection)
    models: ModelsSection = Field(default_factory=ModelsSection)
    llm: LLMSection = Field(default_factory=LLMSection)
    budget: BudgetSection = Field(default_factory=BudgetSection)
    limits: LimitsSection = Field(default_factory=LimitsSection)
    autonomy: AutonomySection = Field(default_factory=AutonomySection)
    experiment: ExperimentSection = Field(default_factory=ExperimentSection)
    results: ResultsSection = Field(default_factory=ResultsSection)
    climb: ClimbSection = Field(default_factory=ClimbSection)
    tree: TreeSection = Field(default_factory=TreeSection)
    paper: PaperSection = Field(default_factory=PaperSection)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    ideas: IdeasSection = Field(default_factory=IdeasSection)
    literature: LiteratureSection = Field(default_factory=LiteratureSection)
    review: ReviewSection = Field(default_factory=ReviewSection)
    notify: NotifySection = Field(default_factory=NotifySection)
    _local_url: str = PrivateAttr(default="")

    def model_for(self, stage: str) -> ModelSpec | None:
        """The model a stage uses, or None when no model is configured anywhere."""
        name = (
            getattr(self.models, model_key(stage), "")
            or self.models.default
            or os.environ.get("LABTUI_MODEL", "")
        )
        api_base = self.models.api_base or os.environ.get("LABTUI_API_BASE", "")
        key_env = self.models.api_key_env or "LABTUI_API_KEY"
        if not name:
            if self.models.local is False:
                return None
            # labtui's own model: its server's address is filled in once it runs
            local = LocalChoice(self.models.local, self.models.local_idle_min)
            return ModelSpec(name=LOCAL_MODEL_NAME, api_base=self.local_url, local=local)
        return ModelSpec(
            name=name,
            api_base=api_base,
            api_key_env=key_env,
            input_usd_per_mtok=self.models.input_usd_per_mtok,
            output_usd_per_mtok=self.models.output_usd_per_mtok,
        )

    @property
    def uses_local_model(self) -> bool:
        """Whether some stage runs on the model labtui brings (nothing else configured)."""
        return any(
            (spec := self.model_for(stage)) is not None and spec.local is not None
            for stage in STAGE_MODEL_NEEDS
        )

    @property
    def search(self) -> ClimbSection | TreeSection | None:
        """The settings of the experiments' search strategy; None for the planned runs."""
        sections: dict[str, ClimbSection | TreeSection] = {"climb": self.climb, "tree": self.tree}
        return sections.get(self.experiment.strategy)

    @property
    def python(self) -> str:
        return self.experiment.python or sys.executable

    @property
    def local_url(self) -> str:
        """Where labtui's own model answers once its server runs ('' before)."""
        return self._local_url

    def use_local_server(self, url: str) -> None:
        """Its server runs at ``url`` (kept in memory only: the port may differ next time)."""
        self._local_url = url


SECTIONS: dict[str, type[BaseModel]] = {
    name: info.annotation  # type: ignore[misc]
    for name, info in Config.model_fields.items()
}
# Fields older labtui.toml files have, and what becomes of them (see _apply_legacy).
_LEGACY = {("llm", "timeout_s")}


# -- loading ---------------------------------------------------------------------------------


def load_config(project_dir: Path) -> Config:
    path = Path(project_dir) / CONFIG_NAME
    if not path.exists():
        raise ConfigError(
            f"{path} not found: this folder is not a labtui project",
            "create one with: labtui new DIR --template moons",
        )
    return config_in_effect(read_toml(path), path)


def read_toml(path: Path) -> dict[str, Any]:
    """A labtui.toml-shaped file's tables; a ConfigError naming the line when it is no TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})", "fix the line it names") from None


def config_in_effect(data: dict[str, Any], path: Path) -> Config:
    """A labtui.toml's values as every command runs them: the site's [cluster] under the
    project's own, then the ``LABTUI_<SECTION>__<FIELD>`` overrides of the environment."""
    return config_from_dict(_with_site_cluster(data, os.environ), path, os.environ)


SITE_CONFIG_ENV = "LABTUI_SITE_CONFIG"


def site_config_path(environ: Mapping[str, str]) -> Path:
    """The researcher's own labtui.toml for every project: ``$LABTUI_SITE_CONFIG``, else
    ``$XDG_CONFIG_HOME/labtui/labtui.toml`` (``~/.config/labtui/labtui.toml``)."""
    if environ.get(SITE_CONFIG_ENV):
        return Path(environ[SITE_CONFIG_ENV]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "labtui" / CONFIG_NAME


def _with_site_cluster(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """The project's settings with the site's ``[cluster]`` under its own: a cluster's partition
    and account are the same for every project, and a project may still override any key."""
    path = site_config_path(environ)
    if not path.is_file():
        return data
    try:
        site = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: not readable as TOML ({exc})", "fix the line it names"
        ) from None
    for name in site:
        if name != "cluster":
            raise ConfigError(
                f"{path}: [{name}] belongs in a project's labtui.toml",
                "keep only [cluster] in this file, or move the section into the project",
            )
    cluster = site.get("cluster", {})
    if not isinstance(cluster, dict):
        raise ConfigError(f"{path}: cluster must be a [cluster] table")
    _section("cluster", dict(cluster), lambda _key: str(path))  # its errors name this file
    own = data.get("cluster", {})
    return {**data, "cluster": {**cluster, **own} if isinstance(own, dict) else own}


def config_from_dict(
    data: dict[str, Any], path: Path, environ: Mapping[str, str] | None = None
) -> Config:
    """The file's values, then the ``LABTUI_<SECTION>__<FIELD>`` overrides in ``environ``."""
    sections: dict[str, Any] = {}
    for name, values in data.items():
        if name not in SECTIONS:
            raise ConfigError(
                f"{path}: unknown section [{name}]",
                _suggest(name, SECTIONS, f"known sections: {', '.join(SECTIONS)}"),
            )
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: {name} must be a [section] table")
        sections[name] = _section(name, dict(values), lambda _key: str(path))
    for name, values in _overrides(environ or {}).items():
        merged = {**sections.get(name, {}), **values}

        def origin(key: str, name: str = name, given: dict[str, Any] = values) -> str:
            return f"${ENV_PREFIX}{name.upper()}__{key.upper()}" if key in given else str(path)

        sections[name] = _section(name, merged, origin)
    return Config.model_validate(sections)


def _section(name: str, values: dict[str, Any], origin: Callable[[str], str]) -> dict[str, Any]:
    """``values`` of section ``name`` validated (legacy fields applied); ConfigError otherwise.
    ``origin(key)`` says where a value came from: the file, or an environment variable."""
    for key in [k for k in values if (name, k) in _LEGACY]:
        _apply_legacy(values, values.pop(key), f"{origin(key)}: [{name}] {key}")
    model = SECTIONS[name]
    try:
        return model(**values).model_dump()
    except ValidationError as exc:
        raise _config_error(exc, name, values, origin) from None


def _apply_legacy(values: dict[str, Any], seconds: Any, where: str) -> None:
    """``[llm] timeout_s``, which labtui no longer has, still accepted so that old projects load.

    It was a total request timeout (180 s by default, written into every labtui.toml). It is now
    ``first_token_s`` (until the first token) plus ``idle_s`` (between tokens). A legacy value
    only ever gives more time: it raises first_token_s when larger (the user allowed slow prompts
    that long) and is ignored when smaller (a total of 180 s is exactly what cut off slow local
    answers) or when the file also sets first_token_s.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ConfigError(f"{where} must be a number, not {seconds!r}", "write timeout_s = 3")
    if seconds < 0:
        raise ConfigError(
            f"{where} must not be negative ({seconds!r})", "write timeout_s = 0 or more"
        )
    if "first_token_s" not in values:
        default = LLMSection.model_fields["first_token_s"].default
        values["first_token_s"] = max(float(default), float(seconds))


def _overrides(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """``LABTUI_LIMITS__RUN_TIMEOUT_S=60`` → {"limits": {"run_timeout_s": 60}}."""
    found: dict[str, dict[str, Any]] = {}
    for variable, raw in environ.items():
        if not variable.startswith(ENV_PREFIX) or "__" not in variable:
            continue
        section, _, key = variable[len(ENV_PREFIX) :].lower().partition("__")
        if section not in SECTIONS:
            raise ConfigError(
                f"${variable} names no section of labtui.toml ([{section}])",
                _suggest(section, SECTIONS, f"known sections: {', '.join(SECTIONS)}"),
            )
        field = SECTIONS[section].model_fields.get(key)
        text_only = field is not None and field.annotation is str
        found.setdefault(section, {})[key] = _toml_scalar(raw, text_only)
    return found


def _toml_scalar(raw: str, text_only: bool = False) -> Any:
    """A variable's value as TOML reads it (60, 0.5, true, "text"); a bare word is text, and so
    is anything given to a text field (a project named 2024, a model named true)."""
    try:
        value = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        return raw
    return raw if text_only and not isinstance(value, str) else value


# -- errors ----------------------------------------------------------------------------------


def _config_error(
    exc: ValidationError, name: str, values: dict[str, Any], origin: Callable[[str], str]
) -> ConfigError:
    """The first problem pydantic found, said as labtui says it: where, what, and the fix."""
    error = exc.errors()[0]
    kind, context = error["type"], error.get("ctx") or {}
    key = str(error["loc"][0]) if error["loc"] else str(context.get("field", ""))
    value = values.get(key)
    fields = SECTIONS[name].model_fields
    place = f"{origin(key)}: [{name}] {key}"
    if kind == "extra_forbidden":
        return ConfigError(
            f"{origin(key)}: [{name}] has unknown field {key!r}",
            _suggest(key, fields, f"known fields: {', '.join(fields)}"),
        )
    if kind == "bool_type":
        return ConfigError(f"{place} must be true or false, not {value!r}", f"write {key} = true")
    if kind == "int_type" and isinstance(value, float):
        return ConfigError(f"{place} must be a whole number, not {value!r}", f"write {key} = 3")
    if kind in ("int_type", "float_type"):
        return ConfigError(f"{place} must be a number, not {value!r}", f"write {key} = 3")
    if kind == "greater_than_equal":
        return ConfigError(f"{place} must not be negative ({value!r})", f"write {key} = 0 or more")
    if kind == "string_type":
        return ConfigError(f"{place} must be a string, not {value!r}", f'write {key} = "..."')
    if kind == "literal_error" and len(error["loc"]) > 1:  # a value inside a table
        inner = error["loc"][1]
        return ConfigError(
            f"{place} has {inner!r} = {error['input']!r}", f"use one of: {context['expected']}"
        )
    if kind == "literal_error":
        choices = ", ".join(get_args(fields[key].annotation))
        return ConfigError(f"{place} is {value!r}", f"use one of: {choices}")
    if kind in ("list_type", "dict_type") or (kind == "string_type" and len(error["loc"]) > 1):
        return ConfigError(f"{place} must be {_SHAPES[key]}, not {value!r}", _SHAPE_FIXES[key])
    if kind in ("too_short", "string_too_short"):
        return ConfigError(f"{place} is empty", _SHAPE_FIXES[key])
    if kind == "labtui_invalid":
        return ConfigError(f"{place} {context['why']}", context["fix"].replace("{key}", key))
    if kind == "labtui_maximum":
        fix = context["fix"].format(key=key)
        return ConfigError(f"{place} = {value:g} is above {context['most']}", fix)
    if kind == "greater_than":
        default = fields[key].default
        return ConfigError(
            f"{place} must be above 0 ({value!r}): the limit would stop the work at once",
            f"write {key} = {default:g} (seconds; any number above 0)",
        )
    if kind == "labtui_minimum":
        fix = context["fix"].format(key=key)
        return ConfigError(f"{place} = {context['value']!r} {context['why']}", fix)
    return ConfigError(f"{place}: {error['msg']}", "see docs/configuration.md")


# How list and table fields are written, for the errors that say a value had another shape.
_SHAPES = {
    "edit": "a list of paths or globs",
    "protect": "a list of paths or globs",
    "sections": "a list of section titles or files",
    "data": "a list of paths",
    "metrics": 'a table of metric = "higher" or "lower"',
}
_SHAPE_FIXES = {
    "command": 'write command = "{python} train.py --output-dir {out_dir}"',
    "edit": 'write edit = ["train.py", "models/*.py"]',
    "protect": 'write protect = ["eval.py", "data/**"]',
    "sections": 'write sections = ["Experiments", "sections/results.tex"]',
    "data": 'write data = ["/data/cifar10"]',
    "metrics": 'write metrics = {"eval.accuracy" = "higher", "eval.loss" = "lower"}',
}


def _suggest(name: str, known: Mapping[str, Any], otherwise: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]!r}? ({otherwise})" if close else f"remove it; {otherwise}"


# -- saving ----------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A value as labtui.toml writes it (text quoted, lists and tables inline)."""
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_value(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + (f" {pairs} " if pairs else "") + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
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
    "experiment": "python: the interpreter experiments run in (empty: labtui's own).\n"
    "# command: one run ({python}: that interpreter, {out_dir}: the run's folder);\n"
    "# edit: what the agents may change; protect: what no agent or run may change",
    "results": "where a run's numbers come from; labtui writes them into its final_info.json",
    "paper": "the paper's main .tex file; sections: the parts the agents write (empty: the\n"
    "# template's placeholders)",
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
    for name in Config.model_fields:
        section = getattr(config, name)
        if comment := _COMMENTS.get(name):
            lines.append(f"# {comment}")
        lines.append(f"[{name}]")
        for key in type(section).model_fields:
            lines.append(f"{key} = {toml_value(getattr(section, key))}")
        lines.append("")
    return "\n".join(lines)


def save_config(config: Config, project_dir: Path) -> Path:
    path = Path(project_dir) / CONFIG_NAME
    path.write_text(render_config(config), encoding="utf-8")
    return path
