"""Reading a researcher's repository safely: bounded reads, the list of its files, and which kind
of file a path is (a test, evaluation, data or config file).

Every read is bounded (the first 200 kB of a file, a limit on the files listed, no symlink
followed out of the repository or round a loop), so no file, however odd, makes the survey fail.
Each room of the survey reads the repository through here.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

HEAD_BYTES = 200_000
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "virtualenv"}
_VIRTUALENV_MARKS = ("pyvenv.cfg", "conda-meta", "bin/activate")  # env/ may be RL code instead


def read_text(root: Path, rel: str) -> str | None:
    """The first 200 kB of a regular file inside root, decoded leniently; None when it cannot
    be read, lies outside root (a symlink) or is binary (a NUL byte)."""
    path = root / rel
    try:
        if not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
            return None
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except (OSError, RuntimeError):
        return None
    return None if b"\0" in head else head.decode("utf-8", errors="replace")


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def list_files(root: Path, max_files: int) -> tuple[list[str], bool]:
    """The repository's files as git sees them (tracked and not ignored), else as a walk finds
    them; at most ``max_files``, and whether more were left out."""
    names: list[str] = []
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode == 0:
            names = sorted({n for n in done.stdout.decode("utf-8", "replace").split("\0") if n})
    except (OSError, subprocess.SubprocessError):
        pass
    if not names:
        names = list(walk_files(root, max_files + 1))
    return names[:max_files], len(names) > max_files


def walk_files(root: Path, limit: int, skip: set[str] = SKIP_DIRS) -> Iterator[str]:
    """Relative file paths, skipping hidden folders, caches and virtualenvs. Symlinked folders
    are not entered, so a symlink loop ends nothing."""
    seen = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in skip
            and not any(os.path.exists(os.path.join(folder, d, m)) for m in _VIRTUALENV_MARKS)
        )
        rel = Path(folder).relative_to(root).as_posix()
        for name in sorted(names):
            seen += 1
            if seen > limit:
                return
            yield name if rel == "." else f"{rel}/{name}"


def normal_path(path: PurePosixPath | str) -> str:
    """A relative path without . and .. (never above the repository)."""
    parts = posixpath.normpath(str(path)).split("/")
    return "/".join(p for p in parts if p not in ("", ".", ".."))


def is_test(path: str) -> bool:
    p = PurePosixPath(path)
    return (
        bool({"tests", "test"} & set(p.parts[:-1]))
        or fnmatchcase(p.name, "test_*.py")
        or p.name.endswith("_test.py")
        or p.name == "conftest.py"
    )


def is_evaluation(path: str) -> bool:
    return path.endswith(".py") and bool(re.match(r"eval|metrics?", PurePosixPath(path).name))


# a script that makes the data (a README's set-up step before train.py), not an experiment
_MAKES_DATA = re.compile(r"(generate|prepare|make|build|create|download|preprocess)_?data", re.I)


def is_data(path: str) -> bool:
    name = PurePosixPath(path).name  # data*.py, dataset*.py, dataloader.py, generate_data.py
    return name.startswith("data") or bool(_MAKES_DATA.match(name))


def is_config(path: str) -> bool:
    p = PurePosixPath(path)
    if any(part.startswith(".") for part in p.parts):
        return False
    in_conf = bool({"conf", "configs", "config"} & set(p.parts[:-1]))
    return p.suffix in (".yaml", ".yml", ".toml", ".cfg") or (p.suffix == ".json" and in_conf)
