"""A research workspace: a git repository with ``labtui.toml``, made from a template or a topic
(``labtui new``) or the researcher's own repository (``labtui init``, core/onboarding/repo_init.py).

Every artifact change is a commit. ``commit`` returns what changed (id, files, unified diff) so the
caller can emit it as a CodeDiff event; the project itself never talks to front ends. In a
researcher's repository labtui commits only on its own branch (``[project] branch``, or a
``labtui/`` branch of a parallel idea): never on theirs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LabtuiError
from ..settings.config import CONFIG_NAME, Config, load_config, save_config
from ..settings.contract import matches
from ..settings.templates import copy_template, default_paper, find_template, validate_template

if TYPE_CHECKING:
    import git

STATE_DIR = ".labtui"
PROJECT_GITIGNORE = """\
# labtui state (journal, caches) lives outside version control
.labtui/
.aider*
__pycache__/
*.pyc
latex/build/
"""
# What labtui writes beside a researcher's files and they never want committed; kept out of git
# by .git/info/exclude, so their own .gitignore stays theirs.
LOCAL_EXCLUDES = (".labtui/", ".aider*", "__pycache__/")
DISK_FULL_BYTES = 1 << 20  # less free than this where a commit failed: the disk is full
LABTUI_BRANCHES = "labtui/"  # labtui's own branches: [project] branch, parallel ideas


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    message: str
    files: list[str]
    diff: str


class Project:
    def __init__(self, root: Path, config: Config) -> None:
        self.root = Path(root).resolve()
        self.config = config
        self._repo: git.Repo | None = None
        self._has_identity: bool | None = None  # does git know who commits here?
        self._repairs: list[str] = []  # what was repaired in the repository, to be said

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, template: str, idea: str = "") -> Project:
        """Copy a validated template into a new git repository and write labtui.toml."""
        source = find_template(template)
        validate_template(source)
        root = _empty_folder(directory)
        copy_template(source, root)
        config = Config()
        config.project.name = root.name
        config.project.template = str(template)
        config.project.idea = idea
        save_config(config, root)
        (root / ".gitignore").write_text(PROJECT_GITIGNORE, encoding="utf-8")
        # As written, then as the site file and the environment set it (`labtui --cluster
        # slurm new` runs the baseline as a job): the file keeps only the project's own.
        project = cls(root, load_config(root))
        project._init_repo()
        project.commit(f"labtui: new project from template {Path(template).name}")
        return project

    @classmethod
    def create_from_topic(
        cls, directory: Path, topic: str, *, notes: str = "", data: list[str] | None = None
    ) -> Project:
        """A project with no code yet: the topic (and notes) as its task, the named local data,
        labtui's bundled paper; the agents write the code once an idea is chosen
        (core/steps/scaffold.py). Nothing here is written by a model."""
        if not topic.strip():
            raise LabtuiError(
                "a project without a template needs a topic", 'use labtui new DIR --idea "..."'
            )
        root = _empty_folder(directory)
        missing = [path for path in data or [] if not Path(path).expanduser().exists()]
        if missing:
            raise LabtuiError(
                f"data not found: {', '.join(missing)}",
                "name files or folders that exist on this machine with --data",
            )
        root.mkdir(parents=True, exist_ok=True)
        task = topic.strip() + (f"\n\nThe researcher's notes:\n{notes.strip()}" if notes else "")
        (root / "latex").mkdir()
        shutil.copy(default_paper(), root / "latex" / "template.tex")
        config = Config()
        config.project.name = root.name
        config.project.origin = "topic"
        config.project.idea = topic.strip()
        config.project.task = task
        config.project.data = [str(Path(p).expanduser().resolve()) for p in data or []]
        save_config(config, root)
        # prepare.py writes the data set here; it is made again from prepare.py, not versioned
        (root / ".gitignore").write_text(PROJECT_GITIGNORE + "data/\n", encoding="utf-8")
        project = cls(root, load_config(root))  # with the site file's and environment's settings
        project._init_repo()
        project.commit("labtui: new project from a topic (no code yet)")
        return project

    @classmethod
    def open(cls, directory: Path) -> Project:
        root = Path(directory).expanduser().resolve()
        if not (root / CONFIG_NAME).exists() and (branch := _labtui_branch_of(root)):
            raise LabtuiError(
                f"{root} is on a branch without labtui.toml; labtui's work is on {branch}",
                f"git checkout {branch} (labtui never commits to your branch; merge what you "
                f"keep with git merge {branch})",
            )
        return cls(root, load_config(root))

    def _init_repo(self) -> None:
        import git  # noqa: PLC0415 -- GitPython: ~170 ms the app need not pay to paint

        repo = git.Repo.init(self.root, initial_branch="main")
        with repo.config_writer() as writer:
            # Commits must work on machines with no global git identity (CI, fresh servers).
            if not repo.git.config("--get", "user.name", with_exceptions=False):
                writer.set_value("user", "name", "labtui")
            if not repo.git.config("--get", "user.email", with_exceptions=False):
                writer.set_value("user", "email", "labtui@localhost")
        self._repo = repo

    # -- paths ------------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        path = self.root / STATE_DIR
        path.mkdir(exist_ok=True)
        return path

    @property
    def name(self) -> str:
        return self.config.project.name or self.root.name

    def run_dir(self, run_id: str) -> Path:
        return self.root / run_id

    # -- git --------------------------------------------------------------------------------

    @property
    def repo(self):  # -> git.Repo, imported lazily (below)
        if self._repo is None:
            import git  # noqa: PLC0415 -- GitPython: ~170 ms the app need not pay to paint

            try:
                self._repo = git.Repo(self.root)
            except git.InvalidGitRepositoryError:
                raise LabtuiError(
                    f"{self.root} is not a git repository", "create projects with `labtui new`"
                ) from None
        return self._repo

    def head(self) -> str:
        return self.repo.head.commit.hexsha if self.repo.head.is_valid() else ""

    def commit(self, message: str, paths: list[str] | None = None) -> CommitInfo | None:
        """Commit the given paths (all changes when None). None when nothing changed. Refused
        (LabtuiError) on a branch that is not labtui's own in a project that names one."""
        repo = self.repo
        self._check_branch()
        self.clear_stale_index_lock()
        try:  # staging writes objects too: a full disk can stop it as well as the commit
            self._stage(repo, paths)
        except Exception as exc:  # git.GitCommandError; git is imported lazily
            self._refuse_if_disk_full(message)
            raise exc
        has_head = repo.head.is_valid()
        if has_head:
            staged = repo.git.diff("--cached", "--name-only").splitlines()
        else:  # the first commit: everything in the index is new
            staged = repo.git.ls_files().splitlines()
        if not staged:
            return None
        try:
            with repo.git.custom_environment(**self._fallback_identity()):
                repo.git.commit("-m", message, "--no-verify")
        except Exception as exc:  # git.GitCommandError; git is imported lazily
            self._refuse_if_disk_full(message)
            raise exc
        sha = repo.head.commit.hexsha
        diff = repo.git.show("--format=", "--patch", sha) if has_head else ""
        return CommitInfo(sha=sha, message=message, files=staged, diff=diff)

    def _stage(self, repo: git.Repo, paths: list[str] | None) -> None:
        if paths is None and self.config.project.origin == "repository":
            # A researcher's repository holds what runs leave behind outside their folders
            # (wandb/, outputs/, checkpoints): only changes to tracked files, and new files the
            # agents may edit, are labtui's to commit.
            repo.git.add("--update")
            self._add_new_code(repo)
        elif paths is None:
            repo.git.add("--all")
        else:
            existing = [p for p in paths if (self.root / p).exists()]
            tracked_gone = [p for p in paths if not (self.root / p).exists()]
            if existing:
                repo.git.add("--", *existing)
            if tracked_gone:
                repo.git.add("--all", "--", *tracked_gone)

    def _refuse_if_disk_full(self, message: str) -> None:
        """A commit that failed on a full disk is said as such (git only says it could not
        write a lock file)."""
        free = shutil.disk_usage(self.root).free
        if free < DISK_FULL_BYTES:
            raise LabtuiError(
                f"the disk is full: {self.root} has {free // 1024} KiB free, and git could not "
                f"commit {message!r}",
                "free space on that disk, then run labtui again: it resumes where it stopped, "
                "and everything committed before is kept",
            )

    def take_repairs(self) -> list[str]:
        """What labtui repaired in the repository since last asked, for the front ends."""
        repairs, self._repairs = self._repairs, []
        return repairs

    def clear_stale_index_lock(self) -> None:
        """A git killed mid-command (with labtui, or by hand) leaves ``.git/index.lock``, and
        every later commit fails on it. With no git working in the project the lock is stale:
        removed, and said. With one working it is refused, saying what to do."""
        lock = Path(self.repo.git_dir) / "index.lock"
        if not lock.exists():
            return
        running = git_processes_in(self.root)
        if running:
            raise LabtuiError(
                f"{lock} exists and git is working in {self.root} (pid "
                f"{', '.join(map(str, running))})",
                "wait for that git to finish, or stop it, then run labtui again",
            )
        lock.unlink(missing_ok=True)
        self._repairs.append(
            f"removed a stale {lock} (a git command was killed before it finished; "
            "no git process was running)"
        )

    def clear_stale_ref_locks(self) -> None:
        """A git killed while it moved a ref (a kill during ``git tag`` or a branch update)
        leaves ``<ref>.lock``, and every later update of that ref fails on it. Called when a
        session starts, before anything of labtui works in the project: with no git running
        there, such locks are stale, removed and said."""
        common = Path(self.repo.git.rev_parse("--git-common-dir"))
        common = common if common.is_absolute() else self.root / common
        locks = [
            path
            for path in (
                common / "HEAD.lock",
                common / "packed-refs.lock",
                *(common / "refs").rglob("*.lock"),
            )
            if path.is_file()
        ]
        if not locks or git_processes_in(self.root):
            return
        for lock in locks:
            lock.unlink(missing_ok=True)
            self._repairs.append(
                f"removed a stale {lock} (a git command was killed while it moved a ref; "
                "no git process was running)"
            )

    def _fallback_identity(self) -> dict[str, str]:
        """labtui's own name on its commits where git knows no identity here: the project was
        made where one was set globally and runs where none is (another HOME, a service, a
        container). Without it every commit fails and the run stops; with it the researcher's
        own identity is still used wherever git has one."""
        if self._has_identity is None:
            import git  # noqa: PLC0415 -- GitPython: ~170 ms the app need not pay to paint

            try:
                self.repo.git.var("GIT_AUTHOR_IDENT")
                self.repo.git.var("GIT_COMMITTER_IDENT")
                self._has_identity = True
            except git.GitCommandError:
                self._has_identity = False
        if self._has_identity:
            return {}
        return {
            f"GIT_{who}_{what}": value
            for who in ("AUTHOR", "COMMITTER")
            for what, value in (("NAME", "labtui"), ("EMAIL", "labtui@localhost"))
        }

    def _add_new_code(self, repo: git.Repo) -> None:
        untracked = repo.git.ls_files("--others", "--exclude-standard").splitlines()
        new = [name for name in untracked if matches(name, self.config.experiment.edit)]
        if new:
            repo.git.add("--", *new)

    def branch(self) -> str:
        """The branch checked out ('' when HEAD is detached)."""
        head = self.repo.head
        return "" if head.is_detached else head.reference.name

    def _check_branch(self) -> None:
        """labtui commits on ``[project] branch`` (or a labtui/ branch of a parallel idea), never
        on a branch the researcher checked out in the meantime."""
        wanted = self.config.project.branch
        if not wanted:
            return
        current = self.branch()
        if current == wanted or current.startswith(LABTUI_BRANCHES):
            return
        raise LabtuiError(
            f"{self.root} is on {current or 'a detached HEAD'}, and labtui commits only on its "
            f"branch {wanted} (never on yours)",
            f"git checkout {wanted}, then run labtui again; merge what you keep with "
            f"git merge {wanted}",
        )

    def exclude_locally(self, patterns: list[str]) -> None:
        exclude_locally(self.root, patterns)

    def file_at(self, sha: str, path: str) -> str | None:
        """The text of ``path`` as commit ``sha`` had it; None when it had no such file."""
        try:
            return self.repo.git.show(f"{sha}:{path}", strip_newline_in_stdout=False)
        except Exception:  # git.GitCommandError; git is imported lazily
            return None

    def diff_of(self, sha: str) -> str:
        return self.repo.git.show("--format=", "--patch", sha)

    def tag(self, name: str, message: str) -> None:
        with self.repo.git.custom_environment(**self._fallback_identity()):
            self.repo.create_tag(name, message=message, force=True)

    def has_ref(self, name: str) -> bool:
        try:
            self.repo.git.rev_parse("--verify", "--quiet", name)
        except Exception:  # git.GitCommandError; git is imported lazily
            return False
        return True

    def worktree(self, folder: Path, branch: str, start: str) -> Project:
        """A linked git worktree at ``folder`` on ``branch``, as a project of its own. Made from
        ``start`` the first time and reused after, so its commits survive a crash or a rerun."""
        folder = Path(folder)
        if not (folder / ".git").exists():
            self.repo.git.worktree("prune")  # forget worktrees whose folders were deleted
            if self.has_ref(f"refs/heads/{branch}"):
                self.repo.git.worktree("add", str(folder), branch)
            else:
                self.repo.git.worktree("add", "-b", branch, str(folder), start)
        return Project(folder, self.config)


