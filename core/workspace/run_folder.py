"""A run's folder and the two files that record it, read and written here and nowhere else.

A run's folder is ``run_<n>/`` (``run_0`` is the baseline); results the researcher had before
labtui (``labtui import``) get ``imported_<n>/`` beside them. Each holds:

- ``final_info.json``: the numbers, in the template contract's shape (The AI Scientist's:
  ``{dataset: {"means": {metric: value}, "stderrs": {...}, "final_info_dict": {...}}}``),
  whatever ``[results]`` read them from. Read as a :class:`FinalInfo`.
- ``labtui_run.json``: how they were made, so that any result can be traced and redone: a
  :class:`RunRecord` for a run (command, interpreter, package versions, commit, timing, sandbox,
  where its numbers came from), an :class:`ImportRecord` for an import (the file, its digest, the
  commit of the code that made it).

A file that cannot be read is a :class:`RunFolderError` naming the file and the field at fault.
Both files are written as labtui always wrote them, so every existing project still loads.

The folder and file names are the template contract's (core/settings/contract.py): the template
check and the project's globs in core/settings need them below this layer. Everything above
imports them from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePath
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import LabtuiError
from ..settings.contract import FINAL_INFO as FINAL_INFO
from ..settings.contract import IMPORTED_PREFIX as IMPORTED_PREFIX
from ..settings.contract import RUN_PREFIX as RUN_PREFIX
from ..settings.templates import check_final_info

RUN_RECORD = "labtui_run.json"
RECORD_FILES = (FINAL_INFO, RUN_RECORD)  # what keeps a run's numbers and how they were made
_CUDA_KEY = "CUDA_VISIBLE_DEVICES"  # the record's one key that is no field name


class RunFolderError(LabtuiError):
    """A file of a run folder that is missing or does not parse. ``file`` is the file as the
    message names it (``run_3/final_info.json``), ``field`` the entry at fault ('' for the whole
    file), ``missing`` whether the file is not there at all."""

    def __init__(
        self, message: str, hint: str, *, file: str, field: str = "", missing: bool = False
    ) -> None:
        super().__init__(message, hint)
        self.file, self.field, self.missing = file, field, missing


# -- folder names ---------------------------------------------------------------------------


def run_name(number: int) -> str:
    """The folder of run ``number``: ``run_3``."""
    return f"{RUN_PREFIX}{number}"


def run_number(folder: str | PurePath) -> int | None:
    """The n of a run folder ``run_<n>`` (its name or its path); None for a folder that is no
    run."""
    return _number(folder, RUN_PREFIX)


def imported_name(number: int) -> str:
    """The folder of imported result ``number``: ``imported_2``."""
    return f"{IMPORTED_PREFIX}{number}"


def imported_number(folder: str | PurePath) -> int | None:
    """The n of an imported result's folder ``imported_<n>``; None for any other folder."""
    return _number(folder, IMPORTED_PREFIX)


def _number(folder: str | PurePath, prefix: str) -> int | None:
    name = folder if isinstance(folder, str) else folder.name
    found = re.fullmatch(re.escape(prefix) + r"(\d+)", name, re.ASCII)
    return int(found.group(1)) if found else None


def has_results(folder: Path) -> bool:
    """Whether the folder holds recorded numbers (a final_info.json): a run that finished."""
    return (Path(folder) / FINAL_INFO).is_file()


def finished_runs(root: Path) -> list[Path]:
    """The project's runs that recorded numbers, in the order of their numbers."""
    return _numbered(root, run_number)


def result_folders(root: Path) -> list[Path]:
    """Every folder that holds recorded numbers: the runs in order, then the imported results
    in order."""
    return [*finished_runs(root), *_numbered(root, imported_number)]


def _numbered(root: Path, number_of: Callable[[Path], int | None]) -> list[Path]:
    found = [
        (number, path)
        for path in Path(root).iterdir()
        if (number := number_of(path)) is not None and has_results(path)
    ]
    return [path for _, path in sorted(found)]


# -- final_info.json ------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetResults:
    """One dataset's entry of final_info.json."""

    means: dict[str, Any]  # metric -> value (a number when the run wrote one)
    stderrs: dict[str, Any] = field(default_factory=dict)  # "<metric>_stderr" -> value
    per_seed: dict[str, Any] = field(default_factory=dict)  # "final_info_dict": each seed's


