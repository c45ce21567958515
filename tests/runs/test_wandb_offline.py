"""W&B runs read as [results] source = "wandb": a real offline run of the wandb installed here
(0.31: no summary file, the numbers only in run-<id>.wandb), a .wandb file wandb 0.17.9 wrote
(tests/recorded/wandb_0.17.9/), and the bad cases (no run, a summary of W&B's keys only, a file
cut short or corrupt, a key never logged, wandb missing), each a sentence naming the file and the
fix. The real run goes through run_experiment with [experiment] env, as a project's would."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from labtui.core.runs.result_sources import ResultsRead, available_metrics, read_results
from labtui.core.runs.runner import RunResult, run_experiment
from labtui.core.runs.wandb_offline import read_offline_run
from labtui.core.settings.sections import ExperimentSection, ResultsSection

RECORDED_017 = Path(__file__).resolve().parents[1] / "recorded" / "wandb_0.17.9"
METRICS = {"validation/accuracy": "higher", "train/loss": "lower"}
STEPS = 300
# The config's 70,000 characters make a record that spans three 32 KiB blocks (first, middle
# and last pieces); 300 steps of history and summary records cross several block ends.
TRAIN = f"""\
import wandb

run = wandb.init(project="labtui-test", config={{"notes": "x" * 70000}})
for step in range({STEPS}):
    accuracy = 0.9 if step == 150 else 0.5 + step / 1000
    loss = 0.5 if step == {STEPS - 1} else 1 / (step + 1)
    wandb.log({{"validation/accuracy": accuracy, "train/loss": loss, "val": {{"acc": 0.25}}}})
