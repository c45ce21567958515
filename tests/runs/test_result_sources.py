"""Reading a run's numbers from the [results] source: JSON, CSV, stdout points, TensorBoard event
files, W&B summaries and final_info.json, with every bad file turned into a problem sentence that
names the file, the metric and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy
import pytest

from labtui.core.errors import LabtuiError
from labtui.core.events import MetricPointData
from labtui.core.runs.result_sources import ResultsRead, available_metrics, read_results, read_table
from labtui.core.settings.sections import ResultsSection

STARTED = 1_700_000_000.0  # the run's start, as time.time() gave it


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "run_1").mkdir(parents=True)
    return root


def _settings(source: str, metrics: dict[str, str], **fields: Any) -> ResultsSection:
    return ResultsSection(source=source, metrics=metrics, **fields)


def _read(project: Path, settings: ResultsSection, **keywords: Any) -> ResultsRead:
    return read_results(settings, root=project, run_dir=project / "run_1", **keywords)


def _write(path: Path, text: str | bytes, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _means(read: ResultsRead, dataset: str = "main") -> dict[str, float]:
    assert read.final_info is not None, read.problem
    return read.final_info.means()[dataset]


def _document(read: ResultsRead) -> dict[str, Any] | None:
    """The numbers as the run folder's final_info.json gets them (None: no numbers)."""
    return None if read.final_info is None else read.final_info.to_json()


def _json_source(project: Path, data: Any, metrics: dict[str, str], **fields: Any) -> ResultsRead:
    _write(project / "run_1" / "metrics.json", json.dumps(data))
    return _read(project, _settings("json", metrics, path="{out_dir}/metrics.json", **fields))


# -- JSON -----------------------------------------------------------------------------------------


def test_json_nested_path_goes_under_the_dataset(project: Path) -> None:
    data = {"eval": {"accuracy": 0.91, "loss": 0.3}, "train": {"loss": 0.2}}
    read = _json_source(project, data, {"eval.accuracy": "higher"}, dataset="moons")
    assert _document(read) == {"moons": {"means": {"eval.accuracy": 0.91}}}
    assert read.files == [project / "run_1" / "metrics.json"]
    assert read.problem == ""


def test_json_list_indices_count_from_either_end(project: Path) -> None:
    data = {"history": [{"loss": 0.9}, {"loss": 0.5}, {"loss": 0.4}]}
    read = _json_source(project, data, {"history.-1.loss": "lower", "history.0.loss": "lower"})
    assert _means(read) == {"history.-1.loss": 0.4, "history.0.loss": 0.9}


@pytest.mark.parametrize(
    ("reduce", "direction", "expected"),
    [
        ("last", "higher", 0.7),
        ("best", "higher", 0.9),
        ("best", "lower", 0.5),
        ("min", "higher", 0.5),
        ("max", "lower", 0.9),
        ("mean", "higher", 0.7),
    ],
)
def test_a_json_list_of_numbers_is_reduced(
    project: Path, reduce: str, direction: str, expected: float
) -> None:
    data = {"val": {"acc": [0.5, 0.9, None, 0.7]}}  # null: an epoch with no evaluation
    read = _json_source(project, data, {"val.acc": direction}, reduce=reduce)
    assert _means(read)["val.acc"] == pytest.approx(expected)


def test_a_key_holding_dots_is_found_whole_before_splitting(project: Path) -> None:
    data = {"eval.acc": 0.7, "eval": {"acc": 0.1, "top1.acc": 0.5}}
    read = _json_source(project, data, {"eval.acc": "higher", "eval.top1.acc": "higher"})
    assert _means(read) == {"eval.acc": 0.7, "eval.top1.acc": 0.5}


def test_a_bool_is_not_a_number(project: Path) -> None:
    read = _json_source(project, {"converged": True, "acc": 0.9}, {"converged": "higher"})
    assert read.final_info is None
    assert read.files == []
    assert '"converged" in run_1/metrics.json is true, not a number' in read.problem
    assert "[results] metrics" in read.problem


