"""core.machine.watch and its parts (run_tree, disk_growth, oom): the run's whole process tree is
found and stopped, a growing process count is a storm but a data loader's workers are not, an OOM
kill is reported as such with the peak memory seen, what a run adds to the project is capped and
cleaned up, large files stay out of git, and an idle run is flagged, then stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import processes_in
from support.experiment_scripts import bare_project, write_experiment
from support.waiting import wait_until as wait_for

from labtui.core.events import Event, LogLine, Notice
from labtui.core.machine import disk_growth, gpu, oom
from labtui.core.machine import process_tree as run_tree
from labtui.core.machine import watch as run_watch
from labtui.core.machine.process_tree import RunTree, TreeSample
from labtui.core.machine.processes import run_process
from labtui.core.machine.sandbox import SandboxSpec
from labtui.core.machine.watch import RunWatcher, Watch
from labtui.core.runs.project_guard import ignore_large_project_files
from labtui.core.runs.runner import configured, run_experiment
from labtui.core.settings.config import Config

PYTHON = sys.executable


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice)]


@pytest.fixture(autouse=True)
def _fast_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_watch, "PROCESS_WATCH_S", 0.05)
    monkeypatch.setattr(run_watch, "DISK_WATCH_S", 0.1)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return bare_project(tmp_path)


experiment = write_experiment


def limits(root: Path, **fields) -> SandboxSpec:
    return SandboxSpec(mode="limits", root=root.resolve(), **fields)


def run(root: Path, emit=None, timeout_s: float = 30, **kwargs):
    kwargs.setdefault("sandbox", limits(root))
    return run_experiment(
        root,
        "run_1",
        python=PYTHON,
        timeout_s=timeout_s,
        emit=emit or Recorder(),
        stage="experiments",
        **kwargs,
    )


def record(root: Path) -> dict:
    return json.loads((root / "run_1" / "labtui_run.json").read_text())


# -- the process tree ----------------------------------------------------------------------


def test_the_tree_holds_children_that_left_the_session_and_dies_as_a_whole(tmp_path: Path):
    # The leader starts a child in a session of its own (out of the group and the session),
    # which starts a grandchild; all three are the run's, and kill() ends them all.
    script = tmp_path / "tree.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, subprocess, sys, time
            if len(sys.argv) == 1:
                subprocess.Popen([sys.executable, __file__, "child"], start_new_session=True)
            elif sys.argv[1] == "child":
                subprocess.Popen([sys.executable, __file__, "grandchild"])
            time.sleep(60)
            """
        )
    )
    leader = subprocess.Popen([PYTHON, str(script)], start_new_session=True, cwd=tmp_path)
    tree = RunTree(leader.pid)
    try:
        wait_for(lambda: tree.sample().processes == 3, "three processes in the tree")
        sample = tree.sample()
        assert sample.tasks >= 3 and sample.rss_mb > 1 and sample.cpu_s > 0
        assert tree.kill() == 2, "two had left the group"
        leader.wait(timeout=10)
        wait_for(lambda: not processes_in(tmp_path), "every process of the tree gone")
    finally:
        leader.kill()


