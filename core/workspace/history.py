"""A read-only view of a project's git history: the commits, one commit's diff, the working tree.

Every artifact change in a labtui project is a commit whose message starts with the stage that made
it ("experiments: run_2 code (attempt 1)"), and finished runs are tagged
(``labtui/<idea>/run_2``), so the history can be read back as stages and runs. While a hill-climb
or tree search runs, its kept commits are on its own branches (``labtui/climb/<idea>``,
``labtui/tree/<idea>/node-<n>``, checked out in worktrees) until its best is merged in: the
history lists them too, in date order among the project's own.

This talks to the ``git`` command directly rather than through GitPython: listing 300 commits
with their tags takes ~10 ms with one ``git log`` and ~60 ms through GitPython's objects. Every
call is read-only and takes no optional locks, so a front end may read while the pipeline commits.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LabtuiError
from ..stage_list import STAGES

# CommitInfo lives in .project, which loads the pydantic config (~150 ms): the app's first paint
# builds a CommitLog, and only a shown commit needs the record.
if TYPE_CHECKING:
    from .project import CommitInfo

# One diff is shown, not archived: beyond this the text is cut (the commit itself is intact).
MAX_DIFF_BYTES = 2_000_000
WORKING_TREE_MESSAGE = "working tree (uncommitted changes)"

_STAGE_PREFIX = re.compile(r"^\s*([A-Za-z]+)\s*:")
_RUN_NAME = re.compile(r"(?<![A-Za-z0-9_])run_\d+(?![A-Za-z0-9_])")
_LABELLED_STAGES = frozenset((*STAGES, "baseline"))
# The branches a search commits on before its best reaches HEAD (core/search/climb.py, tree_search.py);
# git's --branches glob lets `*` match across slashes.
SEARCH_BRANCHES = ("labtui/climb/*", "labtui/tree/*")
# Fields and records of `git log` output: control characters no commit subject contains.
_FIELD, _RECORD = "\x1f", "\x1e"
# Variables a surrounding git process (a hook, `git rebase -x`) may set; they would redirect
# every call to another repository or index.
_REPO_OVERRIDES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


@dataclass(frozen=True)
class CommitEntry:
    """One commit of the history, labelled with the stage and run that made it."""

    sha: str
    message: str  # the first line
    stage: str  # a pipeline stage, "baseline", or "" for anything else
    run: str  # "run_3" when the message (or else a tag on the commit) names one run
    tags: tuple[str, ...]


def stage_of(message: str) -> str:
    """The stage named by the message's "<stage>: " prefix, or "" when it names none."""
    match = _STAGE_PREFIX.match(message)
    if match and match.group(1) in _LABELLED_STAGES:
        return match.group(1)
    return ""


def run_of(message: str, tags: Sequence[str] = ()) -> str:
    """The one run the message names, else the one run a tag names; "" when none or several.

    A commit that names several runs ("plots: figures for run_1, run_2") belongs to none of them.
    """
    for text in (message, *tags):
        runs = set(_RUN_NAME.findall(text))
        if len(runs) == 1:
            return runs.pop()
        if runs:
            return ""
    return ""


def entry_of(sha: str, message: str, tags: Sequence[str] = ()) -> CommitEntry:
    subject = message.strip().split("\n", 1)[0]
    return CommitEntry(sha, subject, stage_of(subject), run_of(subject, tags), tuple(tags))


# -- moving through a list of entries (pure, so front ends share one meaning of "group") -------


def group_bounds(entries: Sequence[CommitEntry], index: int) -> tuple[int, int]:
    """First and last index of the run of consecutive commits with the same (stage, run)."""
    key = (entries[index].stage, entries[index].run)
    first = index
    while first > 0 and (entries[first - 1].stage, entries[first - 1].run) == key:
        first -= 1
    last = index
    while last + 1 < len(entries) and (entries[last + 1].stage, entries[last + 1].run) == key:
        last += 1
    return first, last


def newest_of_previous_group(entries: Sequence[CommitEntry], index: int | None) -> int | None:
    """Where `previous group` goes from ``index`` (None: past the newest); None if nowhere."""
    if not entries:
        return None
    if index is None:
        return len(entries) - 1
    first, _ = group_bounds(entries, index)
    return first - 1 if first > 0 else None


def newest_of_next_group(entries: Sequence[CommitEntry], index: int | None) -> int | None:
    """Where `next group` goes from ``index``: the newest commit of the following group, or of
    the current group when it is the last one; None if that is where we already are."""
    if not entries or index is None:
        return None
    _, last = group_bounds(entries, index)
    if last + 1 < len(entries):
        _, last = group_bounds(entries, last + 1)
    return last if last != index else None


# -- the history --------------------------------------------------------------------------------


