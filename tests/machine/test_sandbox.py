"""core.machine.sandbox: LLM-written code is contained, every breach attempt is stopped and reported as a
failed run (never an exception), and the pipeline goes on with the next run."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import processes_in

from labtui.core.errors import ConfigError
from labtui.core.events import Event, Notice
from labtui.core.machine import bubblewrap, host_limits, sandbox_policy
from labtui.core.machine import watch as run_watch
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.runs.plot_run import run_plot
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.config import Config, load_config, render_config
from labtui.core.settings.sections import SandboxSection

PYTHON = sys.executable

needs_bwrap = pytest.mark.skipif(
    not bubblewrap.available(),
    reason=f"bubblewrap does not work here: {bubblewrap.bwrap_problem()}",
)

# Writes its results like a template's experiment.py does; the body runs before that.
EXPERIMENT = """
import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", default="run_0")
out = parser.parse_args().out_dir
os.makedirs(out, exist_ok=True)
{body}
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({{"toy": {{"means": {{"acc": 0.9}}}}}}, f)
"""

TOML = "[limits]\nrun_timeout_s = 1800.0\n"


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def notices(self) -> list[Notice]:
        return [e for e in self.events if isinstance(e, Notice)]


@pytest.fixture(autouse=True)
def _fresh_sandbox_state(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(run_watch, "PROCESS_WATCH_S", 0.05)
    monkeypatch.setattr(run_watch, "DISK_WATCH_S", 0.1)
    sandbox_policy.forget_warning()
    yield
    sandbox_policy.forget_warning()
    bubblewrap._bwrap_problem.cache_clear()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with labtui's own state in it: labtui.toml, .labtui/ and .git/."""
    root = tmp_path / "project"
    (root / ".labtui").mkdir(parents=True)
    (root / ".labtui" / "journal.jsonl").write_text('{"type": "StageStarted"}\n')
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "labtui.toml").write_text(TOML)
    return root


def experiment(root: Path, body: str) -> None:
    code = EXPERIMENT.format(body=textwrap.indent(textwrap.dedent(body).strip(), ""))
    (root / "experiment.py").write_text(code, encoding="utf-8")


def spec(root: Path, mode: str = "bwrap", **limits) -> SandboxSpec:
    return SandboxSpec(mode=mode, root=root.resolve(), **limits)


# A safety net, never what a test measures: runs end long before it, and a run at nice 10 beside
# two CPU burners gets a tenth of a core.
SAFETY_TIMEOUT_S = 300


def run(
    root: Path,
    run_id: str = "run_1",
    *,
    sandbox_spec=None,
    timeout_s: float = SAFETY_TIMEOUT_S,
    emit=None,
):
    return run_experiment(
        root,
        run_id,
        python=PYTHON,
        timeout_s=timeout_s,
        emit=emit or Recorder(),
        stage="experiments",
        sandbox=sandbox_spec if sandbox_spec is not None else spec(root),
    )


def record(root: Path, run_id: str = "run_1") -> dict:
    return json.loads((root / run_id / "labtui_run.json").read_text())


