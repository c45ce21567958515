"""Where a project's background engine lives, and who may talk to it.

An engine holds ``.labtui/engine.lock`` (an flock) for as long as it lives: the OS drops the lock
when the process dies however it dies, so "is an engine running?" is answered by the lock, never
by a pid that may have been reused. Beside it the engine writes ``engine.json`` (pid, socket,
started, auto) and registers itself in a per-user folder so that ``labtui status`` finds every
running project. Whatever a dead engine left (its socket, engine.json, its registry entry) is
cleaned by the next command that looks.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import socket
import struct
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError

STATE_DIR = ".labtui"
INFO_NAME = "engine.json"
SOCKET_NAME = "engine.sock"
LOCK_NAME = "engine.lock"
LAST_NAME = "engine-last.json"  # how the last engine ended, for `labtui status`
LOG_NAME = "engine.log"
# sun_path holds 108 bytes on Linux, the closing NUL included.
SUN_PATH_MAX = 107


@dataclass(frozen=True)
class EngineInfo:
    """What ``engine.json`` says of a running engine."""

    pid: int
    socket: str
    started: float
    auto: bool
    root: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_data(cls, data: Any) -> EngineInfo:
        try:
            return cls(
                pid=int(data["pid"]),
                socket=str(data["socket"]),
                started=float(data["started"]),
                auto=bool(data["auto"]),
                root=str(data["root"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"missing or bad field {exc}") from None


def state_dir(root: Path) -> Path:
    return Path(root) / STATE_DIR


def info_path(root: Path) -> Path:
    return state_dir(root) / INFO_NAME


def log_path(root: Path) -> Path:
    return state_dir(root) / LOG_NAME


def project_key(root: Path) -> str:
    """A short, stable name for a project (its resolved path hashed)."""
    return hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]


# -- the socket's place ----------------------------------------------------------------------


def socket_path(root: Path) -> Path:
    """``.labtui/engine.sock`` when that path fits in sun_path, else a short private path named
    by the project's hash (a deep project folder would not fit)."""
    local = state_dir(Path(root).resolve()) / SOCKET_NAME
    if len(os.fsencode(local)) <= SUN_PATH_MAX:
        return local
    return private_socket_dir() / f"{project_key(root)}.sock"