def test_a_missing_path_suggests_the_closest_name(project: Path) -> None:
    data = {"eval": {"accuracy": 0.91, "loss": 0.3}}
    read = _json_source(project, data, {"eval.acc": "higher"})
    assert read.final_info is None
    assert read.problem == (
        'no number at "eval.acc" in run_1/metrics.json (did you mean "eval.accuracy"? numbers '
        "there: eval.accuracy, eval.loss); fix [results] metrics in labtui.toml"
    )


def test_partial_success_keeps_the_found_and_names_the_missing(project: Path) -> None:
    data = {"eval": {"accuracy": 0.91}}
    read = _json_source(project, data, {"eval.accuracy": "higher", "eval.f1": "higher"})
    assert _means(read) == {"eval.accuracy": 0.91}
    assert read.files == [project / "run_1" / "metrics.json"]
    assert read.problem == (
        'no number at "eval.f1" in run_1/metrics.json (numbers there: eval.accuracy); '
        "fix [results] metrics in labtui.toml"
    )


@pytest.mark.parametrize(("text", "word"), [("NaN", "NaN"), ("Infinity", "infinite")])
def test_a_nan_or_inf_is_a_problem(project: Path, text: str, word: str) -> None:
    _write(project / "run_1" / "metrics.json", f'{{"eval": {{"loss": {text}, "acc": 0.8}}}}')
    settings = _settings(
        "json", {"eval.loss": "lower", "eval.acc": "higher"}, path="{out_dir}/metrics.json"
    )
    read = _read(project, settings)
    assert _means(read) == {"eval.acc": 0.8}
    assert read.problem.startswith(
        f"eval.loss is {word} in run_1/metrics.json: the run diverged, or wrote no number; "
    )
    assert "look at the run's log" in read.problem


def test_a_nan_in_a_series_is_not_hidden_behind_the_best_epoch(project: Path) -> None:
    _write(project / "run_1" / "metrics.json", '{"loss": [0.5, 0.3, NaN]}')
    for reduce, found in (("best", False), ("mean", False), ("last", False)):
        settings = _settings(
            "json", {"loss": "lower"}, path="{out_dir}/metrics.json", reduce=reduce
        )
        assert (_read(project, settings).final_info is not None) is found
    _write(project / "run_1" / "metrics.json", '{"loss": [0.5, NaN, 0.3]}')
    settings = _settings("json", {"loss": "lower"}, path="{out_dir}/metrics.json", reduce="last")
    assert _means(_read(project, settings)) == {"loss": 0.3}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"eval": {"accuracy": 0.9', "run_1/metrics.json is not valid JSON"),
        (b'{"name": "caf\xe9"}', "run_1/metrics.json is not UTF-8 text (byte 13 is 0xe9)"),
        ("", "run_1/metrics.json is empty"),
    ],
)
def test_a_bad_file_is_a_problem_not_an_exception(
    project: Path, content: str | bytes, expected: str
) -> None:
    _write(project / "run_1" / "metrics.json", content)
    read = _read(project, _settings("json", {"acc": "higher"}, path="{out_dir}/metrics.json"))
    assert read.final_info is None and read.files == []
    assert read.problem.startswith(expected)
    assert "[results] path in labtui.toml" in read.problem


def test_a_missing_file_names_the_path_and_the_fix(project: Path) -> None:
    read = _read(project, _settings("json", {"acc": "higher"}, path="{out_dir}/metrics.json"))
    assert read.final_info is None
    assert read.problem == (
        "run_1/metrics.json does not exist; "
        "make the run write it, or fix [results] path in labtui.toml"
    )


def test_a_folder_where_the_file_should_be_is_missing(project: Path) -> None:
    (project / "run_1" / "metrics.json").mkdir()
    read = _read(project, _settings("json", {"acc": "higher"}, path="{out_dir}/metrics.json"))
    assert "run_1/metrics.json does not exist" in read.problem


# -- globs and `since` ------------------------------------------------------------------------------


