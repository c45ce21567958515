"""TEST-ONLY: a real single-node Slurm with accounting (munged, MariaDB, slurmdbd, slurmctld,
slurmd), started under a folder of its own and stopped after the tests.

Nothing on the machine is changed for good: every configuration file, key, socket, database, spool
and log lives under the cluster's folder, the daemons listen on free ports picked at start, and
the Slurm tools find the cluster through ``SLURM_CONF`` (``cluster.env``). All daemons run as root
in the foreground, each in a session of its own, so Ctrl-C in the terminal does not reach them.

    cluster = SlurmCluster(folder).start()   # SlurmClusterError names the daemon that failed
    cluster.run("sinfo", "-h")               # a Slurm command against this cluster
    cluster.stop()                           # cancels every job, ends every daemon; keeps logs

Under pytest-xdist each worker is a process of its own, so the session fixture shares one cluster
between them: ``acquire_shared()`` starts it (or joins the one a live worker of the same test run
started) under a lock in ``STATE_DIR``, and ``release_shared()`` stops it when its last user
leaves. What is recorded there (each session's users, each cluster's daemons) lets the next
session end what a crashed or killed one left running.

Facts this builds on (Debian 12, Slurm 22.05, munge 0.5.15, MariaDB 10.11):
the team's Slurm notes (reference/slurm.md of the shared folder beside the repository).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "STATE_DIR",
    "SlurmCluster",
    "SlurmClusterError",
    "acquire_shared",
    "cluster_unavailable_reason",
    "release_shared",
    "session_id",
    "shared_cluster",
]

# Fixed, so that a session can find and end what a crashed one left behind. Every part of its path
# must be traversable by all: munged refuses a socket under a folder that is not (pytest's
# temporary folders are mode 700), so the shared cluster lives here, not under tmp_path.
STATE_DIR = Path("/tmp/labtui-slurm-test")
DEADLINE_S = 60.0  # per daemon; only a hang reaches it: each wait ends when its condition holds
POLL_S = 0.05
PARTS = ("etc", "munge", "log", "run", "mysql", "state", "spool", "tmp")  # of a cluster's folder

# executable -> the Debian package that provides it
EXECUTABLES = {
    "munged": "munge",
    "munge": "munge",
    "unmunge": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-server",  # the client comes with it
    "slurmdbd": "slurmdbd",
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sinfo": "slurm-client",
    "sbatch": "slurm-client",
    "squeue": "slurm-client",
    "sacct": "slurm-client",
    "scancel": "slurm-client",
    "scontrol": "slurm-client",
    "sacctmgr": "slurm-client",
    "srun": "slurm-client",
}
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


class SlurmClusterError(RuntimeError):
    """A daemon did not come up (the message names it and ends with its log's tail)."""


def _which(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN])
    return shutil.which(name, path=path)


def cluster_unavailable_reason() -> str:
    """Why a test cluster cannot be started here ('' when it can)."""
    if not sys.platform.startswith("linux"):
        return f"a test Slurm cluster needs Linux, not {sys.platform}"
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (its daemons run as root under a test folder)"
    missing = sorted({package for exe, package in EXECUTABLES.items() if _which(exe) is None})
    if missing:
        return (
            f"Slurm packages missing ({', '.join(missing)}): run bash .ci/setup as root "
            "to install them"
        )
    if not os.access(STATE_DIR.parent, os.W_OK):
        return f"{STATE_DIR.parent} is not writable"
    return ""


# --- processes ------------------------------------------------------------------------------


