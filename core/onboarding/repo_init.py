"""``labtui init``: a researcher's own git repository becomes a labtui project.

labtui looks at the repository (core/onboarding/repo_scan.py), drafts how to run one experiment, where its
numbers come from, what the agents may edit and where the paper is, lets a model improve the draft
where one is configured (core/onboarding/setup_proposal.py, every value checked against the facts), and
writes the proposal as a commented ``labtui.toml`` under ``.labtui/init/`` for the researcher to
approve or edit. An edited proposal that is wrong is said (file, field, fix) and asked about
again; nothing is lost. A smoke run, when there is a smoke setting, checks the set-up through the
same runner and sandbox as every run before anything is committed.

On approval labtui makes its branch ``labtui/<name>`` from the researcher's HEAD, commits
``labtui.toml`` (and its bundled paper, when the repository has none) there, and says so: the
researcher's branch is never written to, and history is never rewritten.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LabtuiError, StageFailed
from ..settings.config import (
    CONFIG_NAME,
    Config,
    config_from_dict,
    config_in_effect,
    read_toml,
    save_config,
    toml_value,
)
from ..settings.contract import edit_files, run_argv
from ..settings.templates import default_paper
from ..workspace.project import LABTUI_BRANCHES, LOCAL_EXCLUDES, Project, exclude_locally
from ..writeup.draft_parts import draft_parts
from .constant_wrapper import write_wrapper
from .init_check import BASELINE, INIT_DIR
from .python_choice import missing_in
from .repo_scan import survey

PROPOSAL = f"{INIT_DIR}/{CONFIG_NAME}"
BUNDLED_PAPER = "paper/main.tex"  # where labtui's paper goes in a repository that has none


# -- the repository as it is -------------------------------------------------------------------


def check_repository(root: Path) -> Path:
    """The repository's top folder; a LabtuiError when ``root`` is no git repository, is not its
    top, or is a labtui project already."""
    root = Path(root).expanduser().resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top:
        raise LabtuiError(
            f"{root} is not a git repository",
            "run `labtui init` in your repository (git init first for a new one), or create a "
            "project with `labtui new`",
        )
    if Path(top).resolve() != root:
        raise LabtuiError(
            f"{root} is inside the repository {top}, not its top folder",
            f"run `labtui init` in {top}",
        )
    if (root / CONFIG_NAME).exists():
        raise LabtuiError(
            f"{root} is a labtui project already ({CONFIG_NAME} exists)",
            "run `labtui` or `labtui run` here; delete labtui.toml to set it up again",
        )
    if not _git(root, "rev-parse", "--verify", "--quiet", "HEAD"):
        raise LabtuiError(f"{root} has no commit yet", "commit your code first, then init")
    return root


def uncommitted(root: Path) -> list[str]:
    """``git status --porcelain`` lines of changes and untracked files (labtui's own left out)."""
    lines = _git(root, "status", "--porcelain", "--untracked-files=normal", strip=False)
    return [line for line in lines.splitlines() if line[3:].strip() and ".labtui/" not in line]


def refuse_dirty(root: Path, dirty: list[str]) -> None:
    shown = "\n".join(f"    {line}" for line in dirty[:12])
    more = f"\n    … and {len(dirty) - 12} more" if len(dirty) > 12 else ""
    raise LabtuiError(
        f"{root} has uncommitted changes, which labtui would mix into its own commits:\n"
        f"{shown}{more}",
        "commit or stash them (git stash -u), add what runs leave behind to .gitignore, or "
        "run `labtui init --commit-dirty` to commit them first on labtui's branch",
    )


def branch_name(idea: str, name: str) -> str:
    """labtui's branch: labtui/<the idea or the repository's name, as a slug>."""
    slug = re.sub(r"[^a-z0-9]+", "-", (idea or name).lower()).strip("-")[:40].strip("-")
    return f"{LABTUI_BRANCHES}{slug or 'research'}"


# -- the proposal, as a file the researcher reads and edits ------------------------------------------


HEADER = """\
# labtui's proposal for {name}: how to run one experiment here, where its numbers come from,
# what the agents may edit, and where the paper is. Each value says why it was chosen. Edit
# anything; labtui checks it when you approve, and names what is wrong with its fix.
# On approval it is committed as labtui.toml on the branch {branch} (made from your HEAD;
# your own branch is never written to).
"""


def render_proposal(
    values: dict[str, dict[str, Any]],
    reasons: dict[str, str],
    questions: list[str],
    refused: list[str],
    *,
    name: str,
    branch: str,
) -> str:
    """The proposal as a commented TOML file: the header, open questions, what a model proposed
    that the facts refuted, then each section with each value's reason above it."""
    lines = [HEADER.format(name=name, branch=branch)]
    if questions:
        lines += ["# To decide (the repository does not say):"]
        lines += [f"#   - {q}" for q in questions] + [""]
    if refused:
        lines += [
            "# A model proposed these; the repository contradicts them, so they are not used:"
        ]
        lines += [f"#   - {r}" for r in refused] + [""]
    for section in ("project", "experiment", "results", "paper"):
        fields = values.get(section, {})
        if not fields:
            continue
        lines.append(f"[{section}]")
        for key, value in fields.items():
            if reason := reasons.get(f"{section}.{key}"):
                lines += [f"# {line}" for line in _wrapped(reason)]
            lines.append(f"{key} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def write_proposal(root: Path, text: str) -> Path:
    """The proposal file under .labtui/init/, labtui's state kept out of git in this clone first
    (.git/info/exclude: the researcher's .gitignore stays theirs)."""
    exclude_locally(root, list(LOCAL_EXCLUDES))
    path = root / PROPOSAL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _wrapped(text: str, width: int = 96) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), width) or [""]


