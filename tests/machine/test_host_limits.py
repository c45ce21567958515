"""core.machine.host_limits: the host outlives any experiment. Each run gets a raised OOM score and lower
CPU/IO priority (tests/machine/test_sandbox.py reads them back from inside the run), and a cgroup v2 that
caps its memory, CPU and tasks where systemd's user manager or a delegated cgroup allows one;
elsewhere (this machine: cgroup v1, no user manager) rlimits and watchers, and doctor says why.
Detection is tested against a fake ``systemd-run`` on PATH and a fake cgroup tree under tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from labtui.core.doctor import _containment
from labtui.core.errors import ConfigError
from labtui.core.machine import host_limits, sandbox_policy
from labtui.core.machine.host_limits import Containment
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.config import Config, load_config
from labtui.core.settings.sections import SandboxSection

PYTHON = sys.executable
SCOPE = ["--user", "--scope", "--quiet", "--collect"]


@pytest.fixture(autouse=True)
def _fresh_probes():
    host_limits.forget_probes()
    sandbox_policy.forget_warning()
    yield
    host_limits.forget_probes()
    sandbox_policy.forget_warning()


@pytest.fixture
def fake_systemd_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Puts a ``systemd-run`` on PATH that logs its arguments and, like the real one with
    --scope, execs the command after ``--`` in place; ``fail`` makes it answer as one does
    without a user manager. This user lingers (see the linger test). Yields the log file."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "systemd-run.log"
    lingering = tmp_path / "linger"
    lingering.mkdir()
    (lingering / host_limits._user_name()).write_text("")
    monkeypatch.setattr(host_limits, "LINGER_DIR", lingering)

    def install(fail: bool = False) -> Path:
        failing = 'echo "Failed to connect to bus: No medium found" >&2; exit 1' if fail else ""
        script = folder / "systemd-run"
        script.write_text(
            textwrap.dedent(f"""\
            #!/bin/sh
            printf '%s\\n' "$@" >> {log}
            {failing}
            while [ "$1" != "--" ]; do shift; done
            shift
            exec "$@"
            """)
        )
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        return log

    return install


@pytest.fixture
def cgroup_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fake unified cgroup v2 mount; returns a function that lays out this process's cgroup
    in it (``limits``: the interface files found there) and points labtui at it."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    monkeypatch.setattr(host_limits, "CGROUP_ROOT", root)

    def own_folder(limits: dict[str, str]) -> Path:
        mine = host_limits.own_cgroup()
        if mine is None:
            pytest.skip("this machine's /proc/self/cgroup has no cgroup v2 line")
        folder = root / mine.strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in limits.items():
            (folder / name).write_text(value + "\n")
        return folder

    return own_folder


def fake_self_cgroup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    line = tmp_path / "self-cgroup"
    line.write_text(f"12:pids:/\n0::{path}\n")
    monkeypatch.setattr(host_limits, "SELF_CGROUP", line)


def delegate(folder: Path, controllers: str = "cpu memory pids") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cgroup.subtree_control").write_text(controllers + "\n")
    (folder / "cgroup.procs").write_text("")


# -- sizes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("cpus", "cap"), [(1, 512), (2, 512), (16, 512), (32, 768), (64, 1536)])
def test_the_auto_task_cap_is_hundreds_and_grows_with_the_cpus(
    monkeypatch: pytest.MonkeyPatch, cpus: int, cap: int
) -> None:
    monkeypatch.setattr(host_limits, "usable_cpus", lambda: cpus)
    assert host_limits.task_cap("auto") == cap
    assert host_limits.task_cap(64) == 64 and host_limits.task_cap(0) == 0


@pytest.mark.parametrize(
    ("total_mb", "memory_mb", "reserve_mb", "cap"),
    [
        (16384, 0, 2048, 14336),  # all RAM but the reserve
        (3000, 0, 2048, 1500),  # never below half the RAM
        (16384, 4000, 2048, 4000),  # memory_mb, when set, is the cap
    ],
)
def test_the_memory_cap_leaves_a_reserve(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    total_mb: int,
    memory_mb: int,
    reserve_mb: int,
    cap: int,
) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       {total_mb * 1024} kB\nMemFree:  1 kB\n")
    monkeypatch.setattr(host_limits, "MEMINFO", meminfo)
    assert host_limits.memory_cap_mb(memory_mb, reserve_mb) == cap


@pytest.mark.parametrize(("cpus", "leave", "quota"), [(2, 1, 100), (16, 1, 1500), (1, 1, 100)])
def test_the_cpu_quota_leaves_cores_to_the_machine(
    monkeypatch: pytest.MonkeyPatch, cpus: int, leave: int, quota: int
) -> None:
    monkeypatch.setattr(host_limits, "usable_cpus", lambda: cpus)
    assert host_limits.cpu_quota_pct(leave) == quota
    assert host_limits.cpu_quota_pct(0) == 0  # leave_cores = 0: no quota


# -- systemd's user manager ----------------------------------------------------------------


def test_no_user_manager_is_detected_and_said(fake_systemd_run) -> None:
    log = fake_systemd_run(fail=True)
    problem = host_limits.systemd_scope_problem()
    assert "no systemd user manager" in problem and "Failed to connect to bus" in problem
    probe = log.read_text().splitlines()
    assert probe[:4] == SCOPE and "TasksMax=64" in probe and "MemoryMax=1024M" in probe
    log.write_text("")
    host_limits.systemd_scope_problem()
    assert log.read_text() == "", "the probe runs once per session (cached)"


def test_a_user_manager_that_enforces_the_limits_is_used(fake_systemd_run, cgroup_tree) -> None:
    fake_systemd_run()
    cgroup_tree({"memory.max": str(1024 * 1024 * 1024), "pids.max": "64", "cpu.max": "max"})
    assert host_limits.systemd_scope_problem() == ""
    settings = SandboxSection(memory_mb=4000, leave_cores=0)
    chosen = host_limits.containment(settings, tasks_max=512)
    assert chosen == Containment("systemd-scope", memory_mb=4000, tasks_max=512)


def test_a_user_manager_that_stops_at_logout_is_not_used(
    fake_systemd_run, cgroup_tree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_systemd_run()
    cgroup_tree({"memory.max": str(1024 * 1024 * 1024), "pids.max": "64"})
    monkeypatch.setattr(host_limits, "LINGER_DIR", tmp_path / "nobody-lingers")
    problem = host_limits.systemd_scope_problem()
    assert "stops at logout" in problem and "loginctl enable-linger" in problem
    assert host_limits.containment(SandboxSection(), 512).mechanism != "systemd-scope"


def test_a_user_manager_without_delegated_controllers_is_not_trusted(
    fake_systemd_run, cgroup_tree
) -> None:
    fake_systemd_run()
    cgroup_tree({"cpu.max": "max"})  # the scope exists but memory and pids are not delegated
    problem = host_limits.systemd_scope_problem()
    assert "does not enforce memory.max and pids.max" in problem


def test_the_scope_command_line_is_exact_and_wraps_bubblewrap_too(tmp_path: Path) -> None:
    scope = Containment("systemd-scope", memory_mb=14336, cpu_quota_pct=100, tasks_max=512)
    prefix = scope.prefix()
    assert prefix[1:] == [
        *SCOPE,
        "-p", "MemoryMax=14336M",
        "-p", "MemorySwapMax=0",
        "-p", "CPUQuota=100%",
        "-p", "TasksMax=512",
        "--",
    ]  # fmt: skip
    assert Path(prefix[0]).name == "systemd-run"
    argv = [PYTHON, "experiment.py"]
    for mode in ("limits", "bwrap"):
        command = SandboxSpec(mode=mode, root=tmp_path, containment=scope).wrap(argv, tmp_path)
        assert command[: len(prefix)] == prefix and command[-2:] == argv
    bwrapped = SandboxSpec(mode="bwrap", root=tmp_path, containment=scope).wrap(argv, tmp_path)
    assert Path(bwrapped[len(prefix)]).name == "bwrap"  # the scope holds the whole sandbox
    plain = SandboxSpec(mode="limits", root=tmp_path)
    assert Path(plain.wrap(argv, tmp_path)[0]) == Path(PYTHON)  # no cgroup: no prefix


def test_a_run_in_a_scope_keeps_its_pid_and_process_group(tmp_path: Path, fake_systemd_run) -> None:
    log = fake_systemd_run()
    root = tmp_path / "project"
    root.mkdir()
    (root / "experiment.py").write_text(
        "import json, os, sys\n"
        "print('leader', os.getpid() == os.getpgid(0), flush=True)\n"
        "out = sys.argv[1].split('=')[1]\n"
        "os.makedirs(out)\n"
        "json.dump({'d': {'means': {'x': 1}}}, open(f'{out}/final_info.json', 'w'))\n"
    )
    scope = Containment("systemd-scope", memory_mb=2000, cpu_quota_pct=100, tasks_max=512)
    result = run_experiment(
        root,
        "run_1",
        python=PYTHON,
        timeout_s=300,  # a safety net: the run ends long before
        emit=lambda event: None,
        stage="experiments",
        sandbox=SandboxSpec(mode="limits", root=root, containment=scope),
    )
    assert result.ok, result.problem
    assert "leader True" in result.stdout_tail  # the runner's group is the experiment's
    assert "TasksMax=512" in log.read_text().splitlines()
    recorded = json.loads((root / "run_1" / "labtui_run.json").read_text())["sandbox"]
    assert recorded["containment"] == {
        "mechanism": "systemd-scope",
        "memory_max_mb": 2000,
        "cpu_quota_pct": 100,
        "tasks_max": 512,
    }


# -- a delegated cgroup --------------------------------------------------------------------


def test_a_delegated_cgroup_is_found_above_labtuis_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup_tree
) -> None:
    root = host_limits.CGROUP_ROOT
    fake_self_cgroup(tmp_path, monkeypatch, "/user.slice/me.service/labtui")
    (root / "user.slice/me.service/labtui").mkdir(parents=True)
    delegate(root / "user.slice/me.service")
    delegate(root / "user.slice", controllers="pids")  # memory not handed down: not this one
    assert host_limits.delegated_cgroup() == (root / "user.slice/me.service", "")


def test_no_delegated_cgroup_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup_tree
) -> None:
    root = host_limits.CGROUP_ROOT
    fake_self_cgroup(tmp_path, monkeypatch, "/session-3.scope")
    delegate(root / "session-3.scope", controllers="cpu")
    folder, why = host_limits.delegated_cgroup()
    assert folder is None and "memory and pids controllers" in why
    (root / "cgroup.controllers").unlink()  # what a cgroup v1 machine has
    assert "cgroup v1" in host_limits.delegated_cgroup()[1]


def test_without_a_user_manager_a_delegated_cgroup_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_systemd_run, cgroup_tree
) -> None:
    fake_systemd_run(fail=True)
    fake_self_cgroup(tmp_path, monkeypatch, "/")
    delegate(host_limits.CGROUP_ROOT)
    monkeypatch.setattr(host_limits, "usable_cpus", lambda: 4)
    chosen = host_limits.containment(SandboxSection(memory_mb=3000), tasks_max=512)
    assert chosen == Containment(
        "cgroup", memory_mb=3000, cpu_quota_pct=300, tasks_max=512, parent=str(cgroup_tree({}))
    )


@pytest.mark.parametrize("mode", ["limits", "bwrap"])
def test_the_run_creates_its_cgroup_writes_its_limits_and_moves_in(
    tmp_path: Path, mode: str
) -> None:
    from labtui.core.machine import bubblewrap

    if mode == "bwrap" and not bubblewrap.available():
        pytest.skip(f"bubblewrap does not work here: {bubblewrap.bwrap_problem()}")
    parent = tmp_path / "delegated"
    parent.mkdir()
    (parent / "labtui-run-2147483646").mkdir()  # a finished run's empty cgroup
    (parent / f"labtui-run-{os.getpid()}").mkdir()  # a live one's (this process stands in)
    root = tmp_path / "project"
    root.mkdir()
    cgroup = Containment(
        "cgroup", memory_mb=100, cpu_quota_pct=150, tasks_max=64, parent=str(parent)
    )
    spec = SandboxSpec(mode=mode, root=root, containment=cgroup)
    done = subprocess.run(
        spec.wrap([PYTHON, "-c", "print('ran')"], root), cwd=root, capture_output=True, text=True
    )
    assert done.stdout.strip() == "ran", done.stderr
    assert "labtui sandbox" not in done.stderr
    (made,) = [p for p in parent.iterdir() if p.name != f"labtui-run-{os.getpid()}"]
    assert made.name.startswith("labtui-run-")
    assert (made / "memory.max").read_text() == str(100 * 1024 * 1024)
    assert (made / "cpu.max").read_text() == "150000 100000"
    assert (made / "pids.max").read_text() == "64"
    assert (made / "cgroup.procs").read_text() == "0"  # "0": the writer itself moves in
    assert not (made / "memory.swap.max").exists(), "written only where the kernel has it"
    assert (parent / f"labtui-run-{os.getpid()}").is_dir(), "a live run's cgroup stays"


def test_a_cgroup_that_cannot_be_entered_is_said_and_the_run_goes_on(tmp_path: Path) -> None:
    gone = tmp_path / "gone"  # the delegated folder vanished (its owner's session ended)
    cgroup = Containment("cgroup", memory_mb=100, tasks_max=64, parent=str(gone))
    spec = SandboxSpec(mode="limits", root=tmp_path, containment=cgroup)
    done = subprocess.run(
        spec.wrap([PYTHON, "-c", "print('ran')"], tmp_path), capture_output=True, text=True
    )
    assert done.stdout.strip() == "ran"
    assert f"could not enter the cgroup {gone}/labtui-run-" in done.stderr
    assert "rlimits and watchers still apply" in done.stderr


# -- this machine --------------------------------------------------------------------------


def test_the_real_mechanism_here_is_recorded_and_said_by_doctor(tmp_path: Path) -> None:
    settings = SandboxSection(mode="limits")
    chosen = host_limits.containment(settings, host_limits.task_cap("auto"))
    if chosen.mechanism == "rlimits":
        assert "systemd-run --user --scope:" in chosen.why_not
        assert any(w in chosen.why_not for w in ("cgroup v1", "no writable cgroup", "names no"))
    spec = sandbox_policy.policy(settings, tmp_path)
    assert spec.containment == chosen
    config = Config()
    config.sandbox = settings
    detail = _containment(config).detail
    assert detail.startswith(chosen.describe())
    assert "nice 10, ionice best-effort 7, oom_score_adj 1000" in detail
    assert f'task cap {host_limits.task_cap("auto")} ("auto": 24 per CPU' in detail
    config.sandbox = SandboxSection(cgroup="off", max_processes=200)
    detail = _containment(config).detail
    assert 'cgroups unavailable: [sandbox] cgroup = "off"' in detail and "task cap 200 (" in detail


def test_doctor_names_the_scope_and_its_limits(
    fake_systemd_run, cgroup_tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_systemd_run()
    cgroup_tree({"memory.max": str(1024 * 1024 * 1024), "pids.max": "64"})
    monkeypatch.setattr(host_limits, "usable_cpus", lambda: 8)
    config = Config()
    config.sandbox = SandboxSection(memory_mb=6000)
    detail = _containment(config).detail
    assert detail.startswith(
        "cgroup v2 scope (systemd-run --user --scope): MemoryMax 6000 MB, CPUQuota 700%, "
        "TasksMax 512"
    )
    assert "TasksMax, watcher" in detail


def test_the_task_cap_is_named_as_the_settings_say_it(tmp_path: Path) -> None:
    spec = sandbox_policy.policy(SandboxSection(mode="limits"), tmp_path)
    why = spec.explain("BlockingIOError: [Errno 11] Resource temporarily unavailable", 1)
    assert f'[sandbox] max_processes = "auto" ({spec.max_processes} tasks here)' in why
    fixed = sandbox_policy.policy(SandboxSection(mode="limits", max_processes=300), tmp_path)
    assert fixed.task_cap_words == "[sandbox] max_processes = 300"


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "message", "hint"),
    [
        (
            "max_processes = 'lots'",
            r"max_processes is 'lots', neither a number nor \"auto\"",
            "auto",
        ),
        ("max_processes = 8", r"max_processes = 8 is too low", "16 or more"),
        ("nice = 25", r"\[sandbox\] nice = 25 is above 19", "nice = 10"),
        ("oom_score_adj = -100", r"oom_score_adj must not be negative", "0 or more"),
        ("ionice = 'low'", r"\[sandbox\] ionice is 'low'", "best-effort, idle, off"),
        ("cgroup = 'yes'", r"\[sandbox\] cgroup is 'yes'", "auto, off"),
        ("leave_cores = 1.5", r"leave_cores must be a whole number", "leave_cores = 3"),
    ],
)
def test_bad_host_settings_name_the_field_and_the_fix(
    tmp_path: Path, toml: str, message: str, hint: str
) -> None:
    (tmp_path / "labtui.toml").write_text(f"[sandbox]\n{toml}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(tmp_path)
    assert hint in caught.value.hint


def test_auto_and_numbers_load_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "labtui.toml").write_text("[sandbox]\nmax_processes = 'auto'\nnice = 19\n")
    assert load_config(tmp_path).sandbox.max_processes == "auto"
    (tmp_path / "labtui.toml").write_text("[sandbox]\nmax_processes = 2000.0\n")
    assert load_config(tmp_path).sandbox.max_processes == 2000