def git_processes_in(root: Path) -> list[int]:
    """Running git processes whose working folder is ``root`` or inside it, not counting this
    process's own (GitPython keeps a ``git cat-file`` running); [] where /proc cannot tell."""
    inside, found = str(root), []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "git":
                continue
            stat = (entry / "stat").read_text()
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == os.getpid():
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue  # gone, or not ours to read
        if cwd == inside or cwd.startswith(inside + os.sep):
            found.append(int(entry.name))
    return found


def exclude_locally(root: Path, patterns: list[str]) -> None:
    """Keep ``patterns`` out of git in this clone only (.git/info/exclude): labtui's state in a
    repository whose .gitignore is the researcher's. In a worktree, the exclude file git reads
    is the main repository's; in a folder that is no repository, nothing is written."""
    found = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if found.returncode != 0 or not found.stdout.strip():
        return
    exclude = Path(found.stdout.strip()) / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    have = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
    new = [p for p in patterns if p not in have]
    if new:
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write("\n# labtui\n" + "\n".join(new) + "\n")


def _empty_folder(directory: Path) -> Path:
    """``directory`` resolved, when it does not exist yet or is empty (a LabtuiError else)."""
    root = Path(directory).expanduser().resolve()
    if root.exists() and any(root.iterdir()):
        raise LabtuiError(
            f"{root} already exists and is not empty",
            "choose a new folder, run `labtui init` inside it to start from your own "
            "repository, or `labtui run` if it is a labtui project",
        )
    return root


def _labtui_branch_of(root: Path) -> str:
    """The labtui/ branch of a repository that holds labtui.toml ('' when there is none): where
    `labtui init` put its work, for a researcher who checked out their own branch since."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    listed = git("for-each-ref", "--format=%(refname:short)", f"refs/heads/{LABTUI_BRANCHES}")
    for branch in listed.stdout.split():
        if git("cat-file", "-e", f"{branch}:{CONFIG_NAME}").returncode == 0:
            return branch
    return ""
