"""The sections of ``labtui.toml``: one pydantic model each, with its defaults, the choices and
ranges each field allows, and a docstring per field (what ``labtui.toml`` means by it).

Values are checked strictly (a number is never read from a string, nor a string from a number)
and unknown fields are refused; core/settings/config.py turns every failure into an error that names the
file, the field and the fix.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, validate_assignment=True, use_attribute_docstrings=True
    )


def _whole(value: Any) -> Any:
    """3.0 is the whole number 3; 3.5 stays a float and is refused as one."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _off_or_at_least(minimum: int, why: str) -> AfterValidator:
    """0 turns the setting off; otherwise it must be at least ``minimum`` (``why`` says why)."""

    def check(value: int) -> int:
        if 0 < value < minimum:
            raise PydanticCustomError(
                "labtui_minimum",
                "{why}",
                {
                    "why": why,
                    "fix": f"write {{key}} = {minimum} or more, or {{key}} = 0 to turn it off",
                    "value": value,
                },
            )
        return value

    return AfterValidator(check)


def _at_most(most: float, suggestion: float) -> AfterValidator:
    def check(value: float) -> float:
        if value > most:
            raise PydanticCustomError(
                "labtui_maximum",
                "is above {most}",
                {"most": f"{most:g}", "fix": f"write {{key}} = {suggestion:g}"},
            )
        return value

    return AfterValidator(check)


def _at_least_one(why: str) -> AfterValidator:
    def check(value: int) -> int:
        if value < 1:
            raise PydanticCustomError(
                "labtui_minimum",
                "{why}",
                {"why": why, "fix": "write {key} = 1 or more", "value": value},
            )
        return value

    return AfterValidator(check)


Count = Annotated[int, BeforeValidator(_whole), Field(ge=0)]


def _auto_or_whole(value: Any) -> Any:
    """The word "auto" stays; any other text is refused with the fix; 3.0 is 3."""
    if isinstance(value, str) and value != "auto":
        raise PydanticCustomError(
            "labtui_invalid",
            "{why}",
            {
                "why": f'is {value!r}, neither a number nor "auto"',
                "fix": 'write {key} = "auto" (it scales with the CPUs) or a number, 16 or more',
            },
        )
    return _whole(value)


TaskCap = Annotated[
    Annotated[Count, _off_or_at_least(16, "is too low for any run to start")] | Literal["auto"],
    BeforeValidator(_auto_or_whole),
]
"""A number of tasks (0: no cap), or "auto": core/machine/host_limits.py sizes it by the CPUs."""
Seconds = Annotated[float, Field(ge=0)]
Timeout = Annotated[float, Field(gt=0)]
"""A wall-clock limit that cannot be off: 0 would stop the work as soon as it started."""
Number = Annotated[float, Field(ge=0)]


class ProjectSection(Section):
    name: str = ""
    """The project's name, shown in the header."""
    template: str = ""
    """The template the project was made from (moons, char_lm, …)."""
    idea: str = ""
    """The researcher's own idea, given to `labtui new --idea`."""
    origin: Literal["template", "repository", "topic"] = "template"
    """How the project began: "template" (`labtui new --template`), "repository" (`labtui init`
    in the researcher's own repository) or "topic" (`labtui new --idea` alone: the agents write
    the code)."""
    task: str = ""
    """What the research is about, as every agent reads it; empty: prompt.json's
    task_description."""
    branch: str = ""
    """The git branch labtui commits to (`labtui init` makes labtui/<name>); empty: the branch
    the project is on. labtui never commits to another branch."""
    data: list[str] = []
    """Local data files or folders the researcher named for the agents (`labtui new --data`)."""


class ModelsSection(Section):
    """litellm model strings. A stage left empty uses ``default``."""

    default: str = ""
    """The model of every stage without its own (else $LABTUI_MODEL)."""
    api_base: str = ""
    """An OpenAI-compatible server (vLLM, Ollama, llama.cpp): its URL."""
    api_key_env: str = "LABTUI_API_KEY"
    """The environment variable the key is read from."""
    edit_format: str = ""
    """aider's edit format; empty: aider's choice for known models, else whole."""
    input_usd_per_mtok: Number = 0.0
    """The price of models litellm does not know (local servers): US dollars per million input
    tokens."""
    output_usd_per_mtok: Number = 0.0
    """The same, per million output tokens."""
    ideas: str = ""
    """The model that proposes and refines ideas."""
    novelty: str = ""
    """The model that checks an idea against the literature."""
    experiments: str = ""
    """The model that writes and fixes experiment code (through aider)."""
    plots: str = ""
    """The model that writes the plotting script."""
    writeup: str = ""
    """The model that writes the paper."""
    review: str = ""
    """The model that reviews the paper."""


