"""The [experiment] command ``labtui init`` drafts: how one experiment runs, and how long.

``draft_command`` takes the line the README (or a script, a Makefile) runs the entry script with,
makes its output folder {out_dir}, and a smoke command from the script's own shortening option.
``size_runs`` then bounds the run by what the code says (core/onboarding/run_length.py and
run_budget.py): a step count with no end gets one that fits [limits], and the smoke run is made
long enough to write every proposed metric once. ``draft_env`` sets what a run needs to work
without a network (W&B offline, writing into the run's folder), and ``draft_prepare`` the
README's set-up steps (core/onboarding/setup_steps.py) that labtui runs before each run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..settings.sections import LimitsSection
from ..source.files import normal_path
from .constant_wrapper import WRAPPER, needs_wrapper, through_wrapper
from .metric_names import CodeMetrics, metrics_in_code
from .python_survey import HYDRA_DIR, SMOKE_FLAG, option_flag
from .repo_facts import Command, Draft, EntryPoint, NamedOption, RepoSurvey
from .run_budget import LengthProposal, bounded_commands, fit_to_pace, given_count, set_count
from .run_length import LengthOption, first_write, interval_options, run_length_options
from .setup_steps import readme_setup_steps

NO_OUTPUT_OPTION = "has no output-folder option"


@dataclass(frozen=True)
class RunSizing:
    """The length option a run's count is set by, and the counts proposed: what fitting the
    baseline to the smoke run's measured pace needs."""

    option: LengthOption
    proposal: LengthProposal


def in_readme(survey: RepoSurvey, command: Command) -> bool:
    return survey.readme is not None and command.found_in.startswith(f"{survey.readme.path}:")


def draft_command(survey: RepoSurvey, entry: EntryPoint, why: str, draft: Draft) -> list[str]:
    """Sets [experiment] command and smoke_command. Returns the output folders earlier runs
    were given (the README's, the option's default), where their results may lie."""
    output = next((o for o in survey.output_options if o.entry == entry.path), None)
    flags = _output_flags(entry, output)
    commands = sorted(  # the README's first, and one that names the output folder
        (c for c in survey.commands if c.script == entry.path),
        key=lambda c: (not in_readme(survey, c), _option_value(c.args, flags)[0] is None),
    )
    if commands:
        chosen = commands[0]
        python = chosen.launcher == "python"
        head = ["{python}", *chosen.prefix[1:]] if python else list(chosen.prefix)
        args = [*(["-m", chosen.module] if chosen.module else [entry.path]), *chosen.args]
        reason = f"{chosen.found_in} runs it this way ({why})"
        if not python:
            draft.ask(
                f"{chosen.found_in} starts {entry.path} with {chosen.launcher}: labtui runs the "
                f"command as written, so {chosen.launcher} must be on the PATH."
            )
    else:
        module = _module_to_run(survey, entry)
        head, args = ["{python}"], (["-m", module] if module else [entry.path])
        reason = f"{why}, and no README or script line runs it"
        if module:
            reason += (
                f"; it imports the repository's own packages from its top, which Python finds "
                f"only when {entry.path} runs as a module from there (-m {module})"
            )
        for option in entry.options:
            if option.required and option.default is None:
                draft.ask(
                    f"{entry.path} requires {option_flag(option)}: what does an experiment give?"
                )
    head, reason = _wrapped(entry, head, args, reason)
    out_dirs = [output.default] if output and isinstance(output.default, str) else []
    if output is None:
        draft.ask(
            f"{entry.path} {NO_OUTPUT_OPTION}: it must read $LABTUI_OUT_DIR, or results "
            "must come from stdout."
        )
    else:
        value, at = _option_value(args, flags)
        if value is not None:
            out_dirs.append(value)
            name = args[at].partition("=")[0]
            args[at] = f"{name}={{out_dir}}" if name in flags else "{out_dir}"
            reason += f"; {output.flag}, its output folder, becomes {{out_dir}}"
        elif output.flag == HYDRA_DIR:
            args.append(f"{HYDRA_DIR}={{out_dir}}")
            reason += f"; Hydra puts a run's outputs in {HYDRA_DIR}"
        else:
            args += [output.flag, "{out_dir}"]
            reason += f"; {entry.path} declares {output.flag} ({entry.kind}), so runs write there"
    command = join_command([*head, *args])
    draft.set("experiment.command", command, reason)
    _propose_smoke(survey, entry, command, draft)
    draft_prepare(survey, draft, commands[0] if commands else None)
    return [normal_path(d) for d in out_dirs if d and not re.match(r"/|.*[{$]", d)]


