"""ARCHITECTURE.md cannot drift: its package table is checked against the packages and top-level
modules of core/ and against pyproject.toml's import-linter contracts, its tui/ rooms against
tui/, and every core/ or tui/ path it names against the tree.

Each check returns the problems it found as sentences that say what to add or remove, so a
failure is fixed by doing what it says; the same checks are run on altered copies of the text to
show they fail (never on the repository's files).
"""

from __future__ import annotations

import pkgutil
import re
import tomllib
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

import labtui.core
import labtui.tui

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "ARCHITECTURE.md"
PYPROJECT = REPO / "pyproject.toml"

PACKAGE_TABLE = "| layer | package | holds |"
ROOM_TABLE = "| room | holds |"
CONTRACTS_HEADING = "## The contracts"
LAYERED_CONTAINER = "labtui.core"
# A path in backticks that names a file or folder of the tree; a glob (`stages/*.py`) is cut at `*`.
NAMED_PATH = re.compile(r"`((?:core|tui)/[\w/.]*)")


@dataclass(frozen=True)
class Row:
    """One row of the package table: where it is in ARCHITECTURE.md and what it says."""

    line: int
    layer: str
    cell: str

    @property
    def name(self) -> str:
        return self.cell.strip("`").removesuffix("/").removesuffix(".py")

    @property
    def is_package(self) -> bool:
        return self.cell.strip("`").endswith("/")

    @property
    def well_formed(self) -> bool:
        return bool(re.fullmatch(r"`\w+(/|\.py)`", self.cell))


@dataclass(frozen=True)
class Layers:
    """pyproject.toml's layers contract over core/: its name and its lines, top layer first."""

    name: str
    lines: list[list[str]]

    def number_of(self, part: str) -> int | None:
        """The 1-based line of ``part``, counted from the top, or None if no line names it."""
        for number, members in enumerate(self.lines, start=1):
            if part in members:
                return number
        return None

    def line_text(self, number: int) -> str:
        return " | ".join(self.lines[number - 1])


# -- reading --------------------------------------------------------------------------------------