class LLMSection(Section):
    max_tokens: Count = 4096
    """The longest reply a call may get."""
    temperature: Annotated[Number, _at_most(2.0, 0.7)] = 0.7
    """Sampling temperature of every call (0: the most likely tokens; at most 2)."""
    retries: Count = 4
    """Retries of a call that failed for a reason waiting may fix (rate limit, 5xx, timeout)."""
    first_token_s: Seconds = 600.0
    """Until the first token (a local CPU server reads the prompt for minutes); 0: no limit."""
    idle_s: Seconds = 120.0
    """The longest pause between tokens after the first; 0: no limit."""
    reasks: Count = 2
    """Times an unusable structured answer is asked for again, with what was wrong."""
    json_mode: bool = True
    """Ask for structured answers with response_format (off for servers that reject it)."""
    profile: Literal["auto", "hosted", "local"] = "auto"
    """"local" fits small models on this machine (core/settings/profiles.py); "auto" picks it when
    api_base is a loopback or private address."""


class BudgetSection(Section):
    usd: Number = 10.0
    """The hard cap in US dollars: the run stops cleanly at the next checkpoint."""


class LimitsSection(Section):
    run_timeout_s: Timeout = 1800.0
    """Wall-clock limit of one experiment run."""
    max_runs: Count = 5
    """Runs a plan may have (as The AI Scientist: up to 5 runs, 4 fix attempts each)."""
    fix_attempts: Count = 4
    """Tries per planned run or plot script (edit, run, hand the error back) before it is given
    up."""
    plot_timeout_s: Timeout = 300.0
    """Wall-clock limit of the plotting script."""
    latex_timeout_s: Timeout = 120.0
    """Wall-clock limit of one LaTeX compilation."""
    latex_fix_rounds: Count = 3
    """Rounds of fixing the LaTeX source by its compiler log."""
    citation_rounds: Count = 20
    """Write-up rounds that each add a citation where one is missing."""
    page_limit: Count = 0
    """Pages the compiled paper may have (0: no limit); over it, fix rounds shorten it."""
    stall_s: Seconds = 600.0
    """A run with no output, no CPU time and no GPU activity for this long is flagged as idle in
    the logs and the journal (0: never). A busy infinite loop is no stall: run_timeout_s ends it."""
    stall_stop_s: Seconds = 600.0
    """Once flagged, it is stopped after this much more idleness (0: flagged only)."""


class AutonomySection(Section):
    mode: Literal["copilot", "auto"] = "copilot"
    """"copilot" pauses at checkpoints; "auto" approves everything."""


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
    """One experiment's command line, run in the project folder: {python} is the interpreter
    above, {out_dir} the run's folder (run_1, …), which the run also finds in $LABTUI_OUT_DIR."""
    smoke_command: str = ""
    """The same experiment cut to seconds (a smoke setting), used to check the set-up before
    the real baseline; empty: none."""
    edit: Annotated[Globs, Field(min_length=1)] = ["experiment.py"]
    """Files (or globs) the agents may edit to make a run's change."""
    protect: Globs = []
    """Files (or globs) no agent and no run may change: evaluation code, data, configs of
    record. A change is undone and refused."""
    commit_file_mb: Count = 20
    """Files a run writes that are bigger than this (checkpoints, say) stay on disk but out of
    git (the run folder's .gitignore lists them)."""

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
    deviations of that noise."""
    seeds: Count = 3
    """Runs of the best code with other seeds at the end: the result the paper reports is
    their mean and spread (0: the best single run)."""
    checkpoint_every: Count = 0
    """A checkpoint every this many attempts or nodes (0: only at the end); --auto never
    pauses."""


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

    @property
    def limit(self) -> int:
        return self.max_runs


class TreeSection(SearchSection):
    """The tree search ([experiment] strategy = "tree", The AI Scientist v2 after AIDE): every
    node a commit on labtui/tree/<idea>/node-<n>. Each step drafts a new root, debugs a buggy
    leaf or improves the best node; the best is chosen by the metric, not by a model."""

    max_nodes: Count = 20
    """Nodes at most (drafts, debugs and improvements); seed runs aside."""
    drafts: Annotated[Count, _at_least_one("leaves the tree without a root")] = 3
    """Root drafts: fresh implementations of the idea from the project's code."""
    debug_prob: Annotated[Number, _at_most(1.0, 0.5)] = 0.5
    """The chance that a step debugs a buggy leaf rather than improving the best node."""
    max_debug_depth: Count = 3
    """Debug steps in a row a buggy line gets before it is left as it is."""
    workers: Annotated[Count, _at_least_one("runs nothing")] = 1
    """Nodes worked on at once, each in a worktree of its own; every run leases its GPUs from
    the pool, so workers beyond the free GPUs wait."""
    finalists: Annotated[Count, _at_least_one("re-evaluates nothing")] = 2
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
    "tensorboard": event files; "wandb": W&B's wandb-summary.json (offline runs too)."""
    path: str = ""
    """The file (or a glob; the newest match the run wrote wins), relative to the project;
    {out_dir} is the run's folder. Empty: the source's usual place (final_info:
    {out_dir}/final_info.json; tensorboard: event files under {out_dir}; wandb:
    wandb/latest-run/files/wandb-summary.json)."""
    metrics: dict[str, Literal["higher", "lower"]] = {}
    """The numbers that matter and which way is better: a dotted path in JSON
    ("eval.accuracy", "history.-1.loss"), a CSV column, a TensorBoard tag, a W&B key or a
    metric name in the log lines. Empty (final_info only): every mean."""
    reduce: Literal["last", "best", "min", "max", "mean"] = "last"
    """How a series (CSV rows, log lines, TensorBoard steps, a JSON list) becomes one number;
    "best" is the max or min by each metric's direction."""
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