def _module_to_run(survey: RepoSurvey, entry: EntryPoint) -> str:
    """``examples.ex_1d`` for a script in a folder that imports a package of the repository's
    top (``from src.flows import Flow`` in examples/ex_1d.py): run as a file, Python looks for
    ``src`` beside the script and fails; '' when running it as a file works."""
    here = PurePosixPath(entry.path).parent
    if here == PurePosixPath(".") or not entry.path.endswith(".py"):
        return ""
    try:
        text = (Path(survey.root) / entry.path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    for imported in entry.imports:
        top = PurePosixPath(imported).parts[0].removesuffix(".py")
        outside = not PurePosixPath(imported).is_relative_to(here)
        if outside and re.search(rf"^\s*(?:from|import)\s+{re.escape(top)}\b", text, re.M):
            return entry.path.removesuffix(".py").replace("/", ".")
    return ""


def _wrapped(
    entry: EntryPoint, head: list[str], args: list[str], reason: str
) -> tuple[list[str], str]:
    """The command's head with labtui's wrapper (core/onboarding/constant_wrapper.py) where the
    run's length is a module constant no command line sets: the baseline and the smoke run are
    then bounded by --name=value, not left to the constant."""
    if not needs_wrapper(entry) or args[:1] != [entry.path]:
        return head, reason
    constant = run_length_options(entry)[0].dest
    return [*head, WRAPPER], (
        f"{reason}; {entry.path} reads no command line, so it runs through {WRAPPER}, which "
        f"labtui writes: it sets {constant} and the script's other constants by --name=value"
    )


def _output_flags(entry: EntryPoint, output: NamedOption | None) -> tuple[str, ...]:
    if output is None or output.flag == HYDRA_DIR:
        return (output.flag,) if output else ()
    return next((o.flags for o in entry.options if o.dest == output.dest), (output.flag,))


def _option_value(
    args: list[str] | tuple[str, ...], flags: tuple[str, ...]
) -> tuple[str | None, int]:
    """The value the arguments give one of ``flags`` (--flag value, --flag=value, key=value)
    and the index of the argument that holds it."""
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if eq and name in flags:
            return value, i
        if arg in flags and i + 1 < len(args):
            return args[i + 1], i + 1
    return None, -1


def join_command(tokens: list[str]) -> str:
    """A shell line; {python} and {out_dir} stay bare for labtui to fill in."""
    safe = re.compile(r"[\w@%+=:,./{}\-\[\]*]+")
    return " ".join(t if safe.fullmatch(t) else shlex.quote(t) for t in tokens)


def _propose_smoke(survey: RepoSurvey, entry: EntryPoint, command: str, draft: Draft) -> None:
    mine = [o for o in survey.smoke_options if o.entry == entry.path]
    if not mine:
        return
    option = min(mine, key=_smoke_rank)
    tokens = shlex.split(command)
    if entry.kind == "hydra":
        value = "true" if option.kind == "flag" else str(_smoke_value(option))
        tokens = [t for t in tokens if not t.startswith(f"{option.flag}=")]
        tokens.append(f"{option.flag}={value}")
    elif option.kind == "flag":
        tokens += [] if option.flag in tokens else [option.flag]
    else:
        value, at = str(_smoke_value(option)), _option_value(tokens, (option.flag,))[1]
        if at < 0:
            tokens += [option.flag, value]
        else:
            tokens[at] = (
                f"{option.flag}={value}" if tokens[at].startswith(f"{option.flag}=") else value
            )
    what = "a smoke switch" if option.kind == "flag" else f"a count (default {option.default!r})"
    draft.set(
        "experiment.smoke_command",
        join_command(tokens),
        f"{entry.path} declares {option.flag}, {what}, which makes a run short",
    )


def _smoke_rank(option: NamedOption) -> int:
    """A smoke switch first, then a step count (a few steps take seconds), epochs, …"""
    if option.kind == "flag":
        return 0
    words = ("step", "iter", "epoch", "batch", "sample", "subset")
    return next((i for i, w in enumerate(words, 1) if w in option.dest.lower()), len(words) + 1)


def _smoke_value(option: NamedOption) -> int:
    name = option.dest.lower()
    if "epoch" in name or SMOKE_FLAG.fullmatch(name.split(".")[-1]):
        value = 1  # one epoch; a numeric debug switch turned on
    elif "sample" in name or "subset" in name:
        value = 64
    else:
        value = 2 if "batch" in name else 10
    default = option.default
    if isinstance(default, int) and not isinstance(default, bool) and default > 0:
        value = min(value, default)
    return value


def size_runs(
    survey: RepoSurvey,
    entry: EntryPoint,
    draft: Draft,
    limits: LimitsSection,
    code: CodeMetrics | None = None,
) -> RunSizing | None:
    """The drafted command and smoke command bounded by the run-length option, and the smoke
    run made long enough to write each proposed metric once; None when no option sets a run's
    length (the reasons say so). ``code``: what metrics_in_code read, when it has been read."""
    command, smoke = draft.get("experiment.command"), draft.get("experiment.smoke_command")
    if not command:
        return None
    entry = through_wrapper(entry, shlex.split(command))
    lengths = run_length_options(entry)
    if lengths and not lengths[0].settable:
        draft.ask(
            f"{lengths[0].why}: the command runs {entry.path} without labtui's wrapper "
            f"({WRAPPER}), so neither the baseline nor the smoke run is shortened. Run it "
            "through the wrapper, or give the script an option for it."
        )
    chosen = set(draft.get("results.metrics") or {})
    found = (code or metrics_in_code(survey, entry)).found
    read = [
        (m.name, first_write(m.conditions, entry)) for m in found if not chosen or m.name in chosen
    ]
    writes = [write for _name, write in read if write is not None]
    # the smoke run is sized to the writes only where each proposed metric's is known
    all_written = bool(chosen) and chosen <= {name for name, _ in read} and len(writes) == len(read)
    sized = bounded_commands(
        shlex.split(command),
        shlex.split(smoke) if smoke else None,
        lengths[0] if lengths else None,
        interval_options(entry),
        writes,
        limits,
        others=lengths[1:],
        all_written=all_written,
    )
    reason = draft.reasons.get("experiment.command", "")
    draft.set(
        "experiment.command", join_command(list(sized.command)), f"{reason}; {sized.command_reason}"
    )
    if sized.smoke:
        was = draft.reasons.get("experiment.smoke_command", "")
        why = f"{was}; {sized.smoke_reason}" if was else sized.smoke_reason
        draft.set("experiment.smoke_command", join_command(list(sized.smoke)), why)
    return RunSizing(lengths[0], sized) if lengths and sized.count is not None else None


def resize(
    values: dict[str, dict[str, Any]],
    reasons: dict[str, str],
    survey: RepoSurvey,
    limits: LimitsSection,
) -> RunSizing | None:
    """A set-up another reader drafted (a model's command) bounded as labtui's own draft is:
    ``values`` and ``reasons`` are changed in place."""
    command = values.get("experiment", {}).get("command", "")
    script = next((w for w in shlex.split(command) if w.endswith(".py")), "")
    entry = next((e for e in survey.entry_points if e.path == script), None)
    if entry is None:
        return None
    return size_runs(survey, entry, Draft(values, reasons), limits)


OFFLINE_ENV = {"WANDB_MODE": "offline", "WANDB_DIR": "{out_dir}"}


def draft_env(draft: Draft, network: bool) -> None:
    """W&B offline, writing into the run's folder, where a run has no network (the sandbox's
    default): online it stops at "No API key configured"; offline its numbers are in the
    run's own folder, where labtui reads them."""
    if draft.get("results.source") != "wandb" or network:
        return
    draft.set(
        "experiment.env",
        dict(OFFLINE_ENV),
        "the code logs to W&B and a run has no network ([sandbox] network = false): W&B runs "
        "offline and writes into the run's folder, where labtui reads its history",
    )


def draft_prepare(survey: RepoSurvey, draft: Draft, chosen: Command | None) -> None:
    """The README's set-up steps before the chosen command, run before every run."""
    if chosen is None or survey.readme is None or not in_readme(survey, chosen):
        return
    line = int(chosen.found_in.rsplit(":", 1)[1])
    text = survey.readme.text
    steps = readme_setup_steps(text, line, set(survey.files))
    if steps:
        draft.set(
            "experiment.prepare",
            steps,
            f"{chosen.found_in.split(':')[0]} runs {'; '.join(steps)} before the experiment: "
            "labtui runs it in the run's working folder before each run",
        )


def fit_to_smoke(
    proposal: str,
    sizing: RunSizing,
    smoke_wall_s: float,
    budget_s: float,
    after_first: tuple[float, float] | None = None,
) -> tuple[str, str]:
    """The proposal file's text with the baseline's count fitted to the pace the smoke run
    measured (``after_first``: see ``fit_to_pace``), and what was done ('' and the text as it
    was when nothing changed: the count was edited by the researcher, or it fits already).

    A count the command leaves to the script's default is fitted too, the option added with
    the fitted value: a 15-step default at 37 s a step otherwise ran past the timeout."""
    proposed = sizing.proposal
    line = _command_line(proposal)
    if line is None or proposed.count is None or not proposed.smoke_count:
        return proposal, ""
    tokens = shlex.split(line.group(2))
    given = given_count(tokens, sizing.option)
    if (sizing.option.default if given is None else given) != proposed.count:
        return proposal, ""  # the researcher's own count stands
    count, why = fit_to_pace(
        sizing.option,
        proposed.smoke_count,
        smoke_wall_s,
        budget_s,
        every=proposed.every,
        at_least=proposed.at_least,
        after_first=after_first,
    )
    if count == proposed.count:
        return proposal, ""
    fitted = join_command(set_count(tokens, sizing.option, count))
    start, end = line.span(2)
    text = proposal[:start] + fitted + proposal[end:]
    comment = f"# fitted after the smoke run: {why}\n"
    at = line.start()
    return text[:at] + comment + text[at:], why


def _command_line(proposal: str) -> re.Match[str] | None:
    """[experiment]'s `command = "…"` line (the value as group 2)."""
    section = re.search(r"(?m)^\[experiment\]\s*$", proposal)
    if section is None:
        return None
    pattern = re.compile(r'(?m)^(command\s*=\s*)"((?:[^"\\]|\\.)*)"\s*$')
    found = pattern.search(proposal, section.end())
    following = re.search(r"(?m)^\[", proposal[section.end() :])
    if found is None or (following and found.start() > section.end() + following.start()):
        return None
    return found if "\\" not in found.group(2) else None  # an escaped value: left as it is