def private_socket_dir() -> Path:
    """``$XDG_RUNTIME_DIR/labtui`` (where it is ours and short enough), else ``/tmp/labtui-<uid>``;
    created with mode 0700 and refused when another user owns it or may enter it."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    candidates = [Path(runtime) / "labtui"] if runtime and os.path.isabs(runtime) else []
    candidates.append(Path("/tmp") / f"labtui-{os.getuid()}")
    for folder in candidates:
        if len(os.fsencode(folder)) + 22 <= SUN_PATH_MAX:  # "/" + 16 hex + ".sock"
            return _private_folder(folder)
    raise LabtuiError(
        "no short folder for the engine's socket", "set XDG_RUNTIME_DIR to a short private folder"
    )


def _private_folder(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = folder.stat()
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise LabtuiError(
            f"{folder} (for the engine's socket) is not private to you "
            f"(owner uid {status.st_uid}, mode {status.st_mode & 0o777:o})",
            f"remove it, or make it yours with mode 0700: chmod 700 {folder}",
        )
    return folder


def bind_private_socket(path: Path) -> socket.socket:
    """A listening unix socket at ``path`` that only its owner may connect to (mode 0600 from the
    start: the umask closes the window between bind and chmod)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        server.bind(os.fspath(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    server.listen(16)
    return server


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a unix socket (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def refusal(peer: int, own: int) -> str:
    """Why a peer with uid ``peer`` may not attach to an engine of uid ``own`` ('' when it may)."""
    if peer == own:
        return ""
    return (
        f"refused: this engine belongs to uid {own}, and uid {peer} asked to attach; "
        "only the researcher who started a run may watch or steer it"
    )


# -- engine.json, the lock, the registry -----------------------------------------------------


def write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def read_info(root: Path) -> EngineInfo | None:
    """engine.json, or None when there is none or it cannot be read (a torn write: stale)."""
    try:
        return EngineInfo.from_data(json.loads(info_path(root).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def hold_engine_lock(root: Path, wait_s: float = 2.0):
    """The engine's lock, held until the returned file is closed (or the process dies). A
    ``labtui status`` probing it holds it shared for an instant, so a busy lock is tried again
    for ``wait_s`` before another engine is said to run."""
    handle = (state_dir(root) / LOCK_NAME).open("a+")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                handle.close()
                info = read_info(root)
                holder = f" (pid {info.pid})" if info else ""
                raise LabtuiError(
                    f"an engine already runs for {root}{holder}",
                    f"attach to it: labtui attach {root}",
                ) from None
            time.sleep(0.02)


def engine_running(root: Path) -> bool:
    """Whether a live process holds the project's engine lock."""
    try:
        fd = os.open(state_dir(root) / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the shared lock we may have taken
    return False


def find_engine(root: Path) -> EngineInfo | None:
    """The running engine of a project; None when there is none (what a dead one left is
    cleaned). None too while an engine starts and has not yet written engine.json."""
    if engine_running(root):
        return read_info(root)
    clean_stale(root)
    return None


def clean_stale(root: Path) -> list[str]:
    """Remove what a dead engine left: its socket, engine.json, its registry entry. The names of
    what was removed. Never touches a live engine's files."""
    if engine_running(root):
        return []
    return remove_engine_files(root)


def remove_engine_files(root: Path) -> list[str]:
    """Remove an engine's socket, engine.json and registry entry; only for the lock's holder (an
    engine at its start or end) or once no engine holds it. The names of what was removed."""
    removed: list[str] = []
    info = read_info(root)
    sockets = {socket_path(root)} | ({Path(info.socket)} if info else set())
    for path in [*sockets, info_path(root), registry_dir() / f"{project_key(root)}.json"]:
        try:
            path.unlink()
            removed.append(str(path))
        except FileNotFoundError:
            continue
    return removed


def registry_dir() -> Path:
    """Per-user folder where running engines register (``$XDG_STATE_HOME/labtui/engines``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "labtui" / "engines"


def register(info: EngineInfo) -> None:
    folder = registry_dir()
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / f"{project_key(Path(info.root))}.json", info.to_json())


def unregister(root: Path) -> None:
    (registry_dir() / f"{project_key(root)}.json").unlink(missing_ok=True)


def registered_roots() -> list[Path]:
    """Projects whose engines registered; entries of engines that are gone are removed."""
    roots: list[Path] = []
    folder = registry_dir()
    for entry in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            root = Path(json.loads(entry.read_text(encoding="utf-8"))["root"])
        except (OSError, ValueError, KeyError, TypeError):
            entry.unlink(missing_ok=True)
            continue
        if engine_running(root):
            roots.append(root)
        else:
            clean_stale(root)
            entry.unlink(missing_ok=True)
    return roots


def write_last_outcome(root: Path, outcome: str, pid: int) -> None:
    data = {"outcome": outcome, "ended": time.time(), "pid": pid}
    write_atomically(state_dir(root) / LAST_NAME, json.dumps(data))


def read_last_outcome(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((state_dir(root) / LAST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- stopping at once ------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children in sessions of their own included: experiments
    run in their own process groups, so the engine's group alone would miss them)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below = children.get(frontier.pop(), [])
        found += below
        frontier += below
    return found


def kill_engine_tree(pid: int) -> int:
    """SIGKILL an engine and everything below it; how many processes below it there were. The
    engine is frozen first so that it starts nothing new while its tree is read."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return 0
    below = descendants(pid)
    for child in below:
        _kill_run(child)
    os.kill(pid, signal.SIGKILL)
    return len(below)


def _kill_run(pid: int) -> None:
    """SIGKILL a process, and its whole group where it leads one (a run's workers share it).
    A group it merely belongs to may be a shell's, so it is left alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