run.summary["best_acc"] = 0.77
run.finish()
"""
LAST = {"validation/accuracy": 0.5 + (STEPS - 1) / 1000, "train/loss": 0.5}
BEST = {"validation/accuracy": 0.9, "train/loss": 1 / (STEPS - 1)}


def _settings(reduce: str = "last", metrics: dict[str, str] = METRICS, **fields) -> ResultsSection:
    return ResultsSection(source="wandb", metrics=metrics, reduce=reduce, **fields)


def _read(
    project: Path, settings: ResultsSection, run_id: str = "run_0", **keywords
) -> ResultsRead:
    return read_results(settings, root=project, run_dir=project / run_id, **keywords)


def _means(read: ResultsRead) -> dict[str, float]:
    assert read.final_info is not None, read.problem
    return read.final_info.means()["main"]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    """A project whose baseline logs to W&B offline (wandb 0.31 here), run once per session: the
    project's [experiment] env gives WANDB_MODE, WANDB_DIR = {out_dir} and a HOME of the run's
    own, so nothing touches ~/.config."""
    project = tmp_path_factory.mktemp("wandb") / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    experiment = ExperimentSection(
        command="{python} train.py",
        edit=["train.py"],
        env={
            "WANDB_MODE": "offline",
            "WANDB_DIR": "{out_dir}",
            "HOME": "{out_dir}/home",
            "WANDB_SILENT": "true",
        },
    )
    result = run_experiment(
        project, "run_0", python=sys.executable, timeout_s=120, emit=lambda event: None,
        stage="experiments", experiment=experiment, results=_settings(),
    )  # fmt: skip
    return project, result


def _wandb_file(project: Path) -> Path:
    (found,) = (project / "run_0" / "wandb").glob("offline-run-*/run-*.wandb")
    return found


# -- a real offline run -------------------------------------------------------------------------


def test_a_real_offline_run_gives_the_baseline_its_numbers(real_run) -> None:
    project, result = real_run
    assert result.ok, f"{result.problem}\n{result.stderr_tail}"
    assert result.means == {"main": LAST}
    # wandb 0.31 writes no summary file offline: the numbers came from the .wandb file
    assert not list((project / "run_0" / "wandb").glob("*/files/wandb-summary.json"))
    assert (project / "run_0" / "wandb" / "latest-run").is_symlink()


@pytest.mark.parametrize(("reduce", "expected"), [("last", LAST), ("best", BEST)])
def test_reduce_works_on_the_logged_series(real_run, reduce: str, expected) -> None:
    project, _ = real_run
    read = _read(project, _settings(reduce))
    assert _means(read) == expected and read.problem == ""
    assert read.files == [_wandb_file(project)]


def test_min_max_and_mean_of_the_series(real_run) -> None:
    project, _ = real_run
    loss = {"train/loss": "lower"}
    losses = [1 / (step + 1) for step in range(STEPS - 1)] + [0.5]
    assert _means(_read(project, _settings("max", loss))) == {"train/loss": 1.0}
    assert _means(_read(project, _settings("min", loss))) == {"train/loss": min(losses)}
    mean = _means(_read(project, _settings("mean", loss)))["train/loss"]
    assert mean == pytest.approx(sum(losses) / STEPS)


def test_history_and_summary_keep_the_names_the_script_wrote(real_run) -> None:
    project, _ = real_run
    run = read_offline_run(_wandb_file(project))
    assert run.cut == "" and read_offline_run(_wandb_file(project).parent) == run
    assert set(run.history) == {"validation/accuracy", "train/loss", "val.acc"}
    assert [step for step, _ in run.history["train/loss"]] == list(range(STEPS))
    assert run.summary == {**LAST, "val.acc": 0.25, "best_acc": 0.77}
    assert _wandb_file(project).stat().st_size > 3 * 32 * 1024
    # a logged dict's key by either separator; a summary-only key as one value
    nested = _settings(metrics={"val.acc": "higher", "val/acc": "higher", "best_acc": "higher"})
    assert _means(_read(project, nested)) == {"val.acc": 0.25, "val/acc": 0.25, "best_acc": 0.77}
    assert available_metrics("wandb", project / "run_0" / "wandb" / "latest-run") == run.summary


def test_a_key_the_run_never_logged_is_named_with_the_keys_it_has(real_run) -> None:
    project, _ = real_run
    read = _read(project, _settings(metrics={"validation/acc": "higher"}))
    where = _wandb_file(project).relative_to(project).as_posix()
    assert read.final_info is None
    assert read.problem.startswith(
        f'no key "validation/acc" in {where} (did you mean "validation/accuracy"? keys it '
        "logged: best_acc, train/loss, val.acc, validation/accuracy); fix [results] metrics"
    )


def test_a_run_written_before_this_one_started_does_not_count(real_run) -> None:
    project, _ = real_run
    read = _read(project, _settings(), since=_wandb_file(project).stat().st_mtime + 60)
    assert read.problem.startswith(
        "every W&B run in run_0/wandb or wandb was written before this run started; give the "
        'run WANDB_DIR = "{out_dir}"'
    )


def test_a_file_cut_short_gives_what_is_whole(real_run, tmp_path: Path) -> None:
    project, _ = real_run
    data = _wandb_file(project).read_bytes()
    cut = tmp_path / "run-cut.wandb"
    inside = data.index(b"train/loss", len(data) // 2) + 3  # within a record's data
    cut.write_bytes(data[:inside])
    run = read_offline_run(cut)
    assert "the file ends inside a record" in run.cut
    steps = len(run.history["train/loss"])
    assert 0 < steps < STEPS
    # wandb 0.31 writes a step's summary update just before its history record
    assert run.summary["train/loss"] in (1 / steps, 1 / (steps + 1))
    read = _read(tmp_path, _settings(path="run-cut.wandb", metrics={"best_acc": "higher"}))
    assert read.problem.startswith(
        f'no key "best_acc" in run-cut.wandb (read up to where {run.cut}'
    )


def test_a_corrupt_record_ends_the_reading_there(real_run, tmp_path: Path) -> None:
    project, _ = real_run
    data = bytearray(_wandb_file(project).read_bytes())
    data[data.index(b"train/loss", len(data) // 2) + 3] ^= 0xFF  # a byte of a record's data
    broken = tmp_path / "run-broken.wandb"
    broken.write_bytes(bytes(data))
    run = read_offline_run(broken)
    assert "fails its checksum" in run.cut
    assert 0 < len(run.history["train/loss"]) < STEPS


# -- a file wandb 0.17.9 wrote --------------------------------------------------------------------


@pytest.fixture
def run_017(tmp_path: Path) -> Path:
    """A project whose run_0 holds wandb 0.17.9's offline run as wandb left it: a summary file
    of W&B's own keys only, and the numbers in the .wandb file."""
    folder = tmp_path / "run_0" / "wandb" / "offline-run-20261128_215753-p234uvwb"
    (folder / "files").mkdir(parents=True)
    shutil.copy(RECORDED_017 / "run-p234uvwb.wandb", folder)
    shutil.copy(RECORDED_017 / "wandb-summary.json", folder / "files")
    return tmp_path


