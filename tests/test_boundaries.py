"""The house rules that keep labtui fast and layered, checked in fresh interpreters."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import labtui.core


def _core_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(labtui.core.__path__, "labtui.core."))


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    import json

    return set(json.loads(out.stdout.splitlines()[-1]))


def test_every_core_module_imports_without_textual():
    modules = _core_modules()
    assert len(modules) >= 20, modules
    loaded = _loaded_after("".join(f"import {m}\n" for m in modules))
    assert "textual" not in loaded


def test_cli_help_imports_neither_aider_nor_litellm():
    loaded = _loaded_after(
        "import contextlib, io\n"
        "from labtui.tui import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['--help'])\n"
    )
    assert not {"aider", "litellm", "textual", "git"} & loaded
    # every command module is loaded to build the parser: each imports the engine and rich only
    # in the function that runs it (tui/commands/__init__.py)
    assert "rich" not in loaded
    assert not [m for m in loaded if m.startswith("labtui.core")]


def test_no_bare_core_or_tui_package_is_installed():
    code = "import importlib.util as u; print(u.find_spec('core'), u.find_spec('tui'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True
    )
    assert out.stdout.strip() == "None None"


def test_every_package_folder_is_installed():
    """An installed (not editable) labtui has only the packages pyproject.toml lists: a new
    folder of core/ or tui/ left out of that list would be missing from every wheel."""
    repo = Path(__file__).resolve().parents[1]
    setup = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed, folders = set(setup["setuptools"]["packages"]), setup["setuptools"]["package-dir"]
    on_disk = {
        "labtui." + ".".join(init.parent.relative_to(repo).parts)
        for top in ("core", "tui")
        for init in (repo / top).rglob("__init__.py")
    }
    assert sorted(on_disk - listed) == [], "add these to [tool.setuptools] packages"
    assert sorted(p for p in on_disk if p not in folders) == [], "add these to package-dir"