class PaperSection(Section):
    tex: str = "latex/template.tex"
    """The paper's main LaTeX file, relative to the project."""
    sections: list[str] = []
    r"""The parts the agents write: \section titles of the paper, or files it \input s; the rest
    stays as you wrote it. Empty: the template's placeholders (TITLE HERE, INTRO HERE, …)."""
    writer: Literal["sections", "aider"] = "sections"
    """How the template's sections are written. "sections": each section's text is a JSON
    answer that labtui checks (no preamble, numbers traced to runs, known citations) and places
    itself, so a small model can write one section at a time; "aider": aider edits the whole
    .tex for each section (kept to bench the two against each other)."""
    mend_rounds: Count = 1
    """How often the "sections" writer sends the whole draft's gaps (a part left unwritten or
    repeating another, a promise in the Results, a run without numbers, a figure left out) back
    to the sections that have them before the draft is shown; 0: never."""


class SandboxSection(Section):
    """How experiments and plots are contained (see core/machine/sandbox.py). 0 means no limit.

    Defaults let the moons template and real multi-GPU training run untouched while stopping
    the failures LLM-written code actually has: a runaway fork, a file or run folder that fills
    the disk. CPU time and memory are unlimited by default: the wall-clock run_timeout_s already
    kills the whole process group, CPU time counts every thread (a 32-thread data loader uses
    32 CPU-seconds a second), and a memory cap misfires on GPU jobs, which map huge amounts of
    virtual memory (so memory_mb, when set, limits RLIMIT_DATA, never RLIMIT_AS).
    """

    mode: Literal["auto", "bwrap", "limits", "off"] = "auto"
    """"auto": bubblewrap when it works, else limits only (with a warning); "bwrap" requires
    it; "limits": resource limits only; "off": none."""
    network: bool = False
    """Reachable from inside bubblewrap; without bwrap it always is."""
    cpu_time_s: Count = 0
    """CPU seconds per process (SIGXCPU)."""
    memory_mb: Count = 0
    """Private writable memory per process (RLIMIT_DATA), and of the whole run where a cgroup
    caps it (MemoryMax; 0 there: all RAM but memory_reserve_mb)."""
    max_processes: TaskCap = "auto"
    """Processes + threads of a run (a watcher, cgroup TasksMax, RLIMIT_NPROC): a process storm
    is stopped here. "auto" is 24 per CPU and at least 512: PyTorch keeps about one thread per
    CPU in each DataLoader worker and two in the main process."""
    max_file_mb: Count = 8192
    """Size of any one file a run writes (RLIMIT_FSIZE)."""
    run_dir_cap_mb: Count = 20480
    """Disk use of the run folder (watched; the run is killed)."""
    project_cap_mb: Count = 20480
    """Disk a run may add to the whole project folder, run folder included (.git and .labtui
    aside; watched: the run is killed and the files it created outside its run folder are
    removed, largest first, until it is back under)."""
    tmp_mb: Count = 4096
    """The private /tmp under bubblewrap (it is held in memory)."""
    oom_score_adj: Annotated[Count, _at_most(1000, 1000)] = 1000
    """Raised OOM score of a run (0: left as is): out of memory, the kernel kills the
    experiment, not labtui, a model server or your shell."""
    nice: Annotated[Count, _at_most(19, 10)] = 10
    """CPU priority of a run (0: as labtui's; 19: lowest), so the UI and a local model server
    stay responsive."""
    ionice: Literal["best-effort", "idle", "off"] = "best-effort"
    """IO priority of a run: "best-effort" is the normal class at its lowest level (it yields
    to everyone else, never stops); "idle" gets the disk only when nobody else wants it."""
    cgroup: Literal["auto", "off"] = "auto"
    """"auto": cap each run's memory, CPU and tasks with a cgroup v2 (systemd-run --user
    --scope, or a delegated cgroup) where this machine allows it; "off": rlimits only."""
    leave_cores: Count = 1
    """CPUs a run leaves to the rest of the machine (cgroup CPUQuota; at least one CPU runs).
    0: no CPU quota."""
    memory_reserve_mb: Count = 2048
    """RAM a run leaves to labtui, the shell and the system when memory_mb is 0 (cgroup
    MemoryMax; never less than half the RAM for the run)."""