def test_an_orphan_that_left_the_session_is_found_by_its_mark(tmp_path: Path):
    # Double fork + setsid: the orphan is re-parented out of the tree, but carries the mark.
    script = tmp_path / "orphan.py"
    script.write_text(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    open('left', 'w').close()\n"
        "    time.sleep(60)\n"
        "else:\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "LABTUI_RUN_MARK": "feedc0de"}
    leader = subprocess.Popen([PYTHON, str(script)], start_new_session=True, env=env, cwd=tmp_path)
    tree = RunTree(leader.pid, mark="feedc0de")
    try:
        # on a busy machine the child may not have run setsid yet when both are seen
        wait_for(lambda: (tmp_path / "left").exists(), "the child in a session of its own")
        wait_for(lambda: tree.sample().processes == 2, "the leader and its child")
        leader.kill()
        leader.wait()
        assert tree.sample().processes == 1, "the orphan is still the run's"
        assert tree.kill() == 1
        wait_for(lambda: not processes_in(tmp_path), "the orphan gone")
    finally:
        leader.kill()


def test_a_scan_reads_only_new_processes_and_the_runs_own(monkeypatch, tmp_path: Path):
    leader = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        tree = RunTree(leader.pid)
        tree.sample()
        reads: list[int] = []
        original = run_tree.read_stat
        monkeypatch.setattr(run_tree, "read_stat", lambda pid: reads.append(pid) or original(pid))
        tree.sample()
        assert leader.pid in reads
        assert len(reads) <= 3, "processes known not to be the run's are not read again"
    finally:
        leader.kill()
        leader.wait()


# -- process storms ------------------------------------------------------------------------


def storm_verdicts(counts: list[int], max_processes: int = 512) -> list[str]:
    watcher = RunWatcher(os.getpid(), limits(Path("."), max_processes=max_processes))
    return [watcher._process_limit(TreeSample(processes=n, tasks=n)) for n in counts]


def test_a_process_count_that_keeps_growing_is_a_storm_and_names_the_limit() -> None:
    # Slow growth (a storm on a starved machine stands still at some checks) past the floor.
    counts = [40 + 2 * (i // 2) for i in range(40)]
    verdicts = storm_verdicts(counts)
    reasons = [r for r in verdicts if r]
    assert reasons, "a storm past the floor is stopped"
    assert reasons[0].startswith("process storm: 66 processes and still growing")
    assert "[sandbox] max_processes = 512" in reasons[0]


@pytest.mark.parametrize(
    "counts",
    [
        [1, 1, 17] + [17] * 20,  # a DataLoader's 16 workers
        [1, 40, 129] + [129, 130] * 10,  # a pool of 128 workers
        [1 + i for i in range(60)],  # slow growth under the floor
        [70, 71] * 20,  # churn around a steady count
        [1, 10, 20, 30, 50, 70, 90, 110, 130] + [130] * 20,  # a pool started worker by worker
    ],
    ids=["dataloader", "pool", "below-floor", "churn", "gradual-pool"],
)
def test_workers_that_start_at_once_and_hold_steady_are_no_storm(counts: list[int]) -> None:
    assert not any(storm_verdicts(counts))


def test_a_data_loader_with_sixteen_workers_runs(project: Path) -> None:
    experiment(
        project,
        """
        import multiprocessing
        if __name__ == "__main__":
            with multiprocessing.get_context("fork").Pool(16) as pool:  # as a DataLoader
                print(sum(pool.map(abs, range(-1000, 1000))), flush=True)
        """,
    )
    result = run(project, sandbox=limits(project, max_processes=512))
    assert result.ok, result.problem


# -- out of memory -------------------------------------------------------------------------


def test_a_run_the_oom_killer_ended_is_reported_as_out_of_memory(project, tmp_path, monkeypatch):
    # The kernel is played by the test: the counter rises while the run is going, and the run
    # dies of SIGKILL (it sends it itself) once the watcher has seen its memory.
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 1\noom_kill 7\n")
    monkeypatch.setattr(oom, "VMSTAT", vmstat)
    go = project / "go"
    original = RunTree.sample

    def sample_and_signal(self: RunTree) -> TreeSample:
        sample = original(self)
        if sample.rss_mb >= 150 and not go.exists():
            vmstat.write_text("nr_free_pages 1\noom_kill 8\n")
            go.write_text("")
        return sample

    monkeypatch.setattr(RunTree, "sample", sample_and_signal)
    experiment(
        project,
        """
        hog = b"x" * (150 * 2**20)
        print("allocated", flush=True)
        while not os.path.exists("go"):
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    emit = Recorder()
    result = run(project, emit)
    assert result.problem.startswith("run_1 ran out of memory (peak "), result.problem
    assert "OOM killer" in result.problem and "nothing on stderr" not in result.problem
    peak = float(result.problem.split("peak ")[1].split(" MB")[0])
    assert peak >= 150
    assert record(project)["oom_killer_struck"] is True
    finished = [e for e in emit.events if type(e).__name__ == "RunFinished"]
    assert "ran out of memory" in finished[0].error_tail  # what the logs and the fix loop see


def test_a_sigkill_without_the_oom_killer_stays_a_sigkill(project, tmp_path, monkeypatch):
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("oom_kill 7\n")
    monkeypatch.setattr(oom, "VMSTAT", vmstat)
    experiment(project, "os.kill(os.getpid(), signal.SIGKILL)")
    result = run(project)
    assert "killed by signal SIGKILL" in result.problem
    assert record(project)["oom_killer_struck"] is False


def test_the_memory_cgroup_counter_is_found_for_v1_and_v2(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    monkeypatch.setattr(oom, "PROC", proc)
    monkeypatch.setattr(oom, "CGROUP_FS", tmp_path / "cg")
    (proc / "42" / "cgroup").write_text("4:memory:/jobs/a\n1:cpu:/\n")
    assert oom.cgroup_counter_file(42) == tmp_path / "cg/memory/jobs/a/memory.oom_control"
    (tmp_path / "cg/run").mkdir(parents=True)
    (tmp_path / "cg/run/memory.events").write_text("oom 0\noom_kill 0\n")
    (proc / "42" / "cgroup").write_text("0::/run\n")
    assert oom.cgroup_counter_file(42) == tmp_path / "cg/run/memory.events"
    monkeypatch.setattr(oom, "VMSTAT", tmp_path / "absent")
    counter = oom.OomCounter()
    counter.watch(42)
    assert not counter.struck()
    (tmp_path / "cg/run/memory.events").write_text("oom 1\noom_kill 1\n")
    assert counter.struck()


def test_the_peak_memory_of_a_normal_run_is_recorded(project: Path) -> None:
    experiment(
        project,
        """
        hog = b"x" * (80 * 2**20)
        while not os.path.exists("seen"):
            time.sleep(0.02)
        """,
    )
    original = RunTree.sample

    def sample_and_tell(self: RunTree) -> TreeSample:
        sample = original(self)
        if sample.rss_mb > 80:
            (project / "seen").touch()
        return sample

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunTree, "sample", sample_and_tell)
        result = run(project)
    assert result.ok, result.problem
    assert record(project)["peak_memory_mb"] >= 80


# -- the project's disk --------------------------------------------------------------------


def test_growth_counts_the_whole_project_but_labtuis_own_state(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".git").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "old.bin").write_bytes(b"x" * 2**20)
    growth = disk_growth.ProjectGrowth(root, root / "run_1", cap_bytes=3 * 2**20)
    growth.start()
    (root / ".git" / "pack").write_bytes(os.urandom(4 * 2**20))  # labtui's commits: not the run's
    (root / "run_1").mkdir()
    (root / "run_1" / "model.pt").write_bytes(os.urandom(2 * 2**20))
    assert not growth.over_cap(walk_now=True)
    (root / "big.bin").write_bytes(os.urandom(2 * 2**20))
    (root / "small.txt").write_text("metrics")
    with (root / "data" / "old.bin").open("ab") as grown:  # the researcher's: never removed
        grown.write(os.urandom(2**20))
    assert growth.over_cap(walk_now=True)
    removed = growth.remove_new_files()
    assert removed == [("big.bin", 2 * 2**20)]
    assert not (root / "big.bin").exists()
    assert (root / "small.txt").exists() and (root / "run_1" / "model.pt").exists()
    assert (root / "data" / "old.bin").stat().st_size == 2 * 2**20


def test_nothing_is_judged_or_removed_before_the_baseline_is_known(tmp_path: Path) -> None:
    (tmp_path / "researchers.bin").write_bytes(b"x" * 2 * 2**20)
    growth = disk_growth.ProjectGrowth(tmp_path, None, cap_bytes=1)
    assert not growth.over_cap(walk_now=True)
    assert growth.remove_new_files() == []
    assert (tmp_path / "researchers.bin").exists()


def test_python_environments_in_the_project_are_not_walked(tmp_path: Path) -> None:
    venv = tmp_path / ".venv" / "lib"
    venv.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "torch.so").write_bytes(b"x" * 2**20)
    (tmp_path / "train.py").write_text("print(1)\n")
    assert [Path(path).name for path, _ in disk_growth.walk(tmp_path).files.values()] == [
        "train.py"
    ]


def test_walks_back_off_unless_the_filesystem_filled(tmp_path: Path, monkeypatch) -> None:
    walks: list[Path] = []
    original = disk_growth.walk
    monkeypatch.setattr(disk_growth, "walk", lambda root: walks.append(root) or original(root))
    growth = disk_growth.ProjectGrowth(tmp_path, None, cap_bytes=2**30)
    growth.start()
    assert not growth.filled()
    for _ in range(20):
        growth.over_cap()
    assert len(walks) == 1, "no walk while the filesystem did not grow by the cap"
    used, inodes = growth._fs_baseline
    monkeypatch.setattr(disk_growth, "_fs_used", lambda root: (used + 2**31, inodes))
    growth.last.seconds = 0.0  # a walk that cost nothing may be repeated at once
    growth.over_cap()
    assert len(walks) == 2


def test_the_same_walk_counts_what_the_run_adds_against_max_files(tmp_path, monkeypatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "old.txt").write_text("the researcher's")
    growth = disk_growth.ProjectGrowth(tmp_path, tmp_path / "run_1", cap_bytes=2**30, file_cap=5)
    growth.start()
    walks = []
    original = disk_growth.walk
    monkeypatch.setattr(disk_growth, "walk", lambda root: walks.append(root) or original(root))
    (tmp_path / "junk").mkdir()
    for i in range(5):
        (tmp_path / "junk" / f"{i}.txt").write_text("x")
        (tmp_path / ".git" / f"{i}").write_text("labtui's own: not counted")
    # Six entries (a folder and five files): six more inodes in use call a walk (the real count
    # moves with every other writer on this filesystem, so it is set here).
    used, inodes = growth._fs_baseline
    monkeypatch.setattr(disk_growth, "_fs_used", lambda root: (used, inodes + 6))
    assert growth.filled()
    # A walk is repeated on a filled filesystem once ten of its own durations have passed: the
    # baseline walk cost nothing here (on a loaded machine it may take long enough to wait on).
    growth.last.seconds = 0.0
    assert growth.over_cap() == "files" and growth.created() == 6 and len(walks) == 1
    assert sorted(Path(p).name for p, _ in growth.new_files()) == [f"{i}.txt" for i in range(5)]
    assert not growth.existed(str(tmp_path / "junk")) and growth.existed(str(tmp_path))


def test_a_file_over_the_commit_size_anywhere_stays_out_of_git(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text(".labtui/")
    experiment(
        project,
        """
        with open("weights.bin", "wb") as f:
            f.write(os.urandom(2 * 2**20))
        with open(os.path.join(out, "ckpt.bin"), "wb") as f:
            f.write(os.urandom(2 * 2**20))
        """,
    )
    from labtui.core.settings.sections import ExperimentSection

    emit = Recorder()
    result = run(project, emit, experiment=ExperimentSection(commit_file_mb=1))
    assert result.ok, result.problem
    assert record(project)["not_committed_elsewhere"] == ["weights.bin"]
    assert "/weights.bin" in (project / ".gitignore").read_text().splitlines()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "weights.bin" not in status and "ckpt.bin" not in status
    assert (project / "weights.bin").exists()
    notice = [n for n in emit.notices() if "commit_file_mb" in n]
    assert notice and "run_1/ckpt.bin" in notice[0] and "weights.bin" in notice[0]
    assert ignore_large_project_files(project, 1) == [], "listed once"


def test_outside_git_nothing_is_listed(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 2 * 2**20)
    assert ignore_large_project_files(tmp_path, 1) == []


# -- the stall watchdog --------------------------------------------------------------------


def test_an_idle_run_is_flagged_then_cleared_when_it_resumes(project: Path) -> None:
    experiment(
        project,
        """
        print("working", flush=True)
        while not os.path.exists("resume"):
            time.sleep(0.05)  # a few wake-ups a second cost no measurable CPU
        print("resumed", flush=True)
        while not os.path.exists("cleared"):
            time.sleep(0.05)
        """,
    )
    emit = Recorder()

    def emit_and_resume(event: Event) -> None:
        emit(event)
        if isinstance(event, Notice) and "looks idle" in event.text:
            (project / "resume").touch()
        if isinstance(event, Notice) and "active again" in event.text:
            (project / "cleared").touch()

    result = run(project, emit_and_resume, stall_s=0.5, stall_stop_s=0)
    assert result.ok, result.problem
    idle = [n for n in emit.notices() if "looks idle" in n]
    assert idle and "[limits] stall_s = 0.5" in idle[0] and "stall_stop_s = 0" in idle[0]
    assert "run_1 is active again" in emit.notices()
    logged = [e.text for e in emit.events if isinstance(e, LogLine) and e.stream == "labtui"]
    assert any("looks idle" in text for text in logged), "the logs pane shows it too"


def test_the_stall_settings_come_from_limits(tmp_path: Path) -> None:
    config = Config()
    assert config.limits.stall_s == 600 and config.limits.stall_stop_s == 600
    settings = configured(config)
    assert settings["stall_s"] == 600 and settings["stall_stop_s"] == 600
    assert config.sandbox.project_cap_mb == 20480


def test_gpu_activity_keeps_an_otherwise_idle_run_alive(project: Path) -> None:
    experiment(project, "time.sleep(1.5)")
    busy = Watch(stall_s=0.3, stall_stop_s=0.3, gpu_busy=lambda: True)
    emit = Recorder()
    result = run_process(
        [PYTHON, "experiment.py", "--out_dir=run_1"],
        cwd=project,
        timeout_s=30,
        run_id="run_1",
        emit=emit,
        stage="experiments",
        sandbox=limits(project),
        watch=busy,
    )
    assert result.returncode == 0 and not result.limit_hit
    assert not [n for n in emit.notices() if "idle" in n]


def test_no_watch_no_stall_checks(project: Path) -> None:
    experiment(project, "time.sleep(0.5)")
    emit = Recorder()
    result = run(project, emit)  # stall_s = 0: off
    assert result.ok and not emit.notices()


def test_a_run_process_without_sandbox_is_still_watched_for_memory(project: Path) -> None:
    experiment(project, "time.sleep(0.3)")
    result = run_process(
        [PYTHON, "experiment.py", "--out_dir=run_1"],
        cwd=project,
        timeout_s=30,
        run_id="run_1",
        emit=Recorder(),
        stage="experiments",
        watch=Watch(),
    )
    assert result.returncode == 0 and result.peak_rss_mb > 1


def test_the_gpu_reading_asks_the_leased_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_gpu import H100, fake_nvml

    devices = [{**H100, "util": 0}, {**H100, "util": 55}]
    nvml = fake_nvml(devices)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    with gpu.gpu_activity(()) as none:
        assert none is None  # a run without GPUs: nothing to ask
    with gpu.gpu_activity((0,)) as idle, gpu.gpu_activity((0, 1)) as busy:
        assert idle is not None and busy is not None
        assert not idle() and busy()
        devices[0]["util"] = 3
        assert idle()
    assert nvml.calls["init"] == nvml.calls["shutdown"] == 2
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with gpu.gpu_activity((0,)) as absent:
        assert absent is None  # no NVML: the watchdog goes by output and CPU alone