def test_a_glob_takes_the_newest_match_written_since_the_run_started(project: Path) -> None:
    results = project / "results"
    _write(results / "old.json", '{"acc": 0.1}', mtime=STARTED - 3600)
    _write(results / "a.json", '{"acc": 0.5}', mtime=STARTED + 10)
    _write(results / "b.json", '{"acc": 0.7}', mtime=STARTED + 20)
    settings = _settings("json", {"acc": "higher"}, path="results/*.json")
    read = _read(project, settings, since=STARTED)
    assert _means(read) == {"acc": 0.7}
    assert read.files == [results / "b.json"]


def test_an_old_file_is_not_this_runs_result(project: Path) -> None:
    _write(project / "results" / "old.json", '{"acc": 0.1}', mtime=STARTED - 3600)
    settings = _settings("json", {"acc": "higher"}, path="results/*.json")
    read = _read(project, settings, since=STARTED)
    assert read.final_info is None
    assert "every file matching results/*.json was written before this run started" in read.problem
    assert "[results] path" in read.problem
    # Importing old results: no age filter, the newest wins
    assert _means(_read(project, settings)) == {"acc": 0.1}


def test_a_glob_matching_nothing_says_so(project: Path) -> None:
    read = _read(project, _settings("json", {"acc": "higher"}, path="{out_dir}/*.json"))
    assert read.problem.startswith("no file matches run_1/*.json; ")


def test_glob_characters_in_the_project_folder_are_not_a_pattern(tmp_path: Path) -> None:
    root = tmp_path / "exp[1]"
    _write(root / "run_1" / "metrics.json", '{"acc": 0.9}')
    settings = _settings("json", {"acc": "higher"}, path="{out_dir}/metrics.json")
    read = read_results(settings, root=root, run_dir=root / "run_1")
    assert _means(read) == {"acc": 0.9}


# -- CSV ----------------------------------------------------------------------------------------


CSV = (
    "epoch,phase,train_loss,val_accuracy,note\n"
    "1,warmup,0.90,,started\n"
    "2,train,0.60,0.71,\n"
    "3,train,0.40,0.83,best\n"
    "4,train,0.45,0.80,\n"
)


def _csv_source(project: Path, metrics: dict[str, str], text: str = CSV, **fields: Any):
    _write(project / "run_1" / "metrics.csv", text)
    return _read(project, _settings("csv", metrics, path="{out_dir}/metrics.csv", **fields))


def test_csv_columns_skip_blank_cells(project: Path) -> None:
    read = _csv_source(project, {"val_accuracy": "higher", "train_loss": "lower"})
    assert _means(read) == {"val_accuracy": 0.80, "train_loss": 0.45}
    best = _csv_source(project, {"val_accuracy": "higher", "train_loss": "lower"}, reduce="best")
    assert _means(best) == {"val_accuracy": 0.83, "train_loss": 0.40}
    assert _means(_csv_source(project, {"val_accuracy": "higher"}, reduce="mean")) == {
        "val_accuracy": pytest.approx((0.71 + 0.83 + 0.80) / 3)
    }


def test_a_missing_column_lists_the_columns_and_the_closest(project: Path) -> None:
    read = _csv_source(project, {"val_acc": "higher"})
    assert read.problem == (
        'no column "val_acc" in run_1/metrics.csv (did you mean "val_accuracy"? columns: epoch, '
        "phase, train_loss, val_accuracy, note); fix [results] metrics in labtui.toml"
    )


def test_a_text_column_holds_no_numbers(project: Path) -> None:
    read = _csv_source(project, {"phase": "higher"})
    assert read.final_info is None
    assert 'column "phase" in run_1/metrics.csv holds no numbers' in read.problem


def test_csv_with_a_bom_spaces_and_a_cut_last_line(project: Path) -> None:
    text = "\ufeffstep, loss\n1, 0.5\n2, 0.25\n3"  # the run was writing row 3
    assert _means(_csv_source(project, {"loss": "lower"}, text=text)) == {"loss": 0.25}


def test_a_nan_cell_is_reported(project: Path) -> None:
    read = _csv_source(project, {"loss": "lower"}, text="step,loss\n1,0.5\n2,nan\n")
    assert read.problem.startswith("loss is NaN in run_1/metrics.csv")


