"""What a run may not leave in the project: changes to the files ``[experiment] protect`` keeps
(put back from the last commit), and files over ``[experiment] commit_file_mb`` (listed in a
.gitignore, so that committing the run keeps them on disk but out of git).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..machine.run_log import LOG_NAMES
from ..workspace.project import exclude_locally

GITIGNORE_HEADER = "# labtui: files over [experiment] commit_file_mb stay on disk but out of git"


def restore_protected(root: Path, protected: list[str]) -> list[str]:
    """The protected files a run changed (tracked ones as git has them), each put back from the
    last commit. Under bubblewrap they are read-only and this finds nothing; with limits only
    it is what keeps a run from editing its own evaluation."""
    if not protected:
        return []
    changed = subprocess.run(
        ["git", "diff", "--name-only", "HEAD", "--", *protected],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if changed:
        subprocess.run(["git", "checkout", "HEAD", "--", *changed], cwd=root, check=False)
    return changed


def ignore_large_files(run_dir: Path, cap_mb: int) -> list[str]:
    """Files of the run folder over ``cap_mb`` (model checkpoints, say), listed in the folder's
    own .gitignore so that committing the run keeps them on disk but out of git; [] when none
    (or ``cap_mb`` is 0: no cap). The run's logs are not among them: they are never committed
    (``exclude_logs``)."""
    if not cap_mb or not run_dir.is_dir():
        return []
    cap = cap_mb * 1024 * 1024
    large = sorted(
        path.relative_to(run_dir).as_posix()
        for path in run_dir.rglob("*")
        if path.is_file()
        and not path.is_symlink()
        and path.stat().st_size > cap
        and not _is_run_log(run_dir, path)
    )
    if large:
        lines = [f"# labtui: files over {cap_mb} MB stay out of git ([experiment] commit_file_mb)"]
        (run_dir / ".gitignore").write_text("\n".join([*lines, *large]) + "\n", encoding="utf-8")
    return large


def ignore_large_project_files(root: Path, cap_mb: int) -> list[str]:
    """Files a commit would take (untracked, not ignored) anywhere in the project that are over
    ``cap_mb``, appended to the project's .gitignore; [] when none, when ``cap_mb`` is 0, or when
    the project is no git repository."""
    if not cap_mb:
        return []
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        return []
    cap = cap_mb * 1024 * 1024
    large = []
    for name in sorted(filter(None, listed.stdout.decode("utf-8", "replace").split("\0"))):
        path = root / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size > cap:
            large.append(name)
    if large:
        gitignore = root / ".gitignore"
        text = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else ""
        lines = [] if GITIGNORE_HEADER in text else [GITIGNORE_HEADER]
        # Anchored, with glob characters escaped: the entry names this file and no other.
        lines += ["/" + re.sub(r"([*?\[\]!#\\])", r"\\\1", name) for name in large]
        joiner = "" if not text or text.endswith("\n") else "\n"
        gitignore.write_text(text + joiner + "\n".join(lines) + "\n", encoding="utf-8")
    return large


def _is_run_log(run_dir: Path, path: Path) -> bool:
    return path.parent == run_dir and path.name in LOG_NAMES.values()


def exclude_logs(root: Path, run_id: str, logs: list[str]) -> None:
    """A run's stdout.log and stderr.log kept out of git, in this clone only: up to
    ``[limits] run_log_mb`` each, they are for reading here, not for every clone to carry.
    Listed by path in .git/info/exclude, which survives a rewind (a .gitignore in the run
    folder went with the commit and left the logs showing as untracked)."""
    if logs:
        exclude_locally(root, [f"/{run_id}/{name}" for name in logs])