def wait_until_gone(folder: Path, within_s: float = 30.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := processes_in(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# -- a normal run --------------------------------------------------------------------------


@needs_bwrap
def test_a_normal_run_succeeds_in_the_sandbox_and_records_it(project: Path) -> None:
    experiment(project, "print('training', flush=True)")
    result = run(project, sandbox_spec=SandboxSection())  # the defaults, as labtui.toml has them
    assert result.ok, result.problem
    assert result.means == {"toy": {"acc": 0.9}}
    used = record(project)["sandbox"]
    assert used["mode"] == "bwrap" and used["isolated"] is True and used["network"] is False
    assert set(used["read_only_in_project"]) == {"labtui.toml", ".labtui", ".git"}
    defaults = SandboxSection()
    assert defaults.max_processes == "auto"
    assert used["max_processes"] == host_limits.task_cap("auto") and used["max_processes_auto"]
    assert used["oom_score_adj"] == 1000 and used["nice"] == 10
    assert used["containment"]["mechanism"] in ("systemd-scope", "cgroup", "rlimits")
    assert used["run_dir_cap_mb"] == defaults.run_dir_cap_mb
    assert record(project)["limit_hit"] == ""


# -- breaches ------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("mode", ["bwrap", "limits"])
def test_a_fork_bomb_is_contained_and_reported(project: Path, mode: str) -> None:
    # Exponential (every process forks again, forever); the sleeps only keep the overshoot
    # before the first check small, so that the test machine never feels it. The timeout is far
    # off: what is asserted is that the limit stopped the bomb, however loaded the machine is.
    experiment(
        project,
        """
        while True:
            try:
                os.fork()
            except OSError as exc:
                print("fork refused:", exc, file=sys.stderr, flush=True)
                time.sleep(0.05)
            time.sleep(0.02)
        """,
    )
    result = run_experiment(
        project,
        "run_1",
        python=PYTHON,
        timeout_s=SAFETY_TIMEOUT_S,
        emit=Recorder(),
        stage="experiments",
        sandbox=spec(project, mode, max_processes=32),
    )
    assert not result.ok and not result.timed_out, "stopped by its limit, not by the timeout"
    assert "process limit exceeded" in result.problem
    assert "max_processes = 32" in result.problem
    assert record(project)["limit_hit"].startswith("process limit exceeded")
    assert not wait_until_gone(project), "a bomb process survived"
    # The machine is fine: it still starts processes.
    assert subprocess.run(["true"], check=False).returncode == 0


@needs_bwrap
@pytest.mark.parametrize(
    ("limits", "timeout_s", "expected"),
    [
        (
            {"cpu_time_s": 1},
            SAFETY_TIMEOUT_S,
            "SIGXCPU (sandbox: it used more than [sandbox] cpu_time_s = 1 s",
        ),
        ({}, 1.0, "timed out after 1 s"),
    ],
    ids=["cpu-limit", "timeout"],
)
def test_an_infinite_loop_is_stopped_with_its_whole_group(
    project: Path, limits: dict, timeout_s: float, expected: str
) -> None:
    experiment(
        project,
        """
        import subprocess
        child = subprocess.Popen(["sleep", "120"])
        print("grandchild", child.pid, flush=True)
        while True:
            pass
        """,
    )
    result = run(project, sandbox_spec=spec(project, **limits), timeout_s=timeout_s)
    assert not result.ok
    assert result.timed_out == ("cpu_time_s" not in limits)
    assert expected in result.problem
    assert not wait_until_gone(project), "the grandchild outlived the run"


# What the experiment reports about itself: its OOM score, nice value (field 19 of
# /proc/self/stat) and IO priority (util-linux's ionice reads it back, when installed).
PRIORITIES = """
import shutil, subprocess
stat = open("/proc/self/stat").read()
print("oom_score_adj", open("/proc/self/oom_score_adj").read().strip(), flush=True)
print("nice", stat[stat.rfind(")") + 2:].split()[16], flush=True)
if shutil.which("ionice"):
    print("ionice", subprocess.run(["ionice"], capture_output=True, text=True).stdout.strip(), flush=True)
"""


def reported(result) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in result.stdout_tail.splitlines() if " " in line)


@needs_bwrap
@pytest.mark.parametrize("mode", ["bwrap", "limits"])
def test_the_experiment_is_the_oom_killers_choice_and_yields_cpu_and_disk(
    project: Path, mode: str
) -> None:
    experiment(project, PRIORITIES)
    result = run(project, sandbox_spec=spec(project, mode))
    assert result.ok, result.problem
    seen = reported(result)
    assert seen["oom_score_adj"] == "1000"
    assert seen["nice"] == "10"
    if "ionice" in seen:
        assert seen["ionice"] == "best-effort: prio 7"
    assert Path("/proc/self/oom_score_adj").read_text().strip() != "1000", "labtui kept its own"
    used = record(project)["sandbox"]
    assert (used["oom_score_adj"], used["nice"], used["ionice"]) == (1000, 10, "best-effort 7")


@needs_bwrap
def test_priorities_follow_the_settings_and_zero_leaves_them(project: Path) -> None:
    experiment(project, PRIORITIES)
    settings = SandboxSection(oom_score_adj=500, nice=19, ionice="idle")
    result = run(project, sandbox_spec=settings)
    assert result.ok, result.problem
    seen = reported(result)
    assert (seen["oom_score_adj"], seen["nice"]) == ("500", "19")
    if "ionice" in seen:
        assert seen["ionice"] == "idle"
    left = SandboxSection(oom_score_adj=0, nice=0, ionice="off")
    result = run(project, "run_2", sandbox_spec=left)
    assert result.ok, result.problem
    own = Path("/proc/self/oom_score_adj").read_text().strip()
    assert reported(result)["oom_score_adj"] == own and reported(result)["nice"] == str(os.nice(0))
    assert record(project, "run_2")["sandbox"]["ionice"] == "off"


@needs_bwrap
def test_writing_beyond_the_file_size_cap_fails_and_says_which_limit(project: Path) -> None:
    experiment(
        project,
        """
        with open(os.path.join(out, "huge.bin"), "wb") as f:
            for _ in range(4):
                f.write(b"x" * 1024 * 1024)
        """,
    )
    result = run(project, sandbox_spec=spec(project, max_file_mb=1))
    assert not result.ok
    assert "File too large" in result.problem
    assert "max_file_mb = 1 MB" in result.problem
    assert (project / "run_1" / "huge.bin").stat().st_size <= 1024 * 1024


@needs_bwrap
def test_filling_the_run_folder_is_stopped_and_the_pipeline_goes_on(project: Path) -> None:
    experiment(
        project,
        """
        if out == "run_1":
            for i in range(100_000):
                with open(os.path.join(out, f"chunk_{i}.bin"), "wb") as f:
                    f.write(os.urandom(512 * 1024))
                time.sleep(0.01)
        """,
    )
    failed = run(project, sandbox_spec=spec(project, run_dir_cap_mb=2))
    assert not failed.ok and not failed.timed_out and failed.final_info is None  # a result
    assert "disk cap exceeded" in failed.problem and "run_dir_cap_mb = 2 MB" in failed.problem
    assert record(project)["limit_hit"].startswith("disk cap exceeded")
    # The next run goes ahead as usual.
    assert run(project, "run_2", sandbox_spec=spec(project, run_dir_cap_mb=2)).ok


@pytest.fixture
def loopback_server():
    """A TCP server on the host's 127.0.0.1; yields (port, connections accepted so far)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[str] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append("connected")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    done.set()
    thread.join(timeout=2)
    server.close()


@needs_bwrap
def test_a_network_connection_attempt_fails_without_network(project: Path, loopback_server) -> None:
    port, accepted = loopback_server
    experiment(
        project,
        f"""
        import socket
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        print("connected", flush=True)
        """,
    )
    blocked = run(project, sandbox_spec=spec(project))
    assert not blocked.ok
    assert "Connection refused" in blocked.problem and "no network" in blocked.problem
    assert accepted == []
    # The same code reaches the same server when the network is allowed: the failure above
    # was the sandbox, not the server.
    allowed = run(project, "run_2", sandbox_spec=spec(project, network=True))
    assert allowed.ok, allowed.problem
    assert accepted == ["connected"]


@needs_bwrap
def test_writing_outside_the_project_fails(project: Path, tmp_path: Path) -> None:
    beside = tmp_path / "beside.txt"  # next to the project, under /tmp
    beside.write_text("original")
    try:
        elsewhere = Path(tempfile.mkdtemp(prefix="labtui-sandbox-test-", dir="/var/tmp"))
    except OSError:
        pytest.skip("/var/tmp is not writable here")
    try:
        experiment(
            project,
            f"""
            try:
                open({str(beside)!r}, "w").write("pwned")  # lands in the private /tmp at most
            except OSError as exc:
                print("beside:", exc, flush=True)
            open({str(elsewhere / "escape.txt")!r}, "w").write("pwned")
            """,
        )
        result = run(project)
        assert not result.ok
        assert "Read-only file system" in result.problem
        assert "outside the project folder" in result.problem  # the hint for the fix prompt
        assert beside.read_text() == "original"
        assert not (elsewhere / "escape.txt").exists()
    finally:
        for leftover in elsewhere.iterdir():
            leftover.unlink()
        elsewhere.rmdir()


@needs_bwrap
def test_the_run_cannot_edit_its_own_time_limit_or_labtuis_state(project: Path) -> None:
    experiment(
        project,
        """
        attempts = {
            "toml": lambda: open("labtui.toml", "a").write("\\n[limits]\\nrun_timeout_s = 1e9\\n"),
            "toml-replace": lambda: os.replace("experiment.py", "labtui.toml"),
            "toml-remove": lambda: os.remove("labtui.toml"),
            "journal": lambda: open(".labtui/journal.jsonl", "a").write("{}"),
            "state-new": lambda: open(".labtui/new.json", "w").write("{}"),
            "git": lambda: open(".git/HEAD", "w").write("rewritten"),
        }
        for name, attempt in attempts.items():
            try:
                attempt()
                print("ALLOWED", name, flush=True)
            except OSError as exc:
                print("blocked", name, exc.errno, flush=True)
        """,
    )
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and "run_" not in str(p)}
    result = run(project)
    assert "ALLOWED" not in result.stdout_tail, result.stdout_tail
    assert result.stdout_tail.count("blocked") == 6
    assert (project / "labtui.toml").read_text() == TOML
    assert load_config(project).limits.run_timeout_s == 1800.0
    assert not (project / ".labtui" / "new.json").exists()
    for path, content in before.items():
        if path.name != "experiment.py":
            assert path.read_bytes() == content, f"{path} changed"


@needs_bwrap
def test_plots_run_in_the_sandbox_too(project: Path) -> None:
    (project / "plot.py").write_text(
        "open('loss.png', 'w').write('png')\nopen('labtui.toml', 'a').write('x')\n"
    )
    result, figures = run_plot(
        project,
        python=PYTHON,
        timeout_s=SAFETY_TIMEOUT_S,
        emit=Recorder(),
        stage="plots",
        sandbox=spec(project),
    )
    assert figures == ["loss.png"]
    assert result.returncode == 1 and "Read-only file system" in result.stderr_tail
    assert (project / "labtui.toml").read_text() == TOML


# -- without bubblewrap --------------------------------------------------------------------


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bubblewrap, "BWRAP", "/nonexistent/bwrap")
    bubblewrap._bwrap_problem.cache_clear()


def test_without_bwrap_limits_still_apply_and_the_warning_is_said_once(
    project: Path, no_bwrap: None
) -> None:
    assert not bubblewrap.available()
    emit = Recorder()
    experiment(project, "print('hello', flush=True)")
    first = run(project, sandbox_spec=SandboxSection(), emit=emit)
    assert first.ok, first.problem
    used = record(project)["sandbox"]
    assert used["mode"] == "limits" and used["isolated"] is False
    assert "not installed" in used["note"]

    experiment(
        project,
        "open(os.path.join(out, 'big.bin'), 'wb').write(b'x' * 3 * 1024 * 1024)",
    )
    limited = SandboxSection(max_file_mb=1)
    second = run(project, "run_2", sandbox_spec=limited, emit=emit)
    assert not second.ok and "max_file_mb = 1 MB" in second.problem

    (notice,) = emit.notices()  # once per session, however many runs
    assert "NOT ISOLATED" in notice.text
    assert "bubblewrap" in notice.text and '[sandbox] mode = "limits"' in notice.text
    assert notice.stage == "experiments"


def test_mode_bwrap_without_bwrap_is_a_clear_error(project: Path, no_bwrap: None) -> None:
    experiment(project, "")
    with pytest.raises(ConfigError, match=r'\[sandbox\] mode = "bwrap"') as caught:
        run(project, sandbox_spec=SandboxSection(mode="bwrap"))
    assert "install bubblewrap" in caught.value.hint


def test_explicit_limits_or_off_say_nothing(project: Path, no_bwrap: None) -> None:
    emit = Recorder()
    experiment(project, "")
    assert run(project, sandbox_spec=SandboxSection(mode="limits"), emit=emit).ok
    assert run(project, "run_2", sandbox_spec=SandboxSection(mode="off"), emit=emit).ok
    assert emit.notices() == []
    assert record(project, "run_2")["sandbox"]["mode"] == "off"


# -- configuration -------------------------------------------------------------------------


def test_sandbox_section_round_trips_with_its_defaults(tmp_path: Path) -> None:
    config = Config()
    config.sandbox.network = True
    config.sandbox.max_file_mb = 100
    (tmp_path / "labtui.toml").write_text(render_config(config))
    assert load_config(tmp_path).sandbox == config.sandbox
    assert "[sandbox]" in render_config(Config())
    assert Config().sandbox.mode == "auto" and Config().sandbox.network is False


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[sandbox]\nmode = 'jail'\n", r"\[sandbox\] mode is 'jail'"),
        ("[sandbox]\nnetwork = 'yes'\n", r"\[sandbox\] network must be true or false"),
        ("[sandbox]\nmemory_mb = -1\n", r"\[sandbox\] memory_mb must not be negative"),
        ("[sandbox]\nmax_processes = 4\n", r"\[sandbox\] max_processes = 4 is too low"),
        ("[sandbox]\ncpu_time_s = 0.5\n", r"\[sandbox\] cpu_time_s must be a whole number"),
    ],
)
def test_bad_sandbox_settings_name_file_field_and_fix(
    tmp_path: Path, toml: str, message: str
) -> None:
    (tmp_path / "labtui.toml").write_text(toml)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(tmp_path)
    assert "labtui.toml" in str(caught.value) and caught.value.hint


def test_bwrap_command_line_protects_labtuis_state(project: Path) -> None:
    policy = spec(project)
    args = policy.bwrap_args(project)
    text = " ".join(args)
    root = str(project.resolve())
    assert "--ro-bind / / --dev /dev" in text
    assert f"--bind {root} {root}" in text
    for name in ("labtui.toml", ".labtui", ".git"):
        # Read-only again on top of the writable project bind (order matters in bwrap).
        assert text.index(f"--ro-bind {root}/{name}") > text.index(f"--bind {root} {root}")
    assert "--unshare-net" in args and "--unshare-pid" in args and "--die-with-parent" in args
    assert "--new-session" not in args  # it would take the run out of labtui's process group
    assert "--unshare-net" not in spec(project, network=True).bwrap_args(project)
    if os.geteuid() == 0:
        assert "--cap-drop" in args  # root keeps every capability in bwrap otherwise


@needs_bwrap
def test_an_interpreter_inside_the_project_is_sandboxed_for_the_environment_probe_too(
    project: Path,
) -> None:
    # An earlier run could have planted code in a project-local interpreter (or its
    # site-packages): the probe that records package versions must not run it unconfined.
    python = project / "python.sh"
    python.write_text(f'#!/bin/sh\necho "[x]" >> labtui.toml 2>/dev/null\nexec {PYTHON} "$@"\n')
    python.chmod(0o755)
    experiment(project, "")
    result = run_experiment(
        project,
        "run_1",
        python=str(python),
        timeout_s=SAFETY_TIMEOUT_S,
        emit=Recorder(),
        stage="experiments",
        sandbox=spec(project),
    )
    assert result.ok, result.problem
    assert "packages" in record(project)["environment"]
    assert (project / "labtui.toml").read_text() == TOML


def test_an_interpreter_that_lives_under_tmp_still_runs(project: Path) -> None:
    """A CI checkout or a scratch venv under /tmp: the sandbox's private /tmp must not hide it."""
    import shutil
    import venv

    env_dir = Path(tempfile.mkdtemp(dir="/tmp")) / "venv"
    venv.create(env_dir, with_pip=False, symlinks=True)
    python = str(env_dir / "bin" / "python")
    assert (env_dir, env_dir) in spec(project).read_only_binds([python])
    (project / "experiment.py").write_text(
        "import json, os, sys\n"
        "out = sys.argv[1].split('=')[1]\n"
        "os.makedirs(out)\n"
        "json.dump({'d': {'means': {'prefix': sys.prefix}}}, open(f'{out}/final_info.json', 'w'))\n"
    )
    result = run_experiment(
        project,
        "run_1",
        python=python,
        timeout_s=SAFETY_TIMEOUT_S,
        emit=lambda e: None,
        stage="experiments",
        sandbox=spec(project),
    )
    shutil.rmtree(env_dir.parent, ignore_errors=True)
    assert result.ok, result.problem
    assert result.means == {"d": {"prefix": str(env_dir)}}


# -- credentials, /tmp, escapees ---------------------------------------------------------------


@needs_bwrap
def test_credentials_in_the_project_are_hidden_and_the_home_folder_is_empty(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        home = Path(tempfile.mkdtemp(prefix="labtui-home-", dir="/var/tmp"))
    except OSError:
        pytest.skip("/var/tmp is not writable here")
    monkeypatch.setenv("HOME", str(home))
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine example.org password hunter2")
    (home / "notes.txt").write_text("not a secret")
    (project / ".env").write_text("OPENAI_API_KEY=sk-secret")
    try:
        experiment(
            project,
            f"""
            home = {str(home)!r}
            for path in (home + "/.ssh/id_ed25519", home + "/.netrc", ".env", home + "/notes.txt"):
                try:
                    print(path, repr(open(path).read()), flush=True)
                except OSError as exc:
                    print(path, "unreadable", exc.errno, flush=True)
            """,
        )
        result = run(project)
        assert result.ok, result.problem
        out = result.stdout_tail
        assert "PRIVATE KEY" not in out and "hunter2" not in out and "sk-secret" not in out
        # The project's .env is masked by an empty, unreadable stand-in; the home is empty.
        assert re.search(r"^\.env (''|unreadable)", out, re.MULTILINE), out
        for name in (".netrc", ".ssh/id_ed25519", "notes.txt"):
            assert f"{home}/{name} unreadable 2" in out, out
        assert (project / ".env").read_text() == "OPENAI_API_KEY=sk-secret"
        assert set(record(project)["sandbox"]["hidden"]) >= {
            str(home),
            str(project.resolve() / ".env"),
        }
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)


@needs_bwrap
def test_the_private_tmp_is_capped_and_the_run_is_told_where_to_write(project: Path) -> None:
    experiment(
        project,
        """
        with open("/tmp/big.bin", "wb") as f:
            for _ in range(64):
                f.write(b"x" * 1024 * 1024)
        """,
    )
    result = run(project, sandbox_spec=spec(project, tmp_mb=16))
    assert not result.ok
    assert "No space left on device" in result.stderr_tail
    assert "[sandbox] tmp_mb = 16 MB" in result.problem
    assert record(project)["sandbox"]["tmp_mb"] == 16


def test_without_bwrap_a_process_that_leaves_the_group_is_still_stopped(project: Path) -> None:
    pid_file = project / "escapee.pid"
    experiment(
        project,
        f"""
        import subprocess
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)"],
            start_new_session=True,
        )
        open({str(pid_file)!r}, "w").write(str(child.pid))
        """,
    )
    events = Recorder()
    result = run(project, sandbox_spec=spec(project, mode="limits"), emit=events)
    assert result.ok, result.problem
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30  # a cap on the wait, not a measure
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), "the process that left the group is still running"
    assert any("outside its process group" in n.text for n in events.notices())


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"
