"""The numbers of a W&B run, read from its ``.wandb`` file: what an offline run has instead of
a summary file (wandb 0.31 writes no ``files/wandb-summary.json`` offline; 0.17 writes one that
holds only ``_wandb.runtime``).

The file is the run's stream of protobuf ``Record`` messages (wandb's own types, from
``wandb.proto.wandb_internal_pb2``, imported only when a file is read: labtui works without
wandb until a project reads a W&B run). wandb 0.31 no longer ships a Python reader of the file
(wandb-core, in Go, writes it; 0.17's ``wandb.sdk.internal.datastore`` is gone), so the framing
is read here. It is LevelDB's log format, as 0.17's DataStore documents it:

* a 7-byte file header: ``:W&B``, the magic 0xBEE1 (little-endian uint16), version 0;
* then 32 KiB blocks of frames, each ``crc (uint32) | length (uint16) | type (uint8) | data``,
  little-endian; the crc is zlib's CRC-32 (not LevelDB's crc32c, and unmasked) of the type byte
  and the data; type 1 is a whole record, 2/3/4 its first, middle and last pieces where it
  crosses a block; fewer than 7 bytes left in a block are zero padding.

Where 0.17's DataStore exists it reads the same frames (checked: record for record on a 0.31
file of 9,010 records), but it opens the file for writing and asserts on a cut one, so every
version's file is framed here.

A file still being written, or cut short, is read up to its last whole record: what came before
still counts. Keys come out as the researcher logged them: ``"validation/accuracy"`` stays one
name, and a logged dict ``{"val": {"acc": 0.9}}`` becomes ``"val.acc"`` (0.31 stores it as the
nested key ["val", "acc"], 0.17 as the key "val" holding the JSON ``{"acc": 0.9}``).
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .result_formats import FIX_PATH, ResultProblem, is_number, read_bytes

_HEADER = struct.Struct("<4sHB")
_IDENT, _MAGIC, _VERSION = b":W&B", 0xBEE1, 0
_FRAME = struct.Struct("<IHB")
_BLOCK = 32 * 1024
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_CRC_SEED = {kind: zlib.crc32(bytes([kind])) for kind in (_FULL, _FIRST, _MIDDLE, _LAST)}
FIX_INSTALL = "pip install wandb in the environment labtui runs in ({})"

Point = tuple[int, float]  # (step, value)


@dataclass(frozen=True)
class OfflineRun:
    """A W&B run's numbers. ``history``: each logged key's (step, value) points in the order
    logged; ``summary``: each key's final value, W&B's summary records over the last logged
    value; ``cut``: '' when the file ended whole, else what stopped the reading early (the
    numbers before it are kept). Keys of W&B's own (``_step``, ``_runtime``, ``_wandb.…``) and
    values that are no numbers (text, media, tables) are left out."""

    file: Path
    where: str  # the file as messages name it
    history: dict[str, list[Point]] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    cut: str = ""


def wandb_file(run_folder: Path) -> Path | None:
    """The ``run-<id>.wandb`` file of a W&B run folder (``offline-run-<time>-<id>``), or None."""
    found = sorted(Path(run_folder).glob("run-*.wandb"))
    return found[-1] if found else None


def read_offline_run(path: Path, where: str = "") -> OfflineRun:
    """The numbers in a ``.wandb`` file (or in the one of the run folder ``path``). A
    ResultProblem names the file and the fix when it cannot be read at all, or when wandb (whose
    record types it is written in) is not installed."""
    path = Path(path)
    if path.is_dir():
        found = wandb_file(path)
        if found is None:
            raise ResultProblem(f"{where or path} holds no run-*.wandb file", FIX_PATH)
        where = f"{where}/{found.name}" if where else ""
        path = found
    where = where or str(path)
    record_type = _record_type(where)
    data = read_bytes(path, where)
    _check_header(data, where)
    numbers = _Numbers()
    reading = _Frames(data)
    for raw in reading:
        record = record_type()
        try:
            record.ParseFromString(raw)
        except Exception:  # protobuf's DecodeError: a record the writer never finished
            reading.cut = f"a record at byte {reading.offset} does not parse"
            break
        numbers.add(record)
    return OfflineRun(path, where, numbers.history, numbers.final(), reading.cut)


def _record_type(where: str) -> Any:
    try:
        from wandb.proto import wandb_internal_pb2  # noqa: PLC0415 -- optional; 0.6 s to import
    except ImportError as error:
        raise ResultProblem(
            f"reading the W&B run {where} needs wandb's record types, and wandb cannot be "
            f"imported here ({error})",
            FIX_INSTALL.format(sys.prefix),
        ) from None
    # the module picks the generated code for the installed protobuf at import: mypy sees none
    return wandb_internal_pb2.Record  # type: ignore[attr-defined]


def _check_header(data: bytes, where: str) -> None:
    if len(data) < _HEADER.size:
        raise ResultProblem(
            f"{where} is empty or cut short: the run wrote no W&B records", "look at the run's log"
        )
    ident, magic, version = _HEADER.unpack_from(data)
    if ident != _IDENT or magic != _MAGIC:
        raise ResultProblem(f"{where} is not a W&B run file (no :W&B header)", FIX_PATH)
    if version != _VERSION:
        raise ResultProblem(
            f"{where} is in W&B file format {version}, and labtui reads format {_VERSION}",
            "tell labtui's developers which wandb version wrote it",
        )


class _Frames:
    """The records of the file, whole; iteration stops at the first frame that is cut short or
    fails its crc, and ``cut`` says which (LevelDB's readers skip to the next block there, but
    a W&B file is written in one go, so what follows a bad frame is no more trustworthy)."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.offset = _HEADER.size  # blocks are counted from the file's start, header included
        self.cut = ""

    def __iter__(self) -> Iterator[bytes]:
        pieces: list[bytes] = []
        while (frame := self._next()) is not None:
            kind, body = frame
            if kind == _FULL and not pieces:
                yield body
            elif kind == _FIRST and not pieces:
                pieces = [body]
            elif kind == _MIDDLE and pieces:
                pieces.append(body)
            elif kind == _LAST and pieces:
                yield b"".join([*pieces, body])
                pieces = []
            else:
                self.cut = f"a record piece of type {kind} out of order at byte {self.offset}"
                return
        if pieces and not self.cut:
            self.cut = f"the file ends inside a record at byte {self.offset}"

    def _next(self) -> tuple[int, bytes] | None:
        """The next frame's type and data; None at the end of the file or a bad frame."""
        left_in_block = _BLOCK - self.offset % _BLOCK
        if left_in_block < _FRAME.size:
            self.offset += left_in_block  # zero padding up to the next block
        if self.offset >= len(self.data):
            return None
        if self.offset + _FRAME.size > len(self.data):
            self.cut = f"the file ends inside a record at byte {self.offset}"
            return None
        crc, length, kind = _FRAME.unpack_from(self.data, self.offset)
        start = self.offset + _FRAME.size
        body = bytes(self.data[start : start + length])
        if kind == 0 and length == 0 and crc == 0:  # zeros past the last record: the end
            return None
        if len(body) < length:
            self.cut = f"the file ends inside a record at byte {self.offset}"
            return None
        if kind not in _CRC_SEED or zlib.crc32(body, _CRC_SEED[kind]) != crc:
            self.cut = f"the record at byte {self.offset} fails its checksum"
            return None
        self.offset = start + length
        return kind, body