class CommitLog:
    """The commits of the repository at ``root``; every method runs git and may take a while."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser().resolve()
        self._env = _git_environment(self.root)

    def entries(self, limit: int = 2000) -> list[CommitEntry]:
        """The newest ``limit`` commits reachable from HEAD or a search's branches, oldest first
        (by commit date, never a parent after its child); [] before any commit."""
        if limit <= 0 or not self._has_commits():
            return []
        output = self._git(
            "log",
            "--date-order",
            "--reverse",  # git applies -n first, so this is the newest `limit`, oldest first
            f"-n{limit}",
            "--no-color",
            "--decorate=short",
            "--decorate-refs=refs/tags/",
            f"--format=%H{_FIELD}%s{_FIELD}%D{_RECORD}",
            "HEAD",
            *(f"--branches={pattern}" for pattern in SEARCH_BRANCHES),
            "--",
        )
        return [_parse_log_record(record) for record in output.split(_RECORD) if record.strip()]

    def show(self, sha: str) -> CommitInfo:
        """One commit against its parent (the root commit against the empty tree)."""
        from .project import CommitInfo  # noqa: PLC0415 -- the config, ~150 ms: see the imports

        full = self._resolve(sha)
        described = self._git("show", "-z", "--name-only", f"--format=%B{_FIELD}", full, "--")
        message, _, names = described.partition(_FIELD)
        diff = self._git("show", "--no-color", "--format=", "--patch", full, "--", limit=True)
        return CommitInfo(sha=full, message=message.strip(), files=_split_names(names), diff=diff)

    def working_tree(self) -> CommitInfo:
        """Tracked changes against HEAD (staged and not), then the untracked files by name."""
        from .project import CommitInfo  # noqa: PLC0415 -- the config, ~150 ms: see the imports

        base = "HEAD" if self._has_commits() else self._empty_tree()
        diff = self._git("diff", "--no-color", base, "--", limit=True)
        changed = _split_names(self._git("diff", "--name-only", "-z", base, "--"))
        untracked = _split_names(self._git("ls-files", "--others", "--exclude-standard", "-z"))
        if untracked:
            listing = "\n".join(f"?? {name}" for name in untracked)
            diff = f"{diff.rstrip()}\n\nuntracked files (not in git yet):\n{listing}\n".lstrip()
        return CommitInfo(
            sha="", message=WORKING_TREE_MESSAGE, files=changed + untracked, diff=diff
        )

    # -- git ----------------------------------------------------------------------------------

    def _has_commits(self) -> bool:
        return self._run("rev-parse", "--verify", "-q", "HEAD^{commit}").returncode == 0

    def _empty_tree(self) -> str:
        # Computed, not the well-known SHA-1 constant: repositories may use SHA-256.
        return self._git("hash-object", "-t", "tree", "--stdin").strip()

    def _resolve(self, sha: str) -> str:
        if not sha or sha.startswith("-") or any(ch.isspace() for ch in sha):
            raise LabtuiError(f"{sha!r} is not a commit id", "pass a commit sha from entries()")
        result = self._run("rev-parse", "--verify", "-q", f"{sha}^{{commit}}")
        if result.returncode != 0:
            raise LabtuiError(
                f"no commit {sha} in {self.root}",
                "the history may have been rewritten; list commits with `git log` there",
            )
        return result.stdout.strip()

    def _git(self, *args: str, limit: bool = False) -> str:
        """Run git and return its output, cut at MAX_DIFF_BYTES when ``limit``; raise on failure."""
        result = self._run(*args, limit=limit)
        if result.returncode != 0 and not result.cut:
            raise LabtuiError(
                f"git {args[0]} failed in {self.root}: {result.stderr.strip() or result.returncode}",
                "check the repository with `git status` in the project folder",
            )
        if result.cut:
            return (
                result.stdout + f"\n… diff cut at {MAX_DIFF_BYTES // 1_000_000} MB; git has it all"
            )
        return result.stdout

    def _run(self, *args: str, limit: bool = False) -> _GitResult:
        if not self.root.is_dir():
            raise LabtuiError(f"{self.root} does not exist", "open a labtui project folder")
        command = ["git", "-c", "core.quotepath=off", "-c", "log.showRoot=true", *args]
        try:
            result = _run_capped(command, self.root, self._env, MAX_DIFF_BYTES if limit else None)
        except FileNotFoundError:
            raise LabtuiError("git is not installed", "install git and put it on PATH") from None
        except OSError as error:
            raise LabtuiError(
                f"cannot run git in {self.root}: {error}", "check the folder"
            ) from None
        if result.returncode != 0 and "not a git repository" in result.stderr:
            raise LabtuiError(
                f"{self.root} is not a git repository", "create projects with `labtui new`"
            )
        return result


@dataclass(frozen=True)
class _GitResult:
    returncode: int
    stdout: str
    stderr: str
    cut: bool  # the output was longer than allowed and git was stopped


def _run_capped(command: list[str], cwd: Path, env: dict[str, str], cap: int | None) -> _GitResult:
    # stderr goes to a file: a pipe nobody reads while stdout is read could fill and block git.
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        ) as process:
            assert process.stdout is not None
            data = process.stdout.read(cap + 1) if cap is not None else process.stdout.read()
            cut = cap is not None and len(data) > cap
            if cut:
                process.kill()
                data = data[:cap]
            returncode = process.wait()
        errors.seek(0)
        stderr = errors.read().decode("utf-8", errors="replace")
    return _GitResult(returncode, data.decode("utf-8", errors="replace"), stderr, cut)


def _git_environment(root: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _REPO_OVERRIDES}
    env.update(
        # Read-only callers must not take index.lock: the pipeline may be committing right now.
        GIT_OPTIONAL_LOCKS="0",
        # The project folder is the repository; never fall back to one that encloses it.
        GIT_CEILING_DIRECTORIES=str(root.parent),
        GIT_TERMINAL_PROMPT="0",
        # Error messages are matched in English.
        LC_ALL="C",
    )
    return env


def _parse_log_record(record: str) -> CommitEntry:
    sha, subject, decorations = record.strip("\n").split(_FIELD)
    return entry_of(sha, subject, _tag_names(decorations))


def _tag_names(decorations: str) -> tuple[str, ...]:
    names = []
    for decoration in decorations.split(", "):
        if decoration.startswith("tag: "):
            names.append(decoration.removeprefix("tag: ").removeprefix("refs/tags/"))
    return tuple(names)


def _split_names(output: str) -> list[str]:
    """File names from NUL-separated output (``git show`` puts "\\0\\n" before the first)."""
    return [name for name in output.strip("\0\n").split("\0") if name]