# -- stdout -------------------------------------------------------------------------------------


def _point(values: dict[str, float], group: str = "", step: float | None = None) -> MetricPointData:
    return MetricPointData(values=values, step=step, step_name="epoch", total=None, group=group)


def test_stdout_points_are_reduced_per_group_then_averaged(project: Path) -> None:
    points = [
        _point({"acc": 0.5, "loss": 1.0}, "seed 0", 1),
        _point({"acc": 0.9}, "seed 1", 1),
        _point({"acc": 0.7, "loss": 0.4}, "seed 0", 2),
        _point({"acc": 0.8, "loss": 0.6}, "seed 1", 2),
    ]
    settings = _settings("stdout", {"acc": "higher", "loss": "lower"}, reduce="best")
    read = _read(project, settings, log_points=points)
    # acc: best of seed 0 is 0.7, of seed 1 0.9; loss: 0.4 and 0.6
    assert _means(read) == {"acc": pytest.approx(0.8), "loss": pytest.approx(0.5)}
    assert read.files == [] and read.problem == ""
    last = _read(project, _settings("stdout", {"acc": "higher"}), log_points=points)
    assert _means(last) == {"acc": pytest.approx(0.75)}


def test_stdout_missing_metric_and_silent_run(project: Path) -> None:
    points = [_point({"test_accuracy": 0.9})]
    read = _read(project, _settings("stdout", {"test_acc": "higher"}), log_points=points)
    assert read.problem == (
        'no metric "test_acc" in the metric lines run_1 printed (did you mean "test_accuracy"? '
        "metrics printed: test_accuracy); fix [results] metrics in labtui.toml"
    )
    silent = _read(project, _settings("stdout", {"acc": "higher"}))
    assert silent.problem.startswith("run_1 printed no metric lines")
    assert "[results] source" in silent.problem


# -- TensorBoard ----------------------------------------------------------------------------------


def _summary_writer_run(folder: Path, values: dict[str, list[float]], start: int = 0) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(folder))
    for tag, series in values.items():
        for step, value in enumerate(series, start=start):
            writer.add_scalar(tag, value, step)
    writer.add_histogram("weights", numpy.array([0.1, 0.2, 0.3]), 0)
    writer.add_text("notes", "a run", 0)
    writer.close()