@dataclass(frozen=True)
class ApprovedSetup:
    """The approved proposal: as written (what labtui.toml will hold) and in effect (with the
    site's and the environment's settings, as every command runs it)."""

    written: Config
    in_effect: Config


def read_proposal(root: Path, proposal: Path) -> ApprovedSetup:
    """The researcher's (or labtui's) proposal, checked as labtui.toml is and against the
    repository: a ConfigError names the file, the field and the fix."""
    data = read_toml(proposal)
    if not data.get("experiment", {}).get("command"):
        raise ConfigError(
            f"{proposal}: [experiment] command is not set (labtui could not tell which script "
            "runs an experiment)",
            'write command = "{python} <your script>.py --out {out_dir}" under [experiment], '
            "and edit = [the files the agents may change]",
        )
    write_wrapper(root, data["experiment"]["command"])  # the smoke run may run it next
    written = config_from_dict(data, proposal, environ={})
    written.project.origin = "repository"
    in_effect = config_in_effect(data, proposal)
    check_setup(root, in_effect, proposal)
    return ApprovedSetup(written, in_effect)


def settings_in_effect(root: Path) -> Config:
    """labtui's defaults with the site's and the environment's settings ($LABTUI_LIMITS__…),
    before there is a proposal: what the draft is sized by."""
    return config_in_effect({}, root / PROPOSAL)


def check_setup(root: Path, config: Config, where: Path) -> None:
    """What labtui.toml's own checks cannot know: the files and the interpreter it names exist
    (the command's script in the folder runs start in, [experiment] workdir)."""
    runs_in = root / config.experiment.workdir
    try:
        edit_files(root, config.experiment)
        for smoke in (False, True) if config.experiment.smoke_command else (False,):
            argv = run_argv(config.experiment, config.python, "run_0", smoke=smoke)
            _check_program(runs_in, argv, where)
    except ConfigError as exc:
        raise ConfigError(_naming(exc.message, where), exc.hint) from None
    _check_interpreter(root, config.experiment.python, where)
    _check_imports(runs_in, config, where)
    tex = config.paper.tex
    if tex != BUNDLED_PAPER and not (root / tex).is_file():
        raise ConfigError(
            f"{where}: [paper] tex = {tex!r}: no such file in {root}",
            f'write the path of your main .tex file, or tex = "{BUNDLED_PAPER}" for labtui\'s '
            "bundled paper",
        )
    if config.paper.sections:
        try:
            draft_parts(root, tex, config.paper.sections)
        except StageFailed as exc:
            raise ConfigError(f"{where}: {exc.message}", exc.hint) from None


