"""Shared fixtures: the scripted LLM server, the loopback arXiv server, and test projects wired to
both. Nothing here reaches the network: every server listens on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labtui.core.settings.config import load_config, save_config

TEST_API_KEY = "sk-test-scripted-0123456789abcdef"

# researchers' repositories in miniature, which `labtui init` is tested on: their own tests/
# folders are theirs, not this suite's
collect_ignore_glob = ["repo_shapes/*"]


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per core, and one more. A good share of the
    suite waits instead of computing (a real Slurm scheduling its jobs, a job running into its
    one-minute time limit, engines starting in subprocesses), and with one worker per core a
    core idles whenever its worker waits. Measured on 2 cores (tests/slurm, 14 fault tests and
    the review CLI): 287 s with 2 workers, 231 s with 3. PYTEST_XDIST_AUTO_NUM_WORKERS, when set,
    is taken as it is."""
    cores = yield
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return cores
    return cores + 1


REPOSITORY = Path(__file__).resolve().parents[1]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test skipped for a file of the repository fails instead: the material a test reads is
    the repository's to hold (tests/corpus, tests/recorded), never a reason to skip on a fresh
    clone."""
    report = yield
    if report.skipped and (missing := missing_material(str(report.longrepr), REPOSITORY)):
        report.outcome = "failed"
        report.longrepr = f"skipped for {missing}, which the repository should hold"
    return report


def missing_material(reason: str, root: Path) -> str:
    """The path of the repository a skip's reason names ('' when it names none)."""
    found = re.search(rf"{re.escape(str(root))}/[^\s'\"),]+", reason)
    return found.group(0) if found else ""


def pytest_collection_modifyitems(config, items):
    """The long tests first: a real Slurm's (marked slurm; one runs into a one-minute time
    limit), then whole pipelines (marked slow), then the rest, each group in its own order.
    With pyproject's ``--dist worksteal`` an idle worker takes the tail of the longest queue, so
    the short tests behind the long ones are shared out while the long ones run (measured on 2
    idle cores: 12 min 10 s with xdist's default scheduling, whose first share held every long
    test and ran the fault tests one after another at the end; 10 min 02 s with worksteal).
    Dealing the long tests out to every worker's share measured no better (10 min 39 s)."""

    def group(item: pytest.Item) -> int:
        if item.get_closest_marker("slurm"):
            return 0
        return 1 if item.get_closest_marker("slow") else 2

    items.sort(key=group)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No real model, key or home directory leaks into a test."""
    for name in list(os.environ):
        if name.startswith("LABTUI_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # labtui's own model stays off unless a test turns it on (the fixture own_model): with
    # nothing configured, a command would otherwise build its server and fetch 1.1 GB
    monkeypatch.setenv("LABTUI_MODELS__LOCAL", "false")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir(exist_ok=True)
    # calibrations and cached reviews live in the test's own home, never the researcher's
    for name, folder in (
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_CONFIG_HOME", "config"),
    ):
        monkeypatch.setenv(name, str(tmp_path / "home" / folder))


@pytest.fixture
def own_model(monkeypatch):
    """labtui's own local model as a researcher gets it: on whenever nothing is configured."""
    monkeypatch.delenv("LABTUI_MODELS__LOCAL", raising=False)


@pytest.fixture
def hosted_profile(monkeypatch):
    """The scripted server listens on 127.0.0.1, which would pick the small-model profile for a
    command without a project too (labtui review): tests/settings/test_profiles.py tests the profile."""
    monkeypatch.setenv("LABTUI_LLM__PROFILE", "hosted")


@pytest.fixture(autouse=True)
def _fresh_structured_modes():
    """What a scripted server rejected (a response_format) is not remembered into the next test,
    whose server may get the same port."""
    yield
    modes = sys.modules.get("labtui.core.llm.response_formats")
    if modes is not None:
        modes.forget_structured_modes()


