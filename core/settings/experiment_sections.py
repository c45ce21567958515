"""How experiments run and search, as ``labtui.toml`` sets them: [experiment] (the command, what
the agents may edit), [climb] and [tree] (the two searches and what they share) and [results]
(where a run's numbers come from).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from .section_types import Count, Number, Seconds, Section, Timeout, at_least_one, at_most


def _globs(value: list[str]) -> list[str]:
    for glob in value:
        if not glob.strip() or glob.startswith("/") or ".." in glob.split("/"):
            raise PydanticCustomError(
                "labtui_invalid",
                "bad path",
                {
                    "why": f"has {glob!r}, which is no path inside the project",
                    "fix": 'write paths or globs relative to the project, e.g. ["train.py", '
                    '"models/*.py"]',
                },
            )
    return value


Globs = Annotated[list[str], AfterValidator(_globs)]


def _folder(value: str) -> str:
    """A folder inside the project, written relative to it ('' or '.': the project itself)."""
    folder = value.strip().rstrip("/")
    if folder.startswith(("/", "~")) or ".." in folder.split("/") or "\\" in folder:
        raise PydanticCustomError(
            "labtui_invalid",
            "bad folder",
            {
                "why": f"is {value!r}, which is no folder inside the project",
                "fix": 'write the folder relative to the project, e.g. workdir = "examples/mnist"',
            },
        )
    return "" if folder in ("", ".") else folder.removeprefix("./")


Folder = Annotated[str, AfterValidator(_folder)]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_EXAMPLE = 'write env = {WANDB_MODE = "offline", WANDB_DIR = "{out_dir}"}'
# labtui sets these for every run: a researcher's value would be overridden, or (the GPUs a run
# leases) would break what labtui promises other runs
_LABTUI_SETS = ("LABTUI_", "CUDA_VISIBLE_DEVICES")


def _env_vars(value: Any) -> Any:
    """A table of NAME = "text": checked before pydantic's own checks, whose errors would not
    say how an environment variable is written."""
    if not isinstance(value, dict):
        raise _env_error(f'must be a table of NAME = "value", not {value!r}', _ENV_EXAMPLE)
    for name, text in value.items():
        if not _ENV_NAME.fullmatch(name):
            raise _env_error(
                f"has {name!r}, which is no environment variable name",
                "use letters, digits and _ only, not starting with a digit (e.g. WANDB_MODE)",
            )
        if name.startswith(_LABTUI_SETS):
            raise _env_error(
                f"has {name}, which labtui sets for every run itself",
                f"remove {name} from [experiment] env",
            )
        if not isinstance(text, str):
            raise _env_error(f"has {name} = {text!r}, which is no text", f'write {name} = "{text}"')
    return value


def _env_error(why: str, fix: str) -> PydanticCustomError:
    return PydanticCustomError("labtui_invalid", "bad env", {"why": why, "fix": fix})


EnvVars = Annotated[dict[str, str], BeforeValidator(_env_vars)]


class ExperimentSection(Section):
    """How one experiment runs. The defaults are The AI Scientist's template contract
    (``python experiment.py --out_dir=run_i``); `labtui init` writes a researcher's own."""

    python: str = ""
    """The research interpreter; empty: the one labtui runs in."""
    strategy: Literal["plan", "climb", "tree"] = "plan"
    """How the experiments search: "plan" runs the approved plan's runs in a line; "climb" is an
    overnight hill-climb ([climb]: small changes kept only when the metric beats the best by more
    than the noise); "tree" a best-first tree search over code variants ([tree])."""
    parallel: Count = 1
    """Ideas whose runs go on at once, each beyond the first in a git worktree of its own
    (core/steps/lanes.py); `labtui run --parallel K` overrides. 0 or 1: one."""
    command: Annotated[str, Field(min_length=1)] = "{python} experiment.py --out_dir={out_dir}"
    """One experiment's command line, run in the working folder (``workdir``): {python} is the
    interpreter above, {out_dir} the run's folder (run_1, …, as seen from the working folder),
    which the run also finds in $LABTUI_OUT_DIR."""
    workdir: Folder = ""
    """The folder every run starts in, relative to the project ('': the project's own): one
    example of a repository of many, whose scripts read and write files beside them. The smoke
    run, the baseline, a search's runs (in its worktree, the same folder) and ``prepare`` all
    run there; run folders and labtui.toml stay at the project's top."""
    env: EnvVars = {}  # noqa: RUF012 (pydantic copies it per section)
    """Environment variables every run gets (the smoke run and Slurm jobs too), e.g.
    WANDB_MODE = "offline"; {out_dir} in a value is the run's folder (its absolute path, as in
    $LABTUI_OUT_DIR). labtui's own LABTUI_* variables are not set here."""
    prepare: list[str] = []  # noqa: RUF012 (pydantic copies it per section)
    """Shell lines run in the working folder before each run, in its sandbox and environment
    (a README's set-up step: "bash create_output_dirs.sh", "mkdir -p checkpoints",
    "{python} generate_data.py"; {python} is the interpreter above); one that fails fails the
    run, with its own message."""
    smoke_command: str = ""
    """The same experiment cut to seconds (a smoke setting), used to check the set-up before
    the real baseline; empty: none."""
    edit: Annotated[Globs, Field(min_length=1)] = ["experiment.py"]  # noqa: RUF012 (pydantic copies it per section)
    """Files (or globs) the agents may edit to make a run's change."""
    protect: Globs = []  # noqa: RUF012 (pydantic copies it per section)
    """Files (or globs) no agent and no run may change: evaluation code, data, configs of
    record. A change is undone and refused."""
    commit_file_mb: Count = 20
    """Files a run writes that are bigger than this (checkpoints, say) stay on disk but out of
    git (the run folder's .gitignore lists them)."""
    threads: Count = 0
    """Threads a run's numerical libraries use: $OMP_NUM_THREADS and $MKL_NUM_THREADS (torch
    and numpy size their pools by them) for every run, as its labtui_run.json records. 0: the
    cores the run is given (its Slurm job's [cluster] cpus; here every usable core, less
    [sandbox] leave_cores where a cgroup caps the run's CPU), since a pool larger than that only
    waits (an LSTM step took 100 s with 2 threads on a shared 2-core machine, 1.7 s with 1). An
    OMP_NUM_THREADS in [experiment] env wins."""

    @model_validator(mode="after")
    def _edit_and_protect_apart(self) -> ExperimentSection:
        both = sorted(set(self.edit) & set(self.protect))
        if both:
            raise PydanticCustomError(
                "labtui_invalid",
                "overlap",
                {
                    "field": "protect",
                    "why": f"also names {', '.join(both)}, which edit lets the agents change",
                    "fix": "name each file in edit or in protect, not in both",
                },
            )
        return self


