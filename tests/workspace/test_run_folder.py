"""core.workspace.run_folder: a run folder's names, its final_info.json and labtui_run.json read
and written in one place, files of older labtui versions still read, and a bad file a
RunFolderError that names the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtui.core.errors import LabtuiError
from labtui.core.workspace.run_folder import (
    FinalInfo,
    ImportRecord,
    ResultsOrigin,
    RunFolderError,
    RunRecord,
    finished_runs,
    imported_name,
    imported_number,
    read_final_info,
    read_run_record,
    recorded_commit,
    recorded_means,
    result_folders,
    run_name,
    run_number,
    write_final_info,
    write_run_record,
)

# What run_experiment wrote before the record was typed (core/runs/runner.py at 4c74ab9), byte
# for byte: the typed record must write the same file.
OLD_RUN_RECORD = """{
  "run_id": "run_2",
  "argv": [
    "python",
    "experiment.py",
    "--out_dir=run_2"
  ],
  "cwd": "/home/r/projekt-ü",
  "interpreter": "python",
  "interpreter_path": "/usr/bin/python",
  "environment": {
    "executable": "/usr/bin/python",
    "packages": {
      "numpy": "2.1.0"
    }
  },
  "commit": "abc123",
  "started_at": "2025-01-02T03:04:05+00:00",
  "wall_s": 12.345,
  "returncode": 0,
  "timed_out": false,
  "stopped": false,
  "timeout_s": 1800,
  "budget_s": 0.0,
  "seed": 0,
  "over_budget": false,
  "CUDA_VISIBLE_DEVICES": "0,1",
  "threads": {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1"
  },
  "sandbox": {
    "mode": "limits",
    "isolated": false
  },
  "cluster": {},
  "hardware": {
    "cpu": "AMD EPYC",
    "cores": 2,
    "memory_mb": 23997,
    "gpus": []
  },
  "limit_hit": "",
  "peak_memory_mb": 210.5,
  "peak_gpu_memory_mb": 0.0,
  "oom_killer_struck": false,
  "problem": "",
  "smoke": false,
  "results": {
    "source": "final_info",
    "files": [
      "run_2/final_info.json"
    ]
  },
  "not_committed": [],
  "not_committed_elsewhere": [],
  "left_outside": {
    "moved_to": "",
    "moved": [],
    "moved_count": 0,
    "removed": [],
    "removed_count": 0,
    "freed_bytes": 0,
    "why_removed": ""
  },
  "output_bytes": {
    "stdout.log": 1234,
    "stderr.log": 0
  },
  "logs_cut": []
}
"""


def _finished(root: Path, name: str, means: dict[str, float] | None = None) -> Path:
    folder = root / name
    write_final_info(folder, FinalInfo.of_means({"moons": means or {"acc": 0.5}}))
    return folder


# -- names ----------------------------------------------------------------------------------


def test_a_run_folders_name_and_number_are_one_function_each() -> None:
    assert run_name(3) == "run_3" and run_number("run_3") == 3
    assert run_number(Path("/p/run_12")) == 12 and run_number(Path("run_0")) == 0
    assert imported_name(2) == "imported_2" and imported_number(Path("x/imported_2")) == 2
    for other in ("run_", "run_a", "run_1b", "xrun_1", "imported_3", "run_٣", "run_-1"):
        assert run_number(other) is None, other
    assert imported_number("run_3") is None


def test_result_folders_are_the_finished_runs_by_number_then_the_imports(tmp_path: Path) -> None:
    for name in ("run_10", "run_2", "run_0", "imported_2", "imported_1"):
        _finished(tmp_path, name)
    (tmp_path / "run_5").mkdir()  # a run that wrote no numbers
    (tmp_path / "run_x").mkdir()
    assert [p.name for p in finished_runs(tmp_path)] == ["run_0", "run_2", "run_10"]
    assert [p.name for p in result_folders(tmp_path)] == [
        "run_0", "run_2", "run_10", "imported_1", "imported_2",
    ]  # fmt: skip


# -- final_info.json ------------------------------------------------------------------------


def test_final_info_round_trips_as_written_with_what_the_run_added(tmp_path: Path) -> None:
    written = {
        "moons": {
            "means": {"acc_mean": 0.91, "note": "text"},
            "stderrs": {"acc_stderr": 0.01},
            "final_info_dict": {"acc": [0.9, 0.92]},
            "extra": {"kept": True},
        }
    }
    text = json.dumps(written, indent=2) + "\n"
    (tmp_path / "run_1").mkdir()
    (tmp_path / "run_1" / "final_info.json").write_text(text)
    info = read_final_info(tmp_path / "run_1")
    assert info.problem == ""
    assert info.means() == {"moons": {"acc_mean": 0.91, "note": "text"}}
    assert info.stderrs() == {"moons": {"acc_stderr": 0.01}}
    assert info.per_seed() == {"moons": {"acc": [0.9, 0.92]}}
    write_final_info(tmp_path / "copy", info)
    assert (tmp_path / "copy" / "final_info.json").read_text() == text


def test_final_info_made_from_means_is_written_as_labtui_always_wrote_it(tmp_path: Path) -> None:
    write_final_info(tmp_path / "run_1", FinalInfo.of_means({"main": {"loss": 0.25}}))
    expected = json.dumps({"main": {"means": {"loss": 0.25}}}, indent=2) + "\n"
    assert (tmp_path / "run_1" / "final_info.json").read_text() == expected


def test_the_recorded_run_of_the_real_model_bench_still_reads() -> None:
    recorded = Path(__file__).parents[1] / "recorded/real_model/qwen15_moons_b8_paper"
    for run in ("run_0", "run_1"):
        info = read_final_info(recorded / run)
        assert info.problem == "" and info.means(), run


def test_an_entry_without_means_is_named_and_left_out(tmp_path: Path) -> None:
    (tmp_path / "run_1").mkdir()
    data = {"moons": {"acc": 0.9}, "circles": {"means": {"acc": 0.8}}}
    (tmp_path / "run_1" / "final_info.json").write_text(json.dumps(data))
    info = read_final_info(tmp_path / "run_1")
    assert info.problem == 'run_1/final_info.json: entry "moons" has no "means" object'
    assert info.means() == {"circles": {"acc": 0.8}}
    assert recorded_means(tmp_path / "run_1") == {"circles": {"acc": 0.8}}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "run_1/final_info.json: missing"),
        ("{not json", "run_1/final_info.json is not valid JSON (line 1, column 2"),
        (b"\xff\xfe", "run_1/final_info.json is not UTF-8 text"),
        ("[1, 2]", 'run_1/final_info.json: must be a non-empty object of dataset -> {"means"'),
    ],
)
def test_an_unreadable_final_info_is_an_error_naming_the_file(
    tmp_path: Path, content: str | bytes | None, said: str
) -> None:
    folder = tmp_path / "run_1"
    folder.mkdir()
    if isinstance(content, bytes):
        (folder / "final_info.json").write_bytes(content)
    elif content is not None:
        (folder / "final_info.json").write_text(content)
    with pytest.raises(RunFolderError) as raised:
        read_final_info(folder)
    assert isinstance(raised.value, LabtuiError)
    assert raised.value.message.startswith(said)
    assert raised.value.file == "run_1/final_info.json"
    assert raised.value.missing is (content is None)
    assert recorded_means(folder) == {}


# -- labtui_run.json ------------------------------------------------------------------------


def test_a_run_record_reads_and_writes_byte_for_byte(tmp_path: Path) -> None:
    folder = tmp_path / "run_2"
    folder.mkdir()
    (folder / "labtui_run.json").write_text(OLD_RUN_RECORD, encoding="utf-8")
    record = read_run_record(folder)
    assert isinstance(record, RunRecord)
    assert record.commit == "abc123" and record.cuda_visible_devices == "0,1"
    assert record.results == ResultsOrigin("final_info", ["run_2/final_info.json"])
    assert record.environment["packages"] == {"numpy": "2.1.0"}
    assert record.threads == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rewritten = RunRecord(**{**record.__dict__, "timeout_s": 1800})  # as the runner passes it
    write_run_record(tmp_path / "again", rewritten)
    assert (tmp_path / "again" / "labtui_run.json").read_text(encoding="utf-8") == OLD_RUN_RECORD


def test_an_older_or_smaller_record_reads_with_defaults(tmp_path: Path) -> None:
    folder = tmp_path / "run_1"
    folder.mkdir()
    (folder / "labtui_run.json").write_text(json.dumps({"commit": "c0ffee", "old_key": 1}))
    record = read_run_record(folder)
    assert isinstance(record, RunRecord)
    assert record.commit == "c0ffee" and record.argv == [] and record.results.files == []
    assert recorded_commit(folder) == "c0ffee"


def test_an_import_record_round_trips_as_labtui_import_wrote_it(tmp_path: Path) -> None:
    record = ImportRecord(
        run_id="imported_1",
        imported_from="résultats/metrics.json",
        row="",
        source="json",
        sha256="ab" * 32,
        commit="f00d",
        commit_from="given",
        imported_at="2025-01-02T03:04:05+00:00",
    )
    write_run_record(tmp_path / "imported_1", record)
    text = (tmp_path / "imported_1" / "labtui_run.json").read_text(encoding="utf-8")
    assert text == json.dumps(record.to_json(), indent=2) + "\n"  # ASCII, as it always was
    assert "\\u00e9" in text
    assert read_run_record(tmp_path / "imported_1") == record
    assert recorded_commit(tmp_path / "imported_1") == "f00d"


@pytest.mark.parametrize(
    ("content", "said", "field"),
    [
        (
            '{"commit": 5}',
            'run_1/labtui_run.json: "commit" input should be a valid string',
            "commit",
        ),
        (
            '{"results": {"files": [1]}}',
            'run_1/labtui_run.json: "results.files.0" input should be a valid string',
            "results.files.0",
        ),
        (
            '{"CUDA_VISIBLE_DEVICES": []}',
            '"CUDA_VISIBLE_DEVICES" input should be',
            "CUDA_VISIBLE_DEVICES",
        ),
        ('"a string"', "run_1/labtui_run.json: must be a JSON object", ""),
        ("{", "run_1/labtui_run.json is not valid JSON", ""),
        (None, "run_1/labtui_run.json: missing", ""),
    ],
)
def test_a_bad_run_record_is_an_error_naming_the_file_and_the_field(
    tmp_path: Path, content: str | None, said: str, field: str
) -> None:
    folder = tmp_path / "run_1"
    folder.mkdir()
    if content is not None:
        (folder / "labtui_run.json").write_text(content)
    with pytest.raises(RunFolderError) as raised:
        read_run_record(folder)
    assert said in raised.value.message
    assert raised.value.file == "run_1/labtui_run.json" and raised.value.field == field
    assert "fix: run run_1 again" in str(raised.value)
    assert recorded_commit(folder) == ""