def table_rows(text: str, header: str) -> list[tuple[int, list[str]]]:
    """The body rows of the Markdown table under ``header``: (line number, cells)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == header)
    except StopIteration:
        return []
    width = header.count("|") - 1
    rows = []
    for index in range(start + 2, len(lines)):  # past the header and its |---| line
        line = lines[index].strip()
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|", width - 1)]
        rows.append((index + 1, cells))
    return rows


def package_rows(text: str) -> list[Row]:
    return [Row(line, cells[0], cells[1]) for line, cells in table_rows(text, PACKAGE_TABLE)]


def core_parts() -> dict[str, bool]:
    """Each package and top-level module of labtui.core, and whether it is a package."""
    return {info.name: info.ispkg for info in pkgutil.iter_modules(labtui.core.__path__)}


def read_pyproject() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


def layers_contract(pyproject: dict) -> Layers:
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (contract,) = [
        c for c in contracts if c["type"] == "layers" and c.get("containers") == [LAYERED_CONTAINER]
    ]
    lines = [[m.strip() for m in re.split(r"[|:]", line)] for line in contract["layers"]]
    return Layers(contract["name"], lines)


def contract_names(pyproject: dict) -> list[str]:
    return [c["name"] for c in pyproject["tool"]["importlinter"]["contracts"]]


def described_contracts(text: str) -> list[str]:
    """The bold names opening the bullets of the contracts section."""
    section = text.partition(CONTRACTS_HEADING)[2].split("\n## ", 1)[0]
    return re.findall(r"^- \*\*(.+?)\*\*", section, flags=re.MULTILINE)


# -- checking -------------------------------------------------------------------------------------


def _cell(name: str, is_package: bool) -> str:
    return f"`{name}/`" if is_package else f"`{name}.py`"


def package_table_problems(text: str, parts: dict[str, bool], layers: Layers) -> list[str]:
    """What the package table lacks or has too many of, against core/ and the layers contract."""
    rows = package_rows(text)
    if not rows:
        return [f"ARCHITECTURE.md has no package table: a table headed '{PACKAGE_TABLE}'"]
    problems = []
    for row in rows:
        if not row.well_formed:
            problems.append(
                f"ARCHITECTURE.md:{row.line}: write the package cell {row.cell!r} as `name/` "
                "(a package of core/) or `name.py` (a module at core/'s top)"
            )
        elif row.name not in parts:
            problems.append(
                f"ARCHITECTURE.md:{row.line}: remove the row for {row.cell}: core/ has no such "
                "package or module"
            )
        elif row.is_package != parts[row.name]:
            problems.append(
                f"ARCHITECTURE.md:{row.line}: write {_cell(row.name, parts[row.name])} for "
                f"{row.cell}: core/{row.name} is a {'package' if parts[row.name] else 'module'}"
            )
    named = {row.name for row in rows}
    for name, is_package in sorted(parts.items()):
        if name not in named:
            number = layers.number_of(name)
            layer = str(number) if number is not None else "N"
            problems.append(
                f"ARCHITECTURE.md's package table has no row for core/{name}: add "
                f"'| {layer} | {_cell(name, is_package)} | <what it holds> |' among the "
                f"layer-{layer} rows"
            )
    return problems


def layer_problems(text: str, parts: dict[str, bool], layers: Layers) -> list[str]:
    """Where the table's layers disagree with the contract's lines, or the contract lacks a part."""
    problems = []
    for name in sorted(parts):
        if layers.number_of(name) is None:
            problems.append(
                f"core/{name} is in no line of pyproject.toml's layers contract {layers.name!r}: "
                f"add {name!r} to the line of the layer it belongs to"
            )
    placed = [(row, layers.number_of(row.name)) for row in package_rows(text)]
    for row, number in placed:
        if number is not None and row.layer != str(number):
            problems.append(
                f"ARCHITECTURE.md:{row.line}: write {number} as the layer of {row.cell}, not "
                f"{row.layer!r}: it is line {number} of {layers.name!r}, "
                f'"{layers.line_text(number)}", counted from the top'
            )
    ordered = [(row, number) for row, number in placed if number is not None]
    for (above, high), (below, low) in pairwise(ordered):
        if low < high:
            problems.append(
                f"ARCHITECTURE.md:{above.line}: the row for {above.cell} (layer {high}) comes "
                f"before the row for {below.cell} (layer {low}): keep the rows in the "
                "contract's order, layer 1 first"
            )
    return problems


def contract_problems(text: str, names: list[str]) -> list[str]:
    described = described_contracts(text)
    problems = [
        f"ARCHITECTURE.md's '{CONTRACTS_HEADING[3:]}' section does not name the contract "
        f"{name!r} of pyproject.toml: add '- **{name}**: <what it keeps apart>'"
        for name in names
        if name not in described
    ]
    problems += [
        f"ARCHITECTURE.md names the contract {name!r}, which pyproject.toml does not have: "
        "remove its bullet, or write the name as pyproject.toml spells it"
        for name in described
        if name not in names
    ]
    return problems


def room_problems(text: str, tui_packages: list[str], repo: Path) -> list[str]:
    """The tui/ rooms table: every row names a path that exists, every tui/ package has a row."""
    rows = table_rows(text, ROOM_TABLE)
    if not rows:
        return [f"ARCHITECTURE.md has no table of tui/'s rooms: a table headed '{ROOM_TABLE}'"]
    named = [(line, cells[0].strip("`")) for line, cells in rows]
    problems = [
        f"ARCHITECTURE.md:{line}: remove the room {path!r}: it does not exist"
        for line, path in named
        if not (repo / path).exists()
    ]
    problems += [
        f"ARCHITECTURE.md's rooms table has no row for tui/{package}/: add "
        f"'| `tui/{package}/` | <what it holds> |'"
        for package in tui_packages
        if f"tui/{package}/" not in {path for _, path in named}
    ]
    return problems


def path_problems(text: str, repo: Path) -> list[str]:
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        for path in NAMED_PATH.findall(line):
            if not (repo / path).exists():
                problems.append(
                    f"ARCHITECTURE.md:{number}: `{path}` does not exist: write where it is now, "
                    "or remove it"
                )
    return problems


def tui_packages() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(labtui.tui.__path__) if info.ispkg)


# -- the house as it is ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text() -> str:
    return ARCHITECTURE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def layers() -> Layers:
    return layers_contract(read_pyproject())


def test_the_package_table_has_a_row_for_each_package_and_module_of_core(text, layers):
    problems = package_table_problems(text, core_parts(), layers)
    assert not problems, "\n".join(problems)


def test_the_package_table_keeps_the_layers_of_the_import_contract(text, layers):
    problems = layer_problems(text, core_parts(), layers)
    assert not problems, "\n".join(problems)


def test_every_import_contract_is_described(text):
    problems = contract_problems(text, contract_names(read_pyproject()))
    assert not problems, "\n".join(problems)


def test_the_rooms_of_tui_are_described(text):
    problems = room_problems(text, tui_packages(), REPO)
    assert not problems, "\n".join(problems)


def test_every_path_it_names_exists(text):
    problems = path_problems(text, REPO)
    assert not problems, "\n".join(problems)


# -- the checks fail when the text drifts ---------------------------------------------------------


def _without_line(text: str, starts: str) -> str:
    lines = text.splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.startswith(starts)]
    return "\n".join(lines[:index] + lines[index + 1 :])


def _row_of(text: str, cell: str) -> str:
    (line,) = [line for line in text.splitlines() if f"| {cell} |" in line]
    return line


@pytest.mark.parametrize(
    ("alter", "says"),
    [
        pytest.param(
            lambda text: _without_line(text, _row_of(text, "`engine/`")),
            "package table has no row for core/engine: add '| 1 | `engine/` | <what it holds> |'",
            id="a-package-row-removed",
        ),
        pytest.param(
            lambda text: _without_line(text, _row_of(text, "`events.py`")),
            "package table has no row for core/events: add '| ",
            id="a-module-row-removed",
        ),
        pytest.param(
            lambda text: text.replace(
                _row_of(text, "`engine/`"),
                _row_of(text, "`engine/`") + "\n| 1 | `ghost/` | a package that left |",
            ),
            "remove the row for `ghost/`: core/ has no such package or module",
            id="a-row-for-nothing",
        ),
        pytest.param(
            lambda text: text.replace("| `doctor.py` |", "| `doctor/` |"),
            "write `doctor.py` for `doctor/`: core/doctor is a module",
            id="a-module-written-as-a-package",
        ),
    ],
)
def test_the_package_table_check_fails_when_the_text_drifts(text, layers, alter, says):
    problems = package_table_problems(alter(text), core_parts(), layers)
    assert any(says in problem for problem in problems), problems


def test_the_layer_check_fails_for_a_wrong_layer_or_order(text, layers):
    row = _row_of(text, "`engine/`")
    wrong_layer = text.replace(row, row.replace("| 1 |", "| 2 |", 1))
    assert any(
        "write 1 as the layer of `engine/`, not '2'" in problem
        for problem in layer_problems(wrong_layer, core_parts(), layers)
    )
    last = _row_of(text, "`stage_list.py`")
    moved = _without_line(text, last).replace(row, f"{row}\n{last}")
    assert any(
        "the row for `stage_list.py` (layer 16) comes before the row for `pipeline/`" in problem
        for problem in layer_problems(moved, core_parts(), layers)
    )
    unlayered = Layers(layers.name, [[m for m in line if m != "retry"] for line in layers.lines])
    assert any(
        "core/retry is in no line of pyproject.toml's layers contract" in problem
        for problem in layer_problems(text, core_parts(), unlayered)
    )


def test_the_contract_check_fails_for_a_contract_left_out_or_made_up(text):
    names = contract_names(read_pyproject())
    assert any(
        "does not name the contract 'a new contract'" in problem
        for problem in contract_problems(text, [*names, "a new contract"])
    )
    assert any(
        f"names the contract {names[0]!r}, which pyproject.toml does not have" in problem
        for problem in contract_problems(text, names[1:])
    )


def test_the_room_and_path_checks_fail_for_what_is_gone(text):
    assert any(
        "rooms table has no row for tui/widgets/" in problem
        for problem in room_problems(text, [*tui_packages(), "widgets"], REPO)
    )
    gone = text + "\nThe old home: `core/pipeline.py`.\n"
    assert any(
        "`core/pipeline.py` does not exist" in problem for problem in path_problems(gone, REPO)
    )