def _gres(value: str) -> str:
    if value and (" " in value.strip() or value.strip().startswith("--")):
        raise PydanticCustomError(
            "labtui_invalid",
            "bad gres",
            {
                "why": f"is {value!r}, which is no Slurm GRES",
                "fix": 'write it as sbatch --gres takes it, e.g. "gpu:1" or "gpu:a100:2"',
            },
        )
    return value.strip()


class ClusterSection(Section):
    """Where experiment, plot and baseline runs execute: on this machine ("local") or as Slurm
    jobs through submitit ("slurm"). A site's defaults can live in
    ``~/.config/labtui/labtui.toml`` (its ``[cluster]`` only); a project's ``[cluster]``
    overrides them key by key."""

    backend: Literal["local", "slurm"] = "local"
    """"local": runs on this machine's GPUs; "slurm": each run is a Slurm job (``--cluster
    slurm`` for one session)."""
    partition: str = ""
    """Slurm partition of the jobs ("": the cluster's default partition)."""
    account: str = ""
    """Slurm account to charge ("": your default account)."""
    qos: str = ""
    """Slurm quality of service ("": the default)."""
    time_min: Count = 0
    """Slurm time limit of a job in minutes (0: the run's own limit, [limits] run_timeout_s or
    plot_timeout_s, plus 5 minutes for starting and collecting it)."""
    gres: Annotated[str, AfterValidator(_gres)] = ""
    """Generic resources of a job as sbatch --gres takes them, e.g. "gpu:1" ("": no GPU)."""
    cpus: Annotated[int, BeforeValidator(_whole), Field(ge=1)] = 4
    """CPUs per job (--cpus-per-task)."""
    mem_gb: Number = 16.0
    """Memory per job in GB (--mem; 0: the cluster's default)."""
    setup: list[str] = Field(default_factory=list)
    """Shell lines a job runs before the run, e.g. ["module load cuda/12.4"]."""
    poll_s: Annotated[float, Field(ge=0.2)] = 2.0
    """How often a job's queue state is asked of Slurm, in seconds."""


class IdeasSection(Section):
    count: Count = 2
    """New ideas the ideas stage proposes."""
    reflections: Count = 3
    """Rounds per idea, each ending on the model's structured "done" flag."""
    panel: Annotated[
        Count, _off_or_at_least(2, "is too few: a panel needs at least two personas to discuss")
    ] = 0
    """Personas that discuss before proposing (Virtual Scientists); 0: no panel."""
    panel_turns: Count = 2
    """Turns of the panel's discussion, each persona speaking once per turn."""
    duplicate_threshold: Annotated[Number, _at_most(1.0, 0.7)] = 0.7
    """Similarity (0..1) at which a new idea repeats an old one; 1.0 drops only exact repeats."""
    novelty_checks: Count = 3
    """Best-ranked ideas the novelty stage may check, until one is novel."""


