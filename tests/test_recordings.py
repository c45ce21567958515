"""Recorded answers you can trace: every recording in tests/recorded/real_model/ has a row in its
README that says where it came from, and each fixture cut from raw exchanges kept beside it is made
again, by the command that row gives, exactly as committed."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
RECORDED = TESTS / "recorded" / "real_model"
README = RECORDED / "README.md"
SOURCES_TABLE = "| fixture | raw exchanges | made by (`make_fixtures.py` arguments) |"
RAW = "raw"


def source_rows() -> list[tuple[list[str], str]]:
    """Each row of the README's table of sources: the recordings it names, and its command (the
    arguments of make_fixtures.py) or "" where the raw exchanges are gone."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(SOURCES_TABLE)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names_cell, _raw, made_by = (cell.strip() for cell in line.strip("|").split("|", 2))
        names = re.findall(r"`([^`]+)`", names_cell)
        command = re.match(r"`(raw/[^`]+)`", made_by)
        rows.append((names, command.group(1) if command else ""))
    return rows


def commands() -> list[tuple[str, str]]:
    """(fixture, make_fixtures.py arguments) for each fixture with its raw exchanges kept."""
    return [(names[0], command) for names, command in source_rows() if command]


def make_fixtures() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_fixtures", TESTS / "bench" / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def json_lines(path: Path) -> list[object]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_every_recording_has_a_row_that_says_where_it_came_from():
    named = {name for names, _ in source_rows() for name in names}
    recordings = {
        path.name + ("/" if path.is_dir() else "")
        for path in RECORDED.iterdir()
        if path.name not in (RAW, "README.md")
    }
    missing = sorted(recordings - named)
    assert not missing, f"add a row to {README.name}'s table of sources for: {', '.join(missing)}"
    gone = sorted(named - recordings)
    assert not gone, f"remove the rows of {README.name}'s table of sources for: {', '.join(gone)}"


def test_every_raw_exchanges_file_makes_a_fixture():
    used = " ".join(command for _, command in commands())
    for exchanges in sorted((RECORDED / RAW).glob("*/*/exchanges.jsonl")):
        relative = exchanges.relative_to(RECORDED).as_posix()
        assert relative in used, f"{relative} makes no fixture: remove it, or add its fixture's row"


@pytest.mark.parametrize(("fixture", "arguments"), commands())
def test_a_fixture_is_made_again_from_its_raw_exchanges(fixture, arguments, tmp_path, monkeypatch):
    monkeypatch.chdir(RECORDED)  # the README's commands name raw files from there
    (made,) = make_fixtures().main([*shlex.split(arguments), "--out", str(tmp_path)])
    assert made.name == fixture, f"the command makes {made.name}, the row names {fixture}"
    assert json_lines(made) == json_lines(RECORDED / fixture), (
        f"{fixture} is not what `make_fixtures.py {arguments}` makes of its raw exchanges"
    )
