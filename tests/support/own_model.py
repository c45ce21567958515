"""TEST-ONLY: labtui's own local model set up on a test's machine without building or fetching
anything — a tiny GGUF file chosen as `labtui model use` chooses one, the server's virtual
environment stood in by this interpreter (marked built), and the stand-in server
(tests/support/standin_llama) first on PYTHONPATH. Every process it leads to is killed by PID at
the test's end (``kill_ours``)."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from labtui.core.local_model.catalog import SERVER_PACKAGE, CacheDirs
from labtui.core.local_model.runtime import READY_MARK
from labtui.core.local_model.server_state import process_start
from labtui.core.local_model.sources import use_file
from support.fake_hub import gguf_bytes
from support.waiting import wait_until

STANDIN = Path(__file__).resolve().parent / "standin_llama"
TINY_NAME = "Tiny Test Model"


@dataclass(frozen=True)
class OwnModel:
    """The own model as a test set it up: its file and the cache that holds the rest."""

    weights: Path
    dirs: CacheDirs


def stand_in_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m llama_cpp.server`` finds the stand-in, here and in every child process."""
    paths = [str(STANDIN), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))


def set_up_own_model(folder: Path, monkeypatch: pytest.MonkeyPatch) -> OwnModel:
    """The own model on (the test's home in) this machine, as after `labtui model pull`, and on:
    nothing configured means it is used."""
    monkeypatch.delenv("LABTUI_MODELS__LOCAL", raising=False)
    stand_in_server(monkeypatch)
    dirs = CacheDirs.here()
    venv = dirs.server_venv
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / READY_MARK).write_text(SERVER_PACKAGE, encoding="utf-8")
    weights = folder / "tiny.gguf"
    weights.write_bytes(gguf_bytes(TINY_NAME))
    use_file(weights, dirs)
    return OwnModel(weights, dirs)


def our_processes(root: Path) -> list[int]:
    """Live processes whose command line names ``root``: supervisors, servers, racers."""
    needle = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes() and process_start(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_ours(root: Path) -> None:
    """Kill every process whose command line names ``root``, and wait until they are gone."""
    for pid in our_processes(root):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_until(lambda: not our_processes(root), "every process the test started to end")