def _metric_name(value: str) -> str:
    if value != value.strip() or " " in value:
        raise PydanticCustomError(
            "labtui_invalid",
            "bad metric",
            {
                "why": f"is {value!r}: a mean's name in final_info.json has no spaces",
                "fix": 'write {key} = "test_accuracy_mean" (a mean of run_0/final_info.json, '
                'or "dataset.mean")',
            },
        )
    return value


Metric = Annotated[str, AfterValidator(_metric_name)]


class SearchSection(Section):
    """What a hill-climb and a tree search share (core/search/shared.py): the metric they improve, the
    budget of each run, when they stop and how the best is checked. 0 turns a limit off."""

    metric: Metric = ""
    """The number to improve: a mean of final_info.json as "metric" or "dataset.metric" (e.g.
    "test_accuracy_mean"). Empty: the first metric the project declares (prompt.json's
    "metrics", or [results] metrics) that the baseline reports."""
    direction: Literal["", "higher", "lower"] = ""
    """Which way is better; empty: as the project declares it, else by the metric's name."""
    run_budget_s: Timeout = 300.0
    """The wall-clock budget of one run. The run finds it in $LABTUI_RUN_BUDGET_S (and {budget_s}
    in [experiment] command) and must have written its results by then."""
    overrun_s: Seconds = 30.0
    """How long past run_budget_s a run may go (evaluating, writing) before it is stopped
    (SIGTERM, then SIGKILL) and judged on what it wrote."""
    max_hours: Number = 10.0
    """Hours the search may take, summed over sessions (resume keeps the count)."""
    baseline_repeats: Count = 2
    """Extra runs of the unchanged code with other seeds ($LABTUI_SEED = 1, 2, …), before the
    search: their spread with run_0 is the run-to-run noise."""
    noise_sigmas: Number = 2.0
    """A change counts as better only when it beats the best by more than this many standard
    deviations of the difference of two runs (√2 times that noise): with 2, an attempt that
    changes nothing is kept by chance about once in 400."""
    seeds: Count = 3
    """Runs of the best code with other seeds at the end: the result the paper reports is
    their mean and spread (0: the best single run)."""
    checkpoint_every: Count = 0
    """A checkpoint every this many attempts or nodes (0: only at the end); --auto never
    pauses."""
    settings: list[str] = []  # noqa: RUF012 (pydantic copies it per section)
    """The settings of the code a proposal may change (labtui sets them itself, no edit), e.g.
    ["LEARNING_RATE", "HIDDEN_UNITS"]; empty: every setting the code states, less those whose
    name says they define the measurement (seeds, test and evaluation sizes, data, logging)."""
    code_changes: bool = True
    """Whether a proposal may change the code itself (made by the coder); false: settings
    only, each attempt made by labtui in milliseconds."""


