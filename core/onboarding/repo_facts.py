"""The facts `labtui init` records of a researcher's repository, and the set-up drafted from them.

Frozen dataclasses only: what ``survey`` (core/onboarding/repo_scan.py) found, one record per kind of fact
(a script and its options, a command line, a result file, a LaTeX main file, …) gathered in
``RepoSurvey``; and ``SetupDraft``, the labtui.toml values ``propose_setup`` (core/onboarding/setup_draft.py)
drafts from them. They live apart from the code that finds them, so that each room of the survey
and the model's refinement (core/onboarding/setup_proposal.py) import the records and not each other.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any

# A script's options and numbers are read in core/source/ (the settings of a run's script are
# read there too, for layers onboarding may not be imported by); the survey's records name them.
from ..source.argparse_options import Option as Option
from ..source.script_settings import Constant as Constant


@dataclass(frozen=True)
class HydraConfig:
    config_path: str
    config_name: str
    config_file: str = ""  # the YAML found, relative to the repository
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntryPoint:
    path: str
    kind: str  # argparse | click | typer | hydra | plain
    options: tuple[Option, ...] = ()
    hydra: HydraConfig | None = None
    imports: tuple[str, ...] = ()  # the repository files it imports
    result_names: tuple[str, ...] = ()  # result-like .json/.csv names its code spells out
    error: str = ""  # why it did not parse
    constants: tuple[Constant, ...] = ()  # its module-level numbers, in the order it sets them
    # it execs a configurator (nanoGPT's configurator.py): --name=value sets a constant
    configurable: bool = False


@dataclass(frozen=True)
class Command:
    line: str
    found_in: str  # "README.md:12"
    launcher: str  # python | accelerate | torchrun | deepspeed
    prefix: tuple[str, ...]  # the launcher and its own options, before the script
    script: str  # the repository file it runs; "" when none matches
    module: str = ""
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class NamedOption:
    """An entry point's option that names its output folder, or one that shortens a run."""

    entry: str
    flag: str
    dest: str
    default: Any = None
    kind: str = ""  # smoke options: "flag" (a switch) or "count"


@dataclass(frozen=True)
class ResultFile:
    path: str
    source: str  # final_info | json | csv | tensorboard | wandb
    size: int
    mtime: float


@dataclass(frozen=True)
class TexFile:
    path: str
    exists: bool


@dataclass(frozen=True)
class LatexMain:
    path: str
    sections: tuple[str, ...] = ()  # in reading order, through the files it inputs
    inputs: tuple[TexFile, ...] = ()
    bibliography: tuple[TexFile, ...] = ()
    placeholders: tuple[str, ...] = ()


@dataclass(frozen=True)
class PythonFiles:
    all: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    evaluation: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    config: tuple[str, ...] = ()  # config files of any kind, not only Python
    unparsed: tuple[str, ...] = ()  # "path: the syntax error"


@dataclass(frozen=True)
class Readme:
    path: str
    text: str


@dataclass(frozen=True)
class Tracker:
    name: str  # tensorboard | wandb
    files: tuple[str, ...]


@dataclass(frozen=True)
class RepoSurvey:
    root: str
    readme: Readme | None = None
    files: tuple[str, ...] = ()
    files_truncated: bool = False
    entry_points: tuple[EntryPoint, ...] = ()
    commands: tuple[Command, ...] = ()
    output_options: tuple[NamedOption, ...] = ()
    smoke_options: tuple[NamedOption, ...] = ()
    result_files: tuple[ResultFile, ...] = ()
    latex: tuple[LatexMain, ...] = ()
    notebooks: tuple[str, ...] = ()
    python_files: PythonFiles = field(default_factory=PythonFiles)
    trackers: tuple[Tracker, ...] = ()
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)  # module -> its repo imports

    def to_dict(self, *, max_files: int | None = 200) -> dict[str, Any]:
        """The facts as JSON values, fields at their defaults left out (a prompt stays short)."""
        data: dict[str, Any] = _compact(self)
        if max_files is not None and len(self.files) > max_files:
            data["files"] = list(self.files[:max_files])
            data["files_left_out"] = len(self.files) - max_files
        return data


@dataclass
class Draft:
    """The set-up as it is being drafted: values, the fact behind each, open questions."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    questions: list[str] = field(default_factory=list)

    def set(self, key: str, value: Any, reason: str) -> None:
        section, name = key.split(".")
        self.values.setdefault(section, {})[name] = value
        self.reasons[key] = reason

    def get(self, key: str, default: Any = None) -> Any:
        section, name = key.split(".")
        return self.values.get(section, {}).get(name, default)

    def ask(self, question: str) -> None:
        self.questions.append(question)


def _compact(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in fields(value):
            item = getattr(value, f.name)
            default = f.default_factory() if f.default_factory is not MISSING else f.default
            if default is MISSING or item != default:
                out[f.name] = _compact(item)
        return out
    if isinstance(value, list | tuple):
        return [_compact(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _compact(v) for k, v in value.items()}
    return value
