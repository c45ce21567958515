"""The journal stays small whatever a run prints: head and tail of its output, a thinned series
of its metrics, whole messages instead of their chunks; and what it keeps replays in order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    LogLine,
    MetricPointData,
    MetricsReported,
    RunFinished,
    RunStarted,
    StageFinished,
)
from labtui.core.journal import HEAD_CHARS, METRIC_POINTS, TAIL_CHARS, Journal, read_events

KB_LINE = "x" * 1023


def _read(n: int, first: int) -> LogLine:
    """One pipe read of a flood: ``n`` lines of 1 KB, numbered from ``first``."""
    text = "\n".join(f"{first + i:08d} {KB_LINE}"[:1023] for i in range(n))
    return LogLine(stage="experiments", run_id="run_1", stream="stdout", text=text)


def _lines(events: list, stream: str = "stdout") -> list[str]:
    return [
        line
        for e in events
        if isinstance(e, LogLine) and e.stream == stream
        for line in e.text.split("\n")
    ]


def test_a_flood_leaves_its_head_a_note_and_its_tail_in_that_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.append(RunStarted(stage="experiments", run_id="run_1"))
    reads = 4096  # 64 lines of 1 KB each: 256 MB of output
    for r in range(reads):
        journal.append(_read(64, r * 64))
    journal.append(RunFinished(stage="experiments", run_id="run_1", returncode=0, wall_s=1.0))
    journal.close()

    size = journal.path.stat().st_size
    assert size < 2 * (HEAD_CHARS + TAIL_CHARS) + 4096  # ~130 KB for 256 MB printed
    events = read_events(journal.path)
    lines = _lines(events)
    assert lines[0].startswith("00000000 ")
    assert lines[-1].startswith(f"{reads * 64 - 1:08d} ")  # the newest line survives
    note = next(line for line in lines if "not kept in the journal" in line)
    dropped = reads * 64 - len(lines) + 1
    assert f"{dropped:,} lines" in note and "stdout.log" in note
    assert isinstance(events[-1], RunFinished)  # the tail is written before the run's end
    numbers = [int(line[:8]) for line in lines if line[:8].isdigit()]
    assert numbers == sorted(numbers)  # head, then tail: in the order printed


def test_metric_points_are_thinned_to_a_bound_however_long_the_run(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    point = MetricPointData(values={"loss": 0.5}, step=None, step_name="", total=None, group="")
    events = 4000
    for _ in range(events):  # 32 points a read, 128,000 in all
        journal.append(MetricsReported(stage="experiments", run_id="run_1", points=[point] * 32))
    journal.close()
    kept = sum(len(e.points) for e in read_events(journal.path) if isinstance(e, MetricsReported))
    assert METRIC_POINTS < kept <= 2 * METRIC_POINTS + 32


def test_a_streamed_reply_is_journaled_as_its_message_not_its_chunks(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for piece in ("The ", "idea ", "is"):
        journal.append(AgentChunk(stage="ideas", role="ideator", text=piece))
    journal.append(AgentMessage(stage="ideas", role="ideator", text="The idea is"))
    journal.close()
    assert [type(e) for e in read_events(journal.path)] == [AgentMessage]


def test_labtuis_own_lines_about_a_run_are_all_kept(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for r in range(200):
        journal.append(_read(64, r * 64))
    said = LogLine(stage="experiments", run_id="run_1", stream="labtui", text="run_1 idle 600 s")
    journal.append(said)
    assert said in read_events(journal.path)  # written at once, not held with the tail
    journal.close()


def test_a_stage_that_ends_or_a_journal_that_closes_writes_what_it_held(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for r in range(100):  # a plot script's flood: no RunFinished follows
        journal.append(replace(_read(64, r * 64), run_id="plot"))
    journal.append(StageFinished(stage="experiments", status="done"))
    events = read_events(journal.path)
    assert _lines(events)[-1].startswith(f"{100 * 64 - 1:08d} ")
    assert isinstance(events[-1], StageFinished)
    journal.append(_read(64, 0))
    journal.close()
    assert _lines(read_events(journal.path))[-1].startswith(f"{63:08d} ")


def test_a_rerun_of_the_same_run_id_starts_a_fresh_budget(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for attempt in range(2):
        journal.append(RunStarted(stage="experiments", run_id="run_1"))
        journal.append(
            LogLine(
                stage="experiments", run_id="run_1", stream="stderr", text=f"Traceback {attempt}"
            )
        )
        journal.append(RunFinished(stage="experiments", run_id="run_1", returncode=1, wall_s=1.0))
    journal.close()
    assert _lines(read_events(journal.path), "stderr") == ["Traceback 0", "Traceback 1"]


def test_a_long_read_counted_without_its_lines_keeps_what_its_lines_would() -> None:
    """Past the head, a read is counted and only its end split: the tail and the counts are
    those the line-by-line bookkeeping gives, for reads of every shape around the tail's size."""
    import random

    from labtui.core.journal import _StreamKept

    rng = random.Random(31)
    by_text, by_lines = _StreamKept("experiments"), _StreamKept("experiments")
    for _ in range(300):
        width = rng.choice([0, 1, 40, 1023, 5000, 16_384])
        count = rng.choice([1, 2, 7, 30, 64, 400])
        text = "\n".join("y" * rng.randint(0, width) for _ in range(count))
        head = by_text.admit_text(text)
        lines = by_lines.admit(text.split("\n"))
        assert head == ("\n".join(lines) if lines else None)
        assert (by_text.tail, by_text.tail_chars) == (by_lines.tail, by_lines.tail_chars)
        assert (by_text.dropped_lines, by_text.dropped_chars) == (
            by_lines.dropped_lines,
            by_lines.dropped_chars,
        )
    assert by_text.dropped_lines > 0  # the long reads were counted, not only held
