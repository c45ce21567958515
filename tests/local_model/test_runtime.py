"""The model server's own virtual environment: built once, with progress every second, a log and
clear words when the build fails, never taken as ready half built. Nothing real is built: the
venv and pip steps are fakes (a python linked into place; a script that prints lines and sleeps),
and the TEST-ONLY stand-in (tests/support/standin_llama) is what ``import llama_cpp.server``
finds."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import pytest

from labtui.core.errors import LabtuiError
from labtui.core.local_model import runtime
from labtui.core.local_model.catalog import SERVER_PACKAGE, CacheDirs
from labtui.core.local_model.progress import Progress

STANDIN = Path(__file__).resolve().parents[1] / "support" / "standin_llama"

LINK_PYTHON = (
    "import os, sys; folder = sys.argv[1]; os.makedirs(folder + '/bin');"
    "os.symlink(sys.argv[2], folder + '/bin/python'); print('created', folder)"
)
COMPILE = (
    "import os, time\n"
    "print('CMAKE_ARGS=%s' % os.environ.get('CMAKE_ARGS'), flush=True)\n"
    "for n in range(1, 5):\n"
    "    print('[%d/4] compiling ggml' % n, flush=True)\n"
    "    time.sleep(0.4)\n"
)
QUICK = "import os; print('CMAKE_ARGS=%s' % os.environ.get('CMAKE_ARGS'))"
FAIL = "import sys; print('building llama-cpp-python'); print('error: no C compiler found'); sys.exit(1)"


def fake_venv(folder: Path) -> list[str]:
    return [sys.executable, "-c", LINK_PYTHON, str(folder), sys.executable]


def fake_install(python: Path) -> list[str]:
    return [str(python), "-c", COMPILE]


def quick_install(python: Path) -> list[str]:
    return [str(python), "-c", QUICK]


def failing_install(python: Path) -> list[str]:
    return [str(python), "-c", FAIL]


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(STANDIN))  # what `import llama_cpp.server` finds
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    return CacheDirs(tmp_path / "cache")


def test_built_once_with_progress_every_second(dirs, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    heard: list[Progress] = []
    assert runtime.runtime_python(dirs) is None
    python = runtime.ensure_runtime(dirs, heard.append, make_venv=fake_venv, install=fake_install)
    assert python == dirs.server_venv / "bin" / "python"
    assert runtime.runtime_python(dirs) == python
    building = [p for p in heard if p.step == runtime.BUILDING]
    assert len(building) >= 2  # at its start, each second, at its end
    assert all(p.total is None and p.unit == "s" for p in building)
    assert [p.done for p in building] == sorted(p.done for p in building)
    assert building[-1].detail == "compiling llama.cpp: 4 of 4 files"  # ninja's count, not its line
    log = runtime.build_log(dirs).read_text()
    assert "created" in log and "[1/4] compiling ggml" in log
    assert "CMAKE_ARGS=None" in log  # not on ARM
    assert (dirs.server_venv / runtime.READY_MARK).read_text().strip() == SERVER_PACKAGE

    def must_not_run(_: Path) -> list[str]:
        raise AssertionError("built again")

    assert runtime.ensure_runtime(dirs, make_venv=must_not_run, install=must_not_run) == python


def test_x86_builds_without_native_instructions(dirs, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install)
    assert "CMAKE_ARGS=-DGGML_NATIVE=OFF" in runtime.build_log(dirs).read_text()


def test_a_researchers_own_native_setting_is_kept(dirs, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_NATIVE=ON -DGGML_BLAS=ON")
    runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install)
    assert "CMAKE_ARGS=-DGGML_NATIVE=ON -DGGML_BLAS=ON\n" in runtime.build_log(dirs).read_text()


def test_a_failed_build_names_its_log_and_last_lines_and_is_not_ready(dirs):
    with pytest.raises(LabtuiError) as raised:
        runtime.ensure_runtime(dirs, make_venv=fake_venv, install=failing_install)
    assert "no C compiler found" in str(raised.value)
    assert "exit code 1" in str(raised.value)
    assert str(runtime.build_log(dirs)) in raised.value.hint
    assert "no C compiler found" in runtime.build_log(dirs).read_text()
    assert (dirs.server_venv / "bin" / "python").exists()  # half built …
    assert runtime.runtime_python(dirs) is None  # … and not taken as ready
    python = runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install)
    assert runtime.runtime_python(dirs) == python


def test_a_venv_that_cannot_be_made_says_so(dirs):
    def no_venv(folder: Path) -> list[str]:
        return [
            sys.executable,
            "-c",
            "import sys; print('ensurepip is not available'); sys.exit(1)",
        ]

    with pytest.raises(LabtuiError, match="ensurepip is not available") as raised:
        runtime.ensure_runtime(dirs, make_venv=no_venv, install=quick_install)
    assert "python3-venv" in raised.value.hint


def test_a_marked_venv_whose_server_does_not_import_is_not_ready(dirs, monkeypatch):
    runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install)
    monkeypatch.setenv("PYTHONPATH", "")
    assert runtime.runtime_python(dirs) is None


def test_a_venv_marked_for_another_server_version_is_built_again(dirs):
    python = runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install)
    (dirs.server_venv / runtime.READY_MARK).write_text("llama-cpp-python[server]==0.2.0\n")
    assert runtime.runtime_python(dirs) is None
    assert runtime.ensure_runtime(dirs, make_venv=fake_venv, install=quick_install) == python
    assert os.access(python, os.X_OK)


def test_the_real_commands_are_the_pinned_server_in_a_venv():
    folder = Path("/nowhere/venv")
    assert runtime.venv_command(folder) == [sys.executable, "-m", "venv", str(folder)]
    install = runtime.install_command(folder / "bin" / "python")
    assert install[:4] == [str(folder / "bin" / "python"), "-m", "pip", "install"]
    assert install[-1] == SERVER_PACKAGE