def _start_ticks(pid: int) -> int | None:
    """The start time of a live process (clock ticks since boot): with the pid it names one
    process, even after pids wrap. None when the process is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass
class Daemon:
    name: str
    pid: int
    ticks: int
    log: Path
    process: subprocess.Popen | None = None  # only in the process that started it

    def alive(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            return False
        return _start_ticks(self.pid) == self.ticks

    def signal(self, signum: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def record(self) -> list:
        return [self.name, self.pid, self.ticks, str(self.log)]

    @classmethod
    def from_record(cls, record: list) -> Daemon:
        name, pid, ticks, log = record
        return cls(name, int(pid), int(ticks), Path(log))


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now, all different (held open together while picked)."""
    held = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _memory_mb() -> int:
    """MemTotal of /proc/meminfo in MiB: what slurmd detects, the same however busy the machine
    is (sized from what is free, a node started on a busy machine refused the tests' jobs)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise SlurmClusterError("no MemTotal in /proc/meminfo")


# --- the cluster ----------------------------------------------------------------------------


class SlurmCluster:
    """A single-node Slurm with accounting under ``folder``: partition ``debug`` (the default,
    no time limit) of one node ``localhost`` with ``CPUS`` CPUs, whatever the machine has."""

    partition = "debug"
    node = "localhost"
    name = "labtui-test"
    CPUS = 8
    DB_USER = "slurm"
    DB_NAME = "slurm_acct_db"

    def __init__(self, folder: Path, *, deadline_s: float = DEADLINE_S) -> None:
        self.folder = Path(folder)
        self.deadline_s = deadline_s
        self.conf = self.folder / "etc" / "slurm.conf"
        self.munge_socket = self.folder / "munge" / "munge.socket"
        self.env: dict[str, str] = {"SLURM_CONF": str(self.conf)}
        self.daemons: dict[str, Daemon] = {}
        self.ports: dict[str, int] = {}
        self.version = ""
        self.real_memory_mb = 0
        self.def_mem_per_cpu_mb = 0
        self.db_password = ""
        self.startup_s = 0.0  # from start() to ready: node idle, accounting, a first job run

    # -- commands

    def run(
        self, *args: str, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm (or munge) command against this cluster; its output as text. With
        ``check``, a failure raises SlurmClusterError with the command's stderr."""
        result = subprocess.run(
            list(args),
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check and result.returncode != 0:
            raise SlurmClusterError(
                f"{' '.join(args)} exited with {result.returncode}: {result.stderr.strip()}"
            )
        return result

    def node_state(self) -> str:
        """The node's state as sinfo tells it ('' when sinfo does not answer)."""
        try:
            result = self.run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t", check=False)
        except subprocess.TimeoutExpired:
            return ""
        return result.stdout.strip() if result.returncode == 0 else ""

    def alive(self) -> bool:
        """Every daemon still runs."""
        return bool(self.daemons) and all(d.alive() for d in self.daemons.values())

    # -- start

    def start(self) -> SlurmCluster:
        """Write the configuration, start every daemon and wait until the node is idle,
        accounting answers and a first job has run. On failure every daemon started is stopped
        again. What an earlier cluster left in the folder is replaced; nothing else there is."""
        began = time.monotonic()
        closed = [
            p
            for p in (self.folder.resolve(), *self.folder.resolve().parents)
            if p.exists() and not p.stat().st_mode & 0o001
        ]
        if closed:
            raise SlurmClusterError(
                f"{closed[0]} is not traversable by all (mode {closed[0].stat().st_mode & 0o777:o}):"
                " munged refuses a socket below it; give the cluster a folder under STATE_DIR"
            )
        for part in (*PARTS, "cluster.json"):
            path = self._path(part)
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        try:
            self._write_files()
            self._start_munge()
            self._start_mariadb()
            self._start_slurmdbd()
            self._start_slurmctld()
            self._start_slurmd()
            self._wait_accounting()
            self._run_a_first_job()
        except BaseException:
            self._end_daemons()
            raise
        self.startup_s = time.monotonic() - began
        self._save()
        return self

    def _path(self, *parts: str) -> Path:
        return self.folder.joinpath(*parts)

    def _write_files(self) -> None:
        for part in PARTS:
            self._path(part).mkdir(parents=True, exist_ok=True)
        # munged checks the whole path up to its socket: traversable by all, writable by none
        for folder in (self.folder, self._path("munge")):
            folder.chmod(0o755)
        key = self._path("munge", "munge.key")
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)

        db_port, dbd_port, ctld_port, slurmd_port = _free_ports(4)
        self.ports = {
            "mariadb": db_port,
            "slurmdbd": dbd_port,
            "slurmctld": ctld_port,
            "slurmd": slurmd_port,
        }
        self.db_password = secrets.token_hex(12)
        self.real_memory_mb = max(256, _memory_mb() * 85 // 100)
        # jobs ask for ~0.5 GB: all CPUS one-CPU jobs fit at once on any machine
        self.def_mem_per_cpu_mb = max(64, min(1000, self.real_memory_mb // self.CPUS))
        auth = f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"
        slurm_conf = f"""\
# written by tests/support/slurm_cluster.py for the tests (the next test session removes it)
ClusterName={self.name}
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
{auth}CredType=cred/munge
StateSaveLocation={self._path("state")}
SlurmdSpoolDir={self._path("spool")}
SlurmctldPidFile={self._path("run", "slurmctld.pid")}
SlurmdPidFile={self._path("run", "slurmd.pid")}
SlurmctldLogFile={self._path("log", "slurmctld.log")}
SlurmdLogFile={self._path("log", "slurmd.log")}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU={self.def_mem_per_cpu_mb}
KillWait=5
MinJobAge=600
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={dbd_port}
# the connection to slurmdbd takes its munge socket from here, not from AuthInfo
AccountingStoragePass={self.munge_socket}
SlurmdParameters=config_overrides
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.CPUS} RealMemory={self.real_memory_mb} State=UNKNOWN
PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
"""
        self.conf.write_text(slurm_conf)
        dbd_conf = self._path("etc", "slurmdbd.conf")  # found beside slurm.conf
        dbd_conf.write_text(f"""\
# written by tests/support/slurm_cluster.py for the tests (the next test session removes it)
{auth}DbdHost=localhost
DbdPort={dbd_port}
SlurmUser=root
LogFile={self._path("log", "slurmdbd.log")}
PidFile={self._path("run", "slurmdbd.pid")}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser={self.DB_USER}
StoragePass={self.db_password}
StorageLoc={self.DB_NAME}
""")
        dbd_conf.chmod(0o600)  # slurmdbd refuses a readable one: it holds the password

    def _spawn(self, name: str, *command: str, log: Path | None = None) -> Daemon:
        """Start a daemon in the foreground, in a session of its own; its stdout and stderr go
        to log/<name>.out (``log``, its own log file, is what failures quote)."""
        out = self._path("log", f"{name}.out")
        with out.open("ab") as handle:
            process = subprocess.Popen(
                list(command),
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.folder,
            )
        ticks = None
        deadline = time.monotonic() + 5
        while ticks is None and process.poll() is None and time.monotonic() < deadline:
            ticks = _start_ticks(process.pid)
        daemon = Daemon(name, process.pid, ticks or 0, log or out, process)
        self.daemons[name] = daemon
        self._save()  # a crash from here on leaves a record the next session can act on
        return daemon

    def _wait(self, daemon: Daemon, condition: Callable[[], object], what: str) -> None:
        """Poll ``condition`` until it holds; SlurmClusterError naming the daemon, with its log's
        tail, when the daemon exits or the deadline passes."""
        deadline = time.monotonic() + self.deadline_s
        while not condition():
            if not daemon.alive():
                self._fail(daemon, f"{daemon.name} exited before {what}")
            if time.monotonic() > deadline:
                self._fail(
                    daemon, f"{daemon.name}: {what} did not happen within {self.deadline_s:g} s"
                )
            time.sleep(POLL_S)

    def _fail(self, daemon: Daemon, message: str) -> None:
        out = self._path("log", f"{daemon.name}.out")
        tails = [f"--- {daemon.log} (last lines)\n{_tail(daemon.log)}"]
        if out != daemon.log and out.exists() and out.stat().st_size:
            tails.append(f"--- {out} (last lines)\n{_tail(out)}")
        raise SlurmClusterError(f"{message}\n" + "\n".join(tails))

    def _start_munge(self) -> None:
        munged = self._spawn(
            "munged",
            _exe("munged"),
            "--foreground",
            f"--socket={self.munge_socket}",
            f"--key-file={self._path('munge', 'munge.key')}",
            f"--pid-file={self._path('run', 'munged.pid')}",
            f"--seed-file={self._path('munge', 'munged.seed')}",
            f"--log-file={self._path('log', 'munged.log')}",
            log=self._path("log", "munged.log"),
        )
        self._wait(munged, self._munge_works, "munge -n | unmunge succeeding")

    def _munge_works(self) -> bool:
        if not self.munge_socket.exists():
            return False
        socket_arg = f"--socket={self.munge_socket}"
        credential = subprocess.run(
            [_exe("munge"), socket_arg, "-n"], capture_output=True, timeout=10
        )
        if credential.returncode != 0:
            return False
        decoded = subprocess.run(
            [_exe("unmunge"), socket_arg],
            input=credential.stdout,
            capture_output=True,
            timeout=10,
        )
        return decoded.returncode == 0

    def _start_mariadb(self) -> None:
        datadir = self._path("mysql", "data")
        sock = self._path("mysql", "mysqld.sock")
        install = subprocess.run(
            [
                _exe("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=self.deadline_s,
            stdin=subprocess.DEVNULL,
        )
        if install.returncode != 0:
            raise SlurmClusterError(
                f"mariadb-install-db exited with {install.returncode}:\n"
                + "\n".join((install.stdout + install.stderr).splitlines()[-25:])
            )
        mariadbd = self._spawn(
            "mariadbd",
            _exe("mariadbd"),
            "--no-defaults",
            f"--datadir={datadir}",
            f"--socket={sock}",
            f"--port={self.ports['mariadb']}",
            "--bind-address=127.0.0.1",
            "--user=root",
            f"--pid-file={self._path('run', 'mariadbd.pid')}",
            f"--log-error={self._path('log', 'mariadbd.log')}",
            f"--tmpdir={self._path('tmp')}",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=64M",
            "--innodb-lock-wait-timeout=900",  # slurmdbd warns about a smaller one
            "--skip-name-resolve",
            log=self._path("log", "mariadbd.log"),
        )
        self._wait(
            mariadbd,
            lambda: sock.exists() and _listening(self.ports["mariadb"]),
            f"listening on port {self.ports['mariadb']}",
        )
        user = f"'{self.DB_USER}'@'127.0.0.1'"
        sql = (
            f"CREATE USER {user} IDENTIFIED BY '{self.db_password}';"
            f"GRANT ALL ON {self.DB_NAME}.* TO {user};"
            "FLUSH PRIVILEGES;"
        )
        created = subprocess.run(
            [_exe("mariadb"), "--no-defaults", f"--socket={sock}", "-uroot", "-e", sql],
            capture_output=True,
            text=True,
            timeout=self.deadline_s,
            stdin=subprocess.DEVNULL,
        )
        if created.returncode != 0:
            self._fail(mariadbd, f"mariadbd: creating the database user failed: {created.stderr}")

    def _start_slurmdbd(self) -> None:
        slurmdbd = self._spawn(
            "slurmdbd", _exe("slurmdbd"), "-D", log=self._path("log", "slurmdbd.log")
        )
        port = self.ports["slurmdbd"]
        self._wait(slurmdbd, lambda: _listening(port), f"listening on port {port}")

    def _start_slurmctld(self) -> None:
        slurmctld = self._spawn(
            "slurmctld", _exe("slurmctld"), "-D", "-i", log=self._path("log", "slurmctld.log")
        )
        port = self.ports["slurmctld"]
        self._wait(slurmctld, lambda: _listening(port), f"listening on port {port}")

    def _start_slurmd(self) -> None:
        slurmd = self._spawn(
            "slurmd", _exe("slurmd"), "-D", "-N", self.node, log=self._path("log", "slurmd.log")
        )
        self._wait(
            slurmd,
            lambda: self.node_state() == "idle",
            f"sinfo showing node {self.node} idle",
        )
        version = self.run("sinfo", "--version").stdout.split()
        self.version = version[-1] if version else ""

    def _wait_accounting(self) -> None:
        """slurmctld has registered the cluster with slurmdbd: sacct answers from it."""

        def registered() -> bool:
            try:
                result = self.run(
                    "sacctmgr", "-n", "-P", "show", "cluster", "format=cluster", check=False
                )
            except subprocess.TimeoutExpired:
                return False
            return self.name in result.stdout.split()

        self._wait(self.daemons["slurmctld"], registered, "the cluster registered in slurmdbd")

    def _run_a_first_job(self) -> None:
        """One trivial batch job start to end: jobs run, and the first job a test submits starts
        as soon as any (slurmctld's first scheduling pass of batch jobs comes ~3 s after its
        start; later ones each second)."""
        submitted = self.run(
            "sbatch",
            "--parsable",
            f"--partition={self.partition}",
            "--ntasks=1",
            "--mem=64",
            "--time=1",
            "--job-name=labtui-first-job",
            "--output=/dev/null",
            "--wrap=true",
        )
        job_id = submitted.stdout.strip().split(";")[0]

        def state() -> str:
            result = self.run("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T", check=False)
            return result.stdout.strip()

        self._wait(
            self.daemons["slurmd"], lambda: state() == "COMPLETED", f"job {job_id} completed"
        )

    # -- stop

    def stop(self) -> None:
        """Cancel every job, wait for them to leave the node, then end every daemon and wait
        for each to exit. The folder (logs included) stays."""
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].alive():
            with contextlib.suppress(SlurmClusterError, subprocess.TimeoutExpired):
                jobs = self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    deadline = time.monotonic() + self.deadline_s
                    while (
                        time.monotonic() < deadline
                        and self.run(
                            "squeue", "-h", "-t", "PD,R,CG,S", "-o", "%i", check=False
                        ).stdout.strip()
                    ):
                        time.sleep(0.2)
        self._end_daemons()
        self._save()

    def _end_daemons(self) -> None:
        # slurmd first (the steps it watches end with it), the database last but munged
        order = ["slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"]
        for name in order:
            daemon = self.daemons.get(name)
            if daemon is not None:
                _end(daemon, self.deadline_s / 4)
        self.daemons = {}

    # -- sharing between processes

    def _save(self) -> None:
        if not self.folder.exists():
            return
        record = {
            "folder": str(self.folder),
            "ports": self.ports,
            "version": self.version,
            "real_memory_mb": self.real_memory_mb,
            "def_mem_per_cpu_mb": self.def_mem_per_cpu_mb,
            "startup_s": self.startup_s,
            "daemons": [d.record() for d in self.daemons.values()],
        }
        _write_json(self.folder / "cluster.json", record)

    @classmethod
    def load(cls, folder: Path) -> SlurmCluster:
        """The cluster another process started in ``folder``, as its cluster.json records it."""
        record = json.loads((Path(folder) / "cluster.json").read_text())
        cluster = cls(Path(record["folder"]))
        cluster.ports = record["ports"]
        cluster.version = record["version"]
        cluster.real_memory_mb = record["real_memory_mb"]
        cluster.def_mem_per_cpu_mb = record["def_mem_per_cpu_mb"]
        cluster.startup_s = record["startup_s"]
        for entry in record["daemons"]:
            daemon = Daemon.from_record(entry)
            cluster.daemons[daemon.name] = daemon
        return cluster

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _exe(name: str) -> str:
    path = _which(name)
    if path is None:
        raise SlurmClusterError(f"{name} not found ({EXECUTABLES.get(name, '?')} missing)")
    return path


def _end(daemon: Daemon, grace_s: float) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; return once the process is gone."""
    daemon.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while daemon.alive() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if daemon.alive():
        daemon.signal(signal.SIGKILL)
        deadline = time.monotonic() + grace_s
        while daemon.alive() and time.monotonic() < deadline:
            time.sleep(POLL_S)
    if daemon.process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.process.wait(timeout=1)


def _write_json(path: Path, data: object) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1))
    partial.replace(path)


# --- one cluster shared by the processes of a test session ------------------------------------
#
# STATE_DIR/<session>/ holds a session's users.json (the live processes using its cluster) and
# the cluster's folder. A session whose users are all gone (it ended, or crashed or was killed)
# is cleaned up by the next one: what its cluster.json records still running is ended, and the
# folder removed. Sessions running at once (two test runs on one machine) each have their own.


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    STATE_DIR.mkdir(mode=0o755, exist_ok=True)
    STATE_DIR.chmod(0o755)  # munged's check covers every folder above its socket
    with (STATE_DIR / "lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _me() -> list[int]:
    return [os.getpid(), _start_ticks(os.getpid()) or 0]


def _live_users(session: Path) -> list[list[int]]:
    try:
        users = json.loads((session / "users.json").read_text())
    except (OSError, ValueError):
        return []
    return [user for user in users if _start_ticks(user[0]) == user[1]]


def _kill_leftovers(folder: Path) -> None:
    """End the daemons a session recorded in ``folder`` and did not stop (it crashed or was
    killed), and the jobs they left: processes of a job whose SLURM_CONF is this cluster's."""
    try:
        leftover = SlurmCluster.load(folder)
    except (OSError, ValueError, KeyError):
        leftover = None
    if leftover is not None:
        leftover._end_daemons()
    conf = f"SLURM_CONF={folder / 'etc' / 'slurm.conf'}".encode()
    parents: dict[int, int] = {}
    targets: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        pid = int(entry.name)
        command = stat[stat.index("(") + 1 : stat.rfind(")")]
        parents[pid] = int(stat[stat.rfind(")") + 2 :].split()[1])
        in_a_job = command == "slurmstepd" or any(v.startswith(b"SLURM_JOB_ID=") for v in environ)
        if conf in environ and in_a_job:
            targets.add(pid)
    # and whatever runs under them, whatever its environment
    grew = True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in targets} - targets
        targets |= below
        grew = bool(below)
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _clean_up_ended_sessions(keep: Path) -> None:
    for session in STATE_DIR.iterdir():
        if session.is_dir() and session != keep and not _live_users(session):
            _kill_leftovers(session / "cluster")
            shutil.rmtree(session, ignore_errors=True)


def session_id() -> str:
    """What the processes of one test session share: pytest-xdist's testrun uid in its workers,
    else this process (pid and start time)."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")[:12]
    return f"xdist-{uid}" if uid else "pid-{}-{}".format(*_me())


def acquire_shared(session: str = "", *, deadline_s: float = DEADLINE_S) -> SlurmCluster:
    """The cluster of this test session (by default ``session_id()``): joined when a live process
    of the session already started it, else started afresh in ``STATE_DIR/<session>/cluster``,
    after ending whatever earlier sessions left running."""
    home = STATE_DIR / (session or session_id())
    with _locked():
        _clean_up_ended_sessions(keep=home)
        users = _live_users(home)
        if users:
            cluster = SlurmCluster.load(home / "cluster")
            dead = [d for d in cluster.daemons.values() if not d.alive()]
            if dead or not cluster.daemons:
                raise SlurmClusterError(
                    f"the session's test Slurm cluster in {cluster.folder} is down: "
                    f"{', '.join(d.name for d in dead) or 'every daemon'} ended\n"
                    + "\n".join(f"--- {d.log} (last lines)\n{_tail(d.log)}" for d in dead)
                )
        else:
            _kill_leftovers(home / "cluster")  # this session's, stopped or crashed: start afresh
            home.mkdir(mode=0o755, parents=True, exist_ok=True)
            home.chmod(0o755)
            _write_json(home / "users.json", [_me()])  # a crash while starting leaves a record
            cluster = SlurmCluster(home / "cluster", deadline_s=deadline_s).start()
        _write_json(home / "users.json", [*users, _me()])
        return cluster


def release_shared(cluster: SlurmCluster) -> None:
    """This process no longer uses the cluster; the last one to leave stops it (its folder and
    logs stay until the next session starts)."""
    home = cluster.folder.parent
    with _locked():
        me = _me()
        users = [user for user in _live_users(home) if user != me]
        if not users:
            cluster.stop()
        _write_json(home / "users.json", users)


@contextlib.contextmanager
def shared_cluster() -> Iterator[SlurmCluster]:
    """The session's cluster (``acquire_shared``), with ``SLURM_CONF`` in ``os.environ`` while it
    is in use, so every child process (sbatch, squeue, sacct by submitit and by the code under
    test) reaches it; the variable is restored and the cluster released after."""
    cluster = acquire_shared()
    saved = {name: os.environ.get(name) for name in cluster.env}
    os.environ.update(cluster.env)
    try:
        yield cluster
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        release_shared(cluster)