def _tf2_style_events(folder: Path, tag: str, series: list[float]) -> None:
    """What TF2's tf.summary.scalar writes: a tensor value, described only at its first step."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    writer = EventFileWriter(str(folder))
    for step, number in enumerate(series):
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(number))
        if step == 0:
            value.metadata.plugin_data.plugin_name = "scalars"
        other = summary_pb2.Summary.Value(
            tag="layer/sizes", tensor=tensor_util.make_tensor_proto(7.0)
        )
        if step == 0:
            other.metadata.plugin_data.plugin_name = "histograms"  # numeric, not a scalar
        summary = summary_pb2.Summary(value=[value, other])
        writer.add_event(event_pb2.Event(step=step, wall_time=STARTED + step, summary=summary))
    writer.close()


def test_tensorboard_scalars_from_summary_writer(project: Path) -> None:
    _summary_writer_run(project / "run_1" / "tb", {"eval/accuracy": [0.5, 0.8, 0.7]})
    settings = _settings("tensorboard", {"eval/accuracy": "higher"}, reduce="best")
    read = _read(project, settings)
    assert _means(read) == {"eval/accuracy": 0.8}  # as logged, not float32's 0.800000011920929
    assert len(read.files) == 1 and read.files[0].name.startswith("events.out.tfevents.")
    last = _read(project, _settings("tensorboard", {"eval/accuracy": "higher"}))
    assert _means(last) == {"eval/accuracy": pytest.approx(0.7)}


def test_tensorboard_tensor_scalars_as_tf2_writes_them(project: Path) -> None:
    _tf2_style_events(project / "run_1", "eval/accuracy", [0.25, 0.5, 0.75])
    read = _read(project, _settings("tensorboard", {"eval/accuracy": "higher"}, reduce="mean"))
    assert _means(read) == {"eval/accuracy": pytest.approx(0.5)}
    assert available_metrics("tensorboard", project / "run_1") == {"eval/accuracy": 0.75}


def test_tensorboard_reads_every_event_file_in_step_order(project: Path) -> None:
    # A resumed run: a second writer continues at step 3 in another file
    _summary_writer_run(project / "run_1" / "a", {"loss": [0.9, 0.7, 0.5]})
    _summary_writer_run(project / "run_1" / "b", {"loss": [0.4, 0.2]}, start=3)
    for events in (project / "run_1" / "b").iterdir():  # the later file first by name and age
        os.rename(events, project / "run_1" / "a" / ("events.out.tfevents.0." + events.name))
    read = _read(project, _settings("tensorboard", {"loss": "lower"}))
    assert _means(read) == {"loss": pytest.approx(0.2)}
    assert len(read.files) == 2


def _record_ends(data: bytes) -> list[int]:
    """Where each TFRecord of an event file ends: 8-byte length, 4-byte CRC, data, 4-byte CRC."""
    ends, offset = [], 0
    while offset < len(data):
        offset += 12 + int.from_bytes(data[offset : offset + 8], "little") + 4
        ends.append(offset)
    return ends


def test_a_truncated_event_file_gives_what_was_written(project: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(project / "run_1"))
    for step, loss in enumerate([0.9, 0.7, 0.5, 0.3]):
        writer.add_scalar("loss", loss, step)
    writer.close()
    events = next((project / "run_1").glob("events.out.tfevents.*"))
    whole = events.read_bytes()
    ends = _record_ends(whole)
    assert len(ends) == 5  # the file's version record, then a record per point
    events.write_bytes(whole[: ends[-1] - 5])  # the writer is midway through the last point
    read = _read(project, _settings("tensorboard", {"loss": "lower"}))
    assert read.problem == ""
    assert _means(read) == {"loss": 0.5}
    events.write_bytes(whole[: ends[0] + 3])  # not even the first point
    assert "no scalar tag" in _read(project, _settings("tensorboard", {"loss": "lower"})).problem


def test_an_event_file_cut_anywhere_gives_a_prefix_of_its_points(project: Path) -> None:
    _tf2_style_events(project / "run_1", "acc", [0.25, 0.5, 0.75])
    events = next((project / "run_1").glob("events.out.tfevents.*"))
    whole = events.read_bytes()
    settings = _settings("tensorboard", {"acc": "higher"})
    seen = set()
    for length in range(len(whole) + 1):
        events.write_bytes(whole[:length])
        read = _read(project, settings)
        value = None if read.final_info is None else _means(read)["acc"]
        assert value in (None, 0.25, 0.5, 0.75), length
        assert (value is None) == read.problem.startswith('no scalar tag "acc"'), length
        seen.add(value)
    assert seen == {None, 0.25, 0.5, 0.75}


def test_a_corrupt_event_file_is_a_problem_not_an_exception(project: Path) -> None:
    _write(project / "run_1" / "events.out.tfevents.123.host", b"\x00" * 64 + b"garbage" * 20)
    read = _read(project, _settings("tensorboard", {"loss": "lower"}))
    assert read.final_info is None
    assert 'no scalar tag "loss" in the TensorBoard events under run_1' in read.problem


def test_tensorboard_missing_tag_and_missing_files(project: Path) -> None:
    _summary_writer_run(project / "run_1", {"eval/accuracy": [0.5]})
    read = _read(project, _settings("tensorboard", {"eval/acc": "higher"}))
    assert read.problem == (
        'no scalar tag "eval/acc" in the TensorBoard events under run_1 (did you mean '
        '"eval/accuracy"? tags: eval/accuracy); fix [results] metrics in labtui.toml'
    )
    empty = _read(project, _settings("tensorboard", {"x": "higher"}, path="logs"))
    assert empty.problem.startswith("no TensorBoard event files (events.out.tfevents.*) match logs")


def test_tensorboard_ignores_event_files_of_earlier_runs(project: Path) -> None:
    _summary_writer_run(project / "run_1" / "old", {"loss": [0.1]})
    _summary_writer_run(project / "run_1" / "new", {"loss": [0.6, 0.4]})
    for events in (project / "run_1" / "old").iterdir():
        os.utime(events, (STARTED - 3600, STARTED - 3600))
    for events in (project / "run_1" / "new").iterdir():
        os.utime(events, (STARTED + 60, STARTED + 60))
    settings = _settings("tensorboard", {"loss": "lower"}, reduce="min")
    read = _read(project, settings, since=STARTED)
    assert _means(read) == {"loss": 0.4}
    assert [path.parent.name for path in read.files] == ["new"]
    assert _means(_read(project, settings)) == {"loss": 0.1}  # no since: every file counts


def test_tensorboard_path_may_name_a_folder(project: Path) -> None:
    _summary_writer_run(project / "logs" / "run_1" / "train", {"loss": [0.5, 0.25]})
    read = _read(project, _settings("tensorboard", {"loss": "lower"}, path="logs/{out_dir}"))
    assert _means(read) == {"loss": 0.25}


# -- W&B ----------------------------------------------------------------------------------------


SUMMARY = "wandb/latest-run/files/wandb-summary.json"


@pytest.mark.parametrize(
    ("summary", "loss"),
    [
        ({"eval/accuracy": 0.88, "train/loss": 0.1, "_runtime": 12.5, "_step": 99}, "train/loss"),
        ({"eval": {"accuracy": 0.88}, "train": {"loss": 0.1}, "_runtime": 12.5}, "train.loss"),
    ],
    ids=["flat", "nested"],
)
def test_wandb_summary_flat_or_nested(project: Path, summary: dict[str, Any], loss: str) -> None:
    _write(project / SUMMARY, json.dumps(summary))
    # "eval/accuracy" finds the nested {"eval": {"accuracy": …}} too
    read = _read(project, _settings("wandb", {"eval/accuracy": "higher", loss: "lower"}))
    assert _means(read) == {"eval/accuracy": 0.88, loss: 0.1}
    assert read.files == [project / SUMMARY]
    offered = available_metrics("wandb", project / SUMMARY)
    assert set(offered) == {"eval/accuracy" if loss == "train/loss" else "eval.accuracy", loss}


def test_wandb_missing_key(project: Path) -> None:
    _write(project / SUMMARY, json.dumps({"eval/accuracy": 0.88, "_runtime": 3}))
    read = _read(project, _settings("wandb", {"eval/acc": "higher"}))
    assert f'no number at "eval/acc" in {SUMMARY}' in read.problem
    assert 'did you mean "eval/accuracy"?' in read.problem and "_runtime" not in read.problem


# -- final_info -----------------------------------------------------------------------------------


def _final_info(project: Path, data: Any) -> None:
    _write(project / "run_1" / "final_info.json", json.dumps(data))


def test_final_info_is_read_whole(project: Path) -> None:
    data = {"moons": {"means": {"acc": 0.9, "loss": 0.2}}, "circles": {"means": {"acc": 0.8}}}
    _final_info(project, data)
    read = _read(project, ResultsSection())
    assert _document(read) == data and read.problem == ""
    assert read.files == [project / "run_1" / "final_info.json"]
    assert _document(_read(project, _settings("final_info", {"loss": "lower"}))) == data


def test_final_info_of_the_wrong_shape(project: Path) -> None:
    _final_info(project, {"moons": {"acc": 0.9}})
    read = _read(project, ResultsSection())
    assert read.final_info is None
    assert 'run_1/final_info.json: entry "moons" has no "means"' in read.problem
    assert "[results] source" in read.problem


def test_final_info_missing_metric_and_nan(project: Path) -> None:
    _final_info(project, {"moons": {"means": {"accuracy": 0.9, "loss": float("nan")}}})
    read = _read(project, _settings("final_info", {"acc": "higher", "accuracy": "higher"}))
    assert _means(read, "moons")["accuracy"] == 0.9  # loss was not asked for: left as written
    assert 'no mean "acc" in run_1/final_info.json (did you mean "accuracy"?' in read.problem
    every = _read(project, ResultsSection())
    assert _document(every) == {"moons": {"means": {"accuracy": 0.9}}}
    assert every.problem.startswith("loss is NaN in run_1/final_info.json")


def test_final_info_missing(project: Path) -> None:
    read = _read(project, ResultsSection())
    assert read.problem.startswith("run_1/final_info.json does not exist; make the run write it")


# -- available_metrics ----------------------------------------------------------------------------


def test_available_metrics_of_json(tmp_path: Path) -> None:
    data = {
        "eval": {"accuracy": 0.9, "name": "val", "ok": True},
        "curve": [0.1, 0.2, 0.3],
        "history": [{"loss": 0.5}, {"loss": 0.4}],
        "a": {"b": {"c": {"d": {"e": {"f": {"g": 1.0}}}}}},
    }
    path = _write(tmp_path / "m.json", json.dumps(data))
    assert available_metrics("json", path) == {
        "eval.accuracy": 0.9,
        "curve": 0.3,
        "history.-1.loss": 0.4,
    }
    wide = _write(tmp_path / "wide.json", json.dumps({f"m{i}": i for i in range(500)}))
    assert len(available_metrics("json", wide)) == 200


def test_available_metrics_of_csv_final_info_and_bad_files(tmp_path: Path) -> None:
    csv_path = _write(tmp_path / "m.csv", CSV)
    assert available_metrics("csv", csv_path) == {
        "epoch": 4.0,
        "train_loss": 0.45,
        "val_accuracy": 0.80,
    }
    final = _write(tmp_path / "f.json", json.dumps({"d": {"means": {"acc": 0.9, "tag": "x"}}}))
    assert available_metrics("final_info", final) == {"acc": 0.9}
    assert available_metrics("json", tmp_path / "absent.json") == {}
    assert available_metrics("json", _write(tmp_path / "bad.json", b"\xff\xfe{")) == {}
    assert available_metrics("tensorboard", tmp_path / "absent") == {}


def test_available_metrics_of_an_event_file(tmp_path: Path) -> None:
    _summary_writer_run(tmp_path, {"eval/accuracy": [0.5, 0.6], "train/loss": [0.3, 0.2]})
    events = next(tmp_path.glob("events.out.tfevents.*"))
    offered = available_metrics("tensorboard", events)
    assert offered == {"eval/accuracy": pytest.approx(0.6), "train/loss": pytest.approx(0.2)}


# -- read_table -----------------------------------------------------------------------------------


TABLE = "method,seed,accuracy,notes\nbaseline,0,0.81,\nbaseline,1,0.83,\nours,0,0.90,ok\n,0,n/a,\n"


def test_read_table_names_rows_and_repeats(tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.csv", TABLE)
    assert read_table(path, "method", {"accuracy": "higher"}) == {
        "baseline": {"accuracy": 0.81},
        "baseline (2)": {"accuracy": 0.83},
        "ours": {"accuracy": 0.90},
        "row 4": {},
    }
    every = read_table(path, "method", {})
    assert every["ours"] == {"seed": 0.0, "accuracy": 0.90}
    assert every["row 4"] == {"seed": 0.0}


def test_read_table_without_the_name_column_raises(tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.csv", TABLE)
    with pytest.raises(LabtuiError) as info:
        read_table(path, "methods", {})
    assert f'no column "methods" in {path}' in info.value.message
    assert 'did you mean "method"?' in info.value.message
    assert info.value.hint
    with pytest.raises(LabtuiError, match='no column "f1"'):
        read_table(path, "method", {"f1": "higher"})
    with pytest.raises(LabtuiError, match=r"absent\.csv cannot be read"):
        read_table(tmp_path / "absent.csv", "method", {})


# -- layering -------------------------------------------------------------------------------------


def test_importing_loads_neither_tensorboard_nor_the_front_end() -> None:
    code = (
        "import sys, labtui.core.runs.result_sources\n"
        "print(sorted(m for m in ('tensorboard', 'textual', 'labtui.tui') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
