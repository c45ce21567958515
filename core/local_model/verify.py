"""Whether a weights file is the one labtui means, checked before any server loads it: its size,
its GGUF name, then its SHA-256 (the only check a mirror of unverified provenance cannot pass
by accident or design). A check that passed is recorded beside the file (``<file>.verified.json``:
size, mtime, SHA-256), so that later starts need not hash 1.1 GB again unless the file changed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labtui.core.errors import LabtuiError

from ..workspace.json_records import read_json
from .catalog import ModelFacts
from .disk import write_json
from .gguf import NAME_KEY, read_gguf_header
from .progress import Progress, ProgressSink, no_progress

CHUNK_BYTES = 4 << 20
RECORD_SUFFIX = ".verified.json"
REFETCH_HINT = "remove the file; labtui fetches its model again on its next start"


@dataclass(frozen=True)
class VerifiedRecord:
    """A file as it was when its check passed: while its size and mtime stay these, it is taken
    as checked without hashing it again."""

    size: int
    mtime_ns: int
    sha256: str
    gguf_name: str | None
    """``general.name`` of its GGUF metadata (None: the file does not say)."""

    def matches(self, info: os.stat_result) -> bool:
        return info.st_size == self.size and info.st_mtime_ns == self.mtime_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "sha256": self.sha256,
            NAME_KEY: self.gguf_name,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifiedRecord | None:
        """The record, or None when ``data`` is not one (an older or damaged file)."""
        size, mtime_ns = data.get("size"), data.get("mtime_ns")
        sha256, name = data.get("sha256"), data.get(NAME_KEY)
        if not (isinstance(size, int) and isinstance(mtime_ns, int) and isinstance(sha256, str)):
            return None
        return cls(size, mtime_ns, sha256, name if isinstance(name, str) else None)


def sha256_of(path: Path, sink: ProgressSink = no_progress, *, label: str = "") -> str:
    """The file's SHA-256, read in chunks, its progress in bytes to ``sink`` ("checking
    <label>", by default the file's name)."""
    step = f"checking {label or path.name}"
    total = path.stat().st_size
    digest = hashlib.sha256()
    done = 0
    sink(Progress(step, 0, total))
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
            done += len(chunk)
            sink(Progress(step, done, total))
    return digest.hexdigest()


def check_weights(
    path: Path, facts: ModelFacts, sink: ProgressSink = no_progress, *, hint: str = REFETCH_HINT
) -> VerifiedRecord:
    """The record of ``path`` when it is ``facts``' file: its size, then its GGUF name, then its
    SHA-256 (cheapest first). Raises LabtuiError naming the file, what was expected and what
    was found, with ``hint`` as the fix."""
    info = path.stat()
    if info.st_size != facts.size:
        raise LabtuiError(
            f"{path} is not {facts.title}'s weights: expected {facts.size:,} bytes, "
            f"found {info.st_size:,}",
            hint,
        )
    name = read_gguf_header(path).name
    if name != facts.gguf_name:
        found = repr(name) if name is not None else "none"
        raise LabtuiError(
            f"{path} is not {facts.title}'s weights: expected {NAME_KEY} {facts.gguf_name!r}, "
            f"found {found}",
            hint,
        )
    # named for the model, not for the temporary file a download or a joining left it in
    sha256 = sha256_of(path, sink, label=facts.file_name)
    if sha256 != facts.sha256:
        raise LabtuiError(
            f"{path} is not {facts.title}'s weights: expected SHA-256 {facts.sha256}, "
            f"found {sha256}",
            hint,
        )
    return VerifiedRecord(info.st_size, info.st_mtime_ns, sha256, name)


def check_named_file(path: Path, sink: ProgressSink = no_progress) -> VerifiedRecord:
    """The record of a GGUF file the researcher named: there is no expected checksum, so its
    header must read as GGUF and its SHA-256 is recorded to notice a later change."""
    info = path.stat()
    name = read_gguf_header(path).name
    return VerifiedRecord(info.st_size, info.st_mtime_ns, sha256_of(path, sink), name)


def record_path(path: Path) -> Path:
    return path.with_name(path.name + RECORD_SUFFIX)


def verified_record(path: Path) -> VerifiedRecord | None:
    """The record kept beside ``path``, or None (none, unreadable, or not a record)."""
    data = read_json(record_path(path))
    return VerifiedRecord.from_json(data) if data is not None else None


def write_verified_record(path: Path, record: VerifiedRecord) -> None:
    write_json(record_path(path), record.to_json())


def forget_verified(path: Path) -> None:
    record_path(path).unlink(missing_ok=True)


def is_verified(path: Path, facts: ModelFacts, sink: ProgressSink = no_progress) -> bool:
    """Whether ``path`` is ``facts``' file: at once from its record while the file is unchanged,
    else by checking it again (hashing it, progress to ``sink``) and recording the result."""
    try:
        info = path.stat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    record = verified_record(path)
    if record is not None and record.matches(info) and record.sha256 == facts.sha256:
        return True
    forget_verified(path)
    try:
        record = check_weights(path, facts, sink)
    except (LabtuiError, OSError):
        return False
    write_verified_record(path, record)
    return True