class _Numbers:
    """History and summary gathered record by record."""

    def __init__(self) -> None:
        self.history: dict[str, list[Point]] = {}
        self.summary_records: dict[str, float | None] = {}  # None: removed by the run

    def add(self, record: Any) -> None:
        kind = record.WhichOneof("record_type")
        if kind == "history":
            self._add_history(record.history)
        elif kind == "summary":
            for item in record.summary.update:
                for name, value in _numbers(_path(item), item.value_json):
                    self.summary_records[name] = value
            for item in record.summary.remove:
                for name in [n for n in self.summary_records if _under(n, _path(item))]:
                    self.summary_records[name] = None

    def _add_history(self, history: Any) -> None:
        step = history.step.num
        items = [(_path(item), item.value_json) for item in history.item]
        for path, value_json in items:
            if path == ("_step",) and not history.HasField("step"):
                step = int(json.loads(value_json))  # older files carry the step only as _step
        for path, value_json in items:
            for name, value in _numbers(path, value_json):
                self.history.setdefault(name, []).append((step, value))

    def final(self) -> dict[str, float]:
        last = {name: points[-1][1] for name, points in self.history.items()}
        for name, value in self.summary_records.items():
            if value is None:
                last.pop(name, None)
            else:
                last[name] = value
        return last


def _path(item: Any) -> tuple[str, ...]:
    return tuple(item.nested_key) or (item.key,)


def _under(name: str, path: tuple[str, ...]) -> bool:
    prefix = ".".join(path)
    return name == prefix or name.startswith(prefix + ".")


def _numbers(path: tuple[str, ...], value_json: str) -> Iterator[tuple[str, float]]:
    """The numbers of one logged value by their names: a number under its key, a dict's numbers
    under "key.inner"; W&B's own keys (a part starting with "_") and media are left out."""
    try:
        value = json.loads(value_json)  # W&B writes NaN and Infinity as JSON's extensions
    except ValueError:
        return
    yield from _leaves(list(path), value)


def _leaves(path: list[str], value: Any) -> Iterator[tuple[str, float]]:
    if any(part.startswith("_") for part in path):
        return
    if is_number(value):
        yield ".".join(path), float(value)
    elif isinstance(value, dict) and "_type" not in value:  # "_type": a histogram, an image
        for key, inner in value.items():
            yield from _leaves([*path, str(key)], inner)


def series_of(run: OfflineRun, name: str) -> list[float] | None:
    """``name``'s logged values in order, or its summary value alone when it was never logged
    as history; None when the run has no such number. "val/acc" also finds a logged dict's
    "val.acc"."""
    for key in dict.fromkeys([name, name.replace("/", ".")]):
        if key in run.history:
            return [value for _, value in run.history[key]]
        if key in run.summary:
            return [run.summary[key]]
    return None
