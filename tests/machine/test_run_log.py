"""A run's whole output in its folder: every byte below the cap, head and tail over it."""

from __future__ import annotations

import sys
from pathlib import Path

from labtui.core.machine.processes import run_process
from labtui.core.machine.run_log import CappedLog, RunLogs


def test_below_the_cap_the_log_is_the_output_exactly(tmp_path: Path) -> None:
    log = CappedLog(
        tmp_path / "staging" / "run_1.stdout.log", 1000, final=tmp_path / "run_1" / "stdout.log"
    )
    for piece in (b"a\n", b"\xff\xfe not utf-8\n", b"\r progress\r"):
        log.write(piece)
    log.close()
    assert (
        tmp_path / "run_1" / "stdout.log"
    ).read_bytes() == b"a\n\xff\xfe not utf-8\n\r progress\r"
    assert not log.cut
    assert not (tmp_path / "staging" / "run_1.stdout.log").exists()


def test_over_the_cap_the_head_and_the_newest_tail_are_kept_and_the_cut_is_said(
    tmp_path: Path,
) -> None:
    lines = [f"line {i:05d}\n".encode() for i in range(2000)]  # 11 bytes each, 22,000 in all
    log = CappedLog(tmp_path / "stdout.log", 4000)
    for line in lines:
        log.write(line)
    log.close()
    text = (tmp_path / "stdout.log").read_text()
    head, _, tail = text.partition("\n[labtui: ")
    assert head.startswith("line 00000\n") and len(head) <= 2000
    assert tail.endswith("line 01999\n")  # the newest bytes always survive
    kept_tail = tail.split("]\n", 1)[1]
    assert 1000 <= len(kept_tail) <= 2000  # between a quarter and a half of the cap
    assert "bytes cut here" in tail and "of 22,000" in tail and "[limits] run_log_mb" in tail
    assert log.cut and log.total_bytes == 22000
    assert not list(tmp_path.glob(".stdout.log.tail*"))  # the segments are gone


def test_a_run_leaves_both_streams_in_its_folder(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(3000): print('out', i)\nprint('bad', file=sys.stderr)\n"
    logs = RunLogs.from_mb(tmp_path / "run_1", tmp_path / ".labtui" / "logs", 0)
    result = run_process(
        [sys.executable, "-c", script], cwd=tmp_path, timeout_s=60, run_id="run_1",
        emit=lambda event: None, stage="t", logs=logs,
    )  # fmt: skip
    out = (tmp_path / "run_1" / "stdout.log").read_text().splitlines()
    assert out[0] == "out 0" and out[-1] == "out 2999" and len(out) == 3000
    assert (tmp_path / "run_1" / "stderr.log").read_text() == "bad\n"
    assert {(w.name, w.cut) for w in result.logs} == {("stdout.log", False), ("stderr.log", False)}


def test_output_of_exactly_the_cap_is_kept_whole_without_a_cut_note(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "stdout.log", 4000)
    for _ in range(40):
        log.write(b"x" * 99 + b"\n")
    log.close()
    assert (tmp_path / "stdout.log").read_bytes() == (b"x" * 99 + b"\n") * 40
    assert not log.cut
