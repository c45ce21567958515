"""``labtui doctor``: what this machine and project have, and what is missing. Keys are reported
as present or missing, never printed. Each distinct configured model gets one tiny request, so the
report says whether it answers and how fast (a local CPU server is minutes per long prompt).
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, LabtuiError
from .estimate.speeds import record_speed
from .events import CostUpdate, Event
from .literature.semantic_scholar import API_KEY_ENV
from .llm.budget import Ledger
from .llm.client import LLM
from .llm.litellm_setup import check_model
from .llm.streaming import speed_words
from .local_model.manage import describe as describe_local
from .local_model.manage import problems as local_problems
from .machine import bubblewrap, sandbox_policy
from .machine.gpu import describe
from .machine.host_limits import TASKS_FLOOR, TASKS_PER_CPU, containment, io_words, task_cap
from .machine.interpreter import probe_interpreter
from .settings import CONFIG_NAME
from .settings.config import Config, LocalChoice, ModelSpec, config_in_effect, load_config
from .settings.profiles import apply_profile
from .settings.sections import LLMSection, SandboxSection
from .slurm.doctor_check import cluster_findings
from .stage_list import STAGE_MODEL_NEEDS

PING_PROMPT = "Reply with the word ok."
PING_MAX_TOKENS = 16  # enough for "ok" and a little politeness, not for a looping model


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True


def _tool(name: str, purpose: str, required: bool = True, install: str = "") -> Check:
    path = shutil.which(name)
    if path:
        return Check(name, True, path, required)
    return Check(name, False, f"missing: needed for {purpose}; install: {install}", required)


def _interpreter(config: Config) -> Check:
    python = config.python
    try:
        info = probe_interpreter(python, Path.cwd(), timeout_s=30)
    except LabtuiError as exc:
        return Check("experiment python", False, str(exc))
    if "error" in info:
        return Check("experiment python", False, f"{python}: {info['error']}")
    numpy = info.get("packages", {}).get("numpy")
    if numpy is None:
        return Check("experiment python", False, f"{python}: numpy is not installed there")
    return Check(
        "experiment python", True, f"{python} (Python {info['python_version']}, numpy {numpy})"
    )


def _sandbox(config: Config) -> Check:
    """Whether experiments will really be isolated: bubblewrap must run, not just exist (many
    containers forbid the user namespaces it needs)."""
    mode = config.sandbox.mode
    if mode in ("limits", "off"):
        return Check("sandbox", True, f'mode = "{mode}": experiments are not isolated', False)
    problem = bubblewrap.bwrap_problem()
    if not problem:
        return Check("sandbox", True, f'bubblewrap works (mode = "{mode}")', False)
    fix = "install bubblewrap (sudo apt-get install bubblewrap) or allow user namespaces"
    if mode == "bwrap":
        return Check("sandbox", False, f"{problem}: runs will refuse to start; {fix}")
    return Check("sandbox", False, f"{problem}: runs get limits only, NOT isolated; {fix}", False)


def _run_environment(config: Config, root: Path) -> Check:
    """What a run would see now: the names of the variables that pass (never their values),
    the ``pass_env`` names labtui's environment lacks, and what the sandbox's home holds."""
    try:
        spec = sandbox_policy.policy(config.sandbox, root)
    except ConfigError as exc:
        return Check("run environment", False, str(exc))
    names = spec.env_policy.passed_names()
    parts = [f"{len(names)} variables pass: {', '.join(names)}"]
    if missing := spec.env_policy.missing():
        parts.append(f"[sandbox] pass_env not set here: {', '.join(missing)}")
    if spec.isolated:
        binds = [str(target) for _, target in spec.read_only_binds([config.python])]
        parts.append(f"home empty, read-only: {', '.join(binds) or 'nothing'}")
    else:
        parts.append("home folder visible to runs (no bubblewrap)")
    return Check("run environment", not missing, "; ".join(parts), False)


def _containment(config: Config) -> Check:
    """What keeps the host alive beside a run: the cgroup (or why there is none), priorities,
    and the caps. Detection is cached and quick (a missing session bus answers at once; the
    probe's timeout is 5 s)."""
    settings = config.sandbox
    if settings.mode == "off":
        return Check("containment", True, 'none ([sandbox] mode = "off")', False)
    mechanism = containment(settings, task_cap(settings.max_processes))
    memory = (
        f"{settings.memory_mb} MB per process (RLIMIT_DATA)"
        if settings.memory_mb
        else "no per-process cap (memory_mb = 0)"
    )
    parts = [
        mechanism.describe(),
        f"nice {settings.nice}, ionice {io_words(settings.ionice)}, "
        f"oom_score_adj {settings.oom_score_adj}",
        _task_cap(settings, mechanism.uses_cgroup),
        f"memory {memory}",
        f"file cap {settings.max_file_mb or 'none'} MB, run folder cap "
        f"{settings.run_dir_cap_mb or 'none'} MB",
    ]
    return Check("containment", True, "; ".join(parts), False)


def _task_cap(settings: SandboxSection, in_cgroup: bool) -> str:
    """'task cap 512 ("auto": 24 per CPU, at least 512; watcher, RLIMIT_NPROC)'."""
    enforcers = ["TasksMax"] if in_cgroup else []
    enforcers += ["watcher", "RLIMIT_NPROC" if os.geteuid() else "no RLIMIT_NPROC as root"]
    auto = f'"auto": {TASKS_PER_CPU} per CPU, at least {TASKS_FLOOR}; '
    how = (auto if settings.max_processes == "auto" else "") + ", ".join(enforcers)
    return f"task cap {task_cap(settings.max_processes)} ({how})"


def _models(config: Config) -> list[Check]:
    checks = []
    local = [stage for stage in STAGE_MODEL_NEEDS if _is_local(config.model_for(stage))]
    if local:
        checks.append(_local_model(config, local))
    for stage in STAGE_MODEL_NEEDS:
        spec = config.model_for(stage)
        if spec is None:
            checks.append(
                Check(
                    f"model ({stage})",
                    False,
                    "none: set LABTUI_MODEL or [models] default ([models] local = false "
                    "turned labtui's own model off)",
                )
            )
            continue
        if spec.local is not None:
            continue
        problems = check_model(spec)
        where = f" at {spec.api_base}" if spec.api_base else ""
        key = "key present" if not problems else "; ".join(problems)
        checks.append(Check(f"model ({stage})", not problems, f"{spec.name}{where}: {key}"))
    return checks


def _is_local(spec: ModelSpec | None) -> bool:
    return spec is not None and spec.local is not None


def _local_model(config: Config, stages: list[str]) -> Check:
    """labtui's own model, for the stages with no other: where its weights are and whether
    their checksum was verified, its server's build, and the server (up, or started on demand)."""
    choice = LocalChoice(config.models.local, config.models.local_idle_min)
    status = describe_local(choice)
    which = "every stage" if len(stages) == len(STAGE_MODEL_NEEDS) else ", ".join(stages)
    detail = f"labtui's own, for {which} (set LABTUI_MODEL to use another): " + "; ".join(
        status.lines()
    )
    return Check("model (local)", status.usable, detail)


def _model_answers(config: Config) -> list[Check]:
    """One tiny request to each distinct model the stages use (none when none is configured;
    a model whose setup check failed is not called: that check already says why)."""
    specs: list[ModelSpec] = []
    for stage in STAGE_MODEL_NEEDS:
        spec = config.model_for(stage)
        if spec is None or spec in specs:
            continue
        usable = not local_problems(spec.local) if spec.local else not check_model(spec)
        if usable:
            specs.append(spec)
    return [ping_model(spec, config.llm) for spec in specs]


def ping_model(spec: ModelSpec, settings: LLMSection) -> Check:
    """Ask ``spec`` for one word, streamed under the configured inactivity limits (so a server
    that hangs is given up like in a run, never waited on forever), without retries; report the
    answer time, the time to the first token and the speed, or the error and its fix."""
    timings: list[CostUpdate] = []

    def keep(event: Event) -> None:
        if isinstance(event, CostUpdate):
            timings.append(event)
            record_speed(event, "doctor")  # what an estimate reads of this machine

    quick = settings.model_copy(
        update={"retries": 0, "max_tokens": PING_MAX_TOKENS, "json_mode": False}
    )
    model = LLM(spec, quick, Ledger(float("inf"), keep), keep, stage="doctor")
    try:
        answer = model.chat([{"role": "user", "content": PING_PROMPT}], temperature=0.0)
    except LabtuiError as exc:
        fix = f"; fix: {exc.hint}" if exc.hint else ""
        return Check("model answer", False, f"{exc.message}{fix}")  # it names model and server
    # read after the call: labtui's own model has an address only once its server runs
    where = f" at {model.spec.api_base}" if model.spec.api_base else ""
    said = " ".join(answer.split())[:40]
    detail = f"{spec.name}{where} answered {said!r}"
    if timings:
        detail += f" {_timing(timings[-1])}"
    return Check("model answer", True, detail)


def _timing(cost: CostUpdate) -> str:
    """'in 2.1 s (first token 1.6 s; in 31 tok/s, out 9.8 tok/s)'."""
    speeds = speed_words(cost.prompt_tps, cost.output_tps, ", ")
    speed = f"; {speeds}" if speeds else ""
    return f"in {cost.seconds:.1f} s (first token {cost.first_token_s:.1f} s{speed})"


def run_checks(project_dir: Path | None) -> list[Check]:
    apt = "sudo apt-get install"
    checks = [
        Check("python", sys.version_info >= (3, 11), sys.version.split()[0]),
        _tool("git", "every edit is a commit", install=f"{apt} git"),
        _tool("latexmk", "compiling the paper", install=f"{apt} latexmk"),
        _tool("pdflatex", "compiling the paper", install=f"{apt} texlive-latex-extra"),
        _tool("bibtex", "citations", install=f"{apt} texlive-binaries"),
        _tool("chktex", "LaTeX lint", required=False, install=f"{apt} chktex"),
        Check("gpu", True, describe(), required=False),
    ]
    # no project: labtui's defaults with the environment's LABTUI_<SECTION>__<FIELD> overrides
    config = config_in_effect({}, Path.cwd() / CONFIG_NAME)
    if project_dir is not None:
        try:
            config = load_config(project_dir)
        except ConfigError as exc:
            checks.append(Check("labtui.toml", False, str(exc)))
    if config.cluster.backend == "slurm":  # this machine's GPUs are not the runs'
        checks = [check for check in checks if check.name != "gpu"]
    checks += _cluster(config)
    checks.append(_sandbox(config))
    checks.append(_containment(config))
    checks.append(_run_environment(config, project_dir or Path.cwd()))
    checks.append(_interpreter(config))
    checks.append(_semantic_scholar())
    checks.append(_profile(config))
    return checks + _models(config) + _model_answers(config)


def _cluster(config: Config) -> list[Check]:
    """``[cluster]``: on Slurm, the login node's GPUs are not the runs' (said so), and the
    cluster is checked with a test job."""
    checks = [Check(name, ok, detail) for name, ok, detail in cluster_findings(config.cluster)]
    if config.cluster.backend == "slurm":
        gres = config.cluster.gres or "none"
        checks.insert(
            0,
            Check(
                "gpu",
                True,
                f"runs get their GPUs from Slurm ([cluster] gres = {gres}); this login "
                f"node's own: {describe()}",
                required=False,
            ),
        )
    return checks


def _profile(config: Config) -> Check:
    """Which settings the small-model profile changes for this model (core/settings/profiles.py)."""
    changed = apply_profile(copy.deepcopy(config))
    if not changed:
        return Check(
            "settings", True, f"labtui's defaults ([llm] profile = {config.llm.profile!r})"
        )
    return Check(
        "settings",
        True,
        f"small-model profile for a local model: {', '.join(changed)} "
        '([llm] profile = "hosted" keeps the defaults)',
    )


def _semantic_scholar() -> Check:
    if os.environ.get(API_KEY_ENV, "").strip():
        return Check("semantic scholar", True, f"{API_KEY_ENV} present: used with arXiv", False)
    return Check(
        "semantic scholar", True, f"{API_KEY_ENV} not set: arXiv only (optional)", required=False
    )
