"""core.runs.runner, core.machine.processes, core.runs.plot_run: streaming, timeouts that kill whole process groups, run records, plot outputs."""

from __future__ import annotations

import json
import os
import platform
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.waiting import wait_until

from labtui.core.errors import LabtuiError
from labtui.core.events import Event, LogLine, MetricsReported, RunFinished
from labtui.core.machine import process_group, processes
from labtui.core.machine.processes import run_process
from labtui.core.runs.plot_run import run_plot
from labtui.core.runs.run_setup import prepare_run
from labtui.core.runs.runner import run_experiment
from labtui.core.settings.sections import ClusterSection, ExperimentSection
from labtui.core.settings.templates import copy_template

PYTHON = sys.executable
MOONS = Path(__file__).resolve().parents[2] / "templates" / "moons"


class Recorder:
    """An emit callback that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def lines(self, stream: str) -> list[str]:
        """Every line of a stream (a LogLine carries the lines of one pipe read)."""
        events = [e for e in self.events if isinstance(e, LogLine) and e.stream == stream]
        return [line for e in events for line in e.text.split("\n")]

    def of_type(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def process_running(pid: int) -> bool:
    """True while pid exists and is not a zombie (an exited child not yet reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


# -- run_process ---------------------------------------------------------------------------


def test_the_metrics_a_run_prints_are_read_by_the_engine_and_emitted(tmp_path: Path) -> None:
    """Headless mode and the journal see the metrics too, not only the logs pane."""
    write(
        tmp_path / "train.py",
        """
        import sys
        print("loading data")
        for epoch in (1, 2):
            print(f"epoch {epoch}/2 train_loss {0.5 / epoch:.2f}", file=sys.stderr)
        """,
    )
    emit = Recorder()
    run_process([PYTHON, "train.py"], cwd=tmp_path, timeout_s=30, run_id="r3", emit=emit, stage="x")
    points = [p for e in emit.of_type(MetricsReported) for p in e.points]
    assert [(p["step"], p["values"]) for p in points] == [
        (1.0, {"train_loss": 0.5}),
        (2.0, {"train_loss": 0.25}),
    ]
    assert all(e.run_id == "r3" for e in emit.of_type(MetricsReported))
    reported = emit.of_type(MetricsReported)[0]
    log = emit.events[emit.events.index(reported) - 1]
    assert isinstance(log, LogLine) and "train_loss" in log.text  # right after its lines


def test_streams_stdout_and_stderr_lines_in_order(tmp_path: Path) -> None:
    write(
        tmp_path / "talk.py",
        """
        import sys
        for i in range(5):
            print(f"out {i}")
            print(f"err {i}", file=sys.stderr)
        print("progress 1\\rprogress 2")
        """,
    )
    emit = Recorder()
    result = run_process(
        [PYTHON, "talk.py"], cwd=tmp_path, timeout_s=30, run_id="r7", emit=emit, stage="plots"
    )
    assert result.returncode == 0 and not result.timed_out
    assert emit.lines("stdout") == [f"out {i}" for i in range(5)] + ["progress 1", "progress 2"]
    assert emit.lines("stderr") == [f"err {i}" for i in range(5)]
    assert all(e.stage == "plots" and e.run_id == "r7" for e in emit.of_type(LogLine))
    assert result.stdout_tail.endswith("out 4\nprogress 1\nprogress 2")
    assert result.stderr_tail.endswith("err 4")


def test_child_sees_unbuffered_python_and_extra_env(tmp_path: Path) -> None:
    write(tmp_path / "env.py", "import os; print(os.environ['PYTHONUNBUFFERED'], os.environ['X'])")
    result = run_process(
        [PYTHON, "env.py"],
        cwd=tmp_path,
        timeout_s=30,
        run_id="r",
        emit=Recorder(),
        stage="s",
        env={"X": "42"},
    )
    assert result.stdout_tail == "1 42"


def test_tails_are_bounded(tmp_path: Path) -> None:
    write(tmp_path / "chatty.py", "for i in range(20000): print('line', i)")
    emit = Recorder()
    result = run_process(
        [PYTHON, "chatty.py"],
        cwd=tmp_path,
        timeout_s=30,
        run_id="r",
        emit=emit,
        stage="s",
        tail_chars=100,
    )
    assert len(emit.lines("stdout")) == 20000
    assert len(result.stdout_tail) <= 100
    assert result.stdout_tail.endswith("line 19999")


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    write(
        tmp_path / "spawn.py",
        """
        import subprocess, time
        child = subprocess.Popen(["sleep", "120"])
        print("grandchild", child.pid, flush=True)
        time.sleep(120)
        """,
    )
    emit = Recorder()
    result = run_process(
        [PYTHON, "spawn.py"], cwd=tmp_path, timeout_s=1.5, run_id="r", emit=emit, stage="s"
    )
    assert result.timed_out  # the script alone takes 120 s: the timeout ended it
    assert result.returncode != 0
    grandchild = int(emit.lines("stdout")[0].split()[1])
    wait_until(lambda: not process_running(grandchild), "the grandchild's end")


def test_a_child_ignoring_sigterm_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process_group, "KILL_GRACE_S", 0.3)
    write(
        tmp_path / "stubborn.py",
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(120)
        """,
    )
    result = run_process(
        [PYTHON, "stubborn.py"], cwd=tmp_path, timeout_s=1, run_id="r", emit=Recorder(), stage="s"
    )
    assert result.timed_out and result.returncode == -9  # SIGKILL, after SIGTERM did nothing


def test_leftover_grandchild_holding_the_pipes_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "DRAIN_AFTER_EXIT_S", 0.3)
    write(
        tmp_path / "leave.py",
        """
        import subprocess
        child = subprocess.Popen(["sh", "-c", "sleep 120 && touch waited_out"])  # holds the pipes
        print("grandchild", child.pid, flush=True)
        """,
    )
    emit = Recorder()
    result = run_process(
        [PYTHON, "leave.py"], cwd=tmp_path, timeout_s=30, run_id="r", emit=emit, stage="s"
    )
    assert result.returncode == 0 and not result.timed_out
    assert not process_running(int(emit.lines("stdout")[0].split()[1]))
    assert not (tmp_path / "waited_out").exists(), "run_process waited for the grandchild's end"


def test_missing_interpreter_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LabtuiError) as caught:
        run_process(
            [str(tmp_path / "no-such-python"), "x.py"],
            cwd=tmp_path,
            timeout_s=5,
            run_id="r",
            emit=Recorder(),
            stage="s",
        )
    message = str(caught.value)
    assert "no-such-python" in message and "[experiment] python" in message
    with pytest.raises(LabtuiError, match=r"\[experiment\] python"):
        run_experiment(
            tmp_path, "run_1", python="no-such-python-3.99", timeout_s=5, emit=Recorder(), stage="s"
        )


def test_a_failing_subscriber_surfaces_without_hanging_the_child(tmp_path: Path) -> None:
    write(tmp_path / "many.py", "for i in range(50000): print('x' * 80)\nopen('done', 'w')")

    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    with pytest.raises(RuntimeError, match="subscriber bug"):
        run_process(
            [PYTHON, "many.py"], cwd=tmp_path, timeout_s=30, run_id="r", emit=broken, stage="s"
        )
    assert (tmp_path / "done").exists(), "the child blocked on a full pipe (until the timeout)"


# -- run_experiment ------------------------------------------------------------------------


@pytest.fixture
def moons(tmp_path: Path) -> Path:
    root = tmp_path / "moons"
    copy_template(MOONS, root)
    return root


def test_run_experiment_on_the_moons_template(moons: Path) -> None:
    emit = Recorder()
    result = run_experiment(
        moons, "run_0", python=PYTHON, timeout_s=60, emit=emit, stage="experiments", commit="abc123"
    )
    assert result.ok, result.problem
    assert result.returncode == 0 and result.problem == ""
    assert set(result.means) == {"moons"}
    assert 0.5 < result.means["moons"]["test_accuracy_mean"] <= 1.0
    assert result.final_info is not None and result.final_info.stderrs()["moons"]
    assert (moons / "run_0" / "final_info.json").is_file()
    assert any("epoch" in line for line in emit.lines("stdout"))

    record = json.loads((moons / "run_0" / "labtui_run.json").read_text())
    assert record["argv"] == [PYTHON, "experiment.py", "--out_dir=run_0"]
    assert record["cwd"] == str(moons.resolve())
    assert record["interpreter"] == PYTHON
    assert record["commit"] == "abc123"
    assert record["returncode"] == 0 and record["timed_out"] is False
    assert record["wall_s"] > 0 and record["started_at"]
    assert "CUDA_VISIBLE_DEVICES" in record
    environment = record["environment"]
    assert environment["python_version"] == platform.python_version()
    assert "numpy" in {name.lower() for name in environment["packages"]}

    finished = emit.of_type(RunFinished)
    assert len(finished) == 1
    assert finished[0].run_id == "run_0" and finished[0].stage == "experiments"
    assert finished[0].means == result.means and finished[0].error_tail == ""


def test_nonzero_exit_names_the_code_and_last_stderr_line(tmp_path: Path) -> None:
    write(
        tmp_path / "experiment.py",
        """
        import sys
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ValueError: shapes (3,) and (4,) not aligned", file=sys.stderr)
        sys.exit(3)
        """,
    )
    emit = Recorder()
    result = run_experiment(tmp_path, "run_1", python=PYTHON, timeout_s=30, emit=emit, stage="s")
    assert not result.ok
    assert "exit code 3" in result.problem
    assert "ValueError: shapes (3,) and (4,) not aligned" in result.problem
    assert result.final_info is None and result.means == {}
    # The reproducibility record is written for failed runs too.
    record = json.loads((tmp_path / "run_1" / "labtui_run.json").read_text())
    assert record["returncode"] == 3 and record["problem"] == result.problem
    (finished,) = emit.of_type(RunFinished)
    assert finished.returncode == 3 and "ValueError" in finished.error_tail


def test_timeout_problem_says_so(tmp_path: Path) -> None:
    write(tmp_path / "experiment.py", "import time; time.sleep(60)")
    result = run_experiment(
        tmp_path, "run_1", python=PYTHON, timeout_s=0.5, emit=Recorder(), stage="s"
    )
    assert result.timed_out and not result.ok
    assert "timed out after 0.5 s" in result.problem


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"moons": {"accuracy": 0.9}}', 'entry "moons" has no "means"'),
        ("{not json", "is not valid JSON"),
        (None, "wrote no run_1/final_info.json"),
    ],
)
def test_bad_final_info_is_a_problem(tmp_path: Path, body: str | None, expected: str) -> None:
    writer = (
        "" if body is None else f"open(os.path.join(out, 'final_info.json'), 'w').write({body!r})"
    )
    write(
        tmp_path / "experiment.py",
        f"""
        import argparse, os
        parser = argparse.ArgumentParser()
        parser.add_argument("--out_dir", default="run_0")
        out = parser.parse_args().out_dir
        os.makedirs(out, exist_ok=True)
        {writer}
        """,
    )
    emit = Recorder()
    result = run_experiment(tmp_path, "run_1", python=PYTHON, timeout_s=30, emit=emit, stage="s")
    assert result.returncode == 0
    assert not result.ok
    assert expected in result.problem
    (finished,) = emit.of_type(RunFinished)
    assert expected in finished.error_tail


def test_stale_run_folder_is_removed_first(tmp_path: Path) -> None:
    write(tmp_path / "run_2" / "final_info.json", '{"old": {"means": {"x": 1}}}')
    write(tmp_path / "experiment.py", "raise SystemExit(1)")
    result = run_experiment(
        tmp_path, "run_2", python=PYTHON, timeout_s=30, emit=Recorder(), stage="s"
    )
    assert not result.ok
    assert not (tmp_path / "run_2" / "final_info.json").exists()
    assert (tmp_path / "run_2" / "labtui_run.json").exists()


@pytest.mark.parametrize("bad", ["", "..", "../escape", "a/b"])
def test_run_id_must_be_a_plain_folder_name(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        run_experiment(tmp_path, bad, python=PYTHON, timeout_s=5, emit=Recorder(), stage="s")


# -- run_plot ------------------------------------------------------------------------------


def test_run_plot_returns_new_and_rewritten_pngs(tmp_path: Path) -> None:
    old = write(tmp_path / "untouched.png", "old")
    rewritten = write(tmp_path / "train_loss.png", "old")
    an_hour_ago = time.time() - 3600
    for path in (old, rewritten):
        os.utime(path, (an_hour_ago, an_hour_ago))
    write(
        tmp_path / "plot.py",
        """
        import os
        assert os.environ["MPLBACKEND"] == "Agg"
        open("train_loss.png", "w").write("new")
        open("test_accuracy.png", "w").write("new")
        os.makedirs("figures", exist_ok=True)
        open("figures/extra.png", "w").write("new")
        open("notes.txt", "w").write("not a figure")
        """,
    )
    emit = Recorder()
    result, pngs = run_plot(tmp_path, python=PYTHON, timeout_s=30, emit=emit, stage="plots")
    assert result.returncode == 0
    assert pngs == ["figures/extra.png", "test_accuracy.png", "train_loss.png"]


def test_a_flood_of_lines_arrives_in_few_events_with_every_line_intact(tmp_path: Path) -> None:
    write(
        tmp_path / "flood.py",
        """
        import sys
        for i in range(50_000):
            sys.stdout.write(f"step {i}\\r\\n" if i % 2 else f"step {i}\\n")
        sys.stdout.write("x" * 40_000 + "\\n")
        sys.stdout.write("no newline at the end")
        """,
    )
    emit = Recorder()
    run_process([PYTHON, "flood.py"], cwd=tmp_path, timeout_s=60, run_id="r", emit=emit, stage="s")
    lines = emit.lines("stdout")
    assert lines[:50_000] == [f"step {i}" for i in range(50_000)], "\\r\\n is one line break"
    assert "".join(lines[50_000:-1]) == "x" * 40_000, "a long line is cut, nothing lost"
    assert max(len(line) for line in lines) <= 16_384
    assert lines[-1] == "no newline at the end"
    assert len(emit.of_type(LogLine)) < 1000, "one event per pipe read, not per line"


def test_runs_never_see_keys_or_tokens(tmp_path: Path, monkeypatch) -> None:
    # The environment is an allowlist (core/machine/run_env.py): HF_TOKEN passes only when
    # [sandbox] pass_env names it (tests/machine/test_sandbox_allowlist.py).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak-0123456789")
    monkeypatch.setenv("LABTUI_API_KEY", "sk-nor-this-one-0123456789")
    monkeypatch.setenv("HF_TOKEN", "hf_not_asked_for")
    write(
        tmp_path / "env.py",
        "import os; print(sorted(k for k in os.environ if 'KEY' in k or k == 'HF_TOKEN'))",
    )
    emit = Recorder()
    run_process([PYTHON, "env.py"], cwd=tmp_path, timeout_s=30, run_id="r", emit=emit, stage="s")
    assert emit.lines("stdout") == ["[]"]


# -- a search's run: its budget and its seed ------------------------------------------------------

HONOURS_NOTHING = """\
import json, os, sys, time
out = sys.argv[-1].split("=", 1)[1]
os.makedirs(out, exist_ok=True)
print("budget", os.environ.get("LABTUI_RUN_BUDGET_S"), "seed", os.environ.get("LABTUI_SEED"), flush=True)
if os.path.exists("write_first"):
    with open(os.path.join(out, "final_info.json"), "w") as f:
        json.dump({"toy": {"means": {"acc": 0.5}}}, f)
time.sleep(600)
"""


@pytest.mark.parametrize("writes_first", [True, False])
def test_a_run_past_its_budget_is_stopped_and_judged_on_what_it_wrote(
    tmp_path, monkeypatch, writes_first
):
    from labtui.core.events import Notice
    from labtui.core.settings.contract import RunTerms

    write(tmp_path / "experiment.py", HONOURS_NOTHING)
    if writes_first:
        write(tmp_path / "write_first", "")
    events = Recorder()
    result = run_experiment(
        tmp_path,
        "run_3",
        python=PYTHON,
        timeout_s=600,
        emit=events,
        stage="experiments",
        sandbox=None,
        terms=RunTerms(budget_s=0.5, seed=2),
        overrun_s=0.5,
    )
    assert "budget 0.5 seed 2" in events.lines("stdout")
    record = json.loads((tmp_path / "run_3" / "labtui_run.json").read_text())
    assert (record["budget_s"], record["seed"], record["timeout_s"]) == (0.5, 2, 1.0)
    if writes_first:
        assert result.ok and result.over_budget and result.means == {"toy": {"acc": 0.5}}
        assert record["over_budget"] is True
        said = [e.text for e in events.of_type(Notice)]
        assert said == [
            "run_3 reached its budget of 0.5 s and was stopped after 1 s; it is judged on the "
            "results it had written"
        ]
    else:
        assert not result.ok and not result.over_budget
        assert result.problem == (
            "run_3 ran past its budget of 0.5 s and was stopped after 1 s without valid "
            "results: the code must stop training by $LABTUI_RUN_BUDGET_S seconds and write them"
        )


def test_the_command_line_may_name_the_budget_and_the_seed(tmp_path):
    from labtui.core.settings.contract import RunTerms, run_argv
    from labtui.core.settings.sections import ExperimentSection

    experiment = ExperimentSection(
        command="{python} train.py --out {out_dir} --max-seconds {budget_s} --seed {seed}"
    )
    argv = run_argv(experiment, "py", "run_4", terms=RunTerms(budget_s=300, seed=2))
    assert argv == ["py", "train.py", "--out", "run_4", "--max-seconds", "300", "--seed", "2"]
    plain = run_argv(experiment, "py", "run_1", timeout_s=1800)
    assert plain[-3:] == ["1800", "--seed", "0"], "without a search: the run's timeout, seed 0"
    assert RunTerms().env() == {} and RunTerms(120.5, 0).env() == {"LABTUI_RUN_BUDGET_S": "120.5"}


# -- [experiment] env ------------------------------------------------------------------------------

PRINTS_ITS_ENV = """\
import json, os
out = os.environ["LABTUI_OUT_DIR"]
os.makedirs(out, exist_ok=True)
print("env", os.environ["WANDB_MODE"], os.environ["WANDB_DIR"], os.environ["LABTUI_RUN_ID"])
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({"toy": {"means": {"acc": 1.0}}}, f)
"""


def test_experiment_env_reaches_the_run_and_the_smoke_run_with_its_folder_filled_in(tmp_path):
    write(tmp_path / "experiment.py", PRINTS_ITS_ENV)
    experiment = ExperimentSection(
        command="{python} experiment.py",
        smoke_command="{python} experiment.py --smoke",
        env={"WANDB_MODE": "offline", "WANDB_DIR": "{out_dir}/tracking"},
    )
    for run_id, smoke in (("run_1", False), ("run_smoke", True)):
        emit = Recorder()
        result = run_experiment(
            tmp_path, run_id, python=PYTHON, timeout_s=60, emit=emit, stage="s",
            experiment=experiment, smoke=smoke,
        )  # fmt: skip
        assert result.ok, result.problem
        folder = tmp_path.resolve() / run_id
        assert f"env offline {folder}/tracking {run_id}" in emit.lines("stdout")


def test_a_slurm_job_gets_the_env_and_labtuis_own_variables_win(tmp_path):
    # labtui.toml cannot set LABTUI_* (the section refuses it); were one set, labtui's wins
    fields = {**ExperimentSection().model_dump(), "env": {"LABTUI_RUN_ID": "x", "W": "{out_dir}"}}
    ready = prepare_run(
        tmp_path, "run_2", python=PYTHON, timeout_s=60, emit=Recorder(), stage="s", commit="c1",
        sandbox=None, experiment=ExperimentSection.model_construct(**fields),
        cluster=ClusterSection(backend="slurm"),
    )  # fmt: skip
    assert ready.job is not None
    env = ready.job.node_run.env
    assert env["W"] == str(tmp_path.resolve() / "run_2") and env["LABTUI_RUN_ID"] == "run_2"


# -- [experiment] prepare --------------------------------------------------------------------------

NEEDS_ITS_FOLDERS = """\
import json, os
out = os.environ["LABTUI_OUT_DIR"]
with open("outputs/models/note.txt", "w") as f:  # a folder the README's set-up step makes
    f.write("saved")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "final_info.json"), "w") as f:
    json.dump({"toy": {"means": {"acc": 1.0}}}, f)
"""


def test_prepare_runs_before_each_run_and_a_failing_step_fails_it_with_its_message(tmp_path):
    write(tmp_path / "experiment.py", NEEDS_ITS_FOLDERS)
    write(tmp_path / "create_output_dirs.sh", "mkdir -p outputs/models\n")
    experiment = ExperimentSection(
        command="{python} experiment.py", prepare=["bash create_output_dirs.sh"]
    )
    emit = Recorder()
    result = run_experiment(
        tmp_path, "run_1", python=PYTHON, timeout_s=60, emit=emit, stage="s", experiment=experiment
    )
    assert result.ok, result.problem
    record = json.loads((tmp_path / "run_1/labtui_run.json").read_text())
    assert record["argv"][1:] == ["experiment.py"], "the run's own command line is recorded"

    broken = experiment.model_copy(update={"prepare": ["bash missing_step.sh"]})
    failed = run_experiment(
        tmp_path, "run_2", python=PYTHON, timeout_s=60, emit=Recorder(), stage="s",
        experiment=broken,
    )  # fmt: skip
    assert not failed.ok and "missing_step.sh" in failed.problem
