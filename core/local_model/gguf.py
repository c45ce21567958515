"""The header of a GGUF file (llama.cpp's format), read with the standard library only.

labtui reads it to tell a model file from anything else before it hashes 1.1 GB or hands the
file to a server: the magic, the version and ``general.name``. A file may come from anywhere
(the researcher names one, a mirror serves one), so the reading is bounded: at most
``MAX_ENTRIES`` metadata entries and ``MAX_HEADER_BYTES`` bytes, whatever the file claims.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from labtui.core.errors import LabtuiError

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_ENTRIES = 64
MAX_ARRAY_DEPTH = 4
MAX_HEADER_BYTES = 16 << 20
NAME_KEY = "general.name"

# value type -> struct format of one scalar (little-endian), from ggml's gguf.h
_SCALARS = {
    0: "<B",  # uint8
    1: "<b",  # int8
    2: "<H",  # uint16
    3: "<h",  # int16
    4: "<I",  # uint32
    5: "<i",  # int32
    6: "<f",  # float32
    7: "<?",  # bool
    10: "<Q",  # uint64
    11: "<q",  # int64
    12: "<d",  # float64
}
_STRING = 8
_ARRAY = 9

_NOT_GGUF_HINT = (
    "give labtui a GGUF model file (llama.cpp's format, usually ending in .gguf), or leave the "
    "model unset and labtui fetches its own"
)
_TRUNCATED_HINT = "the file is incomplete (a cut download or copy): fetch or copy it again"


@dataclass(frozen=True)
class GgufHeader:
    """What labtui reads of a GGUF file: enough to know it is one, and which model it holds."""

    version: int
    tensor_count: int
    entry_count: int
    name: str | None
    """``general.name``; None when it is not among the entries read (``MAX_ENTRIES``)."""


def read_gguf_header(path: Path) -> GgufHeader:
    """The file's GGUF header, reading entries until ``general.name`` (or the bounds).

    Raises LabtuiError when the file cannot be read, is not GGUF, is a version labtui does not
    read, is truncated, or is malformed within the bounds."""
    try:
        with path.open("rb") as stream:
            return _Reader(stream, path).header()
    except OSError as error:
        raise LabtuiError(
            f"cannot read {path}: {error.strerror or error}",
            "check that the file exists and that you may read it",
        ) from error


class _Reader:
    """Reads one header, keeping count of the bytes taken so a hostile file stays bounded."""

    def __init__(self, stream: BinaryIO, path: Path) -> None:
        self.stream = stream
        self.path = path
        self.offset = 0

    def header(self) -> GgufHeader:
        magic = self.stream.read(4)
        self.offset = len(magic)
        if magic != MAGIC:
            found = f"it begins with {magic!r}, not {MAGIC!r}" if magic else "it is empty"
            raise LabtuiError(f"{self.path} is not a GGUF model file: {found}", _NOT_GGUF_HINT)
        version = self.scalar("<I", "the version")
        if version not in SUPPORTED_VERSIONS:
            raise LabtuiError(
                f"{self.path} is GGUF version {version} ({_version_words(version)}); labtui "
                f"reads versions {', '.join(map(str, SUPPORTED_VERSIONS))}",
                "convert it with a current llama.cpp (convert_hf_to_gguf.py), or use another file",
            )
        tensors = self.scalar("<Q", "the tensor count")
        entries = self.scalar("<Q", "the metadata count")
        name = self.find_name(entries)
        return GgufHeader(version, tensors, entries, name)

    def find_name(self, entries: int) -> str | None:
        for _ in range(min(entries, MAX_ENTRIES)):
            key = self.string("a metadata key")
            kind = self.scalar("<I", f"the type of {key!r}")
            if key == NAME_KEY and kind == _STRING:
                return self.string(f"the value of {key!r}")
            self.skip_value(kind, key)
        return None

    def skip_value(self, kind: int, key: str, depth: int = 0) -> None:
        if kind in _SCALARS:
            self.take(struct.calcsize(_SCALARS[kind]), f"the value of {key!r}")
        elif kind == _STRING:
            self.skip(self.scalar("<Q", f"the length of {key!r}"), f"the value of {key!r}")
        elif kind == _ARRAY:
            self.skip_array(key, depth + 1)
        else:
            raise self.malformed(f"the entry {key!r} has unknown value type {kind}")

    def skip_array(self, key: str, depth: int) -> None:
        # arrays of arrays are legal; a file nesting them without end must not exhaust the stack
        if depth > MAX_ARRAY_DEPTH:
            raise self.malformed(f"the entry {key!r} nests arrays more than {MAX_ARRAY_DEPTH} deep")
        kind = self.scalar("<I", f"the element type of {key!r}")
        count = self.scalar("<Q", f"the length of {key!r}")
        if kind in _SCALARS:
            self.skip(count * struct.calcsize(_SCALARS[kind]), f"the array {key!r}")
            return
        for _ in range(count):
            self.skip_value(kind, key, depth)

    def string(self, what: str) -> str:
        length = self.scalar("<Q", f"the length of {what}")
        raw = self.take(length, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.malformed(f"{what} at byte {self.offset - length} is not UTF-8") from error

    def scalar(self, fmt: str, what: str) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]
        return value

    def skip(self, length: int, what: str) -> None:
        self.bound(length, what)
        self.stream.seek(length, 1)
        self.offset += length
        # a seek past the end succeeds; the next read would find the truncation too late to
        # name what was cut
        if self.offset > _size_of(self.stream):
            raise self.truncated(what)

    def take(self, length: int, what: str) -> bytes:
        self.bound(length, what)
        data = self.stream.read(length)
        self.offset += len(data)
        if len(data) < length:
            raise self.truncated(what)
        return data

    def bound(self, length: int, what: str) -> None:
        if self.offset + length > MAX_HEADER_BYTES:
            raise self.malformed(
                f"{what} would reach past the first {MAX_HEADER_BYTES >> 20} MB of metadata "
                f"({length:,} bytes at byte {self.offset:,})"
            )

    def truncated(self, what: str) -> LabtuiError:
        return LabtuiError(
            f"{self.path} is a truncated GGUF file: it ends after {_size_of(self.stream):,} "
            f"bytes, inside {what}",
            _TRUNCATED_HINT,
        )

    def malformed(self, problem: str) -> LabtuiError:
        return LabtuiError(f"{self.path} is not a readable GGUF file: {problem}", _NOT_GGUF_HINT)


def _size_of(stream: BinaryIO) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end


def _version_words(version: int) -> str:
    # a big-endian file's version reads byte-swapped here (3 reads as 50331648)
    if version and version & 0xFFFF == 0:
        return "a big-endian file, for another kind of machine"
    return "too old" if version < min(SUPPORTED_VERSIONS) else "newer than labtui knows"