class ClimbSection(SearchSection):
    """The overnight hill-climb ([experiment] strategy = "climb"): one small change at a time,
    kept (a commit on labtui/climb/<idea>) when it beats the best by more than the noise,
    discarded (git reset; its diff kept in the ledger) when not. Each attempt is a line of the
    ledger ledgers/climb-<idea>/results.tsv."""

    run_budget_s: Timeout = 300.0
    """The wall-clock budget of one run (five minutes: about twelve attempts an hour). The run
    finds it in $LABTUI_RUN_BUDGET_S (and {budget_s} in [experiment] command) and must have
    written its results by then."""
    max_runs: Count = 100
    """Attempts at most (about eight hours at five minutes each); baseline repeats and seed
    runs aside."""
    fix_attempts: Count = 2
    """Fixes of a change whose run crashed before it is discarded as a crash."""
    labtui_steps: bool = True
    """When the model gives no usable proposal, labtui makes the attempt a settings step of its
    own (the setting changed least, moved to its nearest value not yet run); false: the attempt
    is lost, and three in a row end the climb."""

    @property
    def limit(self) -> int:
        return self.max_runs


class TreeSection(SearchSection):
    """The tree search ([experiment] strategy = "tree", The AI Scientist v2 after AIDE): every
    node a commit on labtui/tree/<idea>/node-<n>. Each step drafts a new root, debugs a buggy
    leaf or improves the best node; the best is chosen by the metric, not by a model."""

    max_nodes: Count = 20
    """Nodes at most (drafts, debugs and improvements); seed runs aside."""
    drafts: Annotated[Count, at_least_one("leaves the tree without a root")] = 3
    """Root drafts: fresh implementations of the idea from the project's code."""
    debug_prob: Annotated[Number, at_most(1.0, 0.5)] = 0.5
    """The chance that a step debugs a buggy leaf rather than improving the best node."""
    max_debug_depth: Count = 3
    """Debug steps in a row a buggy line gets before it is left as it is."""
    workers: Annotated[Count, at_least_one("runs nothing")] = 1
    """Nodes worked on at once, each in a worktree of its own; every run leases its GPUs from
    the pool, so workers beyond the free GPUs wait."""
    finalists: Annotated[Count, at_least_one("re-evaluates nothing")] = 2
    """The best nodes by the metric that are run again with seeds; the best mean wins."""
    seed: Count = 0
    """Seed of the choices between debugging and improving (the same tree every time)."""

    @property
    def limit(self) -> int:
        return self.max_nodes


class ResultsSection(Section):
    """Where a run's numbers come from. Whatever the source, labtui writes them into the run's
    ``final_info.json`` ({dataset: {"means": {metric: value}}}), which every later step reads."""

    source: Literal["final_info", "json", "csv", "stdout", "tensorboard", "wandb"] = "final_info"
    """"final_info": the run writes final_info.json itself (the template contract); "json": any
    JSON file; "csv": a table, a row per step or epoch; "stdout": metric lines the run prints;
    "tensorboard": event files; "wandb": a W&B run, online or offline: its
    files/wandb-summary.json when that holds numbers and reduce is "last", else its
    run-<id>.wandb file, which holds every logged value (an offline run has only that; reading it
    needs wandb installed where labtui runs)."""
    path: str = ""
    """The file (or a glob; the newest match the run wrote wins), relative to the project;
    {out_dir} is the run's folder. Empty: the source's usual place (final_info:
    {out_dir}/final_info.json; tensorboard: event files under {out_dir}; wandb: the newest W&B
    run folder under {out_dir}/wandb/, where WANDB_DIR = "{out_dir}" in [experiment] env puts
    it, or under the project's wandb/). For wandb a path may also name a run folder or the
    folder holding them."""
    metrics: dict[str, Literal["higher", "lower"]] = {}  # noqa: RUF012 (pydantic copies it per section)
    """The numbers that matter and which way is better: a dotted path in JSON
    ("eval.accuracy", "history.-1.loss"), a CSV column, a TensorBoard tag, a W&B key as logged
    ("validation/accuracy"; a logged dict's as "val.acc") or a metric name in the log lines.
    Empty (final_info only): every mean."""
    reduce: Literal["last", "best", "min", "max", "mean"] = "last"
    """How a series (CSV rows, log lines, TensorBoard steps, W&B's logged values, a JSON list)
    becomes one number; "best" is the max or min by each metric's direction."""
    dataset: str = "main"
    """The name the numbers are kept under in final_info.json."""

    @model_validator(mode="after")
    def _metrics_named(self) -> ResultsSection:
        if self.source != "final_info" and not self.metrics:
            raise PydanticCustomError(
                "labtui_invalid",
                "no metrics",
                {
                    "field": "metrics",
                    "why": f"is empty, and with source = {self.source!r} labtui must be told "
                    "which numbers to read",
                    "fix": 'write metrics = {"<name or path>" = "higher"} (or "lower")',
                },
            )
        if self.source in ("json", "csv") and not self.path:
            raise PydanticCustomError(
                "labtui_invalid",
                "no path",
                {
                    "field": "path",
                    "why": f"is empty, and a {self.source} source has no usual place",
                    "fix": f'write path = "{{out_dir}}/metrics.{self.source}" (where the run '
                    "writes it)",
                },
            )
        return self