@pytest.mark.parametrize(
    ("reduce", "expected"),
    [
        ("last", {"validation/accuracy": 0.7, "train/loss": 0.25}),
        ("best", {"validation/accuracy": 0.9, "train/loss": 0.25}),
    ],
)
def test_a_wandb_017_offline_run_is_read(run_017: Path, reduce: str, expected) -> None:
    read = _read(run_017, _settings(reduce))
    assert _means(read) == expected and read.problem == ""
    assert [path.name for path in read.files] == ["run-p234uvwb.wandb"]


def test_wandb_017_keys_nested_dicts_as_json_under_one_key(run_017: Path) -> None:
    run = read_offline_run(RECORDED_017 / "run-p234uvwb.wandb")
    assert run.history["val.acc"] == [(0, 0.25), (1, 0.45), (2, 0.35)]
    assert run.summary == {
        "validation/accuracy": 0.7, "train/loss": 0.25, "val.acc": 0.35, "best_acc": 0.9
    }  # fmt: skip


def test_a_summary_with_numbers_serves_last_and_the_history_the_rest(run_017: Path) -> None:
    summary = next(run_017.glob("run_0/wandb/*/files/wandb-summary.json"))
    summary.write_text('{"validation/accuracy": 0.71, "train/loss": 0.2}', encoding="utf-8")
    last = _read(run_017, _settings("last"))
    assert _means(last) == {"validation/accuracy": 0.71, "train/loss": 0.2}
    assert last.files == [summary]
    best = _read(run_017, _settings("best"))
    assert _means(best) == {"validation/accuracy": 0.9, "train/loss": 0.25}


def test_a_path_may_name_the_run_folder_or_the_summary_file(run_017: Path) -> None:
    expected = {"validation/accuracy": 0.7, "train/loss": 0.25}
    for path in ("{out_dir}/wandb", "{out_dir}/wandb/offline-run-20261128_215753-p234uvwb"):
        assert _means(_read(run_017, _settings(path=path))) == expected
    summary = "{out_dir}/wandb/*/files/wandb-summary.json"  # W&B's keys only: the .wandb beside it
    assert _means(_read(run_017, _settings(path=summary))) == expected


# -- nothing to read ------------------------------------------------------------------------------


def test_no_wandb_run_at_all(tmp_path: Path) -> None:
    (tmp_path / "run_0").mkdir()
    read = _read(tmp_path, _settings())
    assert read.final_info is None
    assert read.problem.startswith(
        "no W&B run folder (offline-run-*/ or run-*/ holding run-*.wandb or "
        "files/wandb-summary.json) in run_0/wandb or wandb: the run never called wandb.init, or "
        'wrote elsewhere; give the run WANDB_DIR = "{out_dir}"'
    )


def test_a_path_naming_a_folder_without_runs_names_that_folder(tmp_path: Path) -> None:
    (tmp_path / "run_0" / "logs").mkdir(parents=True)
    read = _read(tmp_path, _settings(path="{out_dir}/logs"))
    assert "files/wandb-summary.json) in run_0/logs: the run never called" in read.problem


def test_a_summary_of_wandbs_own_keys_and_no_wandb_file(run_017: Path) -> None:
    next(run_017.glob("run_0/wandb/*/run-*.wandb")).unlink()
    read = _read(run_017, _settings())
    assert read.problem.startswith(
        "run_0/wandb/offline-run-20261128_215753-p234uvwb/files/wandb-summary.json holds no "
        "numbers (only W&B's own keys, such as _wandb.runtime"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "run-x.wandb is empty or cut short: the run wrote no W&B records"),
        (b"not a W&B file", "run-x.wandb is not a W&B run file (no :W&B header)"),
    ],
)
def test_a_file_that_is_no_wandb_run(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "run-x.wandb").write_bytes(content)
    read = _read(tmp_path, _settings(path="run-x.wandb"))
    assert read.problem.startswith(expected)


def test_without_wandb_installed_the_fix_is_to_install_it(
    run_017: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("wandb", "wandb.proto", "wandb.proto.wandb_internal_pb2"):
        monkeypatch.setitem(sys.modules, module, None)  # None: "import halted", an ImportError
    read = _read(run_017, _settings())
    assert read.final_info is None
    assert "needs wandb's record types, and wandb cannot be imported here" in read.problem
    assert f"pip install wandb in the environment labtui runs in ({sys.prefix})" in read.problem