class LiteratureSection(Section):
    arxiv_url: str = "https://export.arxiv.org/api/query"
    """arXiv's search API; a mirror or proxy goes here."""
    max_results: Annotated[Count, _at_least_one("finds nothing")] = 5
    """Papers one search returns (arXiv, and Semantic Scholar when it is used)."""
    rounds: Count = 2
    """Search rounds the novelty check has per idea (at least one)."""
    delay_s: Seconds = 3.0
    """Between two requests to arXiv (its terms ask for three seconds)."""
    retries: Count = 3
    """Per request when a service is down or rate limits (429): then it waits."""
    backoff_s: Seconds = 5.0
    """The first wait; it doubles per retry, capped (Retry-After wins)."""
    papers: Count = 5
    """The literature review's list: papers kept, each with a summary."""
    review_steps: Count = 12
    """Actions (search, read, add) the review may take to fill it."""
    full_text_chars: Count = 20000
    """Of a paper's text in one prompt (~5k tokens; papers run 60k+)."""
    s2_url: str = "https://api.semanticscholar.org/graph/v1"
    """Used only when S2_API_KEY is set (core/literature/semantic_scholar.py); a mirror or proxy goes here."""


class ReviewSection(Section):
    """The reviewer: E reviewers on the NeurIPS form, each reconsidering its review, and an Area
    Chair's meta-review; the decision is the reviewers' mean Overall against a threshold."""

    ensemble: Annotated[Count, _at_least_one("reviews nothing")] = 3
    """Reviewers; with two or more an Area Chair writes a meta-review."""
    temperature: Annotated[Number, _at_most(2.0, 0.75)] = 0.75
    """The reviewers' sampling temperature when there are several."""
    reflections: Count = 2
    """Rounds in which a reviewer reconsiders its review, until it is done."""
    few_shot: Count = 1
    """Example papers with their reviews shown to each reviewer (0: none)."""
    examples: str = ""
    """Folder of your own <name>.md + <name>.json examples ("": labtui's)."""
    threshold: Annotated[Number, _at_most(10.0, 6)] = 6.0
    """Accept when the mean Overall reaches it (6: weak accept); 0: the Area Chair decides."""
    improvements: Count = 0
    """Improvement rounds run before the checkpoint (in --auto too)."""
    paper_chars: Count = 40000
    """Of the paper's text a reviewer reads (40,000: ~10k tokens, a paper without its
    appendix; 0: all of it). A local model's context and speed want less."""


NotifyEvent = Literal["checkpoint", "run_failed", "budget", "ended", "best", "search"]
NOTIFY_EVENTS: tuple[NotifyEvent, ...] = (
    "checkpoint",
    "run_failed",
    "budget",
    "ended",
    "best",
    "search",
)


def _command_line(value: str) -> str:
    """A notify command must split into words as a shell would (core/pipeline/notify.py runs it so)."""
    import shlex

    try:
        shlex.split(value)
    except ValueError as exc:
        raise PydanticCustomError(
            "labtui_invalid",
            "bad command",
            {
                "why": f"cannot be split into words ({exc}): {value!r}",
                "fix": "close every quote, e.g. write {key} = "
                '\'notify-send "labtui {project}" "{message}"\'',
            },
        ) from None
    return value


class NotifySection(Section):
    """A command of yours run when something needs you (core/pipeline/notify.py): in the background,
    never holding up the pipeline; a failure is said once, as a notice."""

    command: Annotated[str, AfterValidator(_command_line)] = ""
    """The command, split into words as a shell would but run without one (the event's text
    never becomes shell code); empty: no notifications. In each word {event} is checkpoint,
    run_failed, budget, ended, best or search; {project} the project's name, {stage} the
    stage, {message} one line saying what happened, {dir} the project folder. The same are in
    the environment as LABTUI_EVENT, LABTUI_PROJECT, LABTUI_STAGE, LABTUI_MESSAGE,
    LABTUI_PROJECT_DIR (for `sh -c '...'`). E.g. 'notify-send "labtui {project}" "{message}"', or 'curl -s -d
    "{message}" https://ntfy.sh/your-topic'."""
    on: list[NotifyEvent] = list(NOTIFY_EVENTS)
    """When: "checkpoint" (a checkpoint waits for you; never with --auto), "run_failed" (a run
    failed every fix attempt and was abandoned), "budget" (the spend reached budget_share of
    [budget] usd: once), "ended" (the pipeline finished, stopped or failed), "best" (a
    hill-climb or tree search found a new best), "search" (a search ended: why, its best, and
    the best code's mean ± std over its seed runs)."""
    budget_share: Annotated[Number, _at_most(1.0, 0.8)] = 0.8
    """The share of [budget] usd at which "budget" is sent, once (0.8: at 80 %)."""
    command_timeout_s: Timeout = 10.0
    """The longest one command may run; then it is stopped (and said as a failure)."""