def _naming(message: str, where: Path) -> str:
    """A labtui.toml check's message naming the proposal file (once: it may name it already)."""
    return message if str(where) in message else message.replace(CONFIG_NAME, str(where), 1)


def _check_interpreter(root: Path, python: str, where: Path) -> None:
    path = root / Path(python).expanduser()  # an absolute path stays itself
    if python and not (path.is_file() or ("/" not in python and shutil.which(python))):
        raise ConfigError(
            f"{where}: [experiment] python = {python!r}: no such interpreter",
            "write the path of your research environment's python (e.g. .venv/bin/python), "
            'or python = "" for the one labtui runs in',
        )


def _check_imports(root: Path, config: Config, where: Path) -> None:
    """The command's script finds what it imports in the interpreter in effect: labtui gives a
    command written by hand no interpreter, and a run would only fail on the missing package."""
    lack = missing_in(root, survey(root), config.experiment.command, config.python)
    if lack is not None:
        python = config.experiment.python
        raise ConfigError(f"{where}: [experiment] python = {python!r}: {lack.problem}", lack.fix)


def _check_program(root: Path, argv: list[str], where: Path) -> None:
    script = next((word for word in argv[1:] if word.endswith(".py")), "")
    if script and not (root / script).is_file():
        raise ConfigError(
            f"{where}: [experiment] command runs {script}, which is not in {root}",
            "write the script's path relative to the folder runs start in ([experiment] "
            "workdir, else the repository's top)",
        )


# -- approval -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Initialised:
    project: Project
    branch: str
    paper_copied: bool


def start_branch(root: Path, branch: str) -> None:
    """labtui's branch from the researcher's HEAD, checked out (their branch stays as it is)."""
    if _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"):
        raise LabtuiError(
            f"the branch {branch} exists already",
            f"delete it (git branch -D {branch}) or choose another with --branch",
        )
    done = subprocess.run(
        ["git", "checkout", "-q", "-b", branch], cwd=root, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise LabtuiError(f"git could not make the branch {branch}: {done.stderr.strip()}")


def commit_dirty(root: Path, branch: str) -> str:
    """The researcher's uncommitted work, committed as it was on labtui's new branch."""
    start_branch(root, branch)
    _git(root, "add", "--all")
    _git(root, "commit", "-q", "--no-verify", "-m", "labtui init: your uncommitted work, as it was")
    return _git(root, "rev-parse", "HEAD")


def apply_setup(root: Path, config: Config, branch: str) -> Initialised:
    """labtui.toml (and the bundled paper where the repository has none) committed on labtui's
    branch, made from HEAD unless it is checked out already (--commit-dirty made it)."""
    if _git(root, "rev-parse", "--abbrev-ref", "HEAD") != branch:
        start_branch(root, branch)
    config.project.origin = "repository"
    config.project.branch = branch
    config.project.name = config.project.name or root.name
    paper_copied = not (root / config.paper.tex).exists()
    if paper_copied:
        (root / config.paper.tex).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(default_paper(), root / config.paper.tex)
    save_config(config, root)
    project = Project(root, config)
    build = Path(config.paper.tex).parent / "build"
    exclude_locally(root, [*LOCAL_EXCLUDES, f"{build.as_posix()}/"])
    paths = [CONFIG_NAME, *([config.paper.tex] if paper_copied else [])]
    wrapper = write_wrapper(root, config.experiment.command)
    if wrapper:  # staged by force: git ignores .labtui/ here, and git add names no ignored path
        _git(root, "add", "--force", "--", wrapper)
    named = [*paths, *([wrapper] if wrapper else [])]
    project.commit(f"labtui init: {', '.join(named)} on {branch}", paths)
    return Initialised(project, branch, paper_copied)


def commit_baseline(project: Project) -> None:
    """run_0, which ran before labtui's commit with the same code, committed after it."""
    project.commit(f"baseline: {BASELINE} results", [BASELINE])


def head(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD")


def _git(root: Path, *args: str, strip: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return ""
    return done.stdout.strip() if strip else done.stdout