@dataclass(frozen=True)
class FinalInfo:
    """A run's numbers. ``datasets`` holds every well-formed entry; ``problems`` says which
    entries break the contract and were left out (a run whose file has any failed). ``document``
    is the file's JSON as read or made, written back unchanged: what a run wrote beyond the
    contract stays in its record."""

    datasets: dict[str, DatasetResults]
    problems: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of_means(cls, means: dict[str, dict[str, Any]]) -> FinalInfo:
        """Numbers labtui read from another source: ``{dataset: {metric: value}}``."""
        return cls.from_json({name: {"means": values} for name, values in means.items()})

    @classmethod
    def from_json(cls, data: Any, where: str = FINAL_INFO) -> FinalInfo:
        """The record of a final_info.json payload; RunFolderError when it is no JSON object
        (``where`` names the file in the messages)."""
        problems = check_final_info(data, where)
        if not isinstance(data, dict):
            fix = 'write {dataset: {"means": {metric: number}}}'
            raise RunFolderError("; ".join(problems), fix, file=where)
        datasets = {
            name: DatasetResults(
                entry["means"], _object(entry, "stderrs"), _object(entry, "final_info_dict")
            )
            for name, entry in data.items()
            if isinstance(entry, dict) and isinstance(entry.get("means"), dict)
        }
        return cls(datasets, tuple(problems), data)

    @property
    def problem(self) -> str:
        """'' when the whole file follows the contract, else what breaks it, in one line."""
        return "; ".join(self.problems)

    def means(self) -> dict[str, dict[str, Any]]:
        """{dataset: {metric: mean}}, in the file's order."""
        return {name: entry.means for name, entry in self.datasets.items()}

    def stderrs(self) -> dict[str, dict[str, Any]]:
        """{dataset: {"<metric>_stderr": value}} of the datasets that report any."""
        return {name: entry.stderrs for name, entry in self.datasets.items() if entry.stderrs}

    def per_seed(self) -> dict[str, dict[str, Any]]:
        """{dataset: each seed's values} of the datasets that report them."""
        return {name: entry.per_seed for name, entry in self.datasets.items() if entry.per_seed}

    def to_json(self) -> dict[str, Any]:
        return self.document


def _object(entry: dict[str, Any], key: str) -> dict[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def read_final_info(folder: Path) -> FinalInfo:
    """The numbers a run folder recorded; RunFolderError when there are none to read (its
    ``missing`` says whether the file is there at all)."""
    folder = Path(folder)
    where = f"{folder.name}/{FINAL_INFO}"
    data = _read_json(folder / FINAL_INFO, where, f"run {folder.name} again")
    return FinalInfo.from_json(data, where)


def recorded_means(folder: Path) -> dict[str, dict[str, Any]]:
    """{dataset: {metric: mean}} of a run folder's final_info.json, as far as it can be read
    ({} when it cannot)."""
    try:
        return read_final_info(folder).means()
    except RunFolderError:
        return {}


def write_final_info(folder: Path, info: FinalInfo) -> Path:
    path = Path(folder) / FINAL_INFO
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info.to_json(), indent=2) + "\n", encoding="utf-8")
    return path


# -- labtui_run.json ------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultsOrigin:
    """Where a run's numbers came from: ``[results] source`` and the files it read (relative to
    the project; a file outside the run folder is copied into ``run_i/results/`` first)."""

    source: str = ""
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LeftOutside:
    """What a failed run had written outside its run folder (new files, none tracked) and what
    became of them: moved aside under ``moved_to``, or removed (``why_removed``: the cap)."""

    moved_to: str = ""  # project-relative folder ('' when nothing was moved)
    moved: list[str] = field(default_factory=list)  # project-relative, as they were (the first)
    moved_count: int = 0
    removed: list[str] = field(default_factory=list)  # the first, largest first
    removed_count: int = 0
    freed_bytes: int = 0  # disk given back by the removal
    why_removed: str = ""