@pytest.fixture(scope="session")
def session_folder(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this session sees, for what is made once per
    session and reused (tests/support/session_files.py)."""
    from support.session_files import shared_folder

    return shared_folder(tmp_path_factory)


@pytest.fixture(scope="session")
def latex_pdfs(session_folder):
    """LaTeX fixtures compiled once per content for the session
    (tests/support/compiled_latex.py)."""
    from support.compiled_latex import CompiledPdfs

    return CompiledPdfs(session_folder / "compiled-latex")


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real single-node Slurm with accounting, started on first use and shared by the session
    (its xdist workers included), SLURM_CONF set meanwhile; skips where it cannot run
    (tests/support/slurm_cluster.py)."""
    from support.slurm_cluster import cluster_unavailable_reason, shared_cluster

    if reason := cluster_unavailable_reason():
        pytest.skip(reason)
    with shared_cluster() as cluster:
        yield cluster


@pytest.fixture
def llm_server():
    from support.scripted_llm import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def arxiv_server():
    from support.fake_arxiv import FakeArxiv

    with FakeArxiv() as server:
        yield server


def labtui_bin() -> str:
    """The console script installed beside this interpreter."""
    candidate = Path(sys.executable).with_name("labtui")
    return str(candidate) if candidate.exists() else shutil.which("labtui") or "labtui"


def run_labtui(
    *args: str, cwd: Path | None = None, timeout: float = 300, **kwargs
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [labtui_bin(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def wire_project(root: Path, llm_url: str, arxiv_url: str, *, auto: bool = True) -> None:
    """Point a project's labtui.toml at the scripted servers (one scripted model per stage)."""
    from support.research_script import MODELS, model_name

    config = load_config(root)
    config.models.api_base = llm_url
    for stage in MODELS:
        setattr(config.models, stage, model_name(stage))
    config.literature.arxiv_url = arxiv_url
    config.literature.delay_s = 0.0
    # the loopback arXiv answers at once: a retry after its error need not wait (the waits
    # themselves are tested in tests/literature/test_literature.py)
    config.literature.backoff_s = 0.0
    config.literature.rounds = 2
    config.literature.papers = 2
    config.ideas.count = 1
    config.ideas.reflections = 1
    config.llm.retries = 3
    config.limits.max_runs = 1
    config.review.ensemble = 1  # one reviewer, no reflection: tests that need more set them
    config.review.reflections = 0
    config.limits.run_timeout_s = 120
    config.limits.latex_timeout_s = 120
    config.autonomy.mode = "auto" if auto else "copilot"
    # The scripted server listens on 127.0.0.1, which would pick the small-model profile: tests
    # set what they need themselves (tests/settings/test_profiles.py tests the profile).
    config.llm.profile = "hosted"
    save_config(config, root)


NETWORK_GUARD = """
# Written by tests/conftest.py: refuse (and record) any connection or name lookup that is not
# loopback, in every Python process a test starts (labtui, aider, litellm, the experiments).
import ipaddress, os, socket

_log = os.environ["LABTUI_TEST_NETWORK_LOG"]
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "", None}


def _refuse(what):
    with open(_log, "a") as handle:
        handle.write(f"{os.getpid()} {what}\\n")
    raise OSError(f"network access refused by the test guard: {what}")


def _is_loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in _LOCAL_NAMES


_getaddrinfo = socket.getaddrinfo
_connect = socket.socket.connect


def getaddrinfo(host, *args, **kwargs):
    if not _is_loopback(host if not isinstance(host, bytes) else host.decode()):
        _refuse(f"lookup {host}")
    return _getaddrinfo(host, *args, **kwargs)


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        _refuse(f"connect {address}")
    return _connect(self, address)


socket.getaddrinfo = getaddrinfo
socket.socket.connect = connect
"""


@pytest.fixture
def network_guard(tmp_path, monkeypatch) -> Path:
    """Every subprocess refuses non-loopback network access; returns the log of attempts."""
    guard = tmp_path / "network-guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NETWORK_GUARD)
    log = tmp_path / "network-attempts.log"
    log.write_text("")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(guard), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("LABTUI_TEST_NETWORK_LOG", str(log))
    return log


@pytest.fixture
def project(tmp_path, llm_server, arxiv_server, monkeypatch):
    """A co-pilot moons project (in process, no baseline yet) wired to the scripted servers."""
    from support.research_script import MoonsResearch

    from labtui.core.workspace.project import Project

    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "p", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url, auto=False)
    MoonsResearch(project.root).install(llm_server)
    return project


@pytest.fixture
def moons_project(tmp_path, llm_server, arxiv_server, network_guard, monkeypatch):
    """A moons project with its baseline, wired to the scripted servers, research installed."""
    from support.research_script import MoonsResearch

    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    root = tmp_path / "demo"
    result = run_labtui("new", str(root), "--template", "moons")
    assert result.returncode == 0, result.stderr
    wire_project(root, llm_server.url, arxiv_server.url)
    MoonsResearch(root).install(llm_server)
    return root


def processes_in(folder: Path) -> list[int]:
    """Live (non-zombie) processes whose working folder is ``folder`` or inside it: what a run
    or a compile left behind, if anything. (PIDs inside a sandbox belong to another namespace,
    so the working folder is what identifies them.)"""
    root = str(Path(folder).resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        inside = cwd == root or cwd.startswith(root + os.sep)
        if inside and stat[stat.rfind(")") + 2] != "Z":
            found.append(int(entry.name))
    return found


def kill_a_run_when(root: Path, ready, what: str, timeout_s: float = 900) -> int:
    """Start `labtui run --headless --auto` in ``root``, wait until ``ready()``, then SIGKILL
    it and every process in the project (a crash kills all): its return code."""
    import signal

    from support.waiting import wait_until

    process = subprocess.Popen(
        [labtui_bin(), "run", "--headless", "--auto"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(ready, what, timeout_s=timeout_s)
        process.send_signal(signal.SIGKILL)
        for pid in processes_in(root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
