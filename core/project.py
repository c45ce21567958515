"""A research workspace: a git repository made from a template, with ``labtui.toml``.

Every artifact change is a commit. ``commit`` returns what changed (id, files, unified diff) so the
caller can emit it as a CodeDiff event; the project itself never talks to front ends.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Config, load_config, save_config
from .errors import LabtuiError
from .templates import find_template, validate_template

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

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, template: str, idea: str = "") -> Project:
        """Copy a validated template into a new git repository and write labtui.toml."""
        source = find_template(template)
        validate_template(source)
        root = Path(directory).expanduser().resolve()
        if root.exists() and any(root.iterdir()):
            raise LabtuiError(
                f"{root} already exists and is not empty",
                "choose a new folder, or run `labtui run` inside it if it is a labtui project",
            )
        shutil.copytree(
            source, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        config = Config()
        config.project.name = root.name
        config.project.template = str(template)
        config.project.idea = idea
        save_config(config, root)
        (root / ".gitignore").write_text(PROJECT_GITIGNORE, encoding="utf-8")
        project = cls(root, config)
        project._init_repo()
        project.commit(f"labtui: new project from template {Path(template).name}")
        return project

    @classmethod
    def open(cls, directory: Path) -> Project:
        root = Path(directory).expanduser().resolve()
        return cls(root, load_config(root))

    def _init_repo(self) -> None:
        import git

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
    def repo(self):  # -> git.Repo, imported lazily to keep `labtui --help` fast
        if self._repo is None:
            import git

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
        """Commit the given paths (all changes when None). None when nothing changed."""
        repo = self.repo
        if paths is None:
            repo.git.add("--all")
        else:
            existing = [p for p in paths if (self.root / p).exists()]
            tracked_gone = [p for p in paths if not (self.root / p).exists()]
            if existing:
                repo.git.add("--", *existing)
            if tracked_gone:
                repo.git.add("--all", "--", *tracked_gone)
        has_head = repo.head.is_valid()
        if has_head:
            staged = repo.git.diff("--cached", "--name-only").splitlines()
        else:  # the first commit: everything in the index is new
            staged = repo.git.ls_files().splitlines()
        if not staged:
            return None
        repo.git.commit("-m", message, "--no-verify")
        sha = repo.head.commit.hexsha
        diff = repo.git.show("--format=", "--patch", sha) if has_head else ""
        return CommitInfo(sha=sha, message=message, files=staged, diff=diff)

    def file_at(self, sha: str, path: str) -> str | None:
        """The text of ``path`` as commit ``sha`` had it; None when it had no such file."""
        try:
            return self.repo.git.show(f"{sha}:{path}", strip_newline_in_stdout=False)
        except Exception:  # git.GitCommandError; git is imported lazily
            return None

    def diff_of(self, sha: str) -> str:
        return self.repo.git.show("--format=", "--patch", sha)

    def tag(self, name: str, message: str) -> None:
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