@dataclass(frozen=True)
class RunRecord:
    """How a run was made, failed runs included. Every field has a default: a record written
    by an older labtui lacks the newer ones."""

    run_id: str = ""
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    interpreter: str = ""  # as ``[experiment] python`` names it
    interpreter_path: str = ""
    environment: dict[str, Any] = field(default_factory=dict)  # the interpreter's packages
    commit: str = ""  # the commit of the code it ran
    started_at: str = ""  # ISO 8601, UTC
    wall_s: float = 0.0
    returncode: int = 0
    timed_out: bool = False
    stopped: bool = False  # ended early because the stage ended
    timeout_s: float = 0.0
    budget_s: float = 0.0  # a search's budget of the run (0: none)
    seed: int = 0  # a search's seed offset (0: the code's own seeds)
    over_budget: bool = False  # stopped at its budget and judged on what it had written
    cuda_visible_devices: str | None = None  # written as CUDA_VISIBLE_DEVICES
    # The thread variables it got ($OMP_NUM_THREADS, $MKL_NUM_THREADS: [experiment] threads)
    threads: dict[str, str] = field(default_factory=dict)
    sandbox: dict[str, Any] = field(default_factory=dict)  # core/machine/sandbox.py's record
    cluster: dict[str, Any] = field(default_factory=dict)  # the Slurm job ({}: ran here)
    # What it ran on (core/machine/hardware.py): CPU model, cores, memory, each GPU it was given
    hardware: dict[str, Any] = field(default_factory=dict)
    limit_hit: str = ""
    peak_memory_mb: float = 0.0
    peak_gpu_memory_mb: float = 0.0
    oom_killer_struck: bool = False
    problem: str = ""  # '' when the run succeeded
    smoke: bool = False
    results: ResultsOrigin = field(default_factory=ResultsOrigin)
    not_committed: list[str] = field(default_factory=list)  # its files over commit_file_mb
    not_committed_elsewhere: list[str] = field(default_factory=list)  # the project's
    left_outside: LeftOutside = field(default_factory=LeftOutside)  # a failed run's stray files
    # Bytes the run printed, by log file in its folder (stdout.log, stderr.log), and the logs
    # [limits] run_log_mb cut (their head and tail kept).
    output_bytes: dict[str, int] = field(default_factory=dict)
    logs_cut: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {(_CUDA_KEY if k == "cuda_visible_devices" else k): v for k, v in _fields(self)}


@dataclass(frozen=True)
class ImportRecord:
    """Where an imported result came from (``labtui import``)."""

    run_id: str = ""  # its folder, imported_<n>
    imported_from: str = ""  # the file, relative to the project when inside it
    row: str = ""  # the table row's name ('' for a whole file)
    source: str = ""  # the kind it was read as ([results] source)
    sha256: str = ""  # of the file ('' for a folder)
    commit: str = ""  # of the code that made it
    commit_from: str = ""  # "given", "the file's last commit", or "HEAD (assumed)"
    imported_at: str = ""  # ISO 8601, UTC

    def to_json(self) -> dict[str, Any]:
        return dict(_fields(self))


_READERS: dict[type[Any], TypeAdapter[Any]] = {
    kind: TypeAdapter(kind) for kind in (RunRecord, ImportRecord)
}


def _fields(record: RunRecord | ImportRecord) -> list[tuple[str, Any]]:
    return list(asdict(record).items())


def write_run_record(folder: Path, record: RunRecord | ImportRecord) -> Path:
    path = Path(folder) / RUN_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    # As each was always written: a run's record keeps its paths' and packages' own letters.
    ascii_only = isinstance(record, ImportRecord)
    text = json.dumps(record.to_json(), indent=2, ensure_ascii=ascii_only, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def read_run_record(folder: Path) -> RunRecord | ImportRecord:
    """How the numbers of a run folder were made; RunFolderError naming the file and the field
    when the record is missing or unreadable."""
    folder = Path(folder)
    where = f"{folder.name}/{RUN_RECORD}"
    hint = f"run {folder.name} again, or delete the folder"
    data = _read_json(folder / RUN_RECORD, where, hint)
    if not isinstance(data, dict):
        raise RunFolderError(f"{where}: must be a JSON object", hint, file=where)
    kind: type[RunRecord] | type[ImportRecord] = (
        ImportRecord if "imported_from" in data else RunRecord
    )
    named = {("cuda_visible_devices" if k == _CUDA_KEY else k): v for k, v in data.items()}
    try:
        return _READERS[kind].validate_python(named)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        place = ".".join(str(part) for part in error["loc"])
        place = _CUDA_KEY if place == "cuda_visible_devices" else place
        raise RunFolderError(
            f'{where}: "{place}" {error["msg"][0].lower()}{error["msg"][1:]} '
            f"(it holds {error['input']!r})",
            hint,
            file=where,
            field=place,
        ) from None


def recorded_commit(folder: Path) -> str:
    """The commit of the code a run folder's numbers came from; '' when its record is missing
    or unreadable (a result without its record still counts, untraced)."""
    try:
        return read_run_record(folder).commit
    except RunFolderError:
        return ""


def _read_json(path: Path, where: str, hint: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunFolderError(f"{where}: missing", hint, file=where, missing=True) from None
    except json.JSONDecodeError as exc:
        raise RunFolderError(
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            hint,
            file=where,
        ) from None
    except UnicodeDecodeError:
        raise RunFolderError(f"{where} is not UTF-8 text", hint, file=where) from None
    except OSError as exc:
        raise RunFolderError(f"{where}: unreadable ({exc.strerror})", hint, file=where) from None
